//! `sextant token create|list|revoke`: API tokens in the local data directory's store
//! (the one `sextant serve` reads). The secret is printed once, at creation; only its
//! hash is kept.

use std::io::Write;

use super::index::{fail, open_meta, runtime};
use super::{CliError, out, write_err};
use crate::auth::{Scope, hash_secret, new_secret};
use crate::config::Config;
use crate::store::{ApiToken, MetaStore};

/// Token actions.
#[derive(Debug, clap::Subcommand)]
pub enum TokenCommand {
    /// Create a token and print its secret (shown only this once).
    Create {
        /// `read` (search, list, symbols, progress) or `admin` (also register, change,
        /// delete and sync repositories).
        #[arg(long, value_enum)]
        scope: Scope,
        /// Only these repositories (names or ids, repeatable); default: all, including
        /// ones registered later.
        #[arg(long = "repo")]
        repos: Vec<String>,
        /// A label to recognise it by (`ci-bot`, `alice`).
        #[arg(long, default_value = "token")]
        name: String,
    },
    /// List tokens (never their secrets).
    List,
    /// Revoke a token by id; requests carrying it are refused from then on.
    Revoke {
        /// The token's id (from `sextant token list`).
        id: String,
    },
}

/// Runs a token action.
pub fn token(action: TokenCommand, config: &Config) -> Result<(), CliError> {
    runtime()?.block_on(async {
        let meta = open_meta(config).await?;
        let mut w = out();
        match action {
            TokenCommand::Create { scope, repos, name } => {
                let mut ids = Vec::with_capacity(repos.len());
                for r in &repos {
                    let repo = match meta.get_repository_by_name(r).await.map_err(fail)? {
                        Some(repo) => repo,
                        None => meta.get_repository(r).await.map_err(fail)?.ok_or_else(|| {
                            fail(format!(
                                "no repository `{r}` (see `sextant repo list`); register it \
                                 before creating a token for it"
                            ))
                        })?,
                    };
                    ids.push(repo.id);
                }
                let secret = new_secret();
                let token = ApiToken {
                    id: uuid::Uuid::new_v4().simple().to_string()[..12].to_string(),
                    name,
                    token_hash: hash_secret(&secret),
                    scope,
                    repositories: ids,
                    created_at: now_ms(),
                    revoked_at: None,
                };
                meta.create_token(&token).await.map_err(fail)?;
                writeln!(w, "{secret}").map_err(write_err)?;
                w.flush().map_err(write_err)?;
                eprintln!(
                    "sextant: token {} ({}, {}{}) created. The secret above is shown only \
                     once; send it as `Authorization: Bearer <secret>`. A running `sextant \
                     serve` that had no tokens needs a restart to require them.",
                    token.id,
                    token.name,
                    token.scope,
                    if repos.is_empty() {
                        String::new()
                    } else {
                        format!(", repositories: {}", repos.join(", "))
                    }
                );
            }
            TokenCommand::List => {
                for t in meta.list_tokens().await.map_err(fail)? {
                    writeln!(
                        w,
                        "{}\t{}\t{}\t{}\t{}",
                        t.id,
                        t.name,
                        t.scope,
                        if t.repositories.is_empty() {
                            "all repositories".to_string()
                        } else {
                            t.repositories.join(",")
                        },
                        if t.revoked_at.is_some() {
                            "revoked"
                        } else {
                            "live"
                        }
                    )
                    .map_err(write_err)?;
                }
            }
            TokenCommand::Revoke { id } => {
                if meta.revoke_token(&id).await.map_err(fail)? {
                    writeln!(w, "revoked {id}").map_err(write_err)?;
                } else {
                    return Err(fail(format!(
                        "no live token `{id}` (see `sextant token list`)"
                    )));
                }
            }
        }
        Ok(())
    })
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
