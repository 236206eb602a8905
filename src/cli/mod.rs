//! The command line: argument definitions and the commands that exist so far.
//!
//! Commands are thin: they read files, call the pure layers and print. Errors are
//! returned as [`CliError`] with a message that says what to do.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};

mod doctor;
mod grep;
mod index;
mod models;
mod remote;
mod repo;
mod scout;
mod search;
mod serve;
mod setup;
mod token;

use crate::chunk::chunk_file;
use crate::config::Config;
use crate::conformance::{Summary, validate_source};
use crate::embed::{EmbedError, EmbedProvider, RerankProvider};
use crate::parse::{Language, ParsedSymbol, parse_bytes};

/// Errors of the CLI layer.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A file or directory could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file could not be parsed.
    #[error("{path}: {source}")]
    Parse {
        /// The path.
        path: String,
        /// Why.
        source: crate::parse::ParseError,
    },
    /// Output could not be written or serialised.
    #[error("cannot write output: {0}")]
    Output(String),
    /// The command could not do its work; the message says why and what to do.
    #[error("{0}")]
    Failed(String),
    /// An embedding, reranking or model operation failed.
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// The application could not be put together (stores, models).
    #[error(transparent)]
    App(#[from] crate::app::AppError),
    /// Validation found broken rules (the dashboard lists them).
    #[error("{0} global rule violation(s); see the list above")]
    Violations(usize),
}

