//! Real git servers on loopback for the network transports: `git http-backend` (smart
//! HTTP, run as CGI per request behind a small axum server) and `git daemon` (`git://`),
//! both from the machine's git.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, Response, StatusCode, Uri};

use super::Unavailable;

/// Whether the machine's `git` runs; a check that needs it reports it missing otherwise
/// (a failure under `CI=true`).
pub fn git_available(check: &str) -> bool {
    match Command::new("git").arg("--version").output() {
        Ok(out) if out.status.success() => true,
        other => {
            super::skip(
                check,
                Unavailable::missing("git", "apt-get install git", format!("{other:?}")),
            );
            false
        }
    }
}

/// `git http-backend` serving every repository under a folder, over HTTP on loopback.
pub struct GitHttp {
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    /// The `Host` header of every request it answered, in order.
    pub hosts: Arc<Mutex<Vec<String>>>,
}

impl GitHttp {
    /// Serves `root` (a request for `/a/r.git/…` reads `root/a/r.git`).
    pub async fn start(root: &Path) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hosts = Arc::new(Mutex::new(Vec::new()));
        let (root, seen) = (root.to_path_buf(), hosts.clone());
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let (root, seen) = (root.clone(), seen.clone());
                async move {
                    let host = headers
                        .get("host")
                        .and_then(|h| h.to_str().ok())
                        .unwrap_or_default();
                    seen.lock().unwrap().push(host.to_string());
                    tokio::task::spawn_blocking(move || cgi(&root, &method, &uri, &headers, &body))
                        .await
                        .unwrap()
                }
            },
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { port, hosts }
    }
}

/// Runs `git http-backend` for one request.
fn cgi(
    root: &Path,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
) -> Response<Body> {
    use std::io::Write;
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let mut child = Command::new("git")
        .arg("http-backend")
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("PATH_INFO", uri.path())
        .env("QUERY_STRING", uri.query().unwrap_or_default())
        .env("REQUEST_METHOD", method.as_str())
        .env("CONTENT_TYPE", header("content-type"))
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("GIT_PROTOCOL", header("git-protocol"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("git http-backend starts");
    child.stdin.take().unwrap().write_all(body).unwrap();
    let out = child.wait_with_output().unwrap();
    let split = out
        .stdout
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, i + 4))
        .or_else(|| {
            out.stdout
                .windows(2)
                .position(|w| w == b"\n\n")
                .map(|i| (i, i + 2))
        })
        .unwrap_or_else(|| {
            panic!(
                "git http-backend answered no headers: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let mut answer = Response::builder().status(StatusCode::OK);
    for line in String::from_utf8_lossy(&out.stdout[..split.0]).lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code = value.split(' ').next().unwrap().parse::<u16>().unwrap();
            answer = answer.status(code);
        } else {
            answer = answer.header(name.trim(), value);
        }
    }
    answer
        .body(Body::from(out.stdout[split.1..].to_vec()))
        .unwrap()
}

/// `git daemon` serving `git://` on loopback with virtual hosts: a request for `/r.git`
/// whose `host=` is `h` reads `root/h/r.git`. Stopped on drop.
pub struct GitDaemon {
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    child: Child,
}

impl GitDaemon {
    /// Starts it and waits until it accepts connections.
    pub fn start(root: &Path) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let root: PathBuf = root.canonicalize().unwrap();
        let child = Command::new("git")
            .arg("daemon")
            .args(["--export-all", "--reuseaddr", "--informative-errors"])
            .args(["--listen=127.0.0.1", &format!("--port={port}")])
            .arg(format!("--interpolated-path={}/%H%D", root.display()))
            .arg(&root)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("git daemon starts");
        let until = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < until,
                "git daemon did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { port, child }
    }
}

impl Drop for GitDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
