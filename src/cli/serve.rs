//! `sextant serve` (REST, SSE and MCP over HTTP) and `sextant mcp` (MCP over stdio) over
//! one data directory, with the sync queue running in the background and watched working
//! trees re-synced on change.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::index::fail;
use super::{CliError, out, write_err};
use crate::app::{Background, open_meta, runtime};
use crate::config::Config;
use crate::server::{AuthPolicy, ConnectionLimits, HttpOptions, ServerState, router};
use crate::service::Tokens;
use crate::service::records::SearchOptions;

/// When requests need an API token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuthMode {
    /// Tokens required when any token exists or the address is not loopback; otherwise
    /// none (the zero-config local server).
    Auto,
    /// Tokens always required.
    Required,
    /// No tokens: every caller administers everything. Loopback addresses only.
    Off,
}

/// Options of `sextant serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on. A non-loopback address needs API tokens (`sextant token
    /// create`): the server refuses to start without one.
    #[arg(long, default_value = "127.0.0.1:7878", env = "SEXTANT_BIND")]
    pub bind: SocketAddr,
    /// Syncs run at once.
    #[arg(long, default_value_t = 2, env = "SEXTANT_MAX_SYNCS")]
    pub max_syncs: usize,
    /// Seconds one sync job may run before it is stopped (marked failed; the next sync
    /// continues from what it wrote).
    #[arg(long, default_value_t = crate::service::records::DEFAULT_JOB_DEADLINE.as_secs(), env = "SEXTANT_SYNC_DEADLINE")]
    pub sync_deadline: u64,
    /// Seconds a claim on a job lasts without a renewal (renewed every third of it while
    /// the job runs). Servers sharing a PostgreSQL database take over the jobs of one
    /// that stopped after this long.
    #[arg(long, default_value_t = crate::service::records::DEFAULT_LEASE.as_secs(), env = "SEXTANT_JOB_LEASE")]
    pub job_lease: u64,
    /// When requests need a token.
    #[arg(long, value_enum, default_value_t = AuthMode::Auto, env = "SEXTANT_AUTH")]
    pub auth: AuthMode,
    /// Accepted `Host` header values (`name` or `name:port`, repeatable; `*`: any), a
    /// guard against DNS rebinding. Default: loopback names without tokens, any host
    /// with tokens.
    #[arg(
        long = "allowed-host",
        env = "SEXTANT_ALLOWED_HOSTS",
        value_delimiter = ','
    )]
    pub allowed_hosts: Vec<String>,
    /// Browser origins allowed to call the API and MCP (`https://app.example.com`,
    /// repeatable). Default: none.
    #[arg(
        long = "allowed-origin",
        env = "SEXTANT_ALLOWED_ORIGINS",
        value_delimiter = ','
    )]
    pub allowed_origins: Vec<String>,
    /// Serve every route under this path (`/sextant`), for a reverse proxy that forwards
    /// the path unchanged.
    #[arg(long, default_value = "", env = "SEXTANT_BASE_PATH")]
    pub base_path: String,
    /// Honour `X-Forwarded-Host`/`-Proto`/`-Prefix`/`-For` (only behind a proxy that sets
    /// them).
    #[arg(long, env = "SEXTANT_TRUST_FORWARDED")]
    pub trust_forwarded: bool,
    /// Searches answered at once (REST and MCP); more get 429 / a tool error.
    #[arg(long, default_value_t = crate::service::DEFAULT_MAX_SEARCHES, env = "SEXTANT_MAX_SEARCHES")]
    pub max_searches: usize,
    /// Server-wide search defaults, as JSON in the request's camelCase names
    /// (`{"maxTokenBudget": 4000, "minimumRelevanceThreshold": 0.4}`) or `@file.json`;
    /// each request may still override any of them.
    #[arg(long, env = "SEXTANT_SEARCH_DEFAULTS")]
    pub search_defaults: Option<String>,
    /// Seconds a non-streaming API request may take before a 408.
    #[arg(long, default_value_t = 60, env = "SEXTANT_REQUEST_TIMEOUT")]
    pub request_timeout: u64,
    /// Seconds a client has to send a request's head (line and headers); slower clients
    /// are disconnected.
    #[arg(long, default_value_t = 10, env = "SEXTANT_HEADER_TIMEOUT")]
    pub header_timeout: u64,
    /// Connections open at once; more are answered 503 and closed.
    #[arg(long, default_value_t = 1024, env = "SEXTANT_MAX_CONNECTIONS")]
    pub max_connections: usize,
    /// Connections one client address may hold at once (its share of
    /// --max-connections); more from it are answered 503. Behind a reverse proxy, whose
    /// address every connection has, set it to --max-connections.
    #[arg(
        long,
        default_value_t = 256,
        env = "SEXTANT_MAX_CONNECTIONS_PER_CLIENT"
    )]
    pub max_connections_per_client: usize,
    /// Seconds a client has to send a request's whole body (every route, MCP included);
    /// slower bodies get 408.
    #[arg(long, default_value_t = 30, env = "SEXTANT_BODY_TIMEOUT")]
    pub body_timeout: u64,
    /// Seconds a write to a client may wait without progress (a client that stopped
    /// reading); then the connection is closed.
    #[arg(long, default_value_t = 30, env = "SEXTANT_WRITE_TIMEOUT")]
    pub write_timeout: u64,
    /// SSE streams plus MCP sessions one token may hold open at once; more get 429.
    #[arg(long, default_value_t = crate::server::sessions::DEFAULT_SESSIONS_PER_TOKEN, env = "SEXTANT_MAX_SESSIONS_PER_TOKEN")]
    pub max_sessions_per_token: usize,
    /// Serve MCP without sessions (no `Mcp-Session-Id`): each request stands alone, so
    /// any replica behind a load balancer answers any client's next request. Set it on
    /// every replica of a multi-replica deployment (the Helm chart does).
    #[arg(long, env = "SEXTANT_MCP_STATELESS")]
    pub mcp_stateless: bool,
    /// Seconds an MCP session may go without a request before it is closed.
    #[arg(long, default_value_t = crate::server::sessions::DEFAULT_SESSION_IDLE.as_secs(), env = "SEXTANT_SESSION_IDLE_TIMEOUT")]
    pub session_idle_timeout: u64,
    /// A file holding an admin token's secret (a container or Kubernetes secret): the
    /// token is created at start unless it exists, so a fresh deployment starts with
    /// authentication and no manual `sextant token create`.
    #[arg(long, value_name = "PATH", env = "SEXTANT_ADMIN_TOKEN_FILE")]
    pub admin_token_file: Option<std::path::PathBuf>,
}