/// Sextant: precise, token-budgeted code context for AI agents.
#[derive(Debug, Parser)]
#[command(name = "sextant", version, about)]
pub struct Cli {
    /// Global settings.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The help heading of the options that point a command at a running server.
const SERVER_HEADING: &str = "Working against a server";

/// Settings shared by every command (listed after each command's own options).
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// Log lines on stderr as text or as JSON objects (with trace ids). The level is
    /// `RUST_LOG` (default `warn`; `sextant serve` suggests `info`).
    #[arg(long, global = true, env = "SEXTANT_LOG_FORMAT", value_enum, default_value_t = crate::telemetry::LogFormat::Text)]
    pub log_format: crate::telemetry::LogFormat,
    /// Data directory for Sextant's state (default `.sextant`).
    #[arg(long, global = true, env = "SEXTANT_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Metadata database (`postgres://…`, `sqlite:…` or a file path); default
    /// `<data-dir>/sextant.db`.
    #[arg(long, global = true, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<crate::config::Secret>,
    /// LanceDB URI for the chunk store; default `<data-dir>/lance`.
    #[arg(long, global = true, env = "SEXTANT_LANCE_URI")]
    pub lance_uri: Option<String>,
    /// MiB of the chunk store's files a process keeps in memory when the store is on
    /// object storage (`s3://…`): searches then read S3 only for what is not cached.
    /// 0 turns the cache off; a local store is left to the OS's page cache.
    #[arg(long, global = true, env = "SEXTANT_LANCE_CACHE_MB", default_value_t = crate::config::DEFAULT_LANCE_CACHE_MB)]
    pub lance_cache_mb: u64,
    /// MiB of opened chunk-store indexes (full-text, vector, B-tree) a process keeps in
    /// memory. A 1M-line repository's indexes take ~17 MB on disk; raise it for larger
    /// ones if searches slow down.
    #[arg(long, global = true, env = "SEXTANT_LANCE_INDEX_CACHE_MB", default_value_t = crate::config::DEFAULT_LANCE_INDEX_CACHE_MB)]
    pub lance_index_cache_mb: u64,
    /// MiB of the chunk store a process may hold in memory for searches: its vectors
    /// (scanned exactly instead of through the store's index) and its rows (no reads from
    /// the store), both or neither: small and mid-sized repositories' searches take half
    /// the time. A 1M-line repository's take ~155 MB (static model) to ~195 MB (default
    /// model); a store that needs more, or 0, is searched through the index.
    #[arg(long, global = true, env = "SEXTANT_SEARCH_MEMORY_MB", default_value_t = crate::config::DEFAULT_SEARCH_MEMORY_MB)]
    pub search_memory_mb: u64,
    /// Directory of the grep index; default `<data-dir>/grep`. Servers that share a
    /// database and chunk store share this too (one directory they all reach).
    #[arg(long, global = true, env = "SEXTANT_GREP_DIR")]
    pub grep_dir: Option<PathBuf>,
    /// Largest file the parser accepts, in bytes.
    #[arg(long, global = true, env = "SEXTANT_MAX_FILE_BYTES", default_value_t = 16 * 1024 * 1024)]
    pub max_file_bytes: usize,
    /// Files a sync writes per commit: fewer bound memory and the work a crash loses,
    /// more commit less often.
    #[arg(long, global = true, env = "SEXTANT_BATCH_FILES", default_value_t = crate::service::records::DEFAULT_BATCH_FILES as u32, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub batch_files: u32,
    /// Embedding provider.
    #[arg(long, global = true, env = "SEXTANT_EMBED_PROVIDER", value_enum, default_value_t = EmbedProvider::Local)]
    pub embed_provider: EmbedProvider,
    /// Your own local model folder: one with a `manifest.json` (ONNX or safetensors), or
    /// a BERT-family safetensors folder (config.json, tokenizer.json, model.safetensors).
    /// Default: the built-in model named by `--embed-model` in `<data-dir>/models/`,
    /// fetched on first use.
    #[arg(long, global = true, env = "SEXTANT_MODEL_DIR")]
    pub model_dir: Option<PathBuf>,
    /// Static (model2vec-format) model folder; default: Sextant's own
    /// (`sextant-code-static-v1`, shipped with it; `sextant model distill` makes others).
    #[arg(long, global = true, env = "SEXTANT_STATIC_MODEL_DIR")]
    pub static_model_dir: Option<PathBuf>,
    /// Embedding model: a built-in local one (`sextant-code-small-v1-int8`, the default,
    /// shipped with Sextant; `bge-small-en-v1.5-int8`; `all-minilm-l6-v2`; `sextant model
    /// list`) or a remote one (`voyage-code-3`, `text-embedding-3-small`, …).
    #[arg(long, global = true, env = "SEXTANT_EMBED_MODEL")]
    pub embed_model: Option<String>,
    /// Folder holding `models/` and `runtime/` (the built-in models and ONNX Runtime);
    /// default: the data directory. Lets several data directories, or a read-only image
    /// layer, share one copy.
    #[arg(long, global = true, env = "SEXTANT_MODEL_HOME")]
    pub model_home: Option<PathBuf>,
    /// Tokens a local model reads per text (default: the model's own setting).
    #[arg(long, global = true, env = "SEXTANT_EMBED_MAX_TOKENS")]
    pub embed_max_tokens: Option<usize>,
    /// Remote embedding base URL (OpenAI-compatible: `http://host:port/v1`).
    #[arg(long, global = true, env = "SEXTANT_EMBED_URL")]
    pub embed_url: Option<String>,
    /// Vector width of a remote model.
    #[arg(long, global = true, env = "SEXTANT_EMBED_DIMS")]
    pub embed_dims: Option<usize>,
    /// Directories under which local repositories may be registered (`:`-separated in
    /// the environment); empty allows any path.
    #[arg(
        long,
        global = true,
        env = "SEXTANT_ALLOWED_ROOTS",
        value_delimiter = ':'
    )]
    pub allowed_roots: Vec<PathBuf>,
    /// Accept `http://` and `git://` git sources (unencrypted).
    #[arg(long, global = true, env = "SEXTANT_ALLOW_INSECURE_GIT")]
    pub allow_insecure_git: bool,
    /// Accept git hosts on loopback, private or link-local addresses (off by default so
    /// that registering a repository cannot probe the server's own network).
    #[arg(long, global = true, env = "SEXTANT_ALLOW_PRIVATE_GIT_HOSTS")]
    pub allow_private_git_hosts: bool,
    /// Reranker.
    #[arg(long, global = true, env = "SEXTANT_RERANK_PROVIDER", value_enum, default_value_t = RerankProvider::None)]
    pub rerank_provider: RerankProvider,
    /// Reranker model (`rerank-2.5` for Voyage).
    #[arg(long, global = true, env = "SEXTANT_RERANK_MODEL")]
    pub rerank_model: Option<String>,
    /// Reranker base URL (TEI or Cohere-style servers).
    #[arg(long, global = true, env = "SEXTANT_RERANK_URL")]
    pub rerank_url: Option<String>,
    /// Scout's chat model: an OpenAI-compatible base URL (`http://localhost:11434/v1`);
    /// with `--scout-model` it rates links and writes summaries (key:
    /// `SEXTANT_SCOUT_MODEL_KEY`). Default: the offline structural rater.
    #[arg(long, global = true, env = "SEXTANT_SCOUT_MODEL_URL")]
    pub scout_model_url: Option<String>,
    /// Scout's chat model name (`qwen2.5-coder:7b`, `gpt-4o-mini`).
    #[arg(long, global = true, env = "SEXTANT_SCOUT_MODEL")]
    pub scout_model: Option<String>,
    /// Scout's expansion rule as JSON, over the seed's defaults: `{"threshold": 10}`
    /// (names: relevance, risk, tagMatch, confidence, depth, complexity, widePenalty,
    /// wideBreadth, threshold).
    #[arg(long, global = true, env = "SEXTANT_SCOUT_RULE", value_parser = crate::scout::ExpandRule::from_json)]
    pub scout_rule: Option<crate::scout::ExpandRule>,
    /// Seconds one request to Scout's model may take.
    #[arg(
        long,
        global = true,
        env = "SEXTANT_SCOUT_MODEL_TIMEOUT",
        default_value_t = 30
    )]
    pub scout_model_timeout: u64,
    /// Work against a running server (`http://host:7878`) instead of a local data
    /// directory: `search`, `index`, `repo list|show|add|rm|sync`, and `mcp` (a stdio
    /// relay to the server's `/mcp`).
    #[arg(long, global = true, env = "SEXTANT_SERVER", help_heading = SERVER_HEADING)]
    pub server: Option<String>,
    /// API token for --server (`sextant token create` on the server's machine).
    #[arg(long, global = true, env = "SEXTANT_TOKEN", hide_env_values = true, help_heading = SERVER_HEADING)]
    pub token: Option<crate::config::Secret>,
    /// A file holding the API token for --server (read at start, surrounding whitespace
    /// ignored): what `sextant setup` writes into clients' configurations, so that the
    /// token itself is never in them.
    #[arg(
        long,
        global = true,
        env = "SEXTANT_TOKEN_FILE",
        conflicts_with = "token",
        help_heading = SERVER_HEADING
    )]
    pub token_file: Option<PathBuf>,
}

