#![no_main]
//! See `sextant::dev::fuzz::query` (../../src/dev/fuzz.rs) for what this target checks.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sextant_fuzz::fuzz::query(data);
});
