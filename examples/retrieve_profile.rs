//! Time of the search's retrieval legs against a chunk store, by what they read:
//! `cargo run --example retrieve_profile -- DATA_DIR/lance`.
//!
//! For 30 stored vectors (as vector queries) and 30 words (as full-text queries) it
//! prints the median time of a 50-row (`K=…`) query reading the id only, a few light columns,
//! and every column a search reads, with the filter of a code question (`PRED=...`
//! replaces it, `PRED=` drops it, `POST=1` applies it after the search), then the time
//! of a read of 70 rows by id (and by row id), and of every chunk of ten files, a read a
//! file or one read for all. Read-only (docs/BENCHMARKS.md, "filtered by an index", "one
//! read for an answer's files").

use std::error::Error;
use std::time::Instant;

use arrow_array::{Array, RecordBatch};
use futures::TryStreamExt;
use lancedb::DistanceType;
use lancedb::index::scalar::FullTextSearchQuery;
use lancedb::query::{ExecutableQuery, QueryBase, Select};

#[path = "common/stored.rs"]
mod stored;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const LIGHT: &[&str] = &[
    "repo_id",
    "id",
    "relative_path",
    "node_kind",
    "name",
    "parent_chunk_id",
    "start_line",
    "end_line",
    "exported",
];

/// Runs `q` with the filter `code` (applied after the search when `post`); its time in ms.
async fn timed<Q: QueryBase + ExecutableQuery>(mut q: Q, code: &str, post: bool) -> Result<f64> {
    if !code.is_empty() {
        q = q.only_if(code);
    }
    if post {
        q = q.postfilter();
    }
    let t = Instant::now();
    let _: Vec<RecordBatch> = q.execute().await?.try_collect().await?;
    Ok(t.elapsed().as_secs_f64() * 1000.0)
}

