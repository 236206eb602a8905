//! How long counting real tokens takes: `cargo run --example count_tokens -- [DIR]`.
//!
//! Reads every `.rs`, `.ts`, `.js`, `.py`, `.go` and `.java` file under `DIR` (default
//! `src`) into one text and counts it once in each encoding, after loading the encoding,
//! so that neither the parse nor the count cache is timed. Prints a line per encoding for
//! docs/BENCHMARKS.md.

use std::time::Instant;

use sextant::text::Tokenizer;

fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "src".into());
    let mut text = String::new();
    for entry in walkdir::WalkDir::new(&dir).sort_by_file_name() {
        let Ok(entry) = entry else { continue };
        let code = entry
            .path()
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| ["rs", "ts", "js", "py", "go", "java"].contains(&e));
        if code && let Ok(file) = std::fs::read_to_string(entry.path()) {
            text += &file;
        }
    }
    for tokenizer in Tokenizer::ALL {
        tokenizer.load();
        let start = Instant::now();
        let tokens = tokenizer.count(&text);
        println!(
            "{tokenizer}: {} bytes of {dir}, {tokens} tokens in {:.1} ms",
            text.len(),
            start.elapsed().as_secs_f64() * 1000.0
        );
    }
}
