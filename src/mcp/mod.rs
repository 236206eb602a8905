//! MCP (rmcp): the tools AI agents call, over streamable HTTP at `/mcp` (mounted by
//! `sextant serve`) and over stdio (`sextant mcp`). Each tool is a thin translation onto
//! the same [`AppState`] the REST API uses; results are the blueprint's multi-content form
//! (connection graph first, then one snapshot per file, with audience and priority).

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    Annotations, CallToolResult, ContentBlock, Role, ServerCapabilities, ServerConfig, TextContent,
};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;

use crate::api::AppState;
use crate::search::SearchOptions;

/// Arguments of `codebase_search`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchArgs {
    /// What to find: a natural-language question ("where do we validate the auth
    /// token?"), or an exact lookup `symbol = [path/file.ts >] [Parent >] name`.
    pub query: String,
    /// Only these repositories (names or ids); default: all.
    #[serde(default)]
    pub repositories: Vec<String>,
    /// Only these paths: directory prefixes (`src/auth/`), files, or globs (`**/*.ts`).
    #[serde(default)]
    pub path: Vec<String>,
    /// Only these languages (`typescript`, `tsx`, `javascript`).
    #[serde(default)]
    pub languages: Vec<String>,
    /// Token budget of the returned code (default 8000).
    pub max_token_budget: Option<usize>,
    /// Minimum relevance (0–1) of a returned result (default 0.5).
    pub minimum_relevance_threshold: Option<f32>,
}

/// Arguments of `get_file_symbols`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct FileArgs {
    /// Repository name or id.
    pub repository: String,
    /// File path relative to the repository root (`src/auth/token.ts`).
    pub path: String,
}

/// Arguments of `index_status`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct RepoArgs {
    /// Repository name or id.
    pub repository: String,
}

/// The MCP server: Sextant's tools over one [`AppState`].
#[derive(Clone)]
pub struct SextantMcp {
    state: Arc<AppState>,
    tool_router: ToolRouter<Self>,
}

fn text(t: impl Into<String>) -> ContentBlock {
    ContentBlock::Text(TextContent::new(t))
}

/// A tool failure the agent reads (not a protocol error).
fn failure(message: impl std::fmt::Display) -> CallToolResult {
    CallToolResult::error(vec![text(message.to_string())])
}

#[tool_router]
impl SextantMcp {
    /// A server over `state`.
    pub fn new(state: Arc<AppState>) -> Self {
        Self {
            state,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        description = "Search the indexed codebases for the code that answers a question, \
        within a token budget. Returns first a connection graph (each result's kind, \
        signature, what it calls, who calls it, type hierarchy and type flows; ★ marks \
        results, ◆ dependencies shared by several results), then one snapshot per file \
        showing the matching functions complete with the imports, constants and fields they \
        use. Use `symbol = Name`, `symbol = Class > method` or `symbol = path/file.ts > \
        name` for an exact lookup."
    )]
    async fn codebase_search(
        &self,
        Parameters(args): Parameters<SearchArgs>,
    ) -> Result<CallToolResult, McpError> {
        let mut options = SearchOptions::default();
        if let Some(budget) = args.max_token_budget {
            options.max_token_budget = budget;
        }
        if let Some(threshold) = args.minimum_relevance_threshold {
            options.minimum_relevance_threshold = threshold;
        }
        for name in &args.repositories {
            match self.state.indexer.find_repo(name).await {
                Ok(repo) => options.filter.repos.push(repo.id),
                Err(e) => return Ok(failure(e)),
            }
        }
        options.filter.paths = args.path;
        options.filter.languages = args.languages;
        let response = match self.state.searcher.search(&args.query, &options).await {
            Ok(r) => r,
            Err(e) => return Ok(failure(e)),
        };
        let files = match self.state.searcher.result_files(&response).await {
            Ok(f) => f,
            Err(e) => return Ok(failure(e)),
        };
        let content = crate::render::mcp_content(&response, &files)
            .into_iter()
            .map(|item| {
                ContentBlock::Text(
                    TextContent::new(item.text).with_annotations(
                        Annotations::default()
                            .with_audience(vec![Role::Assistant])
                            .with_priority(item.annotations.priority),
                    ),
                )
            })
            .collect();
        Ok(CallToolResult::success(content))
    }

