#![no_main]
//! See `sextant::dev::fuzz::search_request` (../../src/dev/fuzz.rs) for what this target checks.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sextant_fuzz::fuzz::search_request(data);
});
