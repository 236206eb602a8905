//! Symbol-graph accuracy against the TypeScript language service.
//!
//! Builds Sextant's graph of a corpus in memory, samples symbols (every k-th function,
//! method, class, interface, type alias, enum and constant, in path order), asks the
//! TypeScript language service (`ts-ground-truth.js`, node + the `typescript` package) for
//! their outgoing calls and references, maps both sides onto Sextant's chunks
//! (`caller chunk → callee chunk`, `referencing chunk → symbol`) and prints precision and
//! recall, plus how often the reference count (distinct files) matches exactly.
//!
//! ```text
//! cargo bench --profile dev --bench graph_accuracy
//! ```
//! Env: `SEXTANT_GRAPH_CORPUS` (default `~/.cache/sextant/corpora/eval-corpus/rxjs`, made by
//! `../shared/eval/get-corpus.sh`), `TYPESCRIPT_MODULE` (default
//! `~/.cache/sextant/corpora/typescript-5.9.3/package`, fetched by `tests/it/corpora.rs`),
//! `SEXTANT_GRAPH_SAMPLE` (default 400), `SEXTANT_GRAPH_VERBOSE=1` lists disagreements.
//! Missing corpus, module or node: a loud skip.

use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use sextant::chunk::CodeChunk;
use sextant::graph::MemoryGraph;
use sextant::parse::SymbolKind;
use sextant::store::EdgeKind;

fn home() -> PathBuf {
    std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from)
}

fn env_path(name: &str, default: PathBuf) -> PathBuf {
    std::env::var_os(name).map_or(default, PathBuf::from)
}

/// Innermost non-callback chunk of `chunks` containing `line`.
fn chunk_at(chunks: &[CodeChunk], line: u32) -> Option<&CodeChunk> {
    chunks
        .iter()
        .filter(|c| c.node_kind != SymbolKind::Callback)
        .filter(|c| c.start_line <= line && line <= c.end_line)
        .max_by_key(|c| (c.depth, c.start_line))
}

/// The declaration chunk named `name` around `line`, else the chunk at `line`.
fn declaration_at<'a>(chunks: &'a [CodeChunk], name: &str, line: u32) -> Option<&'a CodeChunk> {
    chunks
        .iter()
        .filter(|c| c.name == name && c.start_line <= line && line <= c.end_line)
        .max_by_key(|c| c.depth)
        .or_else(|| chunk_at(chunks, line))
}

/// Call-hierarchy items: what the TypeScript service can report as a call target.
fn callable(chunk: &CodeChunk) -> bool {
    matches!(
        chunk.node_kind,
        SymbolKind::Function
            | SymbolKind::Method
            | SymbolKind::Constructor
            | SymbolKind::Class
            | SymbolKind::Component
    )
}

#[derive(Default)]
struct Score {
    truth: usize,
    found: usize,
    hit: usize,
}

impl Score {
    fn add(&mut self, truth: &BTreeSet<(String, String)>, found: &BTreeSet<(String, String)>) {
        self.truth += truth.len();
        self.found += found.len();
        self.hit += truth.intersection(found).count();
    }
    fn line(&self, what: &str) -> String {
        let p = self.hit as f64 / self.found.max(1) as f64;
        let r = self.hit as f64 / self.truth.max(1) as f64;
        format!(
            "{what:<11} precision {p:.3}  recall {r:.3}  ({} agreed, {} Sextant, {} TypeScript)",
            self.hit, self.found, self.truth
        )
    }
}

