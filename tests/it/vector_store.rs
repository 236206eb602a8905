//! The LanceDB chunk store on a real LanceDB directory.

use std::path::Path;
use std::sync::Arc;

use sextant::chunk::{ChunkOptions, chunk_file};
use sextant::parse::{ParseLimits, parse_bytes};
use sextant::store::{
    ChunkFilter, ChunkRow, LanceStore, LanceStoreOptions, ScoredChunk, VectorStore,
};

const DIMS: usize = 8;

/// A deterministic unit vector per text (bag of hashed words), so similar texts are near.
fn embed(text: &str) -> Vec<f32> {
    let mut v = [0f32; DIMS];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let h = word
            .bytes()
            .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
        v[(h as usize) % DIMS] += 1.0;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    v.iter().map(|x| x / norm).collect()
}

fn rows(repo: &str, rel: &str, source: &str) -> Vec<ChunkRow> {
    let parsed =
        parse_bytes(Path::new(rel), source.as_bytes(), &ParseLimits::default()).expect("parses");
    chunk_file(rel, source, &parsed, &ChunkOptions::default())
        .into_iter()
        .map(|chunk| ChunkRow {
            repo_id: repo.into(),
            file_path: format!("/work/{repo}/{rel}"),
            vector: embed(&chunk.embedding_text),
            chunk,
            content_hash: "h1".into(),
            last_modified: 1_700_000_000_000,
            code_in_file: false,
        })
        .collect()
}

/// [`rows`] written ahead of their vectors (progressive indexing).
fn pending_rows(repo: &str, rel: &str, source: &str) -> Vec<ChunkRow> {
    rows(repo, rel, source)
        .into_iter()
        .map(|mut row| {
            row.vector.clear();
            row
        })
        .collect()
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/parser")
            .join(name),
    )
    .expect("fixture")
}

async fn open(dir: &Path) -> LanceStore {
    LanceStore::open(LanceStoreOptions::new(
        dir.join("lance").to_string_lossy(),
        DIMS,
    ))
    .await
    .expect("open store")
}

