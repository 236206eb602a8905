//! A real S3-compatible server for the object-storage tests: `s3s-fs`, the s3s project's
//! file-system-backed S3 server (crates.io; `.ci/run` installs it with `cargo install`),
//! on a loopback port with credentials, over a temporary directory; it can be stopped
//! and started again on the same port and data (the fault tests), and put behind a
//! proxy that delays every read (a slow store).
//!
//! Objects are plain files under `<root>/<bucket>/<key>`, so a test can read what the
//! server stores (a LanceDB table opened from its directory) without S3 credentials.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::Unavailable;

/// The access key the server accepts.
pub const ACCESS_KEY: &str = "sextant-test-access";
/// The secret key the server accepts.
pub const SECRET_KEY: &str = "sextant-test-secret-0123456789";
/// The one bucket.
pub const BUCKET: &str = "sextant";

/// A running `s3s-fs` (stopped when dropped).
pub struct TestS3 {
    program: PathBuf,
    dir: tempfile::TempDir,
    /// The port it listens on (kept across restarts).
    pub port: u16,
    child: Option<Child>,
}

/// The `s3s-fs` binary: `SEXTANT_S3_SERVER`, then `~/.cache/sextant/tools/bin` (where
/// `.ci/run` installs it), then `PATH`.
fn program() -> Result<PathBuf, Unavailable> {
    if let Some(p) = std::env::var_os("SEXTANT_S3_SERVER") {
        return Ok(PathBuf::from(p));
    }
    let cached = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cache/sextant/tools/bin/s3s-fs"))
        .filter(|p| p.is_file());
    if let Some(p) = cached {
        return Ok(p);
    }
    let found = Command::new("s3s-fs")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    match found {
        Ok(s) if s.success() => Ok(PathBuf::from("s3s-fs")),
        other => Err(Unavailable::missing(
            "the s3s-fs S3 server",
            "cargo install s3s-fs --version 0.14.1 --features binary --locked --root ~/.cache/sextant/tools",
            format!("{other:?}"),
        )),
    }
}

/// A free loopback port (bound, read, released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl TestS3 {
    /// Starts a server with an empty bucket [`BUCKET`].
    pub fn start() -> Result<Self, Unavailable> {
        let program = program()?;
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join(BUCKET)).expect("the bucket's directory");
        let mut s3 = TestS3 {
            program,
            dir,
            port: free_port(),
            child: None,
        };
        s3.restart();
        Ok(s3)
    }

    /// Starts the server again on its port and data (after [`Self::stop`]); waits until
    /// it accepts connections.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "the S3 server is running");
        let child = Command::new(&self.program)
            .args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .arg(self.dir.path())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("s3s-fs starts");
        self.child = Some(child);
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "s3s-fs never listened on port {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills the server (SIGKILL: connections drop mid-request).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `s3://BUCKET/prefix`.
    pub fn uri(&self, prefix: &str) -> String {
        format!("s3://{BUCKET}/{prefix}")
    }

    /// Where the server keeps the objects under `prefix`.
    pub fn objects(&self, prefix: &str) -> PathBuf {
        self.dir.path().join(BUCKET).join(prefix)
    }

    /// The standard AWS settings that point a client at `endpoint` with this server's
    /// credentials.
    pub fn env_for(endpoint: &str) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_string()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.to_string()),
            ("AWS_REGION", "us-east-1".to_string()),
            ("AWS_ENDPOINT", endpoint.to_string()),
            ("AWS_ALLOW_HTTP", "true".to_string()),
        ]
    }

    /// [`Self::env_for`] this server.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        Self::env_for(&self.endpoint())
    }

    /// The data directory (for a test that inspects it).
    pub fn root(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for TestS3 {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A loopback TCP proxy that forwards to `target` and waits a settable delay before
/// passing on each read, in both directions: a slow object store.
pub struct SlowProxy {
    /// The port it listens on.
    pub port: u16,
    delay_ms: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl SlowProxy {
    /// Starts the proxy (on the current Tokio runtime) with no delay.
    pub async fn start(target: u16) -> SlowProxy {
        let delay_ms = Arc::new(AtomicU64::new(0));
        let delay = delay_ms.clone();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let delay = delay.clone();
                tokio::spawn(async move {
                    let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", target)).await
                    else {
                        return;
                    };
                    let (cr, cw) = client.into_split();
                    let (sr, sw) = server.into_split();
                    tokio::join!(pipe(cr, sw, delay.clone()), pipe(sr, cw, delay));
                });
            }
        });
        SlowProxy {
            port,
            delay_ms,
            task,
        }
    }

    /// Delays every read from now on by `delay`.
    pub fn set_delay(&self, delay: Duration) {
        self.delay_ms
            .store(delay.as_millis() as u64, Ordering::Relaxed);
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for SlowProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    delay_ms: Arc<AtomicU64>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let delay = delay_ms.load(Ordering::Relaxed);
                if delay > 0 {
                    tokio::time::sleep(Duration::from_millis(delay)).await;
                }
                if to.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown().await;
}