impl GlobalArgs {
    /// The token for --server: `--token`, or the contents of `--token-file`.
    fn server_token(&self) -> Result<Option<String>, CliError> {
        if let Some(path) = &self.token_file {
            let text = std::fs::read_to_string(path).map_err(|source| CliError::Read {
                path: path.display().to_string(),
                source,
            })?;
            let token = text.trim();
            if token.is_empty() {
                return Err(CliError::Failed(format!(
                    "{} is empty: put the token (`sextant token create` on the server's machine) in it",
                    path.display()
                )));
            }
            return Ok(Some(token.to_string()));
        }
        Ok(self.token.as_ref().map(|t| t.expose().to_string()))
    }
}

impl GlobalArgs {
    /// The typed configuration these flags describe.
    pub fn config(&self) -> Config {
        let mut config = Config {
            data_dir: self
                .data_dir
                .clone()
                .unwrap_or_else(|| PathBuf::from(".sextant")),
            ..Config::default()
        };
        config.parse.max_file_bytes = self.max_file_bytes;
        config.batch_files = self.batch_files as usize;
        config.database_url = self.database_url.as_ref().map(|s| s.expose().to_string());
        config.lance_uri = self.lance_uri.clone();
        config.lance_cache_mb = self.lance_cache_mb;
        config.lance_index_cache_mb = self.lance_index_cache_mb;
        config.search_memory_mb = self.search_memory_mb;
        config.grep_dir = self.grep_dir.clone();
        config.embed.provider = self.embed_provider;
        config.embed.model_dir = self.model_dir.clone();
        config.embed.static_model_dir = self.static_model_dir.clone();
        config.embed.model = self.embed_model.clone();
        config.embed.base_url = self.embed_url.clone();
        config.embed.dims = self.embed_dims;
        config.embed.max_tokens = self.embed_max_tokens;
        config.embed.home = self.model_home.clone();
        config.allowed_roots = self.allowed_roots.clone();
        config.git.allow_insecure = self.allow_insecure_git;
        config.git.allow_private_hosts = self.allow_private_git_hosts;
        config.rerank.provider = self.rerank_provider;
        config.rerank.model = self.rerank_model.clone();
        config.rerank.base_url = self.rerank_url.clone();
        config.scout_model.base_url = self.scout_model_url.clone();
        config.scout_model.model = self.scout_model.clone();
        config.scout_model.timeout_secs = self.scout_model_timeout;
        config.scout_rule = self.scout_rule.unwrap_or_default();
        config
    }
}