impl ServeArgs {
    /// The search defaults `--search-defaults` describes, checked.
    pub fn search_defaults(&self) -> Result<SearchOptions, String> {
        let Some(given) = &self.search_defaults else {
            return Ok(SearchOptions::default());
        };
        let text = match given.strip_prefix('@') {
            Some(path) => std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read --search-defaults file {path}: {e}"))?,
            None => given.clone(),
        };
        let options: SearchOptions = serde_json::from_str(&text)
            .map_err(|e| format!("--search-defaults is not valid search options JSON: {e}"))?;
        options
            .validate()
            .map_err(|e| format!("--search-defaults: {e}"))?;
        if options.filter != Default::default() {
            return Err(
                "--search-defaults cannot set a scope (repos, paths, languages, kinds)".into(),
            );
        }
        Ok(options)
    }

    /// The authentication policy for `live_tokens` existing tokens, or why the server
    /// must not start.
    pub fn policy(&self, live_tokens: usize) -> Result<AuthPolicy, String> {
        let loopback = self.bind.ip().is_loopback();
        let policy = match self.auth {
            AuthMode::Off if !loopback => {
                return Err(format!(
                    "refusing to listen on {} without authentication: only loopback \
                     addresses (127.0.0.1, ::1) may run with `--auth off`",
                    self.bind
                ));
            }
            AuthMode::Off => AuthPolicy::Off,
            AuthMode::Required => AuthPolicy::Tokens,
            AuthMode::Auto if live_tokens > 0 || !loopback => AuthPolicy::Tokens,
            AuthMode::Auto => AuthPolicy::Off,
        };
        if policy == AuthPolicy::Tokens && live_tokens == 0 {
            return Err(format!(
                "refusing to listen on {} without API tokens: {}create one with \
                 `sextant token create --scope admin --name <you>` (same data directory) and \
                 send it as `Authorization: Bearer <token>`",
                self.bind,
                if loopback {
                    ""
                } else {
                    "a non-loopback address requires authentication; "
                }
            ));
        }
        Ok(policy)
    }

