//! Training data for fitting a static model to the transformer (`tools/train/static_fit.py`):
//! every chunk's embedding text, as Sextant's parser and chunker make it, read two ways:
//! the rows of a static model's table that its vector is the mean of, and the local
//! transformer's document vector. With `QUERIES=1`, the first sentences of documented
//! symbols (`sextant::dev::pairs`) instead, with the transformer's *question* vector: the
//! table learns where the transformer puts a question in words.
//!
//! Usage: `cargo run --example static_fit_data -- OUT MAX_PER_DIR DIR...` with
//! `SEXTANT_DATA_DIR` (a data directory whose `models/` and `runtime/` hold the
//! transformer, `sextant-code-small-v1-int8` unless `SEXTANT_EMBED_MODEL` names another)
//! and `STATIC_MODEL_DIR` (the static model whose tokenizer and vocabulary are fitted).
//! At most MAX_PER_DIR chunks a directory, chosen by a hash of their text (the same on
//! every run); texts seen before are skipped. OUT is binary, little-endian: `SFD1`, the
//! transformer's width (u32), then a record a chunk: the row count (u32), the rows
//! (u32 each), the vector (f32 each).

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use sextant::chunk::{ChunkOptions, chunk_file};
use sextant::embed::provider::EmbedConfig;
use sextant::embed::{Embedder, InputKind};
use sextant::parse::{Language, ParseLimits, parse_bytes};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Texts embedded per call (the progress line's step).
const STEP: usize = 256;

fn texts_of(root: &Path, limit: usize, seen: &mut HashSet<u64>, questions: bool) -> Vec<String> {
    let mut found: Vec<(u64, String)> = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .filter_entry(|e| e.file_name() != "node_modules" && e.file_name() != ".git")
        .sort_by_file_path(Ord::cmp)
        .build();
    for entry in walker.flatten() {
        let path = entry.path();
        if !entry.file_type().is_some_and(|t| t.is_file()) || Language::from_path(path).is_none() {
            continue;
        }
        let Ok(rel) = path.strip_prefix(root) else {
            continue;
        };
        let rel = rel.to_string_lossy().replace('\\', "/");
        let Ok(source) = std::fs::read_to_string(path) else {
            continue;
        };
        let texts: Vec<String> = if questions {
            match sextant::dev::pairs::doc_pairs(&rel, &source) {
                Ok(Ok(pairs)) => pairs.into_iter().map(|p| p.description).collect(),
                _ => continue,
            }
        } else {
            let limits = ParseLimits {
                max_file_bytes: 1 << 20,
            };
            let Ok(parsed) = parse_bytes(Path::new(&rel), source.as_bytes(), &limits) else {
                continue;
            };
            chunk_file(&rel, &source, &parsed, &ChunkOptions::default())
                .into_iter()
                .map(|c| c.embedding_text)
                .collect()
        };
        for text in texts {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            text.hash(&mut h);
            found.push((h.finish(), text));
        }
    }
    found.sort();
    found.dedup_by_key(|(h, _)| *h);
    found
        .into_iter()
        .filter(|(h, _)| seen.insert(*h))
        .take(limit)
        .map(|(_, t)| t)
        .collect()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [out, limit, dirs @ ..] = args.as_slice() else {
        return Err("usage: static_fit_data OUT MAX_PER_DIR DIR...".into());
    };
    let limit: usize = limit.parse()?;
    let data_dir = PathBuf::from(std::env::var("SEXTANT_DATA_DIR")?);
    let config = EmbedConfig {
        model: std::env::var("SEXTANT_EMBED_MODEL").ok(),
        static_model_dir: Some(PathBuf::from(std::env::var("STATIC_MODEL_DIR")?)),
        auto_fetch: false,
        ..EmbedConfig::default()
    };
    let mut log = |line: &str| eprintln!("{line}");
    let table = config.load_static(&data_dir, &mut log)?;
    let (teacher, _) = config.load_onnx_teacher(&data_dir, &mut log)?;
    let mut file = std::io::BufWriter::new(std::fs::File::create(out)?);
    file.write_all(b"SFD1")?;
    file.write_all(&(teacher.dims() as u32).to_le_bytes())?;
    let questions = std::env::var("QUERIES").is_ok_and(|v| v == "1");
    let kind = if questions {
        InputKind::Query
    } else {
        InputKind::Document
    };
    let mut seen = HashSet::new();
    let started = std::time::Instant::now();
    let mut total = 0usize;
    for dir in dirs {
        let texts = texts_of(Path::new(dir), limit, &mut seen, questions);
        eprintln!("{dir}: {} texts", texts.len());
        for step in texts.chunks(STEP) {
            let vectors = teacher.embed(step, kind).await?;
            for (text, vector) in step.iter().zip(&vectors) {
                let ids = table.token_ids(text)?;
                file.write_all(&(ids.len() as u32).to_le_bytes())?;
                ids.iter()
                    .try_for_each(|id| file.write_all(&id.to_le_bytes()))?;
                vector
                    .iter()
                    .try_for_each(|x| file.write_all(&x.to_le_bytes()))?;
            }
            total += step.len();
            eprintln!(
                "{total} texts embedded, {:.0} s",
                started.elapsed().as_secs_f64()
            );
        }
    }
    file.flush()?;
    Ok(())
}