fn ids(rows: &[ChunkRow]) -> Vec<String> {
    let mut v: Vec<String> = rows.iter().map(|r| r.chunk.id.clone()).collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trip_replace_filters_and_deletes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path()).await;
    let classes = rows("r1", "src/classes.ts", &fixture("classes.ts"));
    let component = rows(
        "r1",
        "web/component-function.tsx",
        &fixture("component-function.tsx"),
    );
    let commonjs = rows("r2", "lib/commonjs.cjs", &fixture("commonjs.cjs"));
    store
        .replace_file("r1", "src/classes.ts", classes.clone())
        .await
        .expect("write");
    store
        .replace_file("r1", "web/component-function.tsx", component.clone())
        .await
        .expect("write");
    store
        .replace_file("r2", "lib/commonjs.cjs", commonjs.clone())
        .await
        .expect("write");

    // Round trip: every field of every chunk comes back (the collapsed ranges too: what
    // the store keeps a container's `content` as), but `search_text`, which lives in the
    // full-text index only, and the embedding text, kept only until the row has its
    // vector.
    let mut expected = classes.clone();
    expected.sort_by_key(|r| (r.chunk.bytes.start, r.chunk.depth));
    assert!(expected.iter().all(|r| !r.chunk.search_text.is_empty()));
    assert!(expected.iter().any(|r| !r.chunk.collapsed.is_empty()));
    for r in &mut expected {
        assert!(!r.vector.is_empty() && !r.chunk.embedding_text.is_empty());
        r.chunk.search_text.clear();
        r.chunk.embedding_text.clear();
        // Vectors are kept in half precision.
        r.vector = r
            .vector
            .iter()
            .map(|x| half::f16::from_f32(*x).to_f32())
            .collect();
    }
    let mut back = store.get("r1", &ids(&expected)).await.expect("get");
    back.sort_by_key(|r| (r.chunk.bytes.start, r.chunk.depth));
    assert_eq!(back, expected);
    // A file's chunks: the same rows, in source order, without what only search and
    // embedding read.
    let back = store
        .file_chunks("r1", "src/classes.ts")
        .await
        .expect("read");
    for r in &mut expected {
        r.vector.clear();
    }
    assert_eq!(back, expected);
    // Several files in one read: each in source order, another repository's file and an
    // unknown path left out.
    let both = store
        .files_chunks(
            "r1",
            &[
                "src/classes.ts".into(),
                "web/component-function.tsx".into(),
                "lib/commonjs.cjs".into(),
                "nowhere.ts".into(),
            ],
        )
        .await
        .expect("read");
    let mut keys: Vec<&String> = both.keys().collect();
    keys.sort();
    assert_eq!(keys, ["src/classes.ts", "web/component-function.tsx"]);
    assert_eq!(both["src/classes.ts"], expected);
    assert_eq!(
        ids(&both["web/component-function.tsx"]),
        ids(&component),
        "every chunk of the second file"
    );
    assert!(
        both["web/component-function.tsx"].windows(2).all(|w| (
            w[0].chunk.bytes.start,
            w[0].chunk.depth
        ) <= (
            w[1].chunk.bytes.start,
            w[1].chunk.depth
        )),
        "source order"
    );
    let some: Vec<String> = classes.iter().take(3).map(|r| r.chunk.id.clone()).collect();
    assert_eq!(ids(&store.get("r1", &some).await.expect("get")), {
        let mut s = some.clone();
        s.sort();
        s
    });
    assert!(
        store.get("r2", &some).await.expect("get").is_empty(),
        "ids are scoped by repository"
    );

    // Filters are pushed into both searches and counts.
    let all = ChunkFilter::default();
    assert_eq!(
        store.count(&all).await.expect("count"),
        classes.len() + component.len() + commonjs.len()
    );
    let r1 = ChunkFilter {
        repositories: vec!["r1".into()],
        ..Default::default()
    };
    assert_eq!(
        store.count(&r1).await.expect("count"),
        classes.len() + component.len()
    );
    let tsx = ChunkFilter {
        languages: vec!["tsx".into()],
        ..Default::default()
    };
    assert_eq!(store.count(&tsx).await.expect("count"), component.len());
    let methods = ChunkFilter {
        kinds: vec!["method".into()],
        paths: vec!["src/".into()],
        ..Default::default()
    };
    let n_methods = classes
        .iter()
        .filter(|r| r.chunk.node_kind.as_str() == "method")
        .count();
    assert_eq!(store.count(&methods).await.expect("count"), n_methods);
    let glob = ChunkFilter {
        paths: vec!["**/*.tsx".into()],
        ..Default::default()
    };
    assert_eq!(store.count(&glob).await.expect("count"), component.len());
    let shallow = ChunkFilter {
        paths: vec!["*.ts".into()],
        ..Default::default()
    };
    assert_eq!(
        store.count(&shallow).await.expect("count"),
        0,
        "* does not cross directories"
    );

    let target = classes
        .iter()
        .find(|r| r.chunk.breadcrumb == "BaseService > dispose")
        .expect("dispose");
    let hits = store
        .vector_search(&target.vector, 5, &all)
        .await
        .expect("search");
    assert_eq!(
        hits[0].row.chunk.id, target.chunk.id,
        "a chunk is its own nearest neighbour"
    );
    assert!(
        (hits[0].score - 1.0).abs() < 1e-4,
        "cosine similarity of identical vectors is 1"
    );
    let filtered = store
        .vector_search(&target.vector, 50, &tsx)
        .await
        .expect("search");
    assert!(!filtered.is_empty() && filtered.iter().all(|h| h.row.chunk.language.id() == "tsx"));

    let text = store
        .text_search("repository connect", 10, &all)
        .await
        .expect("fts");
    assert!(!text.is_empty());
    assert!(
        text.iter()
            .any(|h| h.row.chunk.breadcrumb == "UserService > start"),
        "finds `this.repo.connect()`"
    );
    assert!(
        text.windows(2).all(|w| w[0].score >= w[1].score),
        "best first"
    );
    let text_r2 = store
        .text_search(
            "repository connect",
            10,
            &ChunkFilter {
                repositories: vec!["r2".into()],
                ..Default::default()
            },
        )
        .await
        .expect("fts");
    assert!(text_r2.iter().all(|h| h.row.repo_id == "r2"));
    assert!(
        store
            .text_search("   ", 10, &all)
            .await
            .expect("fts")
            .is_empty()
    );

    // Rows written after the text index exist are still found (flat search of new rows).
    let late = rows(
        "r2",
        "lib/late.ts",
        "export function zanzibarQuokka() { return 1; }\n",
    );
    store
        .replace_file("r2", "lib/late.ts", late)
        .await
        .expect("write");
    let found = store
        .text_search("zanzibar quokka", 5, &all)
        .await
        .expect("fts");
    assert_eq!(
        found.first().map(|h| h.row.chunk.name.as_str()),
        Some("zanzibarQuokka")
    );

    // Replacing a file: vanished chunks go, changed ones update, other files untouched.
    let edited = fixture("classes.ts").replace(
        "  static create(): UserService {\n    return new UserService(new Repository());\n  }\n",
        "",
    );
    let edited_rows = rows("r1", "src/classes.ts", &edited);
    assert_eq!(edited_rows.len(), classes.len() - 1);
    store
        .replace_file("r1", "src/classes.ts", edited_rows.clone())
        .await
        .expect("write");
    assert_eq!(
        ids(&store
            .file_chunks("r1", "src/classes.ts")
            .await
            .expect("read")),
        ids(&edited_rows)
    );
    assert_eq!(
        store
            .file_chunks("r1", "web/component-function.tsx")
            .await
            .expect("read")
            .len(),
        component.len()
    );

    // Deletes leave nothing behind.
    store
        .delete_file("r1", "src/classes.ts")
        .await
        .expect("delete");
    assert!(
        store
            .file_chunks("r1", "src/classes.ts")
            .await
            .expect("read")
            .is_empty()
    );
    store.delete_repo("r2").await.expect("delete");
    assert_eq!(
        store
            .count(&ChunkFilter {
                repositories: vec!["r2".into()],
                ..Default::default()
            })
            .await
            .expect("count"),
        0
    );
    assert_eq!(store.count(&all).await.expect("count"), component.len());

    // Wrong-width vectors and mismatched rows are refused.
    let mut bad = rows("r1", "x.ts", "const x = 1;\n");
    bad[0].vector.push(0.0);
    assert!(store.replace_file("r1", "x.ts", bad).await.is_err());
    assert!(
        store
            .replace_file("r1", "y.ts", rows("r1", "x.ts", "const x = 1;\n"))
            .await
            .is_err()
    );
    assert!(store.vector_search(&[1.0], 3, &all).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopening_sees_the_same_data_and_checks_dimensions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let chunks = rows("r1", "src/functions.ts", &fixture("functions.ts"));
    {
        let store = open(dir.path()).await;
        store
            .replace_file("r1", "src/functions.ts", chunks.clone())
            .await
            .expect("write");
    }
    let store = open(dir.path()).await;
    assert_eq!(
        ids(&store
            .file_chunks("r1", "src/functions.ts")
            .await
            .expect("read")),
        ids(&chunks)
    );
    assert!(
        !store
            .text_search("format", 5, &ChunkFilter::default())
            .await
            .expect("fts")
            .is_empty()
    );
    let err = LanceStore::open(LanceStoreOptions::new(
        dir.path().join("lance").to_string_lossy(),
        16,
    ))
    .await
    .expect_err("mismatch");
    assert!(
        err.to_string().contains("8-dimensional") && err.to_string().contains("16-dimensional"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_never_see_a_half_replaced_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(open(dir.path()).await);
    let big = rows("r1", "src/a.ts", &fixture("classes.ts"));
    let small = rows(
        "r1",
        "src/a.ts",
        &fixture("functions.ts").replace("functions", "a"),
    );
    let (nb, ns) = (big.len(), small.len());
    assert_ne!(nb, ns);
    store
        .replace_file("r1", "src/a.ts", big.clone())
        .await
        .expect("write");
    let reader = {
        let store = store.clone();
        tokio::spawn(async move {
            let filter = ChunkFilter {
                paths: vec!["src/a.ts".into()],
                ..Default::default()
            };
            let mut seen = std::collections::BTreeSet::new();
            for _ in 0..60 {
                seen.insert(store.count(&filter).await.expect("count"));
            }
            seen
        })
    };
    for i in 0..12 {
        let next = if i % 2 == 0 {
            small.clone()
        } else {
            big.clone()
        };
        store
            .replace_file("r1", "src/a.ts", next)
            .await
            .expect("write");
    }
    let seen = reader.await.expect("reader");
    println!("reader saw counts {seen:?}");
    assert!(
        seen.iter().all(|n| *n == nb || *n == ns),
        "reader saw {seen:?}, expected only {nb} or {ns}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maintenance_indexes_and_keeps_the_directory_bounded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = LanceStoreOptions::new(dir.path().join("lance").to_string_lossy(), DIMS);
    options.prune_older_than = std::time::Duration::ZERO;
    options.maintain_every_writes = 1_000; // only explicit maintenance in this test
    let store = LanceStore::open(options).await.expect("open");
    let chunks = rows(
        "r1",
        "src/a.ts",
        &fixture("functions.ts").replace("functions", "a"),
    );
    for _ in 0..40 {
        store
            .replace_file("r1", "src/a.ts", chunks.clone())
            .await
            .expect("write");
    }
    // The table's data files (its indexes' files live beside them, in `_indices`).
    let data_files = || {
        walk(&dir.path().join("lance").join("chunks.lance").join("data"))
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "lance"))
            .count()
    };
    let before = data_files();
    // What `sextant doctor` and `/metrics` report: every write kept a version, and the
    // directory holds far more than the current version uses.
    let kept = store.storage().await.expect("storage");
    let on_disk = kept.disk_bytes.expect("a local store has a size on disk");
    println!("before maintenance: {kept:?}");
    assert!(kept.versions >= 40, "{kept:?}");
    assert!(
        kept.live_bytes > 0 && on_disk > 2 * kept.live_bytes,
        "{kept:?}"
    );
    let stats = store.maintain().await.expect("maintain");
    let after = data_files();
    let pruned = &store.storage().await.expect("storage");
    println!("after maintenance: {pruned:?}");
    assert!(pruned.versions < kept.versions / 4, "{pruned:?}");
    let reclaimable = |s: &sextant::store::StoreStorage| s.reclaimable_bytes().unwrap();
    assert!(
        reclaimable(pruned) < reclaimable(&kept) / 4,
        "maintenance gave back what it said it would: {kept:?} → {pruned:?}"
    );
    let files: u64 = walk(&dir.path().join("lance").join("chunks.lance"))
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum();
    assert_eq!(
        pruned.disk_bytes,
        Some(files),
        "the size on disk is the files' size"
    );
    println!("data files before {before}, after {after}");
    assert_eq!(stats.rows, chunks.len());
    assert!(stats.text_index, "text index exists");
    // Point reads by id and path, and every search's filter on repository and language,
    // go through indexes.
    for column in ["id", "language", "relative_path", "repo_id", "search_text"] {
        assert!(
            stats.indexed_columns.iter().any(|c| c == column),
            "{column} indexed: {:?}",
            stats.indexed_columns
        );
    }
    assert!(!stats.vector_index, "no ANN index below the threshold");
    assert!(
        after < before / 4,
        "old versions pruned: {before} data files before, {after} after"
    );
    assert!(
        !store
            .text_search("format", 5, &ChunkFilter::default())
            .await
            .expect("fts")
            .is_empty()
    );
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// A file of `n` one-line functions.
fn many_functions(n: usize) -> String {
    (0..n)
        .map(|i| format!("export function handler{i}(x: number) {{ return x + {i}; }}\n"))
        .collect()
}

/// Regression (security review, finding 2): rows stayed outside the full-text index until
/// a sync changed 32 files, so one large file was flat-scanned by every BM25 query for
/// ever. Upkeep now follows rows written: one write of more than `reindex_after_rows`
/// rows is folded in at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_large_write_is_folded_into_the_text_index() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path()).await;
    store
        .replace_file(
            "r",
            "src/first.ts",
            rows("r", "src/first.ts", &many_functions(3)),
        )
        .await
        .unwrap();
    assert!(store.stats().await.unwrap().text_index);
    // Below the threshold: searched by a flat scan until the next upkeep.
    store
        .replace_file(
            "r",
            "src/small.ts",
            rows("r", "src/small.ts", &many_functions(200)),
        )
        .await
        .unwrap();
    let stats = store.stats().await.unwrap();
    assert!(stats.text_unindexed_rows >= 200, "{stats:?}");
    // One file past the threshold: everything is indexed after the write.
    let big = rows("r", "src/big.ts", &many_functions(1_200));
    assert!(big.len() > LanceStoreOptions::new("x", DIMS).reindex_after_rows);
    store.replace_file("r", "src/big.ts", big).await.unwrap();
    let stats = store.stats().await.unwrap();
    assert_eq!(stats.text_unindexed_rows, 0, "{stats:?}");
    let hits = store
        .text_search("handler1100", 5, &ChunkFilter::default())
        .await
        .unwrap();
    assert!(hits.iter().any(|h| h.row.chunk.name == "handler1100"));
}

/// Regression (security review, finding 1): a long `paths` list became one `OR` chain
/// deep enough to overflow a worker's stack. The largest filter allowed (every list at
/// its cap, paths in the form that makes the longest predicate) runs on a runtime worker
/// thread; one entry more is refused before it reaches the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_largest_allowed_filter_runs_on_a_worker_thread() {
    use sextant::store::MAX_FILTER_ENTRIES;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(open(dir.path()).await);
    store
        .replace_file("r", "src/a.ts", rows("r", "src/a.ts", &many_functions(5)))
        .await
        .unwrap();
    let mut paths: Vec<String> = (0..MAX_FILTER_ENTRIES - 1)
        .map(|i| format!("src/dir{i}/f.ts"))
        .collect();
    paths.push("src/a.ts".into());
    let filter = ChunkFilter {
        repositories: (0..MAX_FILTER_ENTRIES - 1)
            .map(|i| format!("repo{i}"))
            .chain(["r".to_string()])
            .collect(),
        paths,
        languages: vec!["typescript".into()],
        kinds: vec!["function".into()],
        ..ChunkFilter::default()
    };
    assert_eq!(filter.validate(), Ok(()));
    let task = {
        let (store, filter) = (store.clone(), filter.clone());
        tokio::spawn(async move {
            let text = store.text_search("handler", 10, &filter).await.unwrap();
            let vector = store
                .vector_search(&embed("handler x"), 10, &filter)
                .await
                .unwrap();
            (
                text.len(),
                vector.len(),
                store.count(&filter).await.unwrap(),
            )
        })
    };
    assert_eq!(task.await.unwrap(), (5, 5, 5));
    let mut over = filter;
    over.paths.push("src/b.ts".into());
    assert!(over.validate().unwrap_err().contains("at most"));
}