    /// The HTTP options these flags describe, for `policy`.
    pub fn http(&self, policy: AuthPolicy) -> Result<HttpOptions, String> {
        let defaults = HttpOptions::default();
        let allowed_hosts = match (self.allowed_hosts.is_empty(), policy) {
            (false, _) => self.allowed_hosts.clone(),
            // With tokens, a rebound page has no token to send: any Host is safe.
            (true, AuthPolicy::Tokens) => vec!["*".into()],
            (true, AuthPolicy::Off) => defaults.allowed_hosts,
        };
        HttpOptions {
            base_path: self.base_path.clone(),
            allowed_hosts,
            allowed_origins: self.allowed_origins.clone(),
            trust_forwarded: self.trust_forwarded,
            request_timeout: Duration::from_secs(self.request_timeout.max(1)),
            body_timeout: Duration::from_secs(self.body_timeout.max(1)),
            mcp_stateless: self.mcp_stateless,
        }
        .validated()
    }
}

/// `sextant mcp`: the MCP tools over stdio for a local agent, on the same data directory
/// (the sync queue runs in the background as under `serve`). Logs go to stderr.
pub fn mcp(config: &Config) -> Result<(), CliError> {
    use rmcp::ServiceExt;
    runtime()?.block_on(async {
        let background = Background::Syncs {
            max_syncs: 1,
            deadline: crate::service::records::DEFAULT_JOB_DEADLINE,
            lease: crate::service::records::DEFAULT_LEASE,
        };
        let tokenizer = crate::text::Tokenizer::default();
        tokio::task::spawn_blocking(move || tokenizer.load());
        let crate::app::Started { service } = crate::app::start(config, background, |s| s).await?;
        let service = crate::mcp::SextantMcp::new(service)
            .serve(rmcp::transport::stdio())
            .await
            .map_err(fail)?;
        service.waiting().await.map_err(fail)?;
        Ok(())
    })
}

/// `sextant --server URL mcp`: MCP over stdio relayed to a remote server's `/mcp`.
pub fn mcp_remote(server: &str, token: Option<String>) -> Result<(), CliError> {
    use rmcp::ServiceExt;
    let url = format!("{}/mcp", server.trim_end_matches('/'));
    runtime()?.block_on(async {
        let (relay, _client) = crate::mcp::remote::connect(&url, token)
            .await
            .map_err(CliError::Failed)?;
        let service = relay.serve(rmcp::transport::stdio()).await.map_err(fail)?;
        service.waiting().await.map_err(fail)?;
        Ok(())
    })
}

/// Runs the server until Ctrl-C or SIGTERM.
pub fn serve(args: ServeArgs, config: &Config) -> Result<(), CliError> {
    let runtime = runtime()?;
    let outcome = runtime.block_on(serve_on(args, config));
    // A sync stuck in a blocking call (a git fetch from a server that trickles its
    // answer) must not keep the process alive after a stop: blocking work gets a short
    // grace, then the process leaves it behind (dropping the runtime would wait for it
    // for ever). Syncs are crash-safe: an interrupted one resumes at the next start.
    runtime.shutdown_timeout(BLOCKING_GRACE);
    outcome
}

