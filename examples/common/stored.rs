//! What the chunk-store examples share: stored vectors to query with.

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use futures::TryStreamExt;
use lancedb::Table;
use lancedb::query::{ExecutableQuery, Select};

/// The vectors of `n` rows spread over the table (a fixed stride, so runs compare).
pub async fn stored_vectors(
    table: &Table,
    n: u64,
) -> Result<Vec<Vec<f32>>, Box<dyn std::error::Error>> {
    let rows = table.count_rows(None).await? as u64;
    if rows == 0 {
        return Err("the chunk store is empty".into());
    }
    let offsets: Vec<u64> = (0..n).map(|i| (i * 2_654_435_761u64) % rows).collect();
    let batches: Vec<RecordBatch> = table
        .take_offsets(offsets)
        .select(Select::columns(&["vector"]))
        .execute()
        .await?
        .try_collect()
        .await?;
    let mut out = Vec::new();
    for batch in &batches {
        let vectors = batch
            .column_by_name("vector")
            .ok_or("no vector column")?
            .as_fixed_size_list();
        for i in 0..vectors.len() {
            let v = vectors.value(i);
            // Tables created since 2026-11-27 hold half-precision vectors.
            out.push(
                match v.as_primitive_opt::<arrow_array::types::Float16Type>() {
                    Some(h) => h.values().iter().map(|x| x.to_f32()).collect(),
                    None => v
                        .as_primitive::<arrow_array::types::Float32Type>()
                        .values()
                        .to_vec(),
                },
            );
        }
    }
    Ok(out)
}
