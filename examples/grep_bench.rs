//! Grep latency against ripgrep over the same files:
//! `cargo run --example grep_bench -- DATA_DIR CORPUS_DIR [RUNS]`.
//!
//! For a rare literal, a common literal and a regex it times, `RUNS` times each (default
//! 20): Sextant's first page (100 matches, what an agent gets), every match (pages of
//! 1,000 followed by cursor), and `rg -L -n` over `CORPUS_DIR` restricted to the indexed
//! languages (its output discarded), in one run so the ratio compares like with like.
//! Prints a Markdown table for docs/BENCHMARKS.md, with the grep index's size. Read-only;
//! the patterns come from the command line when given as `label=mode:pattern` after RUNS.

use std::error::Error;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "common/disk.rs"]
mod disk;

use sextant::search::grep::{CompiledGrep, GrepMode, GrepRequest, GrepScope, run};
use sextant::store::grep::GrepIndex;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// Every repository's grep index under `DATA_DIR/grep`.
fn scopes(index: &GrepIndex) -> Result<Vec<GrepScope>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(index.dir())? {
        let id = entry?.file_name().to_string_lossy().into_owned();
        out.push(GrepScope {
            snapshot: index.snapshot(&id),
            name: id,
            commit: None,
            tracked: None,
        });
    }
    Ok(out)
}

fn quantile(samples: &mut [f64], q: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
    samples[i]
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(data), Some(corpus)) = (args.first(), args.get(1)) else {
        return Err("usage: grep_bench DATA_DIR CORPUS_DIR [RUNS] [label=mode:pattern …]".into());
    };
    let runs: usize = args.get(2).map(|r| r.parse()).transpose()?.unwrap_or(20);
    let mut patterns: Vec<(String, GrepMode, String)> = args
        .iter()
        .skip(3)
        .map(|spec| {
            let (label, rest) = spec
                .split_once('=')
                .ok_or("pattern spec: label=mode:pattern")?;
            let (mode, pattern) = rest
                .split_once(':')
                .ok_or("pattern spec: label=mode:pattern")?;
            let mode = if mode == "regex" {
                GrepMode::Regex
            } else {
                GrepMode::Literal
            };
            Ok::<_, String>((label.to_string(), mode, pattern.to_string()))
        })
        .collect::<std::result::Result<_, _>>()?;
    if patterns.is_empty() {
        patterns = vec![
            (
                "rare literal".into(),
                GrepMode::Literal,
                "ParseDuration(".into(),
            ),
            ("common literal".into(), GrepMode::Literal, "return".into()),
            (
                "regex".into(),
                GrepMode::Regex,
                r"func \w+\(t \*testing\.T\)".into(),
            ),
        ];
    }
    let index = GrepIndex::open(Path::new(data).join("grep"))?;
    let indexed: usize = scopes(&index)?
        .iter()
        .map(|s| s.snapshot.file_count())
        .sum();
    let segments: usize = scopes(&index)?
        .iter()
        .map(|s| s.snapshot.segment_count())
        .sum();
    println!(
        "grep index: {} files in {} segments, {:.1} MB on disk",
        indexed,
        segments,
        disk::dir_bytes(index.dir()) as f64 / 1e6
    );
    println!(
        "\n| pattern | matches | files read (first page) | Sextant first 100 p50 / p95 | Sextant all p50 / p95 | ripgrep p50 / p95 | rg ÷ Sextant (all, p50) |\n|---|---|---|---|---|---|---|"
    );
    let deadline = || Instant::now() + Duration::from_secs(60);
    for (label, mode, pattern) in &patterns {
        let request = |limit: u32, cursor: Option<String>| GrepRequest {
            pattern: pattern.clone(),
            mode: *mode,
            limit: Some(limit),
            cursor,
            ..GrepRequest::default()
        };
        let (mut first, mut all, mut rg) = (Vec::new(), Vec::new(), Vec::new());
        let (mut total, mut read) = (0usize, 0u64);
        for _ in 0..runs {
            let started = Instant::now();
            let page = run(
                &CompiledGrep::new(&request(100, None))?,
                scopes(&index)?,
                deadline(),
            );
            first.push(started.elapsed().as_secs_f64() * 1000.0);
            read = page.files_read;

            let started = Instant::now();
            let (mut cursor, mut count) = (None, 0usize);
            loop {
                let page = run(
                    &CompiledGrep::new(&request(1000, cursor))?,
                    scopes(&index)?,
                    deadline(),
                );
                count += page.matches.len();
                cursor = page.next_cursor;
                if cursor.is_none() {
                    break;
                }
            }
            all.push(started.elapsed().as_secs_f64() * 1000.0);
            total = count;

            let mut rg_cmd = Command::new("rg");
            rg_cmd.args(["-L", "-n", "--no-heading", "--no-config"]);
            for t in ["ts", "js", "py", "go", "rust", "java"] {
                rg_cmd.args(["-t", t]);
            }
            if *mode == GrepMode::Literal {
                rg_cmd.arg("-F");
            }
            rg_cmd.arg("-e").arg(pattern).arg(corpus);
            let started = Instant::now();
            let status = rg_cmd
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()?;
            rg.push(started.elapsed().as_secs_f64() * 1000.0);
            if !status.success() && status.code() != Some(1) {
                return Err(format!("rg failed: {status}").into());
            }
        }
        let (f50, f95) = (quantile(&mut first, 0.5), quantile(&mut first, 0.95));
        let (a50, a95) = (quantile(&mut all, 0.5), quantile(&mut all, 0.95));
        let (r50, r95) = (quantile(&mut rg, 0.5), quantile(&mut rg, 0.95));
        println!(
            "| {label} `{pattern}` | {total} | {read} of {indexed} | {f50:.1} / {f95:.1} ms | {a50:.1} / {a95:.1} ms | {r50:.1} / {r95:.1} ms | {:.1}× |",
            r50 / a50
        );
    }
    Ok(())
}
