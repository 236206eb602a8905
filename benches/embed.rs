//! Local embedding throughput on real chunks: chunks/s and CPU-ms per chunk for the
//! default model (Sextant's own, int8 with ONNX Runtime), the general model it was
//! trained from (bge-small-en-v1.5 int8, at two input caps), the
//! candle transformer (all-MiniLM-L6-v2) and the static model distilled from it; then
//! query-embedding latency (p50/p95 over the dev set's questions, one at a time).
//!
//! `cargo bench --bench embed` (release) or `cargo bench --profile dev --bench embed`.
//! Chunks come from the rxjs eval corpus when the corpora test has cached it
//! (`~/.cache/sextant/corpora`), else from `fixtures/parser`. Models come from
//! `SEXTANT_MODEL_CACHE` (default `~/.cache/sextant/models`), fetched/distilled if missing.
//! SEXTANT_BENCH_CHUNKS caps the transformer run (default 400).

use std::path::{Path, PathBuf};
use std::time::Instant;

use sextant::chunk::chunk_file;
use sextant::config::Config;
use sextant::embed::bert::BertOptions;
use sextant::embed::provider::distill_into;
use sextant::embed::static_model::DistillOptions;
use sextant::embed::{BertEmbedder, InputKind, OnnxEmbedder, StaticEmbedder};
use sextant::embed::{fetch, manifest, runtime};

use sextant::parse::parse_bytes;

const DEFAULT_MODEL_NAME: &str = "all-minilm-l6-v2";
/// The general model Sextant's own was trained from.
const BGE: &str = "bge-small-en-v1.5-int8";

fn home_cache(sub: &str) -> PathBuf {
    let home = std::env::var_os("HOME").map_or_else(std::env::temp_dir, PathBuf::from);
    home.join(".cache/sextant").join(sub)
}

/// Process CPU time (user + system) in milliseconds, from /proc (Linux).
fn cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 (1-based), 11 and 12 after the command name.
    (ticks(11) + ticks(12)) * 10.0
}

fn chunks(root: &Path) -> Vec<String> {
    let config = Config::default();
    let mut out = Vec::new();
    for path in sextant::cli::source_files(root) {
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let Ok(parsed) = parse_bytes(&path, &bytes, &config.parse) else {
            continue;
        };
        let source = String::from_utf8_lossy(&bytes);
        let name = path.display().to_string();
        out.extend(
            chunk_file(&name, &source, &parsed, &config.chunk)
                .into_iter()
                .map(|c| c.embedding_text),
        );
    }
    out
}