/// Sextant's commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the chunks of one file (breadcrumb, kind, lines, tokens), or all fields as JSON.
    Chunks {
        /// A source file in one of the supported languages.
        path: PathBuf,
        /// Print every chunk field as JSON.
        #[arg(long)]
        json: bool,
        /// Also print each chunk's embedding text.
        #[arg(long)]
        embedding: bool,
    },
    /// Print the symbol tree of one file, or with --stats validate a whole directory.
    Parse {
        /// A source file, or with --stats a directory.
        path: PathBuf,
        /// Parse and chunk every supported file under the directory, check the ten global
        /// rules and print the metrics dashboard. Exits non-zero on any violation.
        #[arg(long)]
        stats: bool,
        /// Print the symbol tree as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Index a directory once (registering it on first use), with progress bars.
    Index(index::IndexArgs),
    /// Search the index: a question, or `symbol = [path >] [Parent >] name`.
    Search(search::SearchCommand),
    /// Find exact text or a regex in the indexed files (from the grep index): matching
    /// lines by repository, path and line.
    Grep(grep::GrepCommand),
    /// What must change with a symbol: callers, implementations, overrides, exhaustive
    /// `switch`es and `Record`s over it, rated, with what was safely ignored.
    Scout(scout::ScoutCommand),
    /// Index a corpus and run a JSONL query set, writing results for `score.py`.
    Eval(search::EvalCommand),
    /// Manage registered repositories.
    Repo {
        /// What to do.
        #[command(subcommand)]
        action: repo::RepoCommand,
    },
    /// Manage local models: fetch the default model, distill the static one.
    Model {
        /// What to do.
        #[command(subcommand)]
        action: models::ModelCommand,
    },
    /// Serve the REST API, SSE progress, MCP (`/mcp`), OpenAPI (`/openapi.json`, `/docs`)
    /// and metrics.
    Serve(serve::ServeArgs),
    /// Print the OpenAPI 3.1 document of the REST API (as committed in
    /// `openapi/openapi.json`).
    Openapi,
    /// Manage API tokens for `sextant serve`.
    Token {
        /// What to do.
        #[command(subcommand)]
        action: token::TokenCommand,
    },
    /// Serve the MCP tools over stdio (for a local agent such as Claude Code).
    Mcp,
    /// Configure an MCP client (Claude Code, Cursor, VS Code, Codex, or any that reads
    /// `mcpServers` JSON) to start Sextant: on this data directory, or with --server and
    /// --token-file as a relay to a shared server.
    Setup(setup::SetupArgs),
    /// Ask a running server whether it is ready (`GET /readyz`); exits non-zero when it is
    /// not. The container image's health check.
    Health(serve::HealthArgs),
    /// Check that the data directory's stores open and agree; with --repair, rebuild what
    /// is derived (a damaged chunk store is moved aside; files without chunks are indexed
    /// again by the next sync).
    Doctor {
        /// Repair what the checks find.
        #[arg(long)]
        repair: bool,
    },
    /// Embed texts with the configured provider and print one JSON line per text.
    Embed {
        /// Texts to embed.
        #[arg(required = true)]
        texts: Vec<String>,
        /// Embed as search queries rather than documents.
        #[arg(long)]
        query: bool,
    },
    /// Score documents against a query with the configured reranker.
    Rerank {
        /// The query.
        query: String,
        /// Documents to score.
        #[arg(required = true)]
        documents: Vec<String>,
    },
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<(), CliError> {
    let config = cli.global.config();
    let data_dir_given = cli.global.data_dir.is_some();
    if let Some(server) = &cli.global.server {
        let token = cli.global.server_token()?;
        let remote = remote::Remote::new(server, token.clone())?;
        return match cli.command {
            Command::Search(args) => remote::search(remote, args),
            Command::Grep(args) => grep::grep_remote(remote, args),
            Command::Scout(args) => scout::scout_remote(remote, args),
            Command::Repo { action } => remote::repo(remote, action),
            Command::Mcp => serve::mcp_remote(server, token),
            Command::Setup(args) => setup::setup(args, &cli.global),
            Command::Index(args) => remote::repo(
                remote,
                repo::RepoCommand::Add(repo::RepoAddArgs {
                    source: args.source,
                    no_wait: false,
                }),
            ),
            _ => Err(CliError::Failed(
                "with --server only `search`, `grep`, `scout`, `index`, `repo` and `mcp` run remotely; drop \
                 --server (and SEXTANT_SERVER) for local commands"
                    .into(),
            )),
        };
    }
    match cli.command {
        Command::Chunks {
            path,
            json,
            embedding,
        } => chunks(&path, json, embedding, &config),
        Command::Parse {
            path, stats: true, ..
        } => stats(&path, &config),
        Command::Parse { path, json, .. } => parse_tree(&path, json, &config),
        Command::Index(args) => index::index(args, &config),
        Command::Repo { action } => repo::repo(action, &config),
        Command::Search(args) => search::search(args, &config),
        Command::Grep(args) => grep::grep(args, &config),
        Command::Scout(args) => scout::scout(args, &config),
        Command::Eval(args) => search::eval(args, &config, data_dir_given),
        Command::Model { action } => models::model(action, &config),
        Command::Serve(args) => serve::serve(args, &config),
        Command::Mcp => serve::mcp(&config),
        Command::Health(args) => serve::health(args),
        Command::Doctor { repair } => doctor::doctor(repair, &config),
        Command::Token { action } => token::token(action, &config),
        Command::Openapi => {
            let mut w = out();
            writeln!(w, "{}", openapi_json()?).map_err(write_err)
        }
        Command::Setup(args) => setup::setup(args, &cli.global),
        Command::Embed { texts, query } => models::embed(texts, query, &config),
        Command::Rerank { query, documents } => models::rerank(query, documents, &config),
    }
}

/// The OpenAPI document as pretty JSON (what `openapi/openapi.json` holds).
pub fn openapi_json() -> Result<String, CliError> {
    serde_json::to_string_pretty(&crate::server::openapi())
        .map_err(|e| CliError::Output(e.to_string()))
}

fn read(path: &Path) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(|source| CliError::Read {
        path: path.display().to_string(),
        source,
    })
}

