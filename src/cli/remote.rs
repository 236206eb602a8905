//! The CLI against a running server (`--server URL [--token T]`): the same commands as
//! on a local data directory, over the REST API.

use std::io::Write;
use std::time::Duration;

use serde_json::{Value, json};

use super::index::fail;
use super::repo::{
    RefCommand, RepoCommand, print_files, print_json, print_list, print_refs, print_settings,
};
use super::search::SearchCommand;
use super::{CliError, out, write_err};
use crate::api::{FileList, JobBody, RefList, RepositoryBody, RepositoryDetail, RepositoryList};
use crate::app::runtime;
use crate::service::records::JobState;

/// A server and the token to present.
pub struct Remote {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
}

impl Remote {
    /// A client for `server` (`http://host:port[/base]`).
    pub fn new(server: &str, token: Option<String>) -> Result<Self, CliError> {
        let base = server.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(fail(format!(
                "--server `{server}` must be an http:// or https:// URL"
            )));
        }
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(300))
            .build()
            .map_err(fail)?;
        Ok(Self { base, token, http })
    }

    /// Sends a request; its JSON answer, or the server's error message.
    pub(super) async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, CliError> {
        let url = format!("{}{path}", self.base);
        let mut request = self.http.request(method, &url);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.map_err(|e| {
            fail(format!(
                "cannot reach the server at {}: {e} (is `sextant serve` running there?)",
                self.base
            ))
        })?;
        let status = response.status();
        let value: Value = response.json().await.unwrap_or(Value::Null);
        if status.is_success() {
            return Ok(value);
        }
        let message = value["error"]["message"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| format!("the server answered {status}"));
        Err(fail(format!("{} ({status})", message)))
    }

    async fn get(&self, path: &str) -> Result<Value, CliError> {
        self.send(reqwest::Method::GET, path, None).await
    }
}

/// An answer read as the API's wire type (the same types the server writes).
fn typed<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, CliError> {
    serde_json::from_value(value).map_err(|e| {
        fail(format!(
            "the server's answer is not what this client expects ({e}); are client and \
             server the same version?"
        ))
    })
}

/// Percent-encodes a path segment or query value.
fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `sextant --server … search`.
pub fn search(remote: Remote, args: SearchCommand) -> Result<(), CliError> {
    runtime()?.block_on(async {
        let mut body = serde_json::to_value(args.settings.options()).map_err(fail)?;
        body["query"] = json!(args.query);
        body["repositories"] = json!(args.repos);
        body["paths"] = json!(args.paths);
        body["categories"] = json!(args.kind.iter().map(|k| k.to_string()).collect::<Vec<_>>());
        if let Some(git_ref) = &args.git_ref {
            body["ref"] = json!(git_ref);
        }
        let answer = remote
            .send(reqwest::Method::POST, "/api/v1/search", Some(body))
            .await?;
        super::search::print_answer(&answer, args.output())
    })
}

/// `sextant --server … repo ref …`.
async fn refs(remote: &Remote, action: RefCommand, w: &mut impl Write) -> Result<(), CliError> {
    match action {
        RefCommand::List { name } => {
            let path = format!("/api/v1/repositories/{}/refs", enc(&name));
            let list: RefList = typed(remote.get(&path).await?)?;
            print_refs(w, &list.refs)?;
        }
        RefCommand::Add { name, git_ref } => {
            let path = format!("/api/v1/repositories/{}/refs", enc(&name));
            let created = remote
                .send(
                    reqwest::Method::POST,
                    &path,
                    Some(json!({ "ref": git_ref })),
                )
                .await?;
            writeln!(w, "tracking {git_ref} of {name}; indexing queued").map_err(write_err)?;
            w.flush().map_err(write_err)?;
            wait(remote, &created["job"], w).await?;
        }
        RefCommand::Compare { name, head, base } => {
            let mut path = format!(
                "/api/v1/repositories/{}/compare?head={}",
                enc(&name),
                enc(&head)
            );
            if let Some(base) = base {
                path.push_str(&format!("&base={}", enc(&base)));
            }
            print_json(w, &remote.get(&path).await?)?;
        }
        RefCommand::Drop { name, git_ref } => {
            let path = format!("/api/v1/repositories/{}/refs/{}", enc(&name), enc(&git_ref));
            remote.send(reqwest::Method::DELETE, &path, None).await?;
            writeln!(w, "dropped {git_ref} of {name}").map_err(write_err)?;
        }
    }
    Ok(())
}

