//! Search and exact symbol lookup, scoped to what the caller sees.

use tracing::Instrument;

use super::{Service, ServiceError};
use crate::auth::Principal;
use crate::render::ContentItem;
use crate::search::options::SearchOverrides;
use crate::search::{SearchOptions, SearchResponse};

/// A search's answer, in both forms adapters need.
#[derive(Debug, Clone)]
pub struct SearchAnswer {
    /// The structured response: results with their code and scores, every candidate,
    /// structural metadata, timings.
    pub response: SearchResponse,
    /// The same answer rendered for an assistant: the connection graph, then one snapshot
    /// per file.
    pub content: Vec<ContentItem>,
}

impl Service {
    /// Searches the repositories `caller` sees (those the request names in `repositories`, names
    /// or ids, when given) and renders the answer: the server's search defaults with what
    /// the request sets replacing them, validated here.
    pub async fn search(
        &self,
        caller: &Principal,
        query: &str,
        request: SearchOverrides,
    ) -> Result<SearchAnswer, ServiceError> {
        let options = request.apply(self.search_defaults.clone());
        self.search_with(caller, query, options).await
    }

    /// [`Service::search`] with complete options.
    #[tracing::instrument(
        name = "service.search",
        skip_all,
        fields(enduser.id = caller.name(), sextant.repositories = tracing::field::Empty)
    )]
    pub(super) async fn search_with(
        &self,
        caller: &Principal,
        query: &str,
        mut options: SearchOptions,
    ) -> Result<SearchAnswer, ServiceError> {
        // Sizes and ranges first: nothing (not even a repository name) is looked up for a
        // request that is refused anyway.
        crate::search::validate_request(query, &options)?;
        async {
            let filter = &mut options.filter;
            self.read_ref_names(caller, &mut filter.repositories, &mut filter.git_ref)
                .await?;
            let scope = self
                .search_scope(caller, &options.filter.repositories)
                .await?;
            self.scope_refs(&mut options.filter, scope).await
        }
        .instrument(tracing::debug_span!("search.scope"))
        .await?;
        let _slot = self.search_slots.try_acquire().map_err(|_| {
            ServiceError::Busy(
                "the server is answering as many searches as it may; retry shortly".into(),
            )
        })?;
        tracing::Span::current().record(
            "sextant.repositories",
            tracing::field::display(options.filter.repositories.join(",")),
        );
        self.pull_contents(&options.filter).await;
        let response = self.searcher.search(query, &options).await?;
        let render = tracing::info_span!("search.render");
        let started = std::time::Instant::now();
        let files = self
            .searcher
            .result_files(&response)
            .instrument(tracing::debug_span!(parent: &render, "search.render.files"))
            .instrument(render.clone())
            .await?;
        // Rendering is CPU work proportional to the files' size: off the async workers, so
        // a large answer never stalls other requests (health probes included).
        // The whole answer (graph, snapshots, notes) within the budget the caller gave.
        let (response, content) = tokio::task::spawn_blocking(move || {
            render.in_scope(|| {
                tracing::debug_span!("search.render.fit")
                    .in_scope(|| crate::render::budget::fit_content(response, &files))
            })
        })
        .await
        .map_err(|e| ServiceError::Internal(format!("rendering failed: {e}")))?;
        let mut response = label_refs(response, &options.filter);
        response.timings.render_ms = started.elapsed().as_secs_f64() * 1000.0;
        response.timings.total_ms += response.timings.render_ms;
        Ok(SearchAnswer { response, content })
    }

    /// Exact lookup of `name` (`name`, `Parent > name` or `path/file.ts > Parent > name`)
    /// over the caller's repositories, or only `repository`; on `git_ref` when given (a
    /// ref the repositories track).
    pub async fn symbol(
        &self,
        caller: &Principal,
        name: &str,
        repository: Option<String>,
        git_ref: Option<String>,
    ) -> Result<SearchAnswer, ServiceError> {
        if name.trim().is_empty() {
            return Err(ServiceError::invalid(
                "name",
                "`name` must name a symbol: `name`, `Parent > name` or `path/file.ts > name`",
            ));
        }
        let mut options = self.search_defaults.clone();
        options.filter = Default::default();
        options.filter.repositories = repository.into_iter().collect();
        options.filter.git_ref = git_ref;
        self.search_with(caller, &format!("symbol = {name}"), options)
            .await
    }
}

/// For a search on a tracked ref: every hit names the ref, and the repository it
/// belongs to (rather than the ref's own storage).
fn label_refs(mut response: SearchResponse, filter: &crate::store::ChunkFilter) -> SearchResponse {
    let Some(git_ref) = &filter.git_ref else {
        return response;
    };
    for hit in response
        .results
        .iter_mut()
        .chain(response.candidates.iter_mut())
    {
        if let Some(view) = filter
            .views
            .iter()
            .find(|v| v.repository == hit.repo_id || v.tracked == hit.repo_id)
        {
            hit.repo_id = view.repository.clone();
            hit.git_ref = Some(git_ref.clone());
        }
    }
    response
}
