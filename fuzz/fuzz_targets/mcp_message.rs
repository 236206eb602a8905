#![no_main]
//! See `sextant::fuzz::mcp_message` (../../src/fuzz.rs) for what this target checks.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sextant_fuzz::fuzz::mcp_message(data);
});
