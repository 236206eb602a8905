//! `sextant serve` as a child process: started, found by its `serving on` line, killed
//! when the test ends, pass or fail; and the REST steps tests take against it.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The `sextant` binary on the data directory `data` with the static model at `model`,
/// the environment's server, token, fail point and store URLs left out.
pub fn sextant_static(data: &std::path::Path, model: &std::path::Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sextant"));
    cmd.arg("--data-dir")
        .arg(data)
        .args(["--embed-provider", "static", "--static-model-dir"])
        .arg(model);
    for name in [
        "SEXTANT_SERVER",
        "SEXTANT_TOKEN",
        "SEXTANT_FAILPOINT",
        "DATABASE_URL",
        "SEXTANT_LANCE_URI",
    ] {
        cmd.env_remove(name);
    }
    cmd
}

/// A running server.
pub struct Served {
    child: Child,
    /// `http://127.0.0.1:PORT[/base]`.
    pub url: String,
    /// Its stderr so far, one entry per line.
    pub lines: Arc<Mutex<Vec<String>>>,
}

impl Served {
    /// Starts `command` (whose arguments end with `serve …`) and waits up to two minutes
    /// for the line that says where it listens. Its stderr is echoed as `[serve] …`.
    pub fn start(mut command: Command) -> Self {
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let kept = lines.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if let Some(rest) = line.split("serving on ").nth(1) {
                    let url = rest.split_whitespace().next().unwrap_or("").to_string();
                    let _ = tx.send(url);
                }
                eprintln!("[serve] {line}");
                kept.lock().expect("lines").push(line);
            }
        });
        let mut served = Self {
            child,
            url: String::new(),
            lines,
        };
        served.url = rx
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| {
                panic!(
                    "the server never said where it listens: {:?}",
                    served.lines.lock().expect("lines")
                )
            });
        served
    }

    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Its exit status, once it has exited.
    pub fn try_wait(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().expect("the child can be waited for")
    }

    /// Waits up to `limit` for the child to exit; its status, if it did.
    pub fn try_wait_for(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let started = Instant::now();
        loop {
            if let Some(status) = self.try_wait() {
                return Some(status);
            }
            if started.elapsed() > limit {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The stderr lines so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().expect("lines").clone()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The JSON answer of a request.
pub async fn json_of(request: reqwest::RequestBuilder) -> Value {
    request.send().await.unwrap().json().await.unwrap()
}

/// Registers a repository over REST; returns its first sync's job id.
pub async fn register_job(http: &reqwest::Client, base: &str, body: &Value) -> String {
    let created = json_of(http.post(format!("{base}/api/v1/repositories")).json(body)).await;
    created["job"]["id"].as_str().unwrap().to_string()
}

/// Polls a job until `done` accepts its state; returns the job.
pub async fn wait_job(
    http: &reqwest::Client,
    base: &str,
    id: &str,
    done: impl Fn(&str) -> bool,
) -> Value {
    let started = Instant::now();
    loop {
        let job = json_of(http.get(format!("{base}/api/v1/jobs/{id}"))).await;
        let state = job["job"]["state"].as_str().unwrap_or("").to_lowercase();
        if done(&state) {
            return job["job"].clone();
        }
        assert!(started.elapsed() < Duration::from_secs(180), "{job}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