/// `sextant --server … repo …`.
pub fn repo(remote: Remote, action: RepoCommand) -> Result<(), CliError> {
    runtime()?.block_on(async {
        let mut w = out();
        match action {
            RepoCommand::List => {
                let list: RepositoryList = typed(remote.get("/api/v1/repositories").await?)?;
                print_list(&mut w, &list.repositories)?;
            }
            RepoCommand::Show { name } => {
                let path = format!("/api/v1/repositories/{}", enc(&name));
                let detail: RepositoryDetail = typed(remote.get(&path).await?)?;
                print_json(&mut w, &detail)?;
            }
            RepoCommand::Remove { name } => {
                let removed = remote
                    .send(
                        reqwest::Method::DELETE,
                        &format!("/api/v1/repositories/{}", enc(&name)),
                        None,
                    )
                    .await?;
                writeln!(
                    w,
                    "removed {} ({})",
                    removed["removed"]["name"].as_str().unwrap_or(&name),
                    removed["removed"]["id"].as_str().unwrap_or("")
                )
                .map_err(write_err)?;
            }
            RepoCommand::Add(args) => {
                let source = &args.source;
                let mut body = json!({
                    "name": source.name,
                    "settings": { "include": source.include, "exclude": source.exclude },
                });
                if source.git {
                    body["git"] = json!(source.source);
                    body["ref"] = json!(source.tracked_ref);
                } else {
                    body["path"] = json!(source.source);
                }
                let created = remote
                    .send(reqwest::Method::POST, "/api/v1/repositories", Some(body))
                    .await?;
                let name = created["repository"]["name"].as_str().unwrap_or("");
                writeln!(w, "registered {name}; indexing queued").map_err(write_err)?;
                w.flush().map_err(write_err)?;
                if !args.no_wait {
                    wait(&remote, &created["job"], &mut w).await?;
                }
            }
            RepoCommand::Sync { name, no_wait } => {
                let queued = remote
                    .send(
                        reqwest::Method::POST,
                        &format!("/api/v1/repositories/{}/sync", enc(&name)),
                        None,
                    )
                    .await?;
                writeln!(w, "sync of {name} queued").map_err(write_err)?;
                w.flush().map_err(write_err)?;
                if !no_wait {
                    wait(&remote, &queued["job"], &mut w).await?;
                }
            }
            RepoCommand::Set(args) => {
                let path = format!("/api/v1/repositories/{}", enc(&args.name));
                let current: RepositoryDetail = typed(remote.get(&path).await?)?;
                let settings = args.apply(current.repository.settings)?;
                let body = json!({ "settings": settings, "ref": args.tracked_ref });
                let saved: RepositoryBody = typed(
                    remote
                        .send(reqwest::Method::PATCH, &path, Some(body))
                        .await?,
                )?;
                print_settings(&mut w, &saved.repository.name, &saved.repository.settings)?;
            }
            RepoCommand::Ref(action) => refs(&remote, action, &mut w).await?,
            RepoCommand::Files { name, skipped } => {
                let path = format!(
                    "/api/v1/repositories/{}/files?skipped={skipped}",
                    enc(&name)
                );
                let list: FileList = typed(remote.get(&path).await?)?;
                print_files(&mut w, &list.files)?;
            }
        }
        Ok(())
    })
}

/// Polls a job until it ends, printing its progress on stderr.
async fn wait(remote: &Remote, job: &Value, w: &mut impl Write) -> Result<(), CliError> {
    let id = job["id"]
        .as_str()
        .ok_or_else(|| fail("the server's answer had no job id"))?;
    let mut last = String::new();
    loop {
        let JobBody { job } = typed(remote.get(&format!("/api/v1/jobs/{}", enc(id))).await?)?;
        let line = format!(
            "{} {}/{}{}",
            job.state,
            job.progress_done,
            job.progress_total,
            job.message
                .as_deref()
                .map(|m| format!(" {m}"))
                .unwrap_or_default()
        );
        if line != last {
            eprintln!("sextant: job {id}: {line}");
            last = line;
        }
        match job.state {
            JobState::Succeeded => {
                let done = job.message.as_deref().unwrap_or("done");
                return writeln!(w, "indexed: {done}").map_err(write_err);
            }
            JobState::Failed | JobState::Cancelled => {
                return Err(fail(format!(
                    "job {id} {}: {}",
                    job.state,
                    job.error
                        .or(job.message)
                        .unwrap_or_else(|| "no message".into())
                )));
            }
            JobState::Queued | JobState::Running => {
                tokio::time::sleep(Duration::from_millis(500)).await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn path_segments_are_percent_encoded() {
        assert_eq!(super::enc("my repo/x"), "my%20repo%2Fx");
        assert_eq!(super::enc("a-b_c.d~"), "a-b_c.d~");
    }
}
