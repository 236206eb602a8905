//! `sextant token create|list|revoke`: API tokens in the local data directory's store
//! (the one `sextant serve` reads), managed through [`Tokens`]. The secret is printed
//! once, at creation; only its hash is kept.

use std::io::Write;

use super::index::fail;
use super::{CliError, out, write_err};
use crate::app::{open_meta, runtime};
use crate::auth::Scope;
use crate::config::Config;
use crate::service::Tokens;

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
        let tokens = Tokens::new(open_meta(config).await?);
        let mut w = out();
        match action {
            TokenCommand::Create {
                scope,
                repos,
                name,
                from_file: Some(path),
            } if repos.is_empty() => {
                let secret = read_secret(&path)?;
                let created = tokens.ensure(&secret, &name, scope).await.map_err(fail)?;
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
            } => create(&tokens, scope, &repos, &name, &mut w).await?,
            TokenCommand::List => {
                for t in tokens.list().await.map_err(fail)? {
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
                tokens.revoke(&id).await.map_err(fail)?;
                writeln!(w, "revoked {id}").map_err(write_err)?;
            }
        }
        Ok(())
    })
}

/// Creates a token with a new secret, printed on stdout (and only there, only now).
async fn create(
    tokens: &Tokens,
    scope: Scope,
    repos: &[String],
    name: &str,
    w: &mut impl Write,
) -> Result<(), CliError> {
    let created = tokens.create(name, scope, repos).await.map_err(fail)?;
    writeln!(w, "{}", created.secret).map_err(write_err)?;
    w.flush().map_err(write_err)?;
    let token = created.token;
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

/// The secret in `path` (surrounding whitespace removed), checked for length and variety.
pub(super) fn read_secret(path: &std::path::Path) -> Result<String, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        fail(format!(
            "cannot read the token secret in {}: {e}",
            path.display()
        ))
    })?;
    let secret = text.trim().to_string();
    crate::service::check_secret(&secret).map_err(|e| fail(format!("{}: {e}", path.display())))?;
    Ok(secret)
}
