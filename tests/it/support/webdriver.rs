//! A small W3C WebDriver client over reqwest, driving Debian's `chromium` headless
//! through `chromedriver`: sessions, navigation, elements, keys, scripts, dialogs and
//! screenshots — what the console's browser tests need and nothing more. Written here
//! rather than taken from a crate (fantoccini, thirtyfour) to keep the dependency tree
//! (and the build) as it is.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

use super::need::Unavailable;

/// The key W3C WebDriver names an element reference by.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Where Debian puts the browser and its driver.
fn binaries() -> Result<(PathBuf, PathBuf), Unavailable> {
    let find = |names: &[&str]| {
        names
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
            .or_else(|| {
                names.iter().find_map(|n| {
                    let out = Command::new("sh")
                        .args(["-c", &format!("command -v {n}")])
                        .output()
                        .ok()?;
                    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
                    (!path.is_empty()).then(|| PathBuf::from(path))
                })
            })
    };
    let browser = find(&["/usr/bin/chromium", "chromium", "chromium-browser"]);
    let driver = find(&["/usr/bin/chromedriver", "chromedriver"]);
    match (browser, driver) {
        (Some(b), Some(d)) => Ok((b, d)),
        (b, d) => Err(Unavailable::missing(
            "chromium and chromedriver",
            "apt-get install chromium chromium-driver",
            format!("chromium: {b:?}, chromedriver: {d:?}"),
        )),
    }
}

/// A running chromedriver with one headless browser session; both end when dropped.
pub struct Browser {
    driver: Child,
    http: reqwest::Client,
    /// `http://127.0.0.1:PORT/session/ID`.
    session: String,
    /// Where screenshots go.
    pub shots: PathBuf,
}

/// An element of the page.
#[derive(Debug, Clone)]
pub struct Element(String);

