//! Rebuilds a chunk store's ANN index in place with a given number of IVF partitions:
//! `cargo run --example ann_rebuild -- COPY_OF_DATA_DIR/lance PARTITIONS`, then
//! `ann_recall` and `retrieve_profile` on the copy (docs/BENCHMARKS.md, "ANN
//! partitions"). Writes: run it on a copy.

use std::error::Error;
use std::time::Instant;

use lancedb::DistanceType;
use lancedb::index::Index;
use lancedb::index::vector::IvfPqIndexBuilder;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

#[tokio::main]
async fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let uri = args
        .next()
        .ok_or("usage: ann_rebuild COPY/lance PARTITIONS")?;
    let partitions: u32 = args.next().ok_or("PARTITIONS missing")?.parse()?;
    let db = lancedb::connect(&uri).execute().await?;
    let table = db.open_table("chunks").execute().await?;
    let started = Instant::now();
    let builder = IvfPqIndexBuilder::default()
        .distance_type(DistanceType::Cosine)
        .num_partitions(partitions)
        .max_iterations(10)
        .sample_rate(64);
    table
        .create_index(&["vector"], Index::IvfPq(builder))
        .replace(true)
        .execute()
        .await?;
    println!(
        "{} rows: index with {partitions} partitions built in {:.1} s",
        table.count_rows(None).await?,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
