//! MCP (rmcp): the tools AI agents call, over streamable HTTP at `/mcp` (mounted by the
//! server beside the REST API) and over stdio (`sextant mcp`). Each tool translates its
//! arguments into one [`Service`] call — the same calls REST makes, with the same checks
//! — and the answer into the blueprint's multi-content form (connection graph first, then
//! one snapshot per file, with audience and priority). This module does not know the REST
//! adapter.
//!
//! Over HTTP the server's authentication layer has already turned the bearer token into a
//! [`Principal`] in the request's extensions; each tool reads it from the request parts
//! rmcp hands over. Over stdio the caller is the local user. Tool failures are results the
//! agent reads (`isError`), reported to [`ToolCalls`] (the server counts them in
//! `/metrics`).

pub mod args;
pub mod remote;

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    Annotations, CallToolResult, ContentBlock, Implementation, ProgressNotificationParam, Role,
    ServerCapabilities, ServerConfig, TextContent,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, ServerHandler, tool, tool_handler, tool_router};
use tracing::Instrument;

pub use args::{
    AddRepositoryArgs, CompareArgs, FileArgs, GrepArgs, RepoArgs, ScopeArgs, ScoutArgs, SearchArgs,
    SymbolArgs, ToolArgs, TrackRefArgs,
};

use crate::auth::Principal;
use crate::service::records::RepoSettings;
use crate::service::{Comparison, Registration, ScoutRequest, Service, ServiceError, Source};

/// Where tool calls are reported (whether each failed), for counters.
pub trait ToolCalls: Send + Sync {
    /// One call of `tool`.
    fn tool_call(&self, tool: &str, failed: bool);
}

/// The MCP server: Sextant's tools over one [`Service`].
#[derive(Clone)]
pub struct SextantMcp {
    service: Arc<Service>,
    calls: Option<Arc<dyn ToolCalls>>,
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
    /// A server over `service`.
    pub fn new(service: Arc<Service>) -> Self {
        Self {
            service,
            calls: None,
            tool_router: Self::tool_router(),
        }
    }

    /// Reports every tool call to `calls`.
    pub fn with_tool_calls(mut self, calls: Arc<dyn ToolCalls>) -> Self {
        self.calls = Some(calls);
        self
    }

