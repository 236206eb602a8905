//! `sextant doctor [--repair]`: checks that the data directory's two stores open and agree,
//! and with `--repair` rebuilds what is derived from what survives.
//!
//! The metadata database is the source of truth (repositories, tokens, jobs); the chunk
//! store (LanceDB) is derived from the files. A chunk store that cannot be opened or read
//! is moved aside and started anew; files whose chunks are missing lose their file record,
//! so the next sync indexes them again; chunks of files the database does not know are
//! deleted.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::index::{fail, open_indexer_with, open_meta, runtime};
use super::{CliError, out, write_err};
use crate::config::Config;

/// Runs the checks; exits non-zero when something is wrong and `repair` is off.
pub fn doctor(repair: bool, config: &Config) -> Result<(), CliError> {
    runtime()?.block_on(async {
        let meta = open_meta(config).await?;
        let mut w = out();
        writeln!(w, "metadata database: ok ({})", config.database_url()).map_err(write_err)?;
        let lance = config.lance_uri();
        // Opening and then reading every repository's paths touches every data file.
        let audits = match open_and_audit(config, meta.clone(), repair).await {
            Ok(audits) => audits,
            Err(e) if repair && !lance.contains("://") => {
                let aside = move_aside(Path::new(&lance))?;
                writeln!(
                    w,
                    "chunk store: unreadable ({e});\n  moved aside to {} and started anew",
                    aside.display()
                )
                .map_err(write_err)?;
                open_and_audit(config, meta, repair).await?
            }
            Err(e) => {
                return Err(CliError::Failed(format!(
                    "{e}\nrun `sextant doctor --repair` to move the chunk store aside and have \
                     every file indexed again by the next sync"
                )));
            }
        };
        writeln!(w, "chunk store: opened ({lance})").map_err(write_err)?;
        let mut problems = 0;
        for audit in &audits {
            if audit.is_consistent() {
                writeln!(w, "{}: ok", audit.repo.name).map_err(write_err)?;
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
        if problems > 0 && !repair {
            return Err(CliError::Failed(format!(
                "the two stores disagree about {problems} repositor{}: run `sextant doctor \
                 --repair`, then sync (`sextant repo sync NAME`, or the server's queue)",
                if problems == 1 { "y" } else { "ies" }
            )));
        }
        Ok(())
    })
}

async fn open_and_audit(
    config: &Config,
    meta: std::sync::Arc<crate::store::SqlMetaStore>,
    repair: bool,
) -> Result<Vec<crate::index::RepoAudit>, CliError> {
    let (indexer, _, _) = open_indexer_with(config, meta).await?;
    indexer.audit(repair).await.map_err(fail)
}

/// Renames `dir` to `<dir>.broken-<seconds since epoch>`; returns the new name.
fn move_aside(dir: &Path) -> Result<PathBuf, CliError> {
    let stamp = crate::store::now_ms() / 1000;
    let mut name = dir.as_os_str().to_owned();
    name.push(format!(".broken-{stamp}"));
    let aside = PathBuf::from(name);
    std::fs::rename(dir, &aside).map_err(|e| {
        CliError::Failed(format!(
            "cannot move the chunk store {} aside: {e}",
            dir.display()
        ))
    })?;
    Ok(aside)
}