/// Rows written ahead of their vectors (progressive indexing) never train the ANN index:
/// it waits until every row has its vector, however many rows there are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ann_index_waits_for_every_vector() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = LanceStoreOptions::new(dir.path().join("lance").to_string_lossy(), DIMS);
    options.ann_min_rows = 1;
    options.maintain_every_writes = 1_000; // only explicit maintenance in this test
    let store = LanceStore::open(options).await.expect("open");
    let pending = pending_rows("r1", "src/a.ts", &fixture("classes.ts"));
    assert!(pending.len() > 1);
    store
        .replace_file("r1", "src/a.ts", pending)
        .await
        .expect("write");
    let stats = store.maintain().await.expect("maintain");
    assert!(
        !stats.vector_index,
        "no ANN index over rows without vectors"
    );
    assert!(stats.text_index, "text search covers them meanwhile");
}

/// Issue 44 (disk bounded by the source): a row keeps the text it is embedded from only
/// until its vector is stored. A pending row lists its text for the embedding stage; once
/// its vector is stored the text is gone (the preambles were a tenth of the chunk store at
/// 1M lines), and rows unembedded by a change of model are not listed with an empty text:
/// they wait for their files to be chunked again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rows_embedding_text_is_kept_until_its_vector_is_stored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path()).await;
    let written = rows("r1", "src/a.ts", &fixture("classes.ts"));
    let pending = pending_rows("r1", "src/a.ts", &fixture("classes.ts"));
    store
        .replace_file("r1", "src/a.ts", pending.clone())
        .await
        .expect("write");
    let mut listed = store.unembedded("r1", 1_000).await.expect("list");
    listed.sort_by(|a, b| a.id.cmp(&b.id));
    let mut want: Vec<(String, String)> = pending
        .iter()
        .map(|r| (r.chunk.id.clone(), r.chunk.embedding_text.clone()))
        .collect();
    want.sort();
    let got: Vec<(String, String)> = listed
        .iter()
        .map(|p| (p.id.clone(), p.text.clone()))
        .collect();
    assert_eq!(got, want, "every pending row with the text to embed");

    let vectors: Vec<_> = listed
        .into_iter()
        .map(|p| {
            let v = embed(&p.text);
            (p, v)
        })
        .collect();
    assert_eq!(
        store.set_vectors("r1", vectors).await.expect("set"),
        written.len()
    );
    let ids: Vec<String> = written.iter().map(|r| r.chunk.id.clone()).collect();
    let back = store.get("r1", &ids).await.expect("get");
    assert_eq!(back.len(), written.len());
    assert!(
        back.iter()
            .all(|r| !r.vector.is_empty() && r.chunk.embedding_text.is_empty()),
        "the text went with the vector"
    );
    // The rewrite kept every content as it was, and as offsets where it was so stored:
    // members dedented and containers with their bodies collapsed.
    let mut back = back;
    back.sort_by_key(|r| (r.chunk.bytes.start, r.chunk.depth));
    let mut want = written.clone();
    want.sort_by_key(|r| (r.chunk.bytes.start, r.chunk.depth));
    for (b, w) in back.iter().zip(&want) {
        assert_eq!(
            (&b.chunk.content, &b.chunk.collapsed),
            (&w.chunk.content, &w.chunk.collapsed)
        );
    }
    let mut offsets = std::collections::BTreeSet::new();
    for row in crate::support::stored_texts(dir.path(), &["content", "node_kind"]).await {
        if row[0].starts_with('\u{2}') {
            offsets.insert(row[1].clone());
        }
    }
    assert!(
        offsets.contains("class") && offsets.contains("method"),
        "stored as offsets after the vectors: {offsets:?}"
    );
    let waiting = || async {
        store
            .embedding_state(Some("r1"))
            .await
            .expect("state")
            .pending
    };
    assert_eq!(waiting().await, 0);

    store.forget_vectors().await.expect("forget");
    assert_eq!(waiting().await, written.len());
    assert!(
        store
            .unembedded("r1", 1_000)
            .await
            .expect("list")
            .is_empty(),
        "nothing to embed until the file is chunked again"
    );
    store
        .replace_file("r1", "src/a.ts", pending)
        .await
        .expect("chunked again");
    assert_eq!(
        store.unembedded("r1", 1_000).await.expect("list").len(),
        written.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn languages_own_kind_names_are_kept_and_older_stores_gain_the_column() {
    let dir = tempfile::tempdir().expect("tempdir");
    let chunks = rows("r1", "src/shapes.rs", &fixture("rust/traits_impls.rs"));
    let native = |chunks: &[ChunkRow]| -> Vec<(String, Option<String>)> {
        let mut out: Vec<_> = chunks
            .iter()
            .map(|r| (r.chunk.breadcrumb.clone(), r.chunk.native_kind.clone()))
            .collect();
        out.sort();
        out
    };
    assert!(
        native(&chunks)
            .iter()
            .any(|(b, k)| b == "Shape" && k.as_deref() == Some("trait")),
        "the parser names a Rust trait a trait: {:?}",
        native(&chunks)
    );
    {
        let store = open(dir.path()).await;
        store
            .replace_file("r1", "src/shapes.rs", chunks.clone())
            .await
            .expect("write");
        let read = store
            .file_chunks("r1", "src/shapes.rs")
            .await
            .expect("read");
        assert_eq!(native(&read), native(&chunks), "stored and read back");
    }
    // A store written before the column existed: drop it, as such a store never had it.
    {
        let (_db, table) = raw_table(dir.path()).await;
        table.drop_columns(&["native_kind"]).await.expect("drop");
    }
    let store = open(dir.path()).await;
    let read = store
        .file_chunks("r1", "src/shapes.rs")
        .await
        .expect("read old rows");
    assert_eq!(read.len(), chunks.len(), "nothing lost");
    assert!(read.iter().all(|r| r.chunk.native_kind.is_none()));
    store
        .replace_file("r1", "src/shapes.rs", chunks.clone())
        .await
        .expect("write after the column was added");
    let read = store
        .file_chunks("r1", "src/shapes.rs")
        .await
        .expect("read");
    assert_eq!(native(&read), native(&chunks));
}

/// Versions too young to prune at a maintenance are pruned once they are old enough,
/// without another write (issue 44: a store left alone after a sync shrinks to what it
/// uses).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_kept_by_a_maintenance_are_pruned_once_old_enough() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = LanceStoreOptions::new(dir.path().join("lance").to_string_lossy(), DIMS);
    options.prune_older_than = std::time::Duration::from_secs(1);
    options.maintain_every_writes = 1_000;
    let store = LanceStore::open(options).await.expect("open");
    let chunks = rows("r1", "src/a.ts", &fixture("functions.ts"));
    for _ in 0..10 {
        store
            .replace_file("r1", "src/a.ts", chunks.clone())
            .await
            .expect("write");
    }
    store.maintain().await.expect("maintain");
    let kept = store.storage().await.expect("storage");
    println!("right after maintenance: {kept:?}");
    assert!(
        kept.versions > 1,
        "young versions are kept at first: {kept:?}"
    );
    let mut now = kept.clone();
    for _ in 0..40 {
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        now = store.storage().await.expect("storage");
        if now.versions == 1 {
            break;
        }
    }
    println!("later: {now:?}");
    assert_eq!(now.versions, 1, "{now:?}");
    assert!(
        now.reclaimable_bytes().unwrap() < kept.reclaimable_bytes().unwrap(),
        "{kept:?} → {now:?}"
    );
    assert_eq!(
        store.count(&ChunkFilter::default()).await.expect("count"),
        chunks.len()
    );
}