fn main() {
    let corpus = env_path(
        "SEXTANT_GRAPH_CORPUS",
        home().join(".cache/sextant/corpora/eval-corpus/rxjs"),
    );
    let ts_module = env_path(
        "TYPESCRIPT_MODULE",
        home().join(".cache/sextant/corpora/typescript-5.9.3/package"),
    );
    let sample: usize = std::env::var("SEXTANT_GRAPH_SAMPLE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(400);
    let verbose = std::env::var_os("SEXTANT_GRAPH_VERBOSE").is_some();
    if !corpus.is_dir() || !ts_module.join("package.json").is_file() {
        eprintln!(
            "SKIPPED graph_accuracy: need the corpus at {} and the typescript package at {}",
            corpus.display(),
            ts_module.display()
        );
        return;
    }
    let started = std::time::Instant::now();
    let (files, configs) = sextant::index::read_sources(&corpus).expect("readable corpus");
    let graph = MemoryGraph::build(&files, &configs);
    let build = started.elapsed();

    // The sample, in path order.
    let kinds = [
        SymbolKind::Function,
        SymbolKind::Method,
        SymbolKind::Class,
        SymbolKind::Interface,
        SymbolKind::Type,
        SymbolKind::Enum,
        SymbolKind::Const,
    ];
    let mut candidates: Vec<&CodeChunk> = graph
        .chunks
        .values()
        .flatten()
        .filter(|c| kinds.contains(&c.node_kind) && !c.relative_path.ends_with(".d.ts"))
        .collect();
    candidates
        .sort_by(|a, b| (&a.relative_path, a.start_line).cmp(&(&b.relative_path, b.start_line)));
    let step = (candidates.len() / sample.max(1)).max(1);
    let targets: Vec<&CodeChunk> = candidates.into_iter().step_by(step).take(sample).collect();

    let dir = tempfile::tempdir().expect("temp dir");
    let files_txt = dir.path().join("files.txt");
    let targets_jsonl = dir.path().join("targets.jsonl");
    std::fs::write(
        &files_txt,
        files
            .iter()
            .map(|(p, _)| format!("{p}\n"))
            .collect::<String>(),
    )
    .expect("write files.txt");
    let mut out = std::fs::File::create(&targets_jsonl).expect("targets file");
    for t in &targets {
        let line = serde_json::json!({
            "file": t.relative_path, "name": t.name, "line": t.start_line, "endLine": t.end_line,
        });
        writeln!(out, "{line}").expect("write target");
    }
    drop(out);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/graph/ts-ground-truth.js");
    let ts_started = std::time::Instant::now();
    let output = match Command::new("node")
        .arg(&script)
        .arg(&ts_module)
        .arg(&corpus)
        .arg(&files_txt)
        .arg(&targets_jsonl)
        .output()
    {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            eprintln!(
                "SKIPPED graph_accuracy: node failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            return;
        }
        Err(e) => {
            eprintln!("SKIPPED graph_accuracy: cannot run node: {e}");
            return;
        }
    };
    let ts_time = ts_started.elapsed();

    let by_id: HashMap<&str, &CodeChunk> = graph
        .chunks
        .values()
        .flatten()
        .map(|c| (c.id.as_str(), c))
        .collect();
    let label = |id: &str| {
        by_id.get(id).map_or(id.to_string(), |c| {
            format!("{} > {}", c.relative_path, c.breadcrumb)
        })
    };
    let mut calls = Score::default();
    let mut refs = Score::default();
    let (mut count_exact, mut count_total, mut not_found) = (0usize, 0usize, 0usize);
    let stdout = String::from_utf8_lossy(&output.stdout);
    for (target, line) in targets.iter().zip(stdout.lines()) {
        let truth: serde_json::Value = serde_json::from_str(line).expect("node output is JSON");
        if truth["found"] != true {
            not_found += 1;
            continue;
        }
        let id = target.id.clone();
        // Calls, for functions and methods.
        if matches!(target.node_kind, SymbolKind::Function | SymbolKind::Method) {
            let mut want = BTreeSet::new();
            for call in truth["calls"].as_array().into_iter().flatten() {
                let file = call["file"].as_str().unwrap_or("");
                let name = call["name"].as_str().unwrap_or("");
                let line = call["line"].as_u64().unwrap_or(0) as u32;
                if let Some(callee) = graph
                    .chunks
                    .get(file)
                    .and_then(|c| declaration_at(c, name, line))
                    && callable(callee)
                {
                    want.insert((id.clone(), callee.id.clone()));
                }
            }
            let got: BTreeSet<(String, String)> = graph
                .slice
                .outgoing
                .get(&id)
                .into_iter()
                .flatten()
                .filter(|e| e.kind == EdgeKind::Calls && e.certain)
                .filter_map(|e| e.to_chunk.clone())
                .filter(|to| *to != id && by_id.get(to.as_str()).is_some_and(|c| callable(c)))
                .map(|to| (id.clone(), to))
                .collect();
            let want: BTreeSet<(String, String)> =
                want.into_iter().filter(|(_, to)| *to != id).collect();
            if verbose {
                for (_, to) in want.difference(&got) {
                    println!("call missed: {} -> {}", label(&id), label(to));
                }
                for (_, to) in got.difference(&want) {
                    println!("call extra:  {} -> {}", label(&id), label(to));
                }
            }
            calls.add(&want, &got);
        }
        // References: referencing chunk → target.
        let mut want = BTreeSet::new();
        let mut want_files = BTreeSet::new();
        for r in truth["refs"].as_array().into_iter().flatten() {
            let file = r["file"].as_str().unwrap_or("");
            let line = r["line"].as_u64().unwrap_or(0) as u32;
            want_files.insert(file.to_string());
            if let Some(from) = graph.chunks.get(file).and_then(|c| chunk_at(c, line))
                && from.id != id
            {
                want.insert((from.id.clone(), id.clone()));
            }
        }
        let incoming: Vec<_> = graph
            .slice
            .incoming
            .get(&id)
            .into_iter()
            .flatten()
            .filter(|e| e.kind != EdgeKind::Imports && e.from_chunk != id)
            .collect();
        let got: BTreeSet<(String, String)> = incoming
            .iter()
            .map(|e| (e.from_chunk.clone(), id.clone()))
            .collect();
        if verbose {
            for (from, _) in want.difference(&got) {
                println!("ref missed:  {} <- {}", label(&id), label(from));
            }
            for (from, _) in got.difference(&want) {
                println!("ref extra:   {} <- {}", label(&id), label(from));
            }
        }
        refs.add(&want, &got);
        let meta = graph.slice.metadata(&id);
        count_total += 1;
        if meta.is_some_and(|m| m.reference_count() == want_files.len()) {
            count_exact += 1;
        }
    }
    println!(
        "Symbol graph vs TypeScript language service: {} ({} files), {} sampled symbols ({} not located)",
        corpus.display(),
        files.len(),
        targets.len(),
        not_found
    );
    println!("{}", calls.line("calls"));
    println!("{}", refs.line("references"));
    println!(
        "reference count (distinct files) exact for {count_exact}/{count_total} symbols ({:.3})",
        count_exact as f64 / count_total.max(1) as f64
    );
    println!(
        "Sextant graph build (parse + chunk + resolve, in memory): {:.2} s; TypeScript service: {:.2} s",
        build.as_secs_f64(),
        ts_time.as_secs_f64()
    );
}