/// The server's life on the runtime: start, serve, stop.
async fn serve_on(args: ServeArgs, config: &Config) -> Result<(), CliError> {
    {
        let tokens = Tokens::new(open_meta(config).await?);
        if let Some(path) = &args.admin_token_file {
            let secret = super::token::read_secret(path)?;
            let admin = crate::auth::Scope::Admin;
            if tokens.ensure(&secret, "admin", admin).await.map_err(fail)? {
                crate::telemetry::notice(&format!(
                    "created the admin token from {}",
                    path.display()
                ));
            }
        }
        let live = tokens.live().await.map_err(fail)?;
        let policy = args.policy(live).map_err(CliError::Failed)?;
        let defaults = args.search_defaults().map_err(CliError::Failed)?;
        // The default encoding is parsed beside the start, not in the first answer.
        let tokenizer = defaults.tokenizer;
        tokio::task::spawn_blocking(move || tokenizer.load());
        let http = args.http(policy).map_err(CliError::Failed)?;
        let sync_deadline = Duration::from_secs(args.sync_deadline.max(1));
        let background = Background::Syncs {
            max_syncs: args.max_syncs,
            deadline: sync_deadline,
            lease: Duration::from_secs(args.job_lease.max(1)),
        };
        let crate::app::Started { service } = crate::app::start(config, background, |s| {
            s.with_max_searches(args.max_searches)
                .with_search_defaults(defaults)
        })
        .await?;
        let state = ServerState::new(service)
            .with_auth(policy)
            .with_session_limits(crate::server::SessionLimits {
                per_token: args.max_sessions_per_token.max(1),
                idle: Duration::from_secs(args.session_idle_timeout.max(1)),
            });
        let state = Arc::new(state);
        let service = state.service.clone();
        let app = router(state, &http);
        let listener = tokio::net::TcpListener::bind(args.bind)
            .await
            .map_err(|e| CliError::Failed(format!("cannot listen on {}: {e}", args.bind)))?;
        let local = listener.local_addr().map_err(fail)?;
        crate::telemetry::notice(&format!(
            "serving on http://{local}{base} (data in {}; {}); web console at {base}/, API \
             docs at {base}/docs, MCP at {base}/mcp",
            config.data_dir.display(),
            match policy {
                AuthPolicy::Tokens => "API tokens required",
                AuthPolicy::Off => "no authentication: loopback only",
            },
            base = http.base_path,
        ));
        // Ctrl-C or SIGTERM stops accepting connections and lets requests finish; streams
        // that never end by themselves (SSE progress, MCP) are cut after SHUTDOWN_GRACE.
        let (stopping, mut stopped) = tokio::sync::watch::channel(false);
        let limits = ConnectionLimits {
            header_read_timeout: Duration::from_secs(args.header_timeout.max(1)),
            max_connections: args.max_connections.max(1),
            max_per_client: args.max_connections_per_client.max(1),
            write_timeout: Duration::from_secs(args.write_timeout.max(1)),
        };
        let server = crate::server::serve(listener, app, limits, async move {
            shutdown_signal().await;
            crate::telemetry::notice(&format!(
                "stopping (open requests get {SHUTDOWN_GRACE:?} to finish)"
            ));
            let _ = stopping.send(true);
        });
        tokio::select! {
            served = server => served.map_err(fail)?,
            _ = async {
                let _ = stopped.wait_for(|s| *s).await;
                tokio::time::sleep(SHUTDOWN_GRACE).await;
            } => crate::telemetry::notice(&format!(
                "closed the streams still open after {SHUTDOWN_GRACE:?}"
            )),
        }
        service.stop().await;
        Ok(())
    }
}

/// Options of `sextant health`.
#[derive(Debug, clap::Args)]
pub struct HealthArgs {
    /// The server's address, as `sextant serve --bind` has it (an unspecified address
    /// such as 0.0.0.0 is asked on loopback).
    #[arg(long, default_value = "127.0.0.1:7878", env = "SEXTANT_BIND")]
    pub bind: SocketAddr,
    /// The server's base path, as `sextant serve --base-path` has it.
    #[arg(long, default_value = "", env = "SEXTANT_BASE_PATH")]
    pub base_path: String,
    /// Seconds to wait for the answer.
    #[arg(long, default_value_t = 4)]
    pub timeout: u64,
}

