//! Copies a chunk table into fresh tables whose text columns are written with each of
//! Lance's compression schemes, and prints every copy's size on disk:
//! `cargo run --example lance_columns -- DATA_DIR/lance OUT_DIR` (docs/BENCHMARKS.md,
//! "Compressed text columns"). With a third argument `columns`, copies each column into a
//! table of its own instead and prints what each takes (where a table's bytes go). With
//! `memory` instead, prints what each column takes in memory as read (Lance's decoded
//! Arrow buffers) and copied into buffers of its own (as the search cache, `store::flat`,
//! holds rows before its dictionaries), largest first; OUT_DIR is unused.
//! Reads only; writes under OUT_DIR.

use std::collections::HashMap;
use std::error::Error;
use std::path::Path;
use std::sync::Arc;

#[path = "common/disk.rs"]
mod disk;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema};
use futures::TryStreamExt;
use lancedb::query::ExecutableQuery;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

#[tokio::main]
async fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let uri = args.next().ok_or("usage: lance_columns DATA/lance OUT")?;
    let out = args.next().ok_or("OUT missing")?;
    let db = lancedb::connect(&uri).execute().await?;
    let table = db.open_table("chunks").execute().await?;
    let batches: Vec<RecordBatch> = table.query().execute().await?.try_collect().await?;
    let schema = batches.first().ok_or("empty table")?.schema();
    println!(
        "{} rows",
        batches.iter().map(|b| b.num_rows()).sum::<usize>()
    );
    match args.next().as_deref() {
        Some("columns") => return per_column(&batches, &out).await,
        Some("memory") => {
            in_memory(&batches);
            return Ok(());
        }
        _ => {}
    }
    for scheme in ["default", "zstd", "lz4", "fsst", "none"] {
        let fields: Vec<Field> = schema
            .fields()
            .iter()
            .map(|f| {
                let f = f.as_ref().clone();
                if scheme != "default" && matches!(f.data_type(), DataType::Utf8) {
                    let mut meta = HashMap::new();
                    meta.insert("lance-encoding:compression".to_string(), scheme.to_string());
                    f.with_metadata(meta)
                } else {
                    f
                }
            })
            .collect();
        let schema = Arc::new(Schema::new(fields));
        let rebatched: Vec<RecordBatch> = batches
            .iter()
            .map(|b| RecordBatch::try_new(schema.clone(), b.columns().to_vec()))
            .collect::<std::result::Result<_, _>>()?;
        let dir = format!("{out}/{scheme}");
        let copy = lancedb::connect(&dir).execute().await?;
        let started = std::time::Instant::now();
        let t = copy
            .create_empty_table("chunks", schema.clone())
            .execute()
            .await?;
        for batch in rebatched {
            t.add(batch).execute().await?;
        }
        let written = started.elapsed();
        let started = std::time::Instant::now();
        let rows: usize = t
            .query()
            .execute()
            .await?
            .try_collect::<Vec<_>>()
            .await?
            .iter()
            .map(|b| b.num_rows())
            .sum();
        println!(
            "{scheme}: {:.1} MB, written in {:.2} s, {rows} rows read back in {:.2} s",
            disk::dir_bytes(Path::new(&dir)) as f64 / 1e6,
            written.as_secs_f64(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Writes each column alone into `OUT/COLUMN` and prints its size, largest first.
async fn per_column(batches: &[RecordBatch], out: &str) -> Result<()> {
    let schema = batches.first().ok_or("empty table")?.schema();
    let mut sizes = Vec::new();
    for (i, field) in schema.fields().iter().enumerate() {
        let one = Arc::new(Schema::new(vec![field.as_ref().clone()]));
        let dir = format!("{out}/{}", field.name());
        let copy = lancedb::connect(&dir).execute().await?;
        let t = copy.create_empty_table("c", one.clone()).execute().await?;
        for b in batches {
            t.add(RecordBatch::try_new(
                one.clone(),
                vec![b.column(i).clone()],
            )?)
            .execute()
            .await?;
        }
        t.optimize(lancedb::table::OptimizeAction::Compact {
            options: Default::default(),
            remap_options: None,
        })
        .await?;
        t.optimize(lancedb::table::OptimizeAction::Prune {
            older_than: Some(lancedb::table::Duration::zero()),
            delete_unverified: Some(true),
            error_if_tagged_old_versions: Some(false),
        })
        .await?;
        sizes.push((disk::dir_bytes(Path::new(&dir)), field.name().clone()));
    }
    sizes.sort_by(|a, b| b.cmp(a));
    for (bytes, name) in sizes {
        println!("{name}: {:.2} MB", bytes as f64 / 1e6);
    }
    Ok(())
}

/// Prints each column's bytes in memory (Arrow buffers as read), largest first.
fn in_memory(batches: &[RecordBatch]) {
    let Some(schema) = batches.first().map(|b| b.schema()) else {
        return;
    };
    // Per column: bytes as read (Lance's decoded buffers) and copied into buffers of its own.
    let mut sizes: Vec<(usize, usize, String)> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let read = batches
                .iter()
                .map(|b| b.column(i).get_array_memory_size())
                .sum();
            let arrays: Vec<&dyn arrow_array::Array> =
                batches.iter().map(|b| b.column(i).as_ref()).collect();
            let copied =
                arrow_select::concat::concat(&arrays).map_or(0, |a| a.get_array_memory_size());
            (read, copied, f.name().clone())
        })
        .collect();
    sizes.sort_by(|a, b| b.cmp(a));
    let total: usize = sizes.iter().map(|(read, ..)| read).sum();
    let copied: usize = sizes.iter().map(|(_, c, _)| c).sum();
    println!(
        "in memory: {:.2} MB as read, {:.2} MB copied, in {} batches",
        total as f64 / 1e6,
        copied as f64 / 1e6,
        batches.len()
    );
    for (read, copied, name) in sizes {
        println!(
            "{name}: {:.2} MB as read, {:.2} MB copied",
            read as f64 / 1e6,
            copied as f64 / 1e6
        );
    }
}
