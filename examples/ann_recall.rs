//! ANN recall of a chunk store against exact search:
//! `cargo run --example ann_recall -- DATA_DIR/lance [K]`.
//!
//! 40 stored vectors (slightly perturbed) are the queries; for each refine factor (0, 2,
//! 4, 10) it prints recall@K against an exact scan and the mean search time of an
//! ids-only query (docs/BENCHMARKS.md, "re-scored ANN candidates"). Read-only.

use std::error::Error;
use std::time::Instant;

use arrow_array::RecordBatch;
use arrow_array::cast::AsArray;
use futures::TryStreamExt;
use lancedb::DistanceType;
use lancedb::query::{ExecutableQuery, QueryBase, Select, VectorQuery};

#[path = "common/stored.rs"]
mod stored;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// The ids a vector query returns, and how long it took.
async fn ids(query: VectorQuery, k: usize) -> Result<(Vec<String>, f64)> {
    let started = Instant::now();
    let batches: Vec<RecordBatch> = query
        .select(Select::columns(&["id"]))
        .limit(k)
        .execute()
        .await?
        .try_collect()
        .await?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let mut out = Vec::new();
    for batch in &batches {
        let column = batch.column_by_name("id").ok_or("no id column")?;
        out.extend(
            column
                .as_string::<i32>()
                .iter()
                .flatten()
                .map(str::to_string),
        );
    }
    Ok((out, ms))
}

#[tokio::main]
async fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let uri = args.next().ok_or("usage: ann_recall DATA_DIR/lance [K]")?;
    let k: usize = args.next().map_or(Ok(20), |s| s.parse())?;
    let db = lancedb::connect(&uri).execute().await?;
    let table = db.open_table("chunks").execute().await?;
    let rows = table.count_rows(None).await?;
    // Perturbed, so that the row itself is not trivially first.
    let queries: Vec<Vec<f32>> = stored::stored_vectors(&table, 40)
        .await?
        .into_iter()
        .map(|v| {
            v.iter()
                .enumerate()
                .map(|(j, x)| x + if j % 7 == 0 { 0.05 } else { 0.0 })
                .collect()
        })
        .collect();
    let nearest = |q: &[f32]| -> Result<VectorQuery> {
        Ok(table
            .query()
            .nearest_to(q.to_vec())?
            .distance_type(DistanceType::Cosine))
    };
    let mut exact = Vec::new();
    let mut exact_ms = 0.0;
    for q in &queries {
        let (found, ms) = ids(nearest(q)?.bypass_vector_index(), k).await?;
        exact.push(found);
        exact_ms += ms;
    }
    let n = queries.len() as f64;
    println!(
        "{rows} rows, {} queries, exact scan {:.1} ms",
        queries.len(),
        exact_ms / n
    );
    for refine in [0u32, 2, 4, 10] {
        let (mut hits, mut wanted, mut total_ms) = (0, 0, 0.0);
        for (q, truth) in queries.iter().zip(&exact) {
            let mut query = nearest(q)?;
            if refine > 0 {
                query = query.refine_factor(refine);
            }
            let (found, ms) = ids(query, k).await?;
            hits += truth.iter().filter(|id| found.contains(id)).count();
            wanted += truth.len();
            total_ms += ms;
        }
        println!(
            "refine {refine}: recall@{k} {:.3}, search {:.1} ms",
            hits as f64 / wanted.max(1) as f64,
            total_ms / n
        );
    }
    Ok(())
}