/// `sextant health`: `Ok` when `/readyz` answers 200.
pub fn health(args: HealthArgs) -> Result<(), CliError> {
    let mut addr = args.bind;
    if addr.ip().is_unspecified() {
        addr.set_ip(match addr {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    let base = args.base_path.trim_end_matches('/');
    let url = format!("http://{addr}{base}/readyz");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Failed(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(args.timeout.max(1)))
            .build()
            .map_err(|e| CliError::Failed(format!("cannot build the HTTP client: {e}")))?;
        let response = client
            .get(&url)
            .send()
            .await
            .map_err(|e| CliError::Failed(format!("{url}: {e}")))?;
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        if status.is_success() {
            use std::io::Write;
            writeln!(out(), "ready ({url})").map_err(write_err)
        } else {
            Err(CliError::Failed(format!(
                "{url} answered {status}: {}",
                body.trim()
            )))
        }
    })
}

/// How long a stopping server waits for open requests and streams.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);
/// How long a stopping server waits for blocking work (parsing, a git fetch) to end.
const BLOCKING_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Resolves on Ctrl-C (SIGINT) or, on Unix, SIGTERM (what systemd, Docker and Kubernetes
/// send).
async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => {},
        _ = terminate => {},
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Wrap {
        #[command(flatten)]
        args: ServeArgs,
    }

    fn args(argv: &[&str]) -> ServeArgs {
        let mut full = vec!["serve"];
        full.extend_from_slice(argv);
        Wrap::try_parse_from(full).unwrap().args
    }

    #[test]
    fn authentication_follows_the_bind_address_and_the_tokens() {
        assert_eq!(args(&[]).policy(0), Ok(AuthPolicy::Off));
        assert_eq!(args(&[]).policy(1), Ok(AuthPolicy::Tokens));
        let public = args(&["--bind", "0.0.0.0:7878"]);
        assert!(
            public
                .policy(0)
                .unwrap_err()
                .contains("sextant token create")
        );
        assert_eq!(public.policy(2), Ok(AuthPolicy::Tokens));
        let off = args(&["--bind", "0.0.0.0:7878", "--auth", "off"]);
        assert!(off.policy(5).unwrap_err().contains("loopback"));
        assert!(args(&["--auth", "required"]).policy(0).is_err());
        assert_eq!(args(&["--auth", "off"]).policy(3), Ok(AuthPolicy::Off));
        // Hosts: loopback names without tokens, any with tokens, or as given.
        let loopback = args(&[]).http(AuthPolicy::Off).unwrap();
        assert!(loopback.allowed_hosts.contains(&"localhost".to_string()));
        assert_eq!(
            args(&[]).http(AuthPolicy::Tokens).unwrap().allowed_hosts,
            ["*"]
        );
        let given = args(&["--allowed-host", "a.example,b.example"]);
        assert_eq!(
            given.http(AuthPolicy::Tokens).unwrap().allowed_hosts,
            ["a.example", "b.example"]
        );
        assert!(
            args(&["--base-path", "nope"])
                .http(AuthPolicy::Off)
                .is_err()
        );
    }

    #[test]
    fn search_defaults_are_parsed_and_checked() {
        let d = args(&["--search-defaults", r#"{"maxTokenBudget": 4000}"#])
            .search_defaults()
            .unwrap();
        assert_eq!(d.max_token_budget, 4000);
        assert_eq!(
            d.minimum_relevance_threshold,
            SearchOptions::default().minimum_relevance_threshold
        );
        let bad = args(&["--search-defaults", r#"{"minimumRelevanceThreshold": 3}"#]);
        assert!(
            bad.search_defaults()
                .unwrap_err()
                .contains("minimumRelevanceThreshold")
        );
        let scoped = args(&["--search-defaults", r#"{"repos": ["x"]}"#]);
        assert!(scoped.search_defaults().unwrap_err().contains("scope"));
        let missing = args(&["--search-defaults", "@/definitely/not/here.json"]);
        assert!(
            missing
                .search_defaults()
                .unwrap_err()
                .contains("cannot read")
        );
    }
}