    #[tool(
        description = "List the indexed repositories with their status (registered, \
        indexing, ready, failed), source and last indexed commit."
    )]
    async fn list_repositories(&self) -> Result<CallToolResult, McpError> {
        match self.state.indexer.meta().list_repositories().await {
            Ok(repos) => {
                let lines: Vec<String> = repos
                    .iter()
                    .map(|r| {
                        format!(
                            "{} ({}) {}{}",
                            r.name,
                            r.status.as_str(),
                            match &r.source {
                                crate::store::RepoSource::Path(p) => p.clone(),
                                crate::store::RepoSource::Git(u) => u.clone(),
                            },
                            r.indexed_commit
                                .as_deref()
                                .map(|c| format!(" @ {c}"))
                                .unwrap_or_default()
                        )
                    })
                    .collect();
                let body = if lines.is_empty() {
                    "No repositories are indexed yet.".to_string()
                } else {
                    lines.join("\n")
                };
                Ok(CallToolResult::success(vec![text(body)]))
            }
            Err(e) => Ok(failure(e)),
        }
    }

    #[tool(
        description = "List the symbols of one file (kind, breadcrumb, signature, lines), \
        to see its structure without reading it."
    )]
    async fn get_file_symbols(
        &self,
        Parameters(args): Parameters<FileArgs>,
    ) -> Result<CallToolResult, McpError> {
        let repo = match self.state.indexer.find_repo(&args.repository).await {
            Ok(r) => r,
            Err(e) => return Ok(failure(e)),
        };
        match self
            .state
            .indexer
            .meta()
            .file_symbols(&repo.id, &args.path)
            .await
        {
            Ok(symbols) if symbols.is_empty() => Ok(failure(format!(
                "`{}` has no indexed symbols in `{}` (paths are relative to the repository root)",
                args.path, repo.name
            ))),
            Ok(symbols) => {
                let mut out = format!("// {}\n", args.path);
                for s in symbols {
                    let indent = "  ".repeat(s.depth.max(0) as usize);
                    out.push_str(&format!(
                        "{indent}{} {} (lines {}-{}){}\n",
                        s.kind,
                        s.name,
                        s.start_line,
                        s.end_line,
                        if s.signature.is_empty() || s.signature == s.name {
                            String::new()
                        } else {
                            format!(": {}", s.signature)
                        }
                    ));
                }
                Ok(CallToolResult::success(vec![text(out)]))
            }
            Err(e) => Ok(failure(e)),
        }
    }

    #[tool(description = "Indexing status of one repository: state, files, recent jobs.")]
    async fn index_status(
        &self,
        Parameters(args): Parameters<RepoArgs>,
    ) -> Result<CallToolResult, McpError> {
        let meta = self.state.indexer.meta();
        let repo = match self.state.indexer.find_repo(&args.repository).await {
            Ok(r) => r,
            Err(e) => return Ok(failure(e)),
        };
        let files = meta.list_files(&repo.id).await.unwrap_or_default();
        let jobs = meta.list_jobs(Some(&repo.id), 3).await.unwrap_or_default();
        let indexed = files.iter().filter(|f| f.skip_reason.is_none()).count();
        let mut out = format!(
            "{}: {} | {} files indexed, {} skipped{}\n",
            repo.name,
            repo.status.as_str(),
            indexed,
            files.len() - indexed,
            repo.last_error
                .as_deref()
                .map(|e| format!(" | last error: {e}"))
                .unwrap_or_default()
        );
        for j in jobs {
            out.push_str(&format!(
                "job {} {} {}/{}{}\n",
                j.id,
                j.state.as_str(),
                j.progress_done,
                j.progress_total,
                j.message.map(|m| format!(" {m}")).unwrap_or_default()
            ));
        }
        Ok(CallToolResult::success(vec![text(out)]))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for SextantMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_instructions(
            "Sextant answers questions about indexed codebases with the exact functions that \
             matter and how they connect. Start with codebase_search.",
        )
    }
}

/// The streamable-HTTP MCP service, to mount at `/mcp`. `allowed_hosts` guards against
/// DNS rebinding (loopback names by default).
pub fn http_service(
    state: Arc<AppState>,
    allowed_hosts: Vec<String>,
) -> StreamableHttpService<SextantMcp, LocalSessionManager> {
    let config = StreamableHttpServerConfig::default().with_allowed_hosts(allowed_hosts);
    StreamableHttpService::new(
        move || Ok(SextantMcp::new(state.clone())),
        Default::default(),
        config,
    )
}