fn out() -> std::io::BufWriter<std::io::StdoutLock<'static>> {
    std::io::BufWriter::new(std::io::stdout().lock())
}

fn write_err(e: std::io::Error) -> CliError {
    CliError::Output(e.to_string())
}

fn chunks(path: &Path, json: bool, embedding: bool, config: &Config) -> Result<(), CliError> {
    let bytes = read(path)?;
    let display = path.display().to_string();
    let parsed = parse_bytes(path, &bytes, &config.parse).map_err(|source| CliError::Parse {
        path: display.clone(),
        source,
    })?;
    let source = String::from_utf8_lossy(&bytes);
    let chunks = chunk_file(&display, &source, &parsed, &config.chunk);
    let mut w = out();
    if json {
        serde_json::to_writer_pretty(&mut w, &chunks)
            .map_err(|e| CliError::Output(e.to_string()))?;
        writeln!(w).map_err(write_err)?;
        return Ok(());
    }
    for d in &parsed.diagnostics {
        writeln!(w, "! {}:{}:{}: {}", display, d.line, d.column, d.message).map_err(write_err)?;
    }
    for c in &chunks {
        writeln!(
            w,
            "{:indent$}{} [{}] lines {}-{} · {} tokens{}",
            "",
            c.breadcrumb,
            c.node_kind,
            c.start_line,
            c.end_line,
            c.embedding_tokens,
            if c.has_collapsed_children {
                " · collapsed children"
            } else {
                ""
            },
            indent = c.depth as usize * 2
        )
        .map_err(write_err)?;
        if embedding {
            writeln!(w, "{}\n", c.embedding_text).map_err(write_err)?;
        }
    }
    writeln!(w, "{} chunks", chunks.len()).map_err(write_err)?;
    Ok(())
}