    #[tool(
        description = "Search the indexed codebases for the code that answers a question, \
        within a token budget. Returns first a connection graph (each result's kind, \
        signature, what it calls, who calls it, type hierarchy and type flows; ★ marks \
        results, ◆ dependencies shared by several results), then one snapshot per file \
        showing the matching functions complete with the imports, constants and fields they \
        use. Use it first for any question in words (how, where, why), when you do not \
        know the exact name: it replaces grep loops and reading whole files. Documentation \
        and configuration (Markdown, YAML, JSON, TOML, Dockerfiles) are indexed too, by \
        section and key: `kind: \"docs\"` or `\"config\"` keeps to them (\"how do I \
        configure X\"), `\"code\"` to code. When you know the name, get_symbol is exact and \
        cheaper (or `symbol = Name`, `symbol = Class > method`, `symbol = path/file.ts > \
        name` here); for an exact string or a regex, grep; before changing a symbol, scout \
        says what else must change."
    )]
    async fn codebase_search(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(args): Parameters<SearchArgs>,
    ) -> Result<CallToolResult, McpError> {
        let caller = principal(&ctx);
        let (query, given) = args.into_search();
        let result = self.service.search(&caller, &query, given).await;
        Ok(self.answer("codebase_search", result.map(|r| search_content(r.content))))
    }

    #[tool(
        description = "Look a symbol up by exact name, with no ranking: `name`, \
        `Parent > name` (a method of a class) or `path/file.ts > Parent > name`. Returns every \
        match complete, in the same form as codebase_search (connection graph, then \
        snapshots); an unknown name returns an empty result. Use it when you have the name \
        (from an error, a stack trace, a previous answer); for a question in words use \
        codebase_search."
    )]
    async fn get_symbol(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(args): Parameters<SymbolArgs>,
    ) -> Result<CallToolResult, McpError> {
        let caller = principal(&ctx);
        let result = self
            .service
            .symbol(&caller, &args.name, args.repository, args.git_ref)
            .await;
        Ok(self.answer("get_symbol", result.map(|r| search_content(r.content))))
    }

    #[tool(
        description = "Find exact text or a regex in the indexed files, like grep but \
        across every repository you may see and from an index (fast on large codebases): \
        matching lines grouped by file, with line numbers and optional context. Use it for \
        exact strings: an error message, a config key, a URL, a TODO, every use of an \
        identifier, a regex over code (`regex: true`, Rust syntax). For questions in words \
        use codebase_search; for a definition by name, get_symbol. The answer stays within \
        `maxTokens` (default 4000); when there are more matches it ends with a cursor to \
        pass back."
    )]
    async fn grep(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(args): Parameters<GrepArgs>,
    ) -> Result<CallToolResult, McpError> {
        let caller = principal(&ctx);
        let result = self.service.grep(&caller, args.into_request()).await;
        Ok(self.answer(
            "grep",
            result.map(|r| vec![text(crate::render::grep::render(&r))]),
        ))
    }

    #[tool(
        description = "Find what must change with a symbol: \"what breaks if I change X?\". \
        Explores, within a budget, who calls, references, implements, overrides, switches \
        over or is keyed by the symbol the query names, rates each link (relevance, risk, \
        tags) and answers with a summary: the places that must change with their action, \
        those worth a look, and what was safely ignored (imports, re-exports). Progress is \
        reported as symbols are explored. Use it before changing a symbol's signature, \
        shape or behaviour; to find code, use codebase_search or get_symbol."
    )]
    async fn scout(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(args): Parameters<ScoutArgs>,
    ) -> Result<CallToolResult, McpError> {
        let caller = principal(&ctx);
        let request = ScoutRequest {
            query: args.query,
            tags: args.tags,
            budget: args.budget,
            repositories: args.repositories,
            git_ref: args.git_ref,
        };
        // Progress notifications, when the client asked for them, sent in order by one
        // task while the exploration runs.
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<String>();
        let forward = ctx.meta.get_progress_token().map(|token| {
            let peer = ctx.peer.clone();
            tokio::spawn(async move {
                let mut step = 0.0;
                while let Some(message) = receiver.recv().await {
                    step += 1.0;
                    let note =
                        ProgressNotificationParam::new(token.clone(), step).with_message(message);
                    if peer.notify_progress(note).await.is_err() {
                        break;
                    }
                }
            })
        });
        let sender = forward.is_some().then_some(sender);
        let result = self
            .service
            .scout(&caller, request, |visit, explored| {
                let Some(sender) = &sender else {
                    return;
                };
                let _ = sender.send(format!(
                    "{} explored; rated {} ({})",
                    explored,
                    visit.link.location(),
                    visit.rubric.tags.join(", ")
                ));
            })
            .await;
        drop(sender);
        if let Some(task) = forward {
            let _ = task.await;
        }
        let result = result.map(|r| {
            vec![ContentBlock::Text(
                TextContent::new(format!("{}\n\n_{}_", r.summary, r.meta.interpretation))
                    .with_annotations(Annotations::default().with_audience(vec![Role::Assistant])),
            )]
        });
        Ok(self.answer("scout", result))
    }

    #[tool(
        description = "Register a repository (a directory on the server, or a git URL) and \
        queue its indexing. Needs an admin token not limited to some repositories. Follow \
        progress with index_status."
    )]
    async fn add_repository(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(args): Parameters<AddRepositoryArgs>,
    ) -> Result<CallToolResult, McpError> {
        let caller = principal(&ctx);
        let result = async {
            let new = Registration {
                source: Source::from_fields(args.path, args.git, args.tracked_ref)?,
                name: args.name,
                settings: RepoSettings {
                    include: args.include,
                    exclude: args.exclude,
                    ..RepoSettings::default()
                },
            };
            let (repo, job) = self.service.register(&caller, new).await?;
            Ok(vec![text(format!(
                "Registered `{}` ({}); indexing is queued as job {}. Ask index_status for \
                 progress.",
                repo.name, repo.id, job.id
            ))])
        }
        .await;
        Ok(self.answer("add_repository", result))
    }

    #[tool(
        description = "List the indexed repositories with their status (registered, \
        indexing, ready, error), source and last indexed commit."
    )]
    async fn list_repositories(
        &self,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let caller = principal(&ctx);
        let result = async {
            let repos = self.service.list_repositories(&caller).await?;
            let lines: Vec<String> = repos
                .iter()
                .map(|r| {
                    let (_, location) = r.source.split();
                    format!(
                        "{} ({}) {location}{}",
                        r.name,
                        r.status.as_str(),
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
            Ok::<_, ServiceError>(vec![text(body)])
        }
        .await;
        Ok(self.answer("list_repositories", result))
    }

    #[tool(
        description = "List the symbols of one file (kind, breadcrumb, signature, lines), \
        to see its structure without reading it. Then get_symbol (`path/file.ts > name`) \
        returns any of them complete."
    )]
    async fn get_file_symbols(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(args): Parameters<FileArgs>,
    ) -> Result<CallToolResult, McpError> {
        let caller = principal(&ctx);
        let result = async {
            let symbols = self
                .service
                .file_symbols(
                    &caller,
                    &args.repository,
                    &args.path,
                    args.git_ref.as_deref(),
                )
                .await?;
            if symbols.is_empty() {
                return Err(ServiceError::NotFound(format!(
                    "`{}` has no symbols in `{}`",
                    args.path, args.repository
                )));
            }
            let mut out = format!("// {}\n", args.path);
            for s in symbols {
                let indent = "  ".repeat(s.depth.max(0) as usize);
                let signature = if s.signature.is_empty() || s.signature == s.name {
                    String::new()
                } else {
                    format!(": {}", s.signature)
                };
                out.push_str(&format!(
                    "{indent}{} {} (lines {}-{}){signature}\n",
                    s.kind, s.name, s.start_line, s.end_line,
                ));
            }
            Ok(vec![text(out)])
        }
        .await;
        Ok(self.answer("get_file_symbols", result))
    }

    #[tool(
        description = "What differs between two refs of a repository (a branch against the default ref): files and symbols added, removed or modified, and the unchanged code that uses what changed (what may break when the branch merges). The refs are those index_status lists."
    )]
    async fn compare_refs(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(args): Parameters<CompareArgs>,
    ) -> Result<CallToolResult, McpError> {
        let caller = principal(&ctx);
        let result = async {
            let c = self
                .service
                .compare(&caller, &args.repository, args.base.as_deref(), &args.head)
                .await?;
            Ok(vec![text(comparison_text(&c))])
        }
        .await;
        Ok(self.answer("compare_refs", result))
    }

    #[tool(
        description = "Track another ref of a repository besides its default one, and queue \
        its indexing (it costs only the files that differ): a branch, tag or commit of a git \
        repository, or a worktree of a local one (its branch, name or directory). Then pass \
        `ref` to codebase_search, grep, get_symbol, get_file_symbols and scout. With `drop`, \
        stop tracking it. Needs an admin token."
    )]
    async fn track_ref(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(args): Parameters<TrackRefArgs>,
    ) -> Result<CallToolResult, McpError> {
        let caller = principal(&ctx);
        let result = async {
            let (repository, git_ref) = (&args.repository, &args.git_ref);
            if args.drop {
                let dropped = self.service.drop_ref(&caller, repository, git_ref).await?;
                return Ok(vec![text(format!(
                    "No longer tracking `{}`; what only it held is deleted.",
                    dropped.name
                ))]);
            }
            let (tracked, job) = self.service.add_ref(&caller, repository, git_ref).await?;
            Ok(vec![text(format!(
                "Tracking `{}`; its indexing is queued as job {}. Ask index_status for \
                 progress, then search it with `ref: \"{}\"`.",
                tracked.name,
                job.id,
                tracked.tracked_ref.as_deref().unwrap_or(git_ref)
            ))])
        }
        .await;
        Ok(self.answer("track_ref", result))
    }

    #[tool(
        description = "Indexing status of one repository: state, files, recent jobs, and the refs it tracks besides its default one (search one with codebase_search's `ref`)."
    )]
    async fn index_status(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(args): Parameters<RepoArgs>,
    ) -> Result<CallToolResult, McpError> {
        let caller = principal(&ctx);
        let result = async {
            let status = self
                .service
                .repository_with(&caller, &args.repository, 3)
                .await?;
            let (repo, files, jobs) = (status.repository, status.counts, status.recent_jobs);
            let refs = status.refs;
            let mut out = format!(
                "{}: {} | {} files indexed, {} skipped{}\n",
                repo.name,
                repo.status,
                files.indexed,
                files.skipped,
                repo.last_error
                    .as_deref()
                    .map(|e| format!(" | last error: {e}"))
                    .unwrap_or_default()
            );
            for j in jobs {
                out.push_str(&format!(
                    "job {} {} {}/{}{}\n",
                    j.id,
                    j.state,
                    j.progress_done,
                    j.progress_total,
                    j.message.map(|m| format!(" {m}")).unwrap_or_default()
                ));
            }
            for r in refs {
                out.push_str(&format!(
                    "ref {}: {}{}\n",
                    r.tracked_ref.as_deref().unwrap_or_default(),
                    r.status,
                    r.last_error
                        .as_deref()
                        .map(|e| format!(" | last error: {e}"))
                        .unwrap_or_default()
                ));
            }
            Ok(vec![text(out)])
        }
        .await;
        Ok(self.answer("index_status", result))
    }

    /// A tool's answer: its content, or its error as a failed result the agent reads;
    /// counted in `/metrics` either way.
    fn answer(
        &self,
        tool: &str,
        result: Result<Vec<ContentBlock>, ServiceError>,
    ) -> CallToolResult {
        if let Some(calls) = &self.calls {
            calls.tool_call(tool, result.is_err());
        }
        match result {
            Ok(content) => CallToolResult::success(content),
            Err(e) => failure(e),
        }
    }
}

