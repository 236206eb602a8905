//! `sextant token create|list|revoke`: API tokens in the local data directory's store
//! (the one `sextant serve` reads). The secret is printed once, at creation; only its
//! hash is kept.

use std::io::Write;

use super::index::fail;
use super::{CliError, out, write_err};
use crate::app::{open_meta, runtime};
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
        /// Use the secret in this file (a container or Kubernetes secret) instead of a new
        /// one, and print nothing; does nothing when a live token has that secret already.
        #[arg(long, value_name = "PATH")]
        from_file: Option<std::path::PathBuf>,
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
            TokenCommand::Create {
                scope,
                repos,
                name,
                from_file: Some(path),
            } if repos.is_empty() => {
                let secret = read_secret(&path)?;
                let created = ensure_token(meta.as_ref(), &secret, &name, scope).await?;
                eprintln!(
                    "sextant: {} token `{name}` from {}",
                    if created {
                        "created"
                    } else {
                        "kept the existing"
                    },
                    path.display()
                );
            }
            TokenCommand::Create {
                from_file: Some(_), ..
            } => {
                return Err(fail(
                    "--from-file creates tokens for every repository; drop --repo, or create \
                     a limited token without --from-file",
                ));
            }
            TokenCommand::Create {
                scope, repos, name, ..
            } => create(meta.as_ref(), scope, &repos, name, &mut w).await?,
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

/// Creates a token with a new secret, printed on stdout (and only there, only now).
async fn create(
    meta: &dyn MetaStore,
    scope: Scope,
    repos: &[String],
    name: String,
    w: &mut impl Write,
) -> Result<(), CliError> {
    let mut ids = Vec::with_capacity(repos.len());
    for r in repos {
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
    let token = new_token(name, hash_secret(&secret), scope, ids);
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
    Ok(())
}

/// Shortest secret accepted from a file: as strong as a generated one is long enough.
const MIN_SECRET_CHARS: usize = 32;
/// Fewest different characters a secret read from a file may have.
const MIN_DISTINCT_CHARS: usize = 8;

/// The secret in `path` (surrounding whitespace removed), checked for length.
pub(super) fn read_secret(path: &std::path::Path) -> Result<String, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        fail(format!(
            "cannot read the token secret in {}: {e}",
            path.display()
        ))
    })?;
    let secret = text.trim().to_string();
    // A long secret of few distinct characters (`aaaa…`, `abab…`) is guessable; random
    // hex of 32 characters has 16 distinct ones all but always (issue 37, finding 12).
    let distinct = secret
        .chars()
        .collect::<std::collections::HashSet<_>>()
        .len();
    if secret.chars().count() < MIN_SECRET_CHARS
        || secret.contains(char::is_whitespace)
        || distinct < MIN_DISTINCT_CHARS
    {
        return Err(fail(format!(
            "the token secret in {} must be one word of at least {MIN_SECRET_CHARS} \
             characters, at least {MIN_DISTINCT_CHARS} of them different (for instance \
             `openssl rand -hex 32`)",
            path.display()
        )));
    }
    Ok(secret)
}

/// Stores a token for `secret` unless a live one has it already; `true` when created.
pub(super) async fn ensure_token(
    meta: &dyn MetaStore,
    secret: &str,
    name: &str,
    scope: Scope,
) -> Result<bool, CliError> {
    let hash = hash_secret(secret);
    if let Some(existing) = meta.token_by_hash(&hash).await.map_err(fail)? {
        if existing.revoked_at.is_none() {
            return Ok(false);
        }
        return Err(fail(format!(
            "the secret belongs to revoked token {}: use a new secret",
            existing.id
        )));
    }
    let token = new_token(name.to_string(), hash, scope, Vec::new());
    meta.create_token(&token).await.map_err(fail)?;
    Ok(true)
}

/// A live token record with a fresh id.
fn new_token(
    name: String,
    token_hash: String,
    scope: Scope,
    repositories: Vec<String>,
) -> ApiToken {
    ApiToken {
        id: uuid::Uuid::new_v4().simple().to_string()[..12].to_string(),
        name,
        token_hash,
        scope,
        repositories,
        created_at: now_ms(),
        revoked_at: None,
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
