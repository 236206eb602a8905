//! Exact and regex search over the indexed contents of what the caller sees.

use tracing::Instrument;

use super::{Service, ServiceError};
use crate::auth::Principal;
use crate::index::IndexError;
use crate::search::grep::{self, CompiledGrep, GrepRequest, GrepResponse, GrepScope, TrackedScope};

impl Service {
    /// Finds `request.pattern` (a literal or a regex) in the indexed files of the
    /// repositories the caller sees (those named in `request.repositories`, when given),
    /// after the freshness check a search makes. Results come from the indexed version of
    /// each file and name it (content hash, and commit for git sources).
    #[tracing::instrument(name = "service.grep", skip_all, fields(enduser.id = caller.name()))]
    pub async fn grep(
        &self,
        caller: &Principal,
        mut request: GrepRequest,
    ) -> Result<GrepResponse, ServiceError> {
        // The request is checked and compiled before any repository is looked up.
        let compiled =
            CompiledGrep::new(&request).map_err(|e| ServiceError::invalid(e.field, e.message))?;
        let Some(index) = self.indexer.grep().cloned() else {
            return Err(ServiceError::Unavailable(
                "this server keeps no grep index (it is kept by `sextant serve`, `mcp` and the \
                 CLI over a data directory)"
                    .into(),
            ));
        };
        self.read_ref_names(caller, &mut request.repositories, &mut request.git_ref)
            .await?;
        let repos = if request.repositories.is_empty() {
            let mut all = self.indexer.meta().list_repositories().await?;
            // Tracked refs are read through their repository (`ref`), never on their own.
            all.retain(|r| r.parent_id.is_none() && caller.sees(&r.id));
            if all.is_empty() && !caller.sees_all() {
                return Err(ServiceError::Forbidden(
                    "this token may not see any repository".into(),
                ));
            }
            all
        } else {
            let mut named = Vec::with_capacity(request.repositories.len());
            for name in &request.repositories {
                named.push(self.visible_repo(caller, name).await?);
            }
            named
        };
        let _slot = self.search_slots.try_acquire().map_err(|_| {
            ServiceError::Busy(
                "the server is answering as many searches as it may; retry shortly".into(),
            )
        })?;
        let ids: Vec<String> = repos.iter().map(|r| r.id.clone()).collect();
        self.searcher.freshen(&ids).await;
        let mut scopes = Vec::with_capacity(repos.len());
        for r in repos {
            // New versions another replica published (with a copy on object storage).
            index.pull(&r.id, false).await?;
            let tracked = match &request.git_ref {
                None => None,
                Some(git_ref) => {
                    let named = !request.repositories.is_empty();
                    match self.indexer.find_ref(&r.id, git_ref).await {
                        Ok(t) => Some(TrackedScope {
                            snapshot: {
                                index.pull(&t.id, false).await?;
                                index.snapshot(&t.id)
                            },
                            name: git_ref.clone(),
                            hidden: self
                                .indexer
                                .meta()
                                .list_files(&t.id)
                                .await?
                                .into_iter()
                                .map(|f| f.path)
                                .collect(),
                            commit: t.indexed_commit,
                        }),
                        Err(IndexError::UnknownRef { .. }) if !named => continue,
                        Err(e) => return Err(e.into()),
                    }
                }
            };
            scopes.push(GrepScope {
                snapshot: index.snapshot(&r.id),
                name: r.name,
                commit: r.indexed_commit,
                tracked,
            });
        }
        let deadline = std::time::Instant::now() + grep::DEFAULT_DEADLINE;
        let span = tracing::info_span!("grep.run");
        tokio::task::spawn_blocking(move || {
            span.in_scope(|| grep::run(&compiled, scopes, deadline))
        })
        .in_current_span()
        .await
        .map_err(|e| ServiceError::Internal(format!("grep failed: {e}")))
    }
}
