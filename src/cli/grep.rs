//! `sextant grep`: exact and regex search over the index, locally or on a server.

use std::io::Write;

use super::index::fail;
use super::{CliError, out, write_err};
use crate::app::{Background, runtime};
use crate::auth::Principal;
use crate::config::Config;
use crate::service::records::{GrepMode, GrepRequest, GrepResponse};

/// Options of `sextant grep`.
#[derive(Debug, Clone, clap::Args)]
pub struct GrepCommand {
    /// The text to find (with --regex, a Rust regex).
    pub pattern: String,
    /// Read the pattern as a regular expression (Rust `regex` syntax).
    #[arg(short = 'e', long)]
    pub regex: bool,
    /// Match regardless of case.
    #[arg(short = 'i', long)]
    pub ignore_case: bool,
    /// Only these repositories (name or id; repeatable).
    #[arg(long = "repo")]
    pub repos: Vec<String>,
    /// Only these paths: directory prefixes, files or globs (repeatable).
    #[arg(long = "path")]
    pub paths: Vec<String>,
    /// Only these languages (repeatable).
    #[arg(long = "lang")]
    pub languages: Vec<String>,
    /// Only `code`, `docs` or `config` files.
    #[arg(long, value_enum)]
    pub kind: Option<crate::parse::Category>,
    /// Search a ref the repositories track besides their default one (`repo ref add`).
    #[arg(long = "ref")]
    pub git_ref: Option<String>,
    /// Lines of context before and after each match (0–10).
    #[arg(short = 'C', long, default_value_t = 0)]
    pub context: u32,
    /// Most matching lines (1–1000).
    #[arg(long, default_value_t = 100)]
    pub limit: u32,
    /// Go on after a previous answer (the cursor it printed).
    #[arg(long)]
    pub cursor: Option<String>,
    /// Print the structured answer as JSON.
    #[arg(long)]
    pub json: bool,
}

impl GrepCommand {
    /// The request the service (or a server) answers.
    pub fn request(&self) -> GrepRequest {
        GrepRequest {
            pattern: self.pattern.clone(),
            mode: if self.regex {
                GrepMode::Regex
            } else {
                GrepMode::Literal
            },
            case_insensitive: self.ignore_case,
            repositories: self.repos.clone(),
            paths: self.paths.clone(),
            languages: self.languages.clone(),
            categories: self.kind.iter().map(|k| k.to_string()).collect(),
            context: self.context,
            limit: Some(self.limit),
            max_tokens: None,
            tokenizer: Default::default(),
            cursor: self.cursor.clone(),
            git_ref: self.git_ref.clone(),
        }
    }
}

/// `sextant grep` on this data directory.
pub fn grep(args: GrepCommand, config: &Config) -> Result<(), CliError> {
    runtime()?.block_on(async {
        let service = crate::app::start(config, Background::None, |s| s)
            .await?
            .service;
        let answer = service
            .grep(&Principal::local(), args.request())
            .await
            .map_err(fail)?;
        print(&answer, args.json)
    })
}

/// `sextant --server … grep`.
pub fn grep_remote(remote: super::remote::Remote, args: GrepCommand) -> Result<(), CliError> {
    runtime()?.block_on(async {
        let body = serde_json::to_value(args.request()).map_err(fail)?;
        let answer = remote
            .send(reqwest::Method::POST, "/api/v1/grep", Some(body))
            .await?;
        let answer: GrepResponse = serde_json::from_value(answer).map_err(fail)?;
        print(&answer, args.json)
    })
}

fn print(answer: &GrepResponse, json: bool) -> Result<(), CliError> {
    let mut w = out();
    if json {
        serde_json::to_writer_pretty(&mut w, answer).map_err(fail)?;
        writeln!(w).map_err(write_err)
    } else {
        write!(w, "{}", crate::render::grep::render(answer)).map_err(write_err)
    }
}
