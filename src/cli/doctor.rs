//! `sextant doctor [--repair]`: checks that the data directory's two stores open and agree,
//! and with `--repair` rebuilds what is derived from what survives.
//!
//! The metadata database is the source of truth (repositories, tokens, jobs); the chunk
//! store (LanceDB) is derived from the files. A chunk store that cannot be opened or read
//! is moved aside and started anew (only for the chunk store's own errors: a model that
//! cannot load, or a model mismatch, fails without touching it); files whose chunks are missing lose their file record,
//! so the next sync indexes them again; chunks of files the database does not know are
//! deleted.

use std::io::Write;
use std::path::Path;

use super::{CliError, out, write_err};
use crate::app::checkup::{
    Checkup, CheckupError, DatabaseSize, RepoAudit, StoreStats, StoreStorage, check_stores,
    move_aside,
};
use crate::app::{open_embedder, open_meta, runtime};
use crate::config::Config;

/// Runs the checks; exits non-zero when something is wrong and `repair` is off.
pub fn doctor(repair: bool, config: &Config) -> Result<(), CliError> {
    runtime()?.block_on(async {
        let meta = open_meta(config).await?;
        let mut w = out();
        writeln!(
            w,
            "metadata database: ok ({})",
            crate::config::without_password(&config.database_url())
        )
        .map_err(write_err)?;
        if let Ok(size) = meta.size().await {
            writeln!(w, "  {}", database_size(&size)).map_err(write_err)?;
        }
        let (embedder, cached) = open_embedder(config, meta.clone()).await?;
        let lance = config.lance_uri();
        let mut moved = false;
        let Checkup {
            audits,
            stats,
            storage,
        } = loop {
            let attempt = check_stores(config, &meta, embedder.dims(), &cached, repair);
            match attempt.await {
                Ok(found) => break found,
                Err(CheckupError::Other(e)) => return Err(CliError::Failed(e)),
                Err(CheckupError::ChunkStore(e)) if repair && !moved && !lance.contains("://") => {
                    let aside = move_aside(Path::new(&lance)).map_err(CliError::Failed)?;
                    writeln!(
                        w,
                        "chunk store: unreadable ({e});\n  moved aside to {} and started anew",
                        aside.display()
                    )
                    .map_err(write_err)?;
                    moved = true;
                }
                Err(CheckupError::ChunkStore(e)) if lance.contains("://") => {
                    return Err(CliError::Failed(format!(
                        "{e}\nthe chunk store is on object storage ({lance}): `--repair` does not \
                         move it aside; if it is damaged rather than out of reach, remove its \
                         prefix (or name another with SEXTANT_LANCE_URI) and every file is \
                         indexed again by the next sync"
                    )));
                }
                Err(CheckupError::ChunkStore(e)) => {
                    return Err(CliError::Failed(format!(
                        "{e}\nrun `sextant doctor --repair` to move the chunk store aside and \
                         have every file indexed again by the next sync"
                    )));
                }
            }
        };
        writeln!(w, "chunk store: opened ({lance})").map_err(write_err)?;
        for line in chunk_store_size(&stats, &storage) {
            writeln!(w, "  {line}").map_err(write_err)?;
        }
        report_audits(&mut w, &audits, repair)
    })
}

/// Writes each repository's audit and fails, saying what to run, where the stores disagree
/// (unless `repair` mended it) or the grep index lacks indexed files.
fn report_audits(w: &mut impl Write, audits: &[RepoAudit], repair: bool) -> Result<(), CliError> {
    let (mut problems, mut unsynced) = (0, Vec::new());
    for audit in audits {
        if audit.is_consistent() {
            writeln!(w, "{}: ok", audit.repo.name).map_err(write_err)?;
            continue;
        }
        if !audit.missing_code.is_empty() {
            unsynced.push(audit.repo.name.as_str());
            writeln!(
                w,
                "{}: {} indexed file(s) whose code the grep index lacks: their chunks are \
                 left out of answers until the next sync reads them again",
                audit.repo.name,
                audit.missing_code.len()
            )
            .map_err(write_err)?;
            for path in audit.missing_code.iter().take(5) {
                writeln!(w, "  no code: {path}").map_err(write_err)?;
            }
        }
        if audit.missing_chunks.is_empty() && audit.orphan_chunks.is_empty() {
            continue;
        }
        problems += 1;
        writeln!(
            w,
            "{}: {} indexed file(s) without chunks, {} file(s) with stray chunks{}",
            audit.repo.name,
            audit.missing_chunks.len(),
            audit.orphan_chunks.len(),
            if repair {
                " — repaired: the next sync indexes them again"
            } else {
                ""
            }
        )
        .map_err(write_err)?;
        for path in audit.missing_chunks.iter().take(5) {
            writeln!(w, "  no chunks: {path}").map_err(write_err)?;
        }
        for path in audit.orphan_chunks.iter().take(5) {
            writeln!(w, "  stray: {path}").map_err(write_err)?;
        }
    }
    if !unsynced.is_empty() && (problems == 0 || repair) {
        return Err(CliError::Failed(format!(
            "the grep index lacks indexed files of {}: sync (`sextant repo sync NAME`, or \
             the server's queue) to read them again",
            unsynced.join(", ")
        )));
    }
    if problems > 0 && !repair {
        return Err(CliError::Failed(format!(
            "the two stores disagree about {problems} repositor{}: run `sextant doctor \
             --repair`, then sync (`sextant repo sync NAME`, or the server's queue)",
            if problems == 1 { "y" } else { "ies" }
        )));
    }
    Ok(())
}

/// Megabytes, one decimal.
fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// The metadata database's size line.
fn database_size(size: &DatabaseSize) -> String {
    let total = match size.free_bytes {
        Some(free) if free > 0 => format!(
            "{} ({} of free pages; `VACUUM` gives them back)",
            mb(size.bytes),
            mb(free)
        ),
        _ => mb(size.bytes),
    };
    // The largest tables, each with its indexes: where the bytes go.
    let largest: Vec<String> = size
        .tables
        .iter()
        .take(5)
        .map(|(name, bytes)| format!("{name} {}", mb(*bytes)))
        .collect();
    if largest.is_empty() {
        total
    } else {
        format!(
            "{total}; largest tables with their indexes: {}",
            largest.join(", ")
        )
    }
}

/// What the chunk store holds and keeps on disk, and what maintenance would reclaim.
fn chunk_store_size(stats: &StoreStats, s: &StoreStorage) -> Vec<String> {
    let mut lines = vec![format!(
        "{} rows ({} deleted, kept until compaction); {} version(s) kept, {} fragment(s) ({} small)",
        stats.rows, s.deleted_rows, s.versions, s.fragments, s.small_fragments
    )];
    match (s.disk_bytes, s.reclaimable_bytes()) {
        (Some(disk), Some(reclaim)) => lines.push(format!(
            "{} on disk, {} live: maintenance (compaction, old versions pruned) would reclaim {}",
            mb(disk),
            mb(s.live_bytes),
            mb(reclaim)
        )),
        _ => lines.push(format!("{} live", mb(s.live_bytes))),
    }
    lines
}
