//! Scout's co-change benchmark: from a real project's release history, the symbols that
//! changed together with a symbol whose signature changed. Scout from that symbol (on the
//! older version's index) should point at them.
//!
//! For each pair of consecutive versions in `SEXTANT_COCHANGE_DIR` (default
//! `~/.cache/sextant/corpora/cochange/@tanstack+query-core`, one `<version>/src` each;
//! fetch with `tools/scout-cochange/fetch.sh`):
//! - every declared symbol of both versions is keyed by file and breadcrumb;
//! - a **seed** is a symbol present in both whose signature changed;
//! - its **co-changed** symbols are the innermost other symbols present in both whose
//!   source changed and whose old source depends on the seed by its text (a top-level
//!   seed named as a whole word; a member `Parent > name` with `Parent` named and `.name`
//!   or `name:` used): what a person changing the seed had to change with it (nested
//!   symbols of the seed and its parents excepted; constructors are not seeds);
//! - Scout runs `symbol = <file> > <breadcrumb>` with the default budget on the older
//!   version's index; a co-changed symbol is found when a pointer (medium or high risk)
//!   lies inside it.
//!
//! Prints recall (found / co-changed), pointers per query, nodes explored and wall time per
//! query. `cargo bench --profile dev --bench scout_cochange`.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use sextant::auth::Principal;
use sextant::chunk::{ChunkOptions, chunk_file};
use sextant::embed::{BatchLimits, EmbedError, Embedder, InputKind};
use sextant::index::{IndexOptions, Indexer, JobRunner, Progress};
use sextant::parse::{ParseLimits, parse_bytes};
use sextant::search::Searcher;
use sextant::service::{ScoutRequest, Service};
use sextant::store::{LanceStore, LanceStoreOptions, SqlMetaStore};

/// Scout does not read vectors; any fixed embedding will do.
struct Flat;

#[async_trait]
impl Embedder for Flat {
    fn model_id(&self) -> &str {
        "flat"
    }
    fn dims(&self) -> usize {
        8
    }
    fn limits(&self) -> BatchLimits {
        BatchLimits {
            max_texts: 256,
            max_tokens: 1 << 20,
            max_text_tokens: 1 << 16,
        }
    }
    async fn embed(&self, texts: &[String], _: InputKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.1f32; 8];
                v[t.len() % 8] = 1.0;
                v
            })
            .collect())
    }
}

/// A declared symbol of one version.
#[derive(Debug, Clone)]
struct Symbol {
    name: String,
    kind: String,
    signature: String,
    source: String,
    start: u32,
    end: u32,
}

const STATEMENTS: &[&str] = &[
    "import",
    "re-export",
    "export",
    "expression",
    "statement",
    "error",
];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "ts" || e == "tsx")
            && !path.to_string_lossy().contains("__tests__")
        {
            out.push(path);
        }
    }
}

/// `(file, breadcrumb) → symbol` of one version's `src`.
fn symbols(root: &Path) -> BTreeMap<(String, String), Symbol> {
    let mut out = BTreeMap::new();
    let mut paths = Vec::new();
    files(root, &mut paths);
    for path in paths {
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let Ok(parsed) = parse_bytes(&path, &bytes, &ParseLimits::default()) else {
            continue;
        };
        let source = String::from_utf8_lossy(&bytes);
        for c in chunk_file(&rel, &source, &parsed, &ChunkOptions::default()) {
            let kind = c.node_kind.as_str().to_string();
            if STATEMENTS.contains(&kind.as_str()) {
                continue;
            }
            out.insert(
                (rel.clone(), c.breadcrumb.clone()),
                Symbol {
                    name: c.name.clone(),
                    kind,
                    signature: c.signature.clone(),
                    source: c.full_source.clone(),
                    start: c.start_line,
                    end: c.end_line,
                },
            );
        }
    }
    out
}

fn names_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    text.match_indices(word)
        .any(|(i, _)| !text[..i].ends_with(ident) && !text[i + word.len()..].starts_with(ident))
}

/// Whether `source` plausibly depends on the seed: it names a top-level seed as a word;
/// for a member (`Parent > name`), it names the parent and uses the member (`.name` or
/// `name:`), since short member names (`options`, `set`) are everywhere.
fn depends_on(source: &str, key: &(String, String), seed: &Symbol) -> bool {
    let parents: Vec<&str> = key.1.split(" > ").collect();
    match parents.as_slice() {
        [_] => names_word(source, &seed.name),
        [.., parent, _] => {
            names_word(source, parent)
                && (source.contains(&format!(".{}", seed.name))
                    || source.contains(&format!("{}:", seed.name)))
        }
        [] => false,
    }
}

fn version_key(v: &str) -> Vec<u64> {
    v.split(['.', '-']).filter_map(|p| p.parse().ok()).collect()
}

