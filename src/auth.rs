//! API tokens and what a caller may do: the pure part of authentication (no I/O).
//!
//! A token is a random secret shown once at creation (`sxt_` + 64 hex digits); only its
//! SHA-256 is stored. Each token has a [`Scope`] and optionally a list of repositories it
//! may see; a [`Principal`] is what a request authenticated as, and every surface (REST,
//! SSE, MCP) asks it the same two questions: may it administer, and may it see this
//! repository. A caller that may not see a repository gets the same answer as for one
//! that does not exist, so names never leak.

use serde::Serialize;
use sha2::{Digest, Sha256};

/// What a token may do (`read` / `admin` in the store, on the command line and on the
/// wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[derive(strum::Display, strum::EnumString, strum::IntoStaticStr, clap::ValueEnum)]
#[strum(serialize_all = "lowercase")]
pub enum Scope {
    /// Search, list, read symbols, follow progress.
    Read,
    /// Everything `read` may, plus register, update, delete and sync repositories.
    Admin,
}

impl Scope {
    /// `read` or `admin`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Who a request acts as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The token's id; `None` when authentication is off (a loopback server without
    /// tokens, or the stdio MCP server of the local user).
    pub token_id: Option<String>,
    /// What it may do.
    pub scope: Scope,
    /// Repository ids it may see; `None`: all.
    pub repos: Option<Vec<String>>,
}

impl Principal {
    /// The local user when authentication is off: administers everything.
    pub fn local() -> Self {
        Self {
            token_id: None,
            scope: Scope::Admin,
            repos: None,
        }
    }

    /// The principal of a token: its id, scope and the repository ids it is limited to
    /// (empty: none, it sees all).
    pub fn token(id: &str, scope: Scope, repositories: &[String]) -> Self {
        Self {
            token_id: Some(id.to_string()),
            scope,
            repos: (!repositories.is_empty()).then(|| repositories.to_vec()),
        }
    }

    /// A caller that sees nothing (an HTTP request that somehow bypassed authentication).
    pub fn nobody() -> Self {
        Self {
            token_id: None,
            scope: Scope::Read,
            repos: Some(Vec::new()),
        }
    }

    /// How logs and traces name the caller: the token's id (never its secret), or
    /// `local` when authentication is off.
    pub fn name(&self) -> &str {
        self.token_id.as_deref().unwrap_or("local")
    }

    /// May register, change, delete and sync repositories (those it sees).
    pub fn is_admin(&self) -> bool {
        self.scope == Scope::Admin
    }

    /// Sees every repository, including ones registered later.
    pub fn sees_all(&self) -> bool {
        self.repos.is_none()
    }

    /// May see the repository with this id. A tracked ref's id is its repository's id,
    /// `@`, and its own part: it is seen by whoever sees the repository.
    pub fn sees(&self, repo_id: &str) -> bool {
        let repository = repo_id.split_once('@').map_or(repo_id, |(r, _)| r);
        self.repos
            .as_ref()
            .is_none_or(|r| r.iter().any(|id| id == repository))
    }

    /// The repository scope of a search: `requested` ids kept when visible, or every
    /// visible repository when none was requested (an empty result means "all", so a
    /// principal that sees nothing gets [`ScopeError::Nothing`]).
    pub fn scope_search(&self, requested: Vec<String>) -> Result<Vec<String>, ScopeError> {
        match &self.repos {
            None => Ok(requested),
            Some(allowed) if allowed.is_empty() => Err(ScopeError::Nothing),
            Some(allowed) if requested.is_empty() => Ok(allowed.clone()),
            Some(_) => match requested.iter().find(|id| !self.sees(id)) {
                Some(id) => Err(ScopeError::Invisible(id.clone())),
                None => Ok(requested),
            },
        }
    }
}

/// Why a search scope was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScopeError {
    /// This repository id is not visible (report it like an unknown one).
    Invisible(String),
    /// The principal sees no repository at all.
    Nothing,
}

/// Prefix of every secret, so leaked tokens are recognisable (and greppable by scanners).
pub const TOKEN_PREFIX: &str = "sxt_";

/// A new random secret: the prefix and 244 random bits from the OS generator.
pub fn new_secret() -> String {
    format!(
        "{TOKEN_PREFIX}{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// The stored form of a secret: SHA-256, lowercase hex. (A fast hash is right here: the
/// secrets are long and random, so there is nothing to brute-force.)
pub fn hash_secret(secret: &str) -> String {
    Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The secret of an `Authorization` header value (`Bearer <secret>`, scheme
/// case-insensitive), if it has that shape.
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, secret) = header.trim().split_once(' ')?;
    let secret = secret.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !secret.is_empty()).then_some(secret)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn restricted(repos: &[&str]) -> Principal {
        Principal {
            token_id: Some("t".into()),
            scope: Scope::Read,
            repos: Some(repos.iter().map(|s| s.to_string()).collect()),
        }
    }

    #[test]
    fn secrets_are_random_prefixed_and_hash_stably() {
        let (a, b) = (new_secret(), new_secret());
        assert_ne!(a, b);
        assert!(a.starts_with(TOKEN_PREFIX));
        assert_eq!(a.len(), TOKEN_PREFIX.len() + 64);
        assert_eq!(hash_secret(&a), hash_secret(&a));
        assert_ne!(hash_secret(&a), hash_secret(&b));
        assert_eq!(
            hash_secret("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn bearer_headers_parse_strictly() {
        assert_eq!(bearer("Bearer sxt_1"), Some("sxt_1"));
        assert_eq!(bearer("bearer  sxt_1 "), Some("sxt_1"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer "), None);
        assert_eq!(bearer("sxt_1"), None);
    }

    #[test]
    fn repository_allowlists_bound_visibility_and_search_scope() {
        let p = restricted(&["r1", "r2"]);
        assert!(p.sees("r1") && !p.sees("r3"));
        assert!(
            p.sees("r1@ref") && !p.sees("r3@r1"),
            "a ref goes with its repository"
        );
        assert!(!p.sees_all() && !p.is_admin());
        assert_eq!(p.scope_search(vec![]), Ok(vec!["r1".into(), "r2".into()]));
        assert_eq!(p.scope_search(vec!["r2".into()]), Ok(vec!["r2".into()]));
        assert_eq!(
            p.scope_search(vec!["r2".into(), "r3".into()]),
            Err(ScopeError::Invisible("r3".into()))
        );
        assert_eq!(
            Principal::nobody().scope_search(vec![]),
            Err(ScopeError::Nothing)
        );
        let local = Principal::local();
        assert!(local.sees("anything") && local.is_admin());
        assert_eq!(local.scope_search(vec![]), Ok(vec![]));
    }

    #[test]
    fn tokens_become_principals() {
        let p = Principal::token("t1", Scope::Admin, &[]);
        assert!(p.is_admin() && p.sees_all());
        let p = Principal::token("t2", Scope::Read, &["r1".to_string()]);
        assert!(!p.is_admin() && p.sees("r1") && !p.sees("r2"));
        assert_eq!("admin".parse::<Scope>(), Ok(Scope::Admin));
        assert!("root".parse::<Scope>().is_err());
    }
}