/// Who called: the principal the HTTP layer authenticated, or the local user over stdio
/// (no HTTP request at all). An HTTP request without a principal sees nothing.
fn principal(ctx: &RequestContext<RoleServer>) -> Principal {
    match ctx.extensions.get::<axum::http::request::Parts>() {
        Some(parts) => parts
            .extensions
            .get::<Principal>()
            .cloned()
            .unwrap_or_else(Principal::nobody),
        None => Principal::local(),
    }
}

/// The blueprint's multi-content form, annotated for the assistant.
fn search_content(items: Vec<crate::render::ContentItem>) -> Vec<ContentBlock> {
    items
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
        .collect()
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for SextantMcp {
    /// Every tool call is one span, continuing the trace of the HTTP request that carried
    /// it (MCP sessions answer on their own task, outside the request's span).
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        let caller = principal(&context);
        let span = tracing::info_span!(
            "mcp.tool",
            otel.name = %format!("tool {}", request.name),
            otel.kind = "server",
            mcp.tool = %request.name,
            enduser.id = caller.name(),
        );
        if let Some(parts) = context.extensions.get::<axum::http::request::Parts>() {
            crate::telemetry::propagate::continue_trace(&span, &parts.headers);
        }
        let call = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        self.tool_router.call(call).instrument(span).await
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("sextant", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Sextant answers questions about indexed codebases with the exact functions \
                 that matter and how they connect. Start with codebase_search (questions in \
                 words, code, docs and config); use get_symbol when you know the name, grep \
                 for exact text or a regex, scout before changing a symbol.",
            )
    }
}

