//! API tokens: creating, listing and revoking them. Only a token's hash is stored; its
//! secret is returned once, at creation. The local CLI (`sextant token`, `serve
//! --admin-token-file`) manages tokens through [`Tokens`] as the data directory's owner.

use std::collections::HashSet;
use std::sync::Arc;

use super::ServiceError;
use crate::auth::{Scope, hash_secret, new_secret};
use crate::store::{ApiToken, MetaStore, now_ms};

/// Shortest secret accepted from outside (a file): as strong as a generated one is long
/// enough.
pub const MIN_SECRET_CHARS: usize = 32;
/// Fewest different characters an outside secret may have.
pub const MIN_DISTINCT_CHARS: usize = 8;

/// Token management over the metadata store.
#[derive(Clone)]
pub struct Tokens {
    meta: Arc<dyn MetaStore>,
}

/// A token just created, with its secret (shown this once).
#[derive(Debug, Clone)]
pub struct CreatedToken {
    /// The stored record.
    pub token: ApiToken,
    /// The secret to send as `Authorization: Bearer <secret>`.
    pub secret: String,
}

impl Tokens {
    /// Token management over `meta`.
    pub fn new(meta: Arc<dyn MetaStore>) -> Self {
        Self { meta }
    }

    /// Creates a token with a new secret for `repositories` (names or ids; none: every
    /// repository, including ones registered later).
    pub async fn create(
        &self,
        name: &str,
        scope: Scope,
        repositories: &[String],
    ) -> Result<CreatedToken, ServiceError> {
        let mut ids = Vec::with_capacity(repositories.len());
        for r in repositories {
            let repo = match self.meta.get_repository_by_name(r).await? {
                Some(repo) => Some(repo),
                None => self.meta.get_repository(r).await?,
            };
            let repo = repo.ok_or_else(|| {
                ServiceError::NotFound(format!(
                    "no repository `{r}` (see `sextant repo list`); register it before \
                     creating a token for it"
                ))
            })?;
            ids.push(repo.id);
        }
        let secret = new_secret();
        let token = new_token(name, hash_secret(&secret), scope, ids);
        self.meta.create_token(&token).await?;
        Ok(CreatedToken { token, secret })
    }

    /// Stores a token for `secret` (checked with [`check_secret`]) unless a live one has
    /// it already; `true` when created. A revoked token's secret is refused.
    pub async fn ensure(
        &self,
        secret: &str,
        name: &str,
        scope: Scope,
    ) -> Result<bool, ServiceError> {
        check_secret(secret)?;
        let hash = hash_secret(secret);
        if let Some(existing) = self.meta.token_by_hash(&hash).await? {
            if existing.revoked_at.is_none() {
                return Ok(false);
            }
            return Err(ServiceError::Conflict(format!(
                "the secret belongs to revoked token {}: use a new secret",
                existing.id
            )));
        }
        let token = new_token(name, hash, scope, Vec::new());
        self.meta.create_token(&token).await?;
        Ok(true)
    }

    /// Every token, live or revoked (never a secret).
    pub async fn list(&self) -> Result<Vec<ApiToken>, ServiceError> {
        Ok(self.meta.list_tokens().await?)
    }

    /// How many tokens are live (a server with none needs no token).
    pub async fn live(&self) -> Result<usize, ServiceError> {
        Ok(self
            .list()
            .await?
            .iter()
            .filter(|t| t.revoked_at.is_none())
            .count())
    }

    /// Revokes a live token; requests carrying it are refused from then on.
    pub async fn revoke(&self, id: &str) -> Result<(), ServiceError> {
        if self.meta.revoke_token(id).await? {
            Ok(())
        } else {
            Err(ServiceError::NotFound(format!(
                "no live token `{id}` (see `sextant token list`)"
            )))
        }
    }
}

/// Checks a secret that comes from outside: one word of at least [`MIN_SECRET_CHARS`]
/// characters, [`MIN_DISTINCT_CHARS`] of them different (a long secret of few distinct
/// characters, `aaaa…` or `abab…`, is guessable; random hex of 32 characters has 16
/// distinct ones all but always).
pub fn check_secret(secret: &str) -> Result<(), ServiceError> {
    let distinct = secret.chars().collect::<HashSet<_>>().len();
    if secret.chars().count() < MIN_SECRET_CHARS
        || secret.contains(char::is_whitespace)
        || distinct < MIN_DISTINCT_CHARS
    {
        return Err(ServiceError::invalid(
            "secret",
            format!(
                "a token secret must be one word of at least {MIN_SECRET_CHARS} characters, \
                 at least {MIN_DISTINCT_CHARS} of them different (for instance `openssl rand \
                 -hex 32`)"
            ),
        ));
    }
    Ok(())
}