fn parse_tree(path: &Path, json: bool, config: &Config) -> Result<(), CliError> {
    let bytes = read(path)?;
    let display = path.display().to_string();
    let parsed = parse_bytes(path, &bytes, &config.parse).map_err(|source| CliError::Parse {
        path: display.clone(),
        source,
    })?;
    let mut w = out();
    if json {
        serde_json::to_writer_pretty(&mut w, &parsed.symbols)
            .map_err(|e| CliError::Output(e.to_string()))?;
        writeln!(w).map_err(write_err)?;
        return Ok(());
    }
    fn print(w: &mut impl Write, s: &ParsedSymbol) -> std::io::Result<()> {
        let mods: Vec<&str> = s.modifiers.iter().map(|m| m.as_str()).collect();
        writeln!(
            w,
            "{:indent$}{} {} [{}-{}]{}{}",
            "",
            s.kind,
            s.name,
            s.range.start,
            s.range.end,
            if mods.is_empty() {
                String::new()
            } else {
                format!(" ({})", mods.join(" "))
            },
            if s.kind.is_statement() {
                String::new()
            } else {
                format!(" :: {}", s.signature)
            },
            indent = s.depth as usize * 2
        )?;
        s.children.iter().try_for_each(|c| print(w, c))
    }
    for s in &parsed.symbols {
        print(&mut w, s).map_err(write_err)?;
    }
    for d in &parsed.diagnostics {
        writeln!(w, "! line {}:{}: {}", d.line, d.column, d.message).map_err(write_err)?;
    }
    Ok(())
}

/// Supported source files under `dir`, respecting `.gitignore`, skipping `node_modules`.
pub fn source_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = ignore::WalkBuilder::new(dir)
        .filter_entry(|e| e.file_name() != "node_modules")
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(|e| e.into_path())
        .filter(|p| Language::from_path(p).is_some())
        .collect();
    files.sort();
    files
}

fn stats(dir: &Path, config: &Config) -> Result<(), CliError> {
    let files = if dir.is_file() {
        vec![dir.to_path_buf()]
    } else {
        source_files(dir)
    };
    if !dir.exists() {
        return Err(CliError::Read {
            path: dir.display().to_string(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or directory"),
        });
    }
    let mut summary = Summary::new();
    for path in files {
        let rel = path
            .strip_prefix(dir)
            .unwrap_or(&path)
            .to_string_lossy()
            .replace('\\', "/");
        let rel = if rel.is_empty() {
            path.display().to_string()
        } else {
            rel
        };
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) => {
                summary.skip(rel, format!("unreadable: {e}"));
                continue;
            }
        };
        match crate::parse::check_input(&bytes, &config.parse) {
            Err(e) => summary.skip(rel, e.to_string()),
            Ok(source) => match validate_source(&path, &rel, source, config) {
                Ok(report) => summary.add(report),
                Err(e) => summary.skip(rel, e.to_string()),
            },
        }
    }
    let mut w = out();
    write!(w, "{summary}").map_err(write_err)?;
    w.flush().map_err(write_err)?;
    match summary.violations.len() {
        0 => Ok(()),
        n => Err(CliError::Violations(n)),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::Cli;

    #[test]
    fn the_index_cache_flag_reaches_the_chunk_store() {
        let parse = |args: &[&str]| Cli::try_parse_from(args).expect("parses").global.config();
        let config = parse(&["sextant", "--lance-index-cache-mb", "7", "doctor"]);
        assert_eq!(config.lance_index_cache_mb, 7);
        assert_eq!(
            crate::app::lance_options(&config, 8).index_cache_bytes,
            7 << 20
        );
        let default = parse(&["sextant", "doctor"]);
        assert_eq!(
            crate::app::lance_options(&default, 8).index_cache_bytes,
            32 << 20
        );
    }
}