impl Browser {
    /// Starts chromedriver on a free port and a headless Chromium session
    /// (`width`×`height`), saving screenshots under `shots`.
    pub async fn start(width: u32, height: u32, shots: &Path) -> Result<Self, Unavailable> {
        let (browser, driver) = binaries()?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let child = Command::new(&driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                Unavailable::missing(
                    "chromedriver",
                    "apt-get install chromium-driver",
                    e.to_string(),
                )
            })?;
        let http = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = http.get(format!("{base}/status")).send().await;
            if let Ok(r) = ready
                && let Ok(v) = r.json::<Value>().await
                && v["value"]["ready"] == true
            {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": browser,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", format!("--window-size={width},{height}")],
            },
        }}});
        let created: Value = http
            .post(format!("{base}/session"))
            .json(&capabilities)
            .send()
            .await
            .expect("chromedriver answers")
            .json()
            .await
            .expect("a JSON session");
        let id = created["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no browser session: {created}"))
            .to_string();
        std::fs::create_dir_all(shots).expect("screenshot folder");
        Ok(Self {
            driver: child,
            http,
            session: format!("{base}/session/{id}"),
            shots: shots.to_path_buf(),
        })
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut request = self
            .http
            .request(method.clone(), format!("{}{path}", self.session));
        if let Some(body) = body {
            request = request.json(&body);
        } else if method == reqwest::Method::POST {
            request = request.json(&json!({}));
        }
        let answer: Value = request
            .send()
            .await
            .expect("chromedriver answers")
            .json()
            .await
            .expect("JSON from chromedriver");
        answer["value"].clone()
    }

    /// Opens `url`.
    pub async fn open(&self, url: &str) {
        let v = self
            .call(reqwest::Method::POST, "/url", Some(json!({"url": url})))
            .await;
        assert!(v.is_null(), "navigation failed: {v}");
    }

    /// The first element matching the CSS selector, if any now.
    pub async fn find_now(&self, css: &str) -> Option<Element> {
        let v = self
            .call(
                reqwest::Method::POST,
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        v[ELEMENT].as_str().map(|id| Element(id.to_string()))
    }

    /// The first element matching the CSS selector, waiting up to `secs` for it.
    pub async fn find(&self, css: &str, secs: u64) -> Element {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(e) = self.find_now(css).await {
                return e;
            }
            if Instant::now() > deadline {
                let page = self.text("body").await;
                panic!("no `{css}` within {secs} s; the page says:\n{page}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits up to `secs` until the text of the first `css` element contains `wanted`;
    /// returns that text.
    pub async fn wait_text(&self, css: &str, wanted: &str, secs: u64) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let text = match self.find_now(css).await {
                Some(e) => self.text_of(&e).await,
                None => String::new(),
            };
            if text.contains(wanted) {
                return text;
            }
            if Instant::now() > deadline {
                let page = self.text("body").await;
                panic!(
                    "`{css}` never said `{wanted}` within {secs} s; it says `{text}`; the page:\n{page}"
                );
            }
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
    }

    /// The visible text of the first `css` element (empty when there is none).
    pub async fn text(&self, css: &str) -> String {
        match self.find_now(css).await {
            Some(e) => self.text_of(&e).await,
            None => String::new(),
        }
    }

    /// An element's visible text.
    pub async fn text_of(&self, e: &Element) -> String {
        let v = self
            .call(
                reqwest::Method::GET,
                &format!("/element/{}/text", e.0),
                None,
            )
            .await;
        v.as_str().unwrap_or_default().to_string()
    }

    /// Clicks the first `css` element (waiting up to 10 s for it).
    pub async fn click(&self, css: &str) {
        let e = self.find(css, 10).await;
        let v = self
            .call(
                reqwest::Method::POST,
                &format!("/element/{}/click", e.0),
                None,
            )
            .await;
        assert!(v.is_null(), "clicking `{css}` failed: {v}");
    }

    /// Replaces the value of the first `css` input with `text`.
    pub async fn fill(&self, css: &str, text: &str) {
        let e = self.find(css, 10).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{}/clear", e.0),
            None,
        )
        .await;
        let v = self
            .call(
                reqwest::Method::POST,
                &format!("/element/{}/value", e.0),
                Some(json!({"text": text})),
            )
            .await;
        assert!(v.is_null(), "typing into `{css}` failed: {v}");
    }

    /// Runs `script` (a function body; `arguments` holds `args`) and returns its value.
    pub async fn script(&self, script: &str, args: Value) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
        .await
    }

    /// Accepts the open `confirm()` dialog, waiting up to 5 s for it.
    pub async fn accept_dialog(&self) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let v = self
                .call(reqwest::Method::POST, "/alert/accept", None)
                .await;
            if v.is_null() {
                return;
            }
            assert!(Instant::now() < deadline, "no dialog opened: {v}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Sends a DevTools-protocol command through chromedriver (`Emulation.…` and the
    /// like); returns its result.
    pub async fn cdp(&self, cmd: &str, params: Value) -> Value {
        self.call(
            reqwest::Method::POST,
            "/goog/cdp/execute",
            Some(json!({"cmd": cmd, "params": params})),
        )
        .await
    }

    /// Resizes the window to `width`×`height` CSS pixels.
    pub async fn resize(&self, width: u32, height: u32) {
        self.call(
            reqwest::Method::POST,
            "/window/rect",
            Some(json!({"width": width, "height": height})),
        )
        .await;
    }

    /// Saves a screenshot as `name.png` under [`Browser::shots`]; returns its path.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let v = self.call(reqwest::Method::GET, "/screenshot", None).await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().expect("a base64 screenshot"))
            .expect("valid base64");
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        let path = self.shots.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("write the screenshot");
        path
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Closing the session closes the browser (synchronously: a test may be
        // unwinding); then the driver goes.
        if let Some(rest) = self.session.strip_prefix("http://")
            && let Some((host, path)) = rest.split_once('/')
            && let Ok(mut stream) = std::net::TcpStream::connect(host)
        {
            use std::io::{Read, Write};
            let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
            let request = format!(
                "DELETE /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            if stream.write_all(request.as_bytes()).is_ok() {
                let mut answer = Vec::new();
                let _ = stream.read_to_end(&mut answer);
            }
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