/// The ANN index's product quantisation alone misses many of the exact nearest rows (about
/// half of the top 50 at 100k rows, docs/BENCHMARKS.md): the store re-scores
/// `ann_refine_factor` times as many candidates with their full vectors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ann_candidates_are_re_scored_with_their_full_vectors() {
    const WIDE: usize = 64;
    const ROWS: usize = 4_000;
    let dir = tempfile::tempdir().expect("tempdir");
    // Clustered, as embeddings of code are: 40 topics, each row near one.
    let mut seed = 7u64;
    let mut noise = move |scale: f32| -> Vec<f32> {
        (0..WIDE)
            .map(|_| {
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                ((seed >> 33) as f32 / (1u64 << 31) as f32 - 0.5) * scale
            })
            .collect()
    };
    let centres: Vec<Vec<f32>> = (0..40).map(|_| noise(1.0)).collect();
    let mut near = move |i: usize| -> Vec<f32> {
        let mut v: Vec<f32> = centres[i % centres.len()]
            .iter()
            .zip(noise(0.5))
            .map(|(c, n)| c + n)
            .collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= norm);
        v
    };
    let template = rows("r1", "src/a.ts", &fixture("classes.ts")).remove(0);
    let vectors: Vec<Vec<f32>> = (0..ROWS).map(&mut near).collect();
    let batch: Vec<ChunkRow> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let mut row = template.clone();
            row.chunk.id = format!("c{i}");
            row.vector = v.clone();
            row
        })
        .collect();
    let options = |refine: u32| {
        let mut o = LanceStoreOptions::new(dir.path().join("lance").to_string_lossy(), WIDE);
        o.ann_min_rows = 1_000;
        o.ann_refine_factor = refine;
        // LanceDB's index itself, not the exact scan of vectors held in memory.
        o.held_bytes = 0;
        o
    };
    {
        let store = LanceStore::open(options(10)).await.expect("open");
        store
            .replace_file("r1", "src/a.ts", batch)
            .await
            .expect("write");
        assert!(store.maintain().await.expect("maintain").vector_index);
    }
    let queries: Vec<Vec<f32>> = (0..20).map(|i| near(i * 7)).collect();
    let k = 10;
    let recall = |found: &[Vec<String>]| {
        let mut hits = 0;
        for (q, got) in queries.iter().zip(found) {
            let mut exact: Vec<(f32, usize)> = vectors
                .iter()
                .enumerate()
                .map(|(i, v)| (-v.iter().zip(q).map(|(a, b)| a * b).sum::<f32>(), i))
                .collect();
            exact.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
            hits += exact[..k]
                .iter()
                .filter(|(_, i)| got.contains(&format!("c{i}")))
                .count();
        }
        hits as f64 / (k * queries.len()) as f64
    };
    let mut recalls = Vec::new();
    for refine in [0, 10] {
        let store = LanceStore::open(options(refine)).await.expect("reopen");
        let mut found = Vec::new();
        for q in &queries {
            let hits = store
                .vector_search(q, k, &ChunkFilter::default())
                .await
                .expect("search");
            found.push(hits.into_iter().map(|h| h.row.chunk.id).collect::<Vec<_>>());
        }
        recalls.push(recall(&found));
    }
    eprintln!("recall@10, quantised and re-scored: {recalls:?}");
    assert!(recalls[1] >= 0.9, "re-scored: recall@10 {recalls:?}");
    assert!(
        recalls[0] < recalls[1],
        "quantised order alone: {recalls:?}"
    );
}

