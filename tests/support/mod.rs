//! Shared test harnesses.
#![allow(dead_code)]

pub mod embedders;
pub mod mock_http;
pub mod models;
pub mod postgres;

/// Prints a banner for a check that could not run (written to the stderr handle directly:
/// the harness captures `eprintln!` of passing tests, and a skip must be seen).
pub fn skip(what: &str, why: &str) {
    use std::io::Write;
    let banner = format!(
        "\n==================== SKIPPED: {what} ====================\n{why}\n\
         This check did NOT run.\n\
         ==========================================================\n"
    );
    let _ = std::io::stderr().write_all(banner.as_bytes());
}