/// A live token record with a fresh id.
fn new_token(name: &str, token_hash: String, scope: Scope, repositories: Vec<String>) -> ApiToken {
    ApiToken {
        id: uuid::Uuid::new_v4().simple().to_string()[..12].to_string(),
        name: name.to_string(),
        token_hash,
        scope,
        repositories,
        created_at: now_ms(),
        revoked_at: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_secrets_must_be_long_and_varied() {
        assert!(
            check_secret(&"ab".repeat(20)).is_err(),
            "two distinct characters"
        );
        assert!(check_secret("0123456789abcdef").is_err(), "16 characters");
        assert!(
            check_secret("0123456789abcdef 0123456789abcdef").is_err(),
            "a space"
        );
        assert!(check_secret("0123456789abcdef0123456789abcdef").is_ok());
    }
}

/// Who a request acts as, as the caller may see it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Whoami {
    /// The token's id; `None` when authentication is off.
    pub token: Option<String>,
    /// Its name (`local` when authentication is off).
    pub name: String,
    /// What it may do: `read` or `admin`.
    #[schema(value_type = String, example = "admin")]
    pub scope: Scope,
    /// The names of the repositories it is limited to; `None`: every repository,
    /// including ones registered later.
    pub repositories: Option<Vec<String>>,
    /// Whether it may manage tokens and read the server's counts (an admin token not
    /// limited to some repositories).
    pub manages_server: bool,
}

impl super::Service {
    /// Who `caller` is: its token, scope and the repositories it is limited to.
    pub async fn whoami(&self, caller: &crate::auth::Principal) -> Result<Whoami, ServiceError> {
        let meta = self.indexer.meta();
        let name = match &caller.token_id {
            Some(id) => meta
                .list_tokens()
                .await?
                .into_iter()
                .find(|t| t.id == *id)
                .map_or_else(|| id.clone(), |t| t.name),
            None => caller.name().to_string(),
        };
        let repositories = match &caller.repos {
            None => None,
            Some(ids) => {
                let mut names = Vec::with_capacity(ids.len());
                for id in ids {
                    names.push(match meta.get_repository(id).await? {
                        Some(repo) => repo.name,
                        None => id.clone(),
                    });
                }
                Some(names)
            }
        };
        Ok(Whoami {
            token: caller.token_id.clone(),
            name,
            scope: caller.scope,
            repositories,
            manages_server: manages_server(caller),
        })
    }

    /// The server's tokens, live and revoked, never a secret (admin, unrestricted).
    pub async fn tokens(
        &self,
        caller: &crate::auth::Principal,
    ) -> Result<Vec<ApiToken>, ServiceError> {
        require_server_admin(caller)?;
        Tokens::new(self.indexer.meta().clone()).list().await
    }

    /// Creates a token (admin, unrestricted); its secret is in the answer, only there.
    pub async fn create_token(
        &self,
        caller: &crate::auth::Principal,
        name: &str,
        scope: Scope,
        repositories: &[String],
    ) -> Result<CreatedToken, ServiceError> {
        require_server_admin(caller)?;
        if name.trim().is_empty() || name.len() > 100 {
            return Err(ServiceError::invalid(
                "name",
                "a token needs a name of 1 to 100 bytes (who or what uses it)",
            ));
        }
        Tokens::new(self.indexer.meta().clone())
            .create(name, scope, repositories)
            .await
    }

    /// Revokes a token (admin, unrestricted).
    pub async fn revoke_token(
        &self,
        caller: &crate::auth::Principal,
        id: &str,
    ) -> Result<(), ServiceError> {
        require_server_admin(caller)?;
        Tokens::new(self.indexer.meta().clone()).revoke(id).await
    }
}

/// Whether `caller` may manage tokens and read the server's counts.
fn manages_server(caller: &crate::auth::Principal) -> bool {
    caller.is_admin() && caller.sees_all()
}

/// `Ok` when `caller` may manage the server's tokens.
fn require_server_admin(caller: &crate::auth::Principal) -> Result<(), ServiceError> {
    if manages_server(caller) {
        Ok(())
    } else {
        Err(ServiceError::Forbidden(
            "managing tokens needs an admin token not limited to some repositories".into(),
        ))
    }
}