async fn service_over(root: &Path, tmp: &Path) -> Arc<Service> {
    let meta = Arc::new(
        SqlMetaStore::open(&tmp.join("db.sqlite").to_string_lossy())
            .await
            .unwrap(),
    );
    let vectors = Arc::new(
        LanceStore::open(LanceStoreOptions::new(
            tmp.join("lance").to_string_lossy(),
            8,
        ))
        .await
        .unwrap(),
    );
    let indexer = Arc::new(
        Indexer::new(
            meta.clone(),
            vectors.clone(),
            Arc::new(Flat),
            IndexOptions::default(),
        )
        .unwrap(),
    );
    let repo = indexer
        .register_path(root, Some("old"), Default::default())
        .await
        .unwrap();
    indexer
        .sync(&repo, &mut Progress::silent(&repo.id))
        .await
        .unwrap();
    let searcher = Searcher::new(meta, vectors, Arc::new(Flat), None);
    let (events, _) = tokio::sync::broadcast::channel(16);
    let jobs = Arc::new(JobRunner::new(indexer.clone(), 1, events.clone()));
    Arc::new(Service::new(indexer, Arc::new(searcher), jobs, events))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dir = std::env::var("SEXTANT_COCHANGE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default())
                .join(".cache/sextant/corpora/cochange/@tanstack+query-core")
        });
    let mut versions: Vec<String> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("src").is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    versions.sort_by_key(|v| version_key(v));
    if versions.len() < 2 {
        eprintln!(
            "SKIPPED: fewer than two versions in {} (fetch them with tools/scout-cochange/fetch.sh)",
            dir.display()
        );
        return;
    }
    let (mut queries, mut cochanged, mut found, mut pointers, mut nodes) = (0, 0, 0, 0, 0u64);
    let mut any_link = 0;
    let mut times = Vec::new();
    for pair in versions.windows(2) {
        let (old_dir, new_dir) = (
            dir.join(&pair[0]).join("src"),
            dir.join(&pair[1]).join("src"),
        );
        let (old, new) = (symbols(&old_dir), symbols(&new_dir));
        let tmp = tempfile::tempdir().unwrap();
        let service = service_over(&old_dir, tmp.path()).await;
        let mut pair_queries = 0;
        for (key, seed) in &old {
            let Some(after) = new.get(key) else { continue };
            if after.signature == seed.signature
                || seed.signature.is_empty()
                || seed.name == "constructor"
            {
                continue;
            }
            let inside = |a: &(String, String), b: &(String, String)| {
                a.0 == b.0 && a.1.starts_with(&format!("{} >", b.1))
            };
            let with: Vec<&(String, String)> = old
                .iter()
                .filter(|(k, s)| {
                    *k != key
                        && !inside(k, key)
                        && !inside(key, k)
                        && new.get(*k).is_some_and(|n| n.source != s.source)
                        && depends_on(&s.source, key, seed)
                })
                .map(|(k, _)| k)
                .collect();
            // The innermost changed symbols only: a class counts through its changed
            // members, not as well as them.
            let with: Vec<&(String, String)> = with
                .iter()
                .filter(|k| !with.iter().any(|o| inside(o, k)))
                .copied()
                .collect();
            if with.is_empty() {
                continue;
            }
            let started = Instant::now();
            let request = ScoutRequest {
                query: format!("symbol = {} > {}", key.0, key.1),
                ..ScoutRequest::default()
            };
            let mut linked = HashSet::new();
            let answer = service
                .scout(&Principal::local(), request, |v, _| {
                    linked.insert(v.link.location());
                })
                .await
                .unwrap();
            times.push(started.elapsed().as_secs_f64() * 1000.0);
            // Whether one of `locations` (`path:line`) lies inside `k`.
            let within = |k: &(String, String), locations: &[&String]| {
                let s = &old[k];
                locations.iter().any(|location| {
                    location.rsplit_once(':').is_some_and(|(path, line)| {
                        path == k.0
                            && line
                                .parse::<u32>()
                                .is_ok_and(|l| l >= s.start && l <= s.end)
                    })
                })
            };
            let hit = |k: &(String, String)| {
                within(
                    k,
                    &answer
                        .pointers
                        .iter()
                        .map(|p| &p.location)
                        .collect::<Vec<_>>(),
                )
            };
            if std::env::var_os("SEXTANT_COCHANGE_MISSES").is_some() {
                for k in with.iter().filter(|k| !hit(k)) {
                    eprintln!("  miss: {} > {}  <-  {}", k.0, k.1, key.1);
                }
            }
            queries += 1;
            pair_queries += 1;
            cochanged += with.len();
            found += with.iter().filter(|k| hit(k)).count();
            any_link += with
                .iter()
                .filter(|k| within(k, &linked.iter().collect::<Vec<_>>()))
                .count();
            pointers += answer.pointers.len();
            nodes += u64::from(answer.meta.nodes_visited);
            let _ = &seed.kind;
        }
        eprintln!("{} → {}: {pair_queries} queries", pair[0], pair[1]);
    }
    times.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        times
            .get(((times.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    println!(
        "{} versions, {queries} queries (a changed signature with co-changed dependants), {cochanged} co-changed symbols",
        versions.len()
    );
    println!(
        "recall of co-changed symbols among pointers: {found}/{cochanged} = {:.3}; among every rated link: {any_link}/{cochanged} = {:.3}",
        found as f64 / cochanged.max(1) as f64,
        any_link as f64 / cochanged.max(1) as f64
    );
    println!(
        "pointers per query {:.1}, nodes explored per query {:.1}, wall time per query p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
        pointers as f64 / queries.max(1) as f64,
        nodes as f64 / queries.max(1) as f64,
        pct(0.5),
        pct(0.95),
        pct(1.0)
    );
}