/// The chunk table under `dir`, opened with LanceDB itself (to make or inspect what an
/// older build wrote).
async fn raw_table(dir: &Path) -> (lancedb::Connection, lancedb::Table) {
    let db = lancedb::connect(&dir.join("lance").to_string_lossy())
        .execute()
        .await
        .expect("connect");
    let table = db.open_table("chunks").execute().await.expect("table");
    (db, table)
}

/// The `vector` column's element type, as stored.
async fn stored_vector_element(dir: &Path) -> arrow_schema::DataType {
    let (_db, table) = raw_table(dir).await;
    let schema = table.schema().await.expect("schema");
    match schema
        .field_with_name("vector")
        .expect("vector")
        .data_type()
    {
        arrow_schema::DataType::FixedSizeList(item, _) => item.data_type().clone(),
        other => panic!("vector column of type {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vectors_are_stored_in_half_precision_and_f32_stores_keep_theirs() {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Float16Type;
    use arrow_array::{Array, FixedSizeListArray, Float32Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use futures::TryStreamExt;
    use lancedb::query::ExecutableQuery;

    let dir = tempfile::tempdir().expect("tempdir");
    let chunks = rows("r1", "src/classes.ts", &fixture("classes.ts"));
    let store = open(dir.path()).await;
    store
        .replace_file("r1", "src/classes.ts", chunks.clone())
        .await
        .expect("write");
    assert_eq!(
        stored_vector_element(dir.path()).await,
        DataType::Float16,
        "a new store keeps half-precision vectors"
    );
    let read = store.get("r1", &ids(&chunks)).await.expect("read");
    assert_eq!(read.len(), chunks.len());
    for row in &read {
        let original = chunks
            .iter()
            .find(|c| c.chunk.id == row.chunk.id)
            .expect("same rows");
        assert_eq!(row.vector.len(), DIMS);
        for (a, b) in original.vector.iter().zip(&row.vector) {
            assert!((a - b).abs() <= 1e-3, "{a} stored as {b}");
        }
    }
    let target = &chunks[chunks.len() / 2];
    let hits = store
        .vector_search(&target.vector, 3, &ChunkFilter::default())
        .await
        .expect("search");
    assert_eq!(hits[0].row.chunk.id, target.chunk.id);
    assert!((hits[0].score - 1.0).abs() < 1e-3, "{}", hits[0].score);
    drop(store);

    // A store created before half precision: the same rows with f32 vectors.
    let (db, table) = raw_table(dir.path()).await;
    let batches: Vec<RecordBatch> = table
        .query()
        .execute()
        .await
        .expect("scan")
        .try_collect()
        .await
        .expect("rows");
    let old_schema = {
        let schema = batches[0].schema();
        let fields: Vec<Field> = schema
            .fields()
            .iter()
            .map(|f| match f.name().as_str() {
                "vector" => Field::new(
                    "vector",
                    DataType::FixedSizeList(
                        Arc::new(Field::new("item", DataType::Float32, true)),
                        DIMS as i32,
                    ),
                    false,
                ),
                _ => f.as_ref().clone(),
            })
            .collect();
        Arc::new(Schema::new(fields))
    };
    let old: Vec<RecordBatch> = batches
        .iter()
        .map(|batch| {
            let halves = batch
                .column_by_name("vector")
                .expect("vector")
                .as_fixed_size_list();
            let floats = Float32Array::from_iter_values(
                halves
                    .values()
                    .as_primitive::<Float16Type>()
                    .values()
                    .iter()
                    .map(|h| h.to_f32()),
            );
            let vectors = FixedSizeListArray::try_new(
                Arc::new(Field::new("item", DataType::Float32, true)),
                DIMS as i32,
                Arc::new(floats),
                None,
            )
            .expect("f32 vectors");
            let columns = batch
                .schema()
                .fields()
                .iter()
                .zip(batch.columns())
                .map(|(f, c)| {
                    if f.name() == "vector" {
                        Arc::new(vectors.clone()) as Arc<dyn Array>
                    } else {
                        c.clone()
                    }
                })
                .collect();
            RecordBatch::try_new(old_schema.clone(), columns).expect("batch")
        })
        .collect();
    db.drop_table("chunks", &[]).await.expect("drop");
    db.create_table(
        "chunks",
        Box::new(arrow_array::RecordBatchIterator::new(
            old.into_iter().map(Ok),
            old_schema.clone(),
        )) as Box<dyn arrow_array::RecordBatchReader + Send>,
    )
    .execute()
    .await
    .expect("create the f32 table");
    assert_eq!(stored_vector_element(dir.path()).await, DataType::Float32);

    let store = open(dir.path()).await;
    assert_eq!(
        ids(&store
            .file_chunks("r1", "src/classes.ts")
            .await
            .expect("read")),
        ids(&chunks)
    );
    let other = rows("r1", "src/functions.ts", &fixture("functions.ts"));
    store
        .replace_file("r1", "src/functions.ts", other.clone())
        .await
        .expect("write into the f32 store");
    assert_eq!(
        stored_vector_element(dir.path()).await,
        DataType::Float32,
        "an existing store keeps its vectors' type"
    );
    let target = &other[0];
    let hits = store
        .vector_search(&target.vector, 3, &ChunkFilter::default())
        .await
        .expect("search");
    assert_eq!(hits[0].row.chunk.id, target.chunk.id);
    let exact = store
        .get("r1", std::slice::from_ref(&target.chunk.id))
        .await
        .expect("read");
    let first = exact
        .iter()
        .find(|r| r.chunk.id == target.chunk.id)
        .expect("row");
    assert_eq!(first.vector, target.vector, "f32 vectors come back exactly");
}

/// Searches answered from the table held in memory (`store::flat`) are the answers
/// LanceDB gives (below its ANN threshold, where its vector query is exact too): the same
/// rows, scores and order for vector searches under every kind of filter, for text
/// searches and for whole files; a table changed since it was read is answered by LanceDB
/// (the new rows included) until it is read again; rows waiting for vectors send whole
/// files and text searches to LanceDB; a table larger than the memory allowed stays on
/// LanceDB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vector_searches_from_memory_match_lancedb_and_follow_the_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let uri = dir.path().join("lance").to_string_lossy().into_owned();
    let memory = LanceStore::open(LanceStoreOptions::new(&uri, DIMS))
        .await
        .expect("open");
    let files = [
        ("r1", "src/a.ts", "classes.ts"),
        ("r1", "src/b.ts", "functions.ts"),
        ("r1", "lib/c.ts", "interfaces.ts"),
        ("r2", "src/a.ts", "classes.ts"),
        ("r2", "docs/d.ts", "functions.ts"),
    ];
    for (repo, path, name) in files {
        memory
            .replace_file(repo, path, rows(repo, path, &fixture(name)))
            .await
            .expect("write");
    }
    // Every row in the full-text index, so that LanceDB's BM25 counts the rows the held
    // one counts (rows written after the index is built are searched beside it, but its
    // statistics are the index's until a maintenance folds them in).
    memory.maintain().await.expect("maintain");
    let mut lance_only = LanceStoreOptions::new(&uri, DIMS);
    lance_only.held_bytes = 0;
    // It reads what the other store writes at once.
    lance_only.read_consistency = std::time::Duration::ZERO;
    let lance = LanceStore::open(lance_only).await.expect("open again");
    assert!(memory.load_into_memory().await.expect("load"), "held");
    assert!(!lance.load_into_memory().await.expect("load"), "off");
    let filters = [
        ChunkFilter::default(),
        ChunkFilter {
            repositories: vec!["r2".into()],
            ..Default::default()
        },
        ChunkFilter {
            paths: vec!["src/".into(), "**/c.ts".into()],
            kinds: vec!["class".into(), "function".into()],
            ..Default::default()
        },
        ChunkFilter {
            languages: vec!["python".into()],
            ..Default::default()
        },
    ];
    // Rows of equal vectors tie (this test's embedding hashes words into 8 numbers), and
    // either store may order tied rows either way: scores are compared in order, rows by
    // key, and every row is asked for where the sets must agree.
    let compare = |a: &[ScoredChunk], b: &[ScoredChunk], whole: bool| {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!(
                (x.score - y.score).abs() < 1e-3,
                "{} against {}",
                x.score,
                y.score
            );
        }
        let theirs: std::collections::HashMap<_, _> = b
            .iter()
            .map(|h| ((h.row.repo_id.clone(), h.row.chunk.id.clone()), h))
            .collect();
        let mut shared = 0;
        for x in a {
            let Some(y) = theirs.get(&(x.row.repo_id.clone(), x.row.chunk.id.clone())) else {
                continue;
            };
            shared += 1;
            assert!((x.score - y.score).abs() < 1e-3);
            assert_eq!(x.row.chunk, y.row.chunk);
            assert_eq!(x.row.vector.len(), y.row.vector.len());
            assert!(
                x.row
                    .vector
                    .iter()
                    .zip(&y.row.vector)
                    .all(|(p, q)| (p - q).abs() < 1e-3)
            );
        }
        if whole {
            assert_eq!(shared, a.len(), "the same rows");
        }
    };
    let questions = [
        "class constructor",
        "export function add",
        "interface shape",
    ];
    let mut found = 0;
    for q in questions {
        for filter in &filters {
            for (k, whole) in [(1_000, true), (5, false)] {
                let from_memory = memory
                    .vector_search(&embed(q), k, filter)
                    .await
                    .expect("search");
                let from_lance = lance
                    .vector_search(&embed(q), k, filter)
                    .await
                    .expect("search");
                compare(&from_memory, &from_lance, whole);
                found += from_memory.len();
            }
        }
    }
    assert!(found > 20, "the questions find rows ({found})");
    // The rows are held too (the table is small): text hits and whole files come from
    // memory, the same rows LanceDB reads.
    for (q, filter) in questions.iter().zip(&filters) {
        let from_memory = memory.text_search(q, 1_000, filter).await.expect("text");
        let from_lance = lance.text_search(q, 1_000, filter).await.expect("text");
        compare(&from_memory, &from_lance, true);
    }
    let paths: Vec<String> = ["src/a.ts", "src/b.ts", "lib/c.ts", "missing.ts"]
        .map(String::from)
        .into();
    let whole = memory.files_chunks("r1", &paths).await.expect("files");
    assert_eq!(whole.len(), 3, "three files of r1");
    assert_eq!(
        whole,
        lance.files_chunks("r1", &paths).await.expect("files")
    );
    assert!(
        whole
            .values()
            .flatten()
            .all(|r| r.vector.is_empty() && r.chunk.embedding_text.is_empty())
    );
    // Rows by id (answer units' parents) come from memory too: the same rows, vectors and
    // all, each once; another repository's id or an unknown one finds nothing.
    let mut ids: Vec<String> = whole
        .values()
        .flatten()
        .map(|r| r.chunk.id.clone())
        .take(6)
        .collect();
    ids.push(ids[0].clone());
    ids.push("no-such-chunk".into());
    let by_id = |mut rows: Vec<sextant::store::ChunkRow>| {
        rows.sort_by(|a, b| a.chunk.id.cmp(&b.chunk.id));
        rows
    };
    let held = by_id(memory.get("r1", &ids).await.expect("get"));
    assert_eq!(held.len(), 6);
    let read = by_id(lance.get("r1", &ids).await.expect("get"));
    assert_eq!(held.len(), read.len());
    for (x, y) in held.iter().zip(&read) {
        assert_eq!(x.chunk, y.chunk);
        assert_eq!(x.vector.len(), DIMS);
        assert!(
            x.vector
                .iter()
                .zip(&y.vector)
                .all(|(p, q)| (p - q).abs() < 1e-3)
        );
    }
    // A change: the vectors held are the old table's, so LanceDB answers, new rows and all.
    memory
        .replace_file(
            "r1",
            "src/new.ts",
            rows("r1", "src/new.ts", &fixture("classes.ts")),
        )
        .await
        .expect("write");
    let filter = ChunkFilter {
        paths: vec!["src/new.ts".into()],
        ..Default::default()
    };
    let after = memory
        .vector_search(&embed("class"), 1_000, &filter)
        .await
        .expect("search");
    assert!(!after.is_empty(), "the new file is found at once");
    let by_lance = lance
        .vector_search(&embed("class"), 1_000, &filter)
        .await
        .expect("search");
    compare(&after, &by_lance, true);
    assert!(
        memory.load_into_memory().await.expect("load again"),
        "read again"
    );
    compare(
        &memory
            .vector_search(&embed("class"), 1_000, &filter)
            .await
            .expect("search"),
        &after,
        true,
    );
    // A file whose rows wait for their vectors: vector searches leave it out, and whole
    // files and text searches, which include it, are read from LanceDB.
    let pending = pending_rows("r1", "src/pending.ts", &fixture("functions.ts"));
    memory
        .replace_file("r1", "src/pending.ts", pending)
        .await
        .expect("write pending");
    assert!(
        memory.load_into_memory().await.expect("load"),
        "the embedded rows are held"
    );
    let with_pending: Vec<String> = vec!["src/pending.ts".into(), "src/a.ts".into()];
    let whole = memory
        .files_chunks("r1", &with_pending)
        .await
        .expect("files");
    assert!(!whole["src/pending.ts"].is_empty());
    assert_eq!(
        whole,
        lance
            .files_chunks("r1", &with_pending)
            .await
            .expect("files")
    );
    let pending_only = ChunkFilter {
        paths: vec!["src/pending.ts".into()],
        ..Default::default()
    };
    assert!(
        memory
            .vector_search(&embed("function"), 100, &pending_only)
            .await
            .expect("search")
            .is_empty()
    );
    let texts = memory
        .text_search("function", 100, &pending_only)
        .await
        .expect("text");
    assert!(!texts.is_empty(), "text search finds the pending rows");
    compare(
        &texts,
        &lance
            .text_search("function", 100, &pending_only)
            .await
            .expect("text"),
        true,
    );
    // Too little memory for the table: LanceDB answers.
    let mut small = LanceStoreOptions::new(&uri, DIMS);
    small.held_bytes = 16;
    let small = LanceStore::open(small).await.expect("open small");
    assert!(!small.load_into_memory().await.expect("load"));
    let all = ChunkFilter::default();
    compare(
        &small
            .vector_search(&embed("class"), 1_000, &all)
            .await
            .expect("search"),
        &lance
            .vector_search(&embed("class"), 1_000, &all)
            .await
            .expect("search"),
        true,
    );
}

/// Files whose text a chunk store reads rows' code from (the grep index's part).
#[derive(Debug, Default)]
struct HeldFiles(
    std::collections::HashMap<(String, String, String), Arc<sextant::store::FileText>>,
);

impl sextant::store::FileSource for HeldFiles {
    fn file_text(
        &self,
        repo_id: &str,
        path: &str,
        hash: &str,
    ) -> Option<Arc<sextant::store::FileText>> {
        self.0
            .get(&(repo_id.into(), path.into(), hash.into()))
            .cloned()
    }
}

/// [`pending_rows`] that keep their code as lines of their file.
fn pending_in_file(repo: &str, rel: &str, source: &str) -> Vec<ChunkRow> {
    let starts = sextant::store::LineStarts::of(source);
    pending_rows(repo, rel, source)
        .into_iter()
        .map(|mut row| {
            let lines = starts.lines(source, row.chunk.start_line, row.chunk.end_line);
            row.code_in_file = lines == Some(row.chunk.full_source.as_str());
            row
        })
        .collect()
}

/// A page of pending rows whose file versions the grep index lost (they wait for their
/// files' next sync) does not end the embedding stage: the readable rows after it are
/// listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_rows_after_a_page_of_unreadable_ones_are_listed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = fixture("classes.ts");
    let mut held = HeldFiles::default();
    held.0.insert(
        ("r1".into(), "src/b.ts".into(), "h1".into()),
        Arc::new(sextant::store::FileText::new(source.clone())),
    );
    let store = open(dir.path()).await.with_sources(Arc::new(held));
    let lost = pending_in_file("r1", "src/a.ts", &source);
    let kept = pending_in_file("r1", "src/b.ts", &source);
    let in_file = lost.iter().filter(|r| r.code_in_file).count();
    assert!(
        in_file >= 3,
        "{in_file} of {} rows keep their code in the file",
        lost.len()
    );
    for (path, rows) in [("src/a.ts", &lost), ("src/b.ts", &kept)] {
        store
            .replace_file("r1", path, rows.clone())
            .await
            .expect(path);
    }
    // Pages of two rows: a.ts's rows come first and most of them cannot be read.
    let mut listed = Vec::new();
    let mut pages = 0;
    loop {
        let page = store.unembedded("r1", 2).await.expect("list");
        if page.is_empty() {
            break;
        }
        pages += 1;
        assert!(pages < 100, "the stage must end");
        let vectors: Vec<_> = page
            .into_iter()
            .map(|p| {
                let v = embed(&p.text);
                listed.push(p.id.clone());
                (p, v)
            })
            .collect();
        store
            .set_vectors("r1", vectors)
            .await
            .expect("store vectors");
    }
    let want: std::collections::BTreeSet<&str> = kept
        .iter()
        .chain(lost.iter().filter(|r| !r.code_in_file))
        .map(|r| r.chunk.id.as_str())
        .collect();
    let got: std::collections::BTreeSet<&str> = listed.iter().map(String::as_str).collect();
    assert_eq!(
        got, want,
        "every readable pending row, none of the lost file's others"
    );
}
