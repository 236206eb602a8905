#![no_main]
//! See `sextant::dev::fuzz::mcp_message` (../../src/dev/fuzz.rs) for what this target checks.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sextant_fuzz::fuzz::mcp_message(data);
});