/// Reads `columns` of the rows each predicate selects, one query after another; the
/// time of all of them in ms.
async fn read(table: &lancedb::Table, columns: &[&str], predicates: &[String]) -> Result<f64> {
    let t = Instant::now();
    for predicate in predicates {
        let _: Vec<RecordBatch> = table
            .query()
            .select(Select::columns(columns))
            .only_if(predicate.as_str())
            .execute()
            .await?
            .try_collect()
            .await?;
    }
    Ok(t.elapsed().as_secs_f64() * 1000.0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() -> Result<()> {
    let uri = std::env::args()
        .nth(1)
        .ok_or("usage: retrieve_profile DATA_DIR/lance")?;
    let db = lancedb::connect(&uri).execute().await?;
    let table = db.open_table("chunks").execute().await?;
    let vectors = stored::stored_vectors(&table, 30).await?;
    let code = sextant::store::ChunkFilter {
        categories: vec![sextant::parse::Category::Code.to_string()],
        ..Default::default()
    }
    .to_sql()
    .ok_or("no predicate")?;
    let code = std::env::var("PRED").unwrap_or(code);
    let post = std::env::var("POST").is_ok();
    let k: usize = std::env::var("K")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    println!("predicate: {code} post {post}");
    let schema = table.schema().await?;
    let all: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .filter(|n| n != "search_text")
        .collect();
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    let words = [
        "timeout",
        "parse",
        "render",
        "query",
        "error",
        "buffer",
        "config",
        "token",
        "session",
        "engine",
        "range",
        "vector",
        "matcher",
        "snapshot",
        "module",
        "resolve",
        "format",
        "compile",
        "stream",
        "connection",
        "pool",
        "scrape",
        "label",
        "series",
        "mock",
        "spy",
        "reporter",
        "runner",
        "dialect",
        "cursor",
    ];
    let drop: Vec<String> = std::env::var("DROP")
        .unwrap_or_default()
        .split(',')
        .map(str::to_string)
        .collect();
    let kept: Vec<&str> = all
        .iter()
        .copied()
        .filter(|c| !drop.iter().any(|d| d == c))
        .collect();
    for (label, columns) in [
        ("id", vec!["id"]),
        ("light", LIGHT.to_vec()),
        ("all", all.clone()),
        ("kept", kept),
    ] {
        let mut vt = Vec::new();
        for v in &vectors {
            let q = table
                .query()
                .nearest_to(v.clone())?
                .distance_type(DistanceType::Cosine)
                .refine_factor(10)
                .select(Select::columns(&columns))
                .limit(k);
            vt.push(timed(q, &code, post).await?);
        }
        let mut ft = Vec::new();
        for w in words {
            let q = table
                .query()
                .full_text_search(FullTextSearchQuery::new(w.to_string()))
                .select(Select::columns(&columns))
                .limit(k);
            ft.push(timed(q, &code, post).await?);
        }
        println!(
            "{label:6} vector p50 {:.1} ms   text p50 {:.1} ms",
            median(vt),
            median(ft)
        );
    }
    // A read by id of 70 rows, every column (the answer units of both legs).
    let ids: Vec<RecordBatch> = table
        .query()
        .select(Select::columns(&["id"]))
        .limit(5000)
        .execute()
        .await?
        .try_collect()
        .await?;
    let ids = arrow_array::cast::AsArray::as_string::<i32>(ids[0].column(0).as_ref());
    for (label, columns) in [("id", vec!["id"]), ("all", all.clone())] {
        let mut gt = Vec::new();
        for round in 0..30 {
            let list: Vec<String> = (0..70)
                .map(|i| format!("'{}'", ids.value((round * 97 + i * 61) % ids.len())))
                .collect();
            let predicate = format!("id IN ({})", list.join(", "));
            gt.push(read(&table, &columns, &[predicate]).await?);
        }
        println!("get 70 by id, {label} columns p50 {:.1} ms", median(gt));
    }
    // Every chunk of 10 files (what a search's snapshots are rendered from): one read a
    // file with and without the repository in the predicate, and one read for all ten.
    let paths: Vec<RecordBatch> = table
        .query()
        .select(Select::columns(&["repo_id", "relative_path"]))
        .limit(5000)
        .execute()
        .await?
        .try_collect()
        .await?;
    let repo = arrow_array::cast::AsArray::as_string::<i32>(paths[0].column(0).as_ref()).value(0);
    let paths = arrow_array::cast::AsArray::as_string::<i32>(paths[0].column(1).as_ref());
    let ten = |round: usize| -> Vec<String> {
        (0..10)
            .map(|i| format!("'{}'", paths.value((round * 131 + i * 479) % paths.len())))
            .collect()
    };
    for (label, per_file, with_repo) in [
        ("a read a file, repo and path", true, true),
        ("a read a file, path only", true, false),
        ("one read, paths IN", false, false),
        ("one read, repo and paths IN", false, true),
    ] {
        let mut ft = Vec::new();
        for round in 0..20 {
            let list = ten(round);
            let predicates: Vec<String> = if per_file {
                list.iter()
                    .map(|p| {
                        if with_repo {
                            format!("repo_id = '{repo}' AND relative_path = {p}")
                        } else {
                            format!("relative_path = {p}")
                        }
                    })
                    .collect()
            } else if with_repo {
                vec![format!(
                    "repo_id = '{repo}' AND relative_path IN ({})",
                    list.join(", ")
                )]
            } else {
                vec![format!("relative_path IN ({})", list.join(", "))]
            };
            ft.push(read(&table, &all, &predicates).await?);
        }
        println!("10 files' chunks, {label}: p50 {:.1} ms", median(ft));
    }
    // The same rows by their row ids (what a search can return with `_rowid`).
    let rowids: Vec<RecordBatch> = table
        .query()
        .select(Select::columns(&["id"]))
        .with_row_id()
        .limit(5000)
        .execute()
        .await?
        .try_collect()
        .await?;
    let rowids = rowids[0]
        .column_by_name("_rowid")
        .ok_or("no _rowid")?
        .as_any()
        .downcast_ref::<arrow_array::UInt64Array>()
        .ok_or("_rowid is not u64")?
        .clone();
    let mut tt = Vec::new();
    for round in 0..30 {
        let list: Vec<u64> = (0..70)
            .map(|i| rowids.value((round * 97 + i * 61) % rowids.len()))
            .collect();
        let t = Instant::now();
        let _ = table
            .take_row_ids(list)
            .select(Select::columns(&all))
            .execute()
            .await?
            .try_collect::<Vec<RecordBatch>>()
            .await?;
        tt.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    println!("take 70 by row id, all columns p50 {:.1} ms", median(tt));
    Ok(())
}
