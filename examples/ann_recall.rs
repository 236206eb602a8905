//! ANN recall of a chunk store against exact search: `cargo run --example ann_recall -- DATA_DIR/lance [K]`.
//! 40 stored vectors (slightly perturbed) as queries; recall@K and search time (ids only) at
//! refine factors 0, 2, 4 and 10 (docs/BENCHMARKS.md, "re-scored ANN candidates"). Read-only.
use arrow_array::Array;
use arrow_array::cast::AsArray;
use futures::TryStreamExt;
use lancedb::query::{ExecutableQuery, QueryBase, Select};
use std::time::Instant;

#[tokio::main]
async fn main() {
    let uri = std::env::args().nth(1).unwrap();
    let db = lancedb::connect(&uri).execute().await.unwrap();
    let t = db.open_table("chunks").execute().await.unwrap();
    let n = t.count_rows(None).await.unwrap() as u64;
    let offsets: Vec<u64> = (0..40).map(|i| (i * 2654435761u64) % n).collect();
    let b: Vec<arrow_array::RecordBatch> = t
        .take_offsets(offsets)
        .select(Select::columns(&["vector"]))
        .execute()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let mut queries = vec![];
    for batch in &b {
        let col = batch.column_by_name("vector").unwrap().as_fixed_size_list();
        for i in 0..col.len() {
            let v = col.value(i);
            let v = v.as_primitive::<arrow_array::types::Float32Type>();
            // Perturb so the row itself is not trivially first.
            queries.push(
                v.values()
                    .iter()
                    .enumerate()
                    .map(|(j, x)| x + if j % 7 == 0 { 0.05 } else { 0.0 })
                    .collect::<Vec<f32>>(),
            );
        }
    }
    let k: usize = std::env::args().nth(2).map_or(20, |s| s.parse().unwrap());
    for (np, rf) in [(20usize, 0u32), (20, 2), (20, 4), (20, 10)] {
        let (mut hit, mut tot) = (0, 0);
        let (mut ta, mut tf) = (0.0, 0.0);
        for q in &queries {
            let ids = |b: Vec<arrow_array::RecordBatch>| -> Vec<String> {
                b.iter()
                    .flat_map(|x| {
                        x.column_by_name("id")
                            .unwrap()
                            .as_string::<i32>()
                            .iter()
                            .map(|s| s.unwrap().to_string())
                            .collect::<Vec<_>>()
                    })
                    .collect()
            };
            let s = Instant::now();
            let mut aq = t
                .query()
                .nearest_to(q.clone())
                .unwrap()
                .distance_type(lancedb::DistanceType::Cosine)
                .nprobes(np)
                .unwrap();
            if rf > 0 {
                aq = aq.refine_factor(rf);
            }
            let a = ids(aq
                .select(Select::columns(&["id"]))
                .limit(k)
                .execute()
                .await
                .unwrap()
                .try_collect()
                .await
                .unwrap());
            ta += s.elapsed().as_secs_f64();
            let s = Instant::now();
            let f = ids(t
                .query()
                .nearest_to(q.clone())
                .unwrap()
                .distance_type(lancedb::DistanceType::Cosine)
                .bypass_vector_index()
                .select(Select::columns(&["id"]))
                .limit(k)
                .execute()
                .await
                .unwrap()
                .try_collect()
                .await
                .unwrap());
            tf += s.elapsed().as_secs_f64();
            hit += f.iter().filter(|x| a.contains(x)).count();
            tot += f.len();
        }
        println!(
            "np {np} rf {rf} rows {n} queries {} recall@{k} {:.3} ann {:.1} ms flat {:.1} ms",
            queries.len(),
            hit as f64 / tot as f64,
            ta * 1000.0 / queries.len() as f64,
            tf * 1000.0 / queries.len() as f64
        );
    }
}