fn report(label: &str, texts: &[String], run: impl FnOnce()) {
    let (wall, cpu) = (Instant::now(), cpu_ms());
    run();
    let secs = wall.elapsed().as_secs_f64();
    let cpu = cpu_ms() - cpu;
    println!(
        "| {label} | {} | {:.1} s | {:.0} chunks/s | {:.2} CPU-ms/chunk |",
        texts.len(),
        secs,
        texts.len() as f64 / secs,
        cpu / texts.len() as f64
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return;
    }
    let rxjs = home_cache("corpora/eval-corpus/rxjs");
    let root = if rxjs.is_dir() {
        rxjs
    } else {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/parser")
    };
    let all = chunks(&root);
    let tokens: usize = all.iter().map(|t| sextant::text::estimate_tokens(t)).sum();
    println!(
        "corpus: {} ({} chunks, mean ~{} tokens of embedding text)",
        root.display(),
        all.len(),
        tokens / all.len().max(1)
    );
    let models = std::env::var_os("SEXTANT_MODEL_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| home_cache("models"));
    let dir = models.join(DEFAULT_MODEL_NAME);
    let m = manifest::find(DEFAULT_MODEL_NAME).expect("manifest");
    fetch::ensure_model(&m, &dir, |l| eprintln!("{l}")).expect("MiniLM");
    let bert = BertEmbedder::load(&dir, BertOptions::default()).expect("load model");
    let static_dir = models.join(format!("{DEFAULT_MODEL_NAME}-static"));
    if !static_dir.join("model.safetensors").is_file() {
        let t = Instant::now();
        distill_into(
            &bert,
            &dir,
            &static_dir,
            DistillOptions::default(),
            &mut |l: &str| eprintln!("{l}"),
        )
        .expect("distill");
        println!("distillation: {:.1} s", t.elapsed().as_secs_f64());
    }
    let fast = StaticEmbedder::load(&static_dir, true).expect("load static");

    let cap: usize = std::env::var("SEXTANT_BENCH_CHUNKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let sample: Vec<String> = all.iter().take(cap).cloned().collect();
    let home = models.parent().unwrap_or(&models).to_path_buf();
    let library = runtime::locate(&home, true, |l| eprintln!("{l}")).expect("ONNX Runtime");
    let onnx = |name: &str, max_tokens: Option<usize>| {
        let m = manifest::find(name).expect("manifest");
        let dir = models.join(&m.name);
        fetch::ensure_model(&m, &dir, |l| eprintln!("{l}")).expect("model files");
        OnnxEmbedder::load(
            &dir,
            &library,
            m,
            BertOptions {
                max_tokens,
                ..BertOptions::default()
            },
        )
        .expect("load the ONNX model")
    };
    let code = onnx(manifest::CODE_MODEL, None);
    let (bge, bge_512) = (onnx(BGE, None), onnx(BGE, Some(512)));
    println!("| model | chunks | wall | throughput | CPU per chunk |\n|---|---|---|---|---|");
    for (label, model) in [
        (
            "sextant-code-small-v1-int8 (ONNX Runtime, 256-token cap: the default)",
            &code,
        ),
        ("bge-small-en-v1.5 int8 (ONNX Runtime, 256-token cap)", &bge),
        (
            "bge-small-en-v1.5 int8 (ONNX Runtime, 512-token cap)",
            &bge_512,
        ),
    ] {
        report(label, &all, || {
            for batch in all.chunks(64) {
                model
                    .embed_blocking(batch, InputKind::Document)
                    .expect("embed");
            }
        });
    }
    report("all-MiniLM-L6-v2 (candle, 256-token cap)", &sample, || {
        for batch in sample.chunks(64) {
            bert.embed_blocking(batch, InputKind::Document)
                .expect("embed");
        }
    });
    report("static (distilled, 256 dims)", &all, || {
        fast.embed_blocking(&all).expect("embed");
    });

    let queries = dev_queries();
    println!("\n| query embedding | queries | p50 | p95 |\n|---|---|---|---|");
    latency("sextant-code-small-v1-int8 (ONNX Runtime)", &queries, |q| {
        code.embed_blocking(&[q.to_string()], InputKind::Query)
            .expect("query");
    });
    latency("bge-small-en-v1.5 int8 (ONNX Runtime)", &queries, |q| {
        bge.embed_blocking(&[q.to_string()], InputKind::Query)
            .expect("query");
    });
    latency("all-MiniLM-L6-v2 (candle)", &queries, |q| {
        bert.embed_blocking(&[q.to_string()], InputKind::Query)
            .expect("query");
    });
}

/// The dev set's questions (`../shared/eval`), or a few fixed ones without it.
fn dev_queries() -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/eval/queries-jsdoc.jsonl");
    let from_file: Vec<String> = std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["query"].as_str().map(String::from))
        .collect();
    if from_file.is_empty() {
        [
            "where do we validate the auth token",
            "retry a failed request with backoff",
        ]
        .map(String::from)
        .to_vec()
    } else {
        from_file
    }
}

fn latency(label: &str, queries: &[String], mut run: impl FnMut(&str)) {
    run("warm up");
    let mut times: Vec<f64> = queries
        .iter()
        .map(|q| {
            let t = Instant::now();
            run(q);
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    println!(
        "| {label} | {} | {:.1} ms | {:.1} ms |",
        times.len(),
        at(0.5),
        at(0.95)
    );
}
