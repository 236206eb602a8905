//! `sextant scout "…"`: what must change with a symbol, on a local data directory or
//! (with `--server`) through a server's REST API.

use std::io::Write;

use serde_json::json;

use super::index::fail;
use super::remote::Remote;
use super::{CliError, out, write_err};
use crate::app::{Background, runtime};
use crate::auth::Principal;
use crate::config::Config;
use crate::scout::ScoutResponse;
use crate::service::ScoutRequest;

/// `sextant scout`.
#[derive(Debug, clap::Args)]
pub struct ScoutCommand {
    /// What to find out, naming the symbol: "what breaks if I add a variant to Kind",
    /// or `symbol = path/file.ts > Parent > name`.
    pub query: String,
    /// An interest tag (repeatable): `exhaustive`, `pattern-match`, `record`,
    /// `implements`, `overrides`, `subclass`, `call-site`, `type-only`, `test`…
    #[arg(long = "tag")]
    pub tags: Vec<String>,
    /// Most symbols to explore (1–200, default 20).
    #[arg(long)]
    pub budget: Option<u32>,
    /// Only this repository (name or id; repeatable).
    #[arg(long = "repo")]
    pub repos: Vec<String>,
    /// On this ref the repositories track besides their default one (`repo ref add`).
    #[arg(long = "ref")]
    pub git_ref: Option<String>,
    /// Print the whole response (summary, pointers, meta) as JSON.
    #[arg(long)]
    pub json: bool,
}

impl ScoutCommand {
    fn request(&self) -> ScoutRequest {
        ScoutRequest {
            query: self.query.clone(),
            tags: self.tags.clone(),
            budget: self.budget,
            repositories: self.repos.clone(),
            git_ref: self.git_ref.clone(),
        }
    }
}

/// Scouts on the local data directory.
pub fn scout(args: ScoutCommand, config: &Config) -> Result<(), CliError> {
    runtime()?.block_on(async {
        // Nothing runs in the background: scouting reads the index, it never syncs.
        let service = crate::app::start(config, Background::None, |s| s)
            .await?
            .service;
        let answer = service
            .scout(&Principal::local(), args.request(), |_, _| {})
            .await
            .map_err(fail)?;
        print(&answer, args.json)
    })
}

/// Scouts through a server.
pub fn scout_remote(remote: Remote, args: ScoutCommand) -> Result<(), CliError> {
    runtime()?.block_on(async {
        let body = json!({
            "query": args.query,
            "tags": args.tags,
            "budget": args.budget,
            "repositories": args.repos,
            "ref": args.git_ref,
        });
        let answer = remote
            .send(reqwest::Method::POST, "/api/v1/scout", Some(body))
            .await?;
        let mut w = out();
        if args.json {
            serde_json::to_writer_pretty(&mut w, &answer).map_err(fail)?;
            return writeln!(w).map_err(write_err);
        }
        writeln!(
            w,
            "{}\n\n{}",
            answer["summary"].as_str().unwrap_or(""),
            answer["meta"]["interpretation"].as_str().unwrap_or("")
        )
        .map_err(write_err)
    })
}

fn print(answer: &ScoutResponse, json: bool) -> Result<(), CliError> {
    let mut w = out();
    if json {
        serde_json::to_writer_pretty(&mut w, answer).map_err(fail)?;
        return writeln!(w).map_err(write_err);
    }
    writeln!(w, "{}\n\n{}", answer.summary, answer.meta.interpretation).map_err(write_err)
}