/// The streamable-HTTP MCP service of `tools`, to mount at `/mcp` behind the
/// authentication layer. `allowed_hosts` guards against DNS rebinding (empty: any host;
/// the router's own guard has already checked), `allowed_origins` against cross-site
/// browser calls; sessions live in `sessions` (whose idle timeout and per-token count the
/// server keeps) unless `stateless`, where every request is served on its own (replicas
/// behind a balancer with no affinity).
pub fn http_service(
    tools: SextantMcp,
    sessions: Arc<LocalSessionManager>,
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    stateless: bool,
) -> StreamableHttpService<SextantMcp, LocalSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_allowed_origins(allowed_origins)
        .with_legacy_session_mode(!stateless);
    StreamableHttpService::new(move || Ok(tools.clone()), sessions, config)
}

/// `compare_refs`' answer: counts, then files, symbols and what may break, one a line.
fn comparison_text(c: &Comparison) -> String {
    let mut out = format!(
        "{}: {} -> {}: {} files, {} symbols changed\n",
        c.repository,
        c.base,
        c.head,
        c.files.len(),
        c.symbols.len()
    );
    for f in &c.files {
        out.push_str(&format!("{:?} {}\n", f.change, f.path).to_lowercase());
    }
    for s in &c.symbols {
        out.push_str(&format!(
            "{} {} > {} ({})\n",
            format!("{:?}", s.change).to_lowercase(),
            s.path,
            s.breadcrumb,
            s.kind
        ));
    }
    if !c.affected.is_empty() {
        out.push_str("may break (unchanged code using what changed):\n");
        for a in &c.affected {
            out.push_str(&format!(
                "{}:{} {} {} {}\n",
                a.path,
                a.line.map_or_else(String::new, |l| l.to_string()),
                a.breadcrumb,
                a.kind,
                a.uses
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fuzzer reads tool arguments through `ToolArgs::parse`: it must know every tool
    /// the router serves, so that no tool's arguments go unfuzzed.
    #[test]
    fn tool_args_know_every_routed_tool() {
        let tools = SextantMcp::tool_router().list_all();
        assert!(tools.len() >= 7, "{tools:?}");
        for tool in tools {
            assert!(
                ToolArgs::parse(&tool.name, None).is_some(),
                "`{}` is routed but `ToolArgs::parse` does not know it",
                tool.name
            );
        }
        assert!(ToolArgs::parse("no_such_tool", None).is_none());
    }
}
