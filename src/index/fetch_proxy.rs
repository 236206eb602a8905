//! A forwarding proxy on loopback, one per `https://` git fetch, that holds libgit2 to
//! the fetch's deadline in every phase.
//!
//! libgit2 checks a fetch's progress callbacks only while objects arrive; during the ref
//! advertisement and negotiation nothing of ours runs, and its read timeout restarts with
//! every byte, so a server trickling one byte every 20 s held a fetch (its blocking
//! thread, its connection, its sync slot) for as long as it liked. The fetch is therefore
//! told to reach its server through this proxy: it forwards bytes both ways unchanged
//! (TLS stays end to end inside `CONNECT`), and at the deadline it closes every
//! connection, so libgit2's next read fails and the thread returns. Dropping the proxy
//! (the sync ended, was abandoned, or the server stops) closes them as well.
//!
//! Only `https://` fetches can use it: libgit2 (1.9) tunnels through a proxy only for
//! TLS; for plain `http://` it writes the proxy's request form but connects to the
//! server directly. `http://` and `git://` (both refused unless the server is started
//! with `--allow-insecure-git`) stay bounded by libgit2's read timeout alone. The
//! absolute-form requests a plain-HTTP proxy receives are still forwarded, should a
//! libgit2 release route them here.
//!
//! Every connection it opens is judged again by [`restricted_address`] unless private
//! hosts are allowed, so a redirect or a name that resolves differently at fetch time
//! cannot lead the fetch into the server's own network.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use super::source::restricted_address;

/// Longest request head accepted from libgit2, in bytes.
const MAX_HEAD: usize = 16 * 1024;
/// How long connecting to the git server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A running proxy; stopping it (drop) closes every connection it forwards.
#[derive(Debug)]
pub struct DeadlineProxy {
    url: String,
    task: JoinHandle<()>,
    /// Why the last refused connection was refused: libgit2 reports only the status.
    refused: Arc<Mutex<Option<String>>>,
}

impl DeadlineProxy {
    /// Starts a proxy on a free loopback port that forwards until `deadline`; private
    /// and loopback servers are refused unless `allow_private`.
    pub async fn start(deadline: Instant, allow_private: bool) -> std::io::Result<Self> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let url = format!("http://{}", listener.local_addr()?);
        let refused = Arc::new(Mutex::new(None));
        let refusals = refused.clone();
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => break,
                    accepted = listener.accept() => match accepted {
                        Ok((client, _)) => {
                            connections.spawn(forward(client, allow_private, refusals.clone()));
                        }
                        // Out of descriptors: the fetch's own connect fails or retries.
                        Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                    },
                    // Reap finished connections so a long fetch does not accumulate them.
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
            // Dropping the set aborts every forwarding task, closing both sockets.
        });
        Ok(Self { url, task, refused })
    }

    /// The proxy URL to give libgit2.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Why a connection was refused (a redirect to a private address, a name that
    /// resolves there now), for the fetch's error: libgit2 says only "403".
    pub fn refusal(&self) -> Option<String> {
        self.refused.lock().ok().and_then(|r| r.clone())
    }
}

impl Drop for DeadlineProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Where a proxied request goes.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    /// `CONNECT host:port`: a tunnel (https).
    Tunnel(String, u16),
    /// `GET http://host:port/…`: the request itself is forwarded (http).
    Forward(String, u16),
}

/// The target of a request head's first line; `None` for anything libgit2 does not send.
fn target(head: &[u8]) -> Option<Target> {
    let line = head.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end_matches('\r');
    let mut parts = line.split(' ');
    let (method, target) = (parts.next()?, parts.next()?);
    if method.eq_ignore_ascii_case("CONNECT") {
        let url = url::Url::parse(&format!("https://{target}")).ok()?;
        let host = url.host_str()?.to_string();
        return Some(Target::Tunnel(host, url.port_or_known_default()?));
    }
    let url = url::Url::parse(target).ok()?;
    (url.scheme() == "http").then_some(())?;
    let host = url.host_str()?.to_string();
    Some(Target::Forward(host, url.port_or_known_default()?))
}

/// Reads until the end of the request head; everything read (the head and any body bytes
/// after it) is returned.
async fn read_head(client: &mut TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        if buf.len() > MAX_HEAD {
            return None;
        }
        let n = client.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(buf)
}

/// Connects to `host:port`, refusing restricted addresses unless `allow_private`.
async fn connect(host: &str, port: u16, allow_private: bool) -> Result<TcpStream, String> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addresses: Vec<std::net::SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![(ip, port).into()],
        Err(_) => tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| format!("cannot resolve `{host}`: {e}"))?
            .collect(),
    };
    if !allow_private && let Some(why) = addresses.iter().find_map(|a| restricted_address(a.ip())) {
        return Err(format!(
            "`{host}` is a {why} address: git sources may not reach the server's own \
             network unless it is started with --allow-private-git-hosts"
        ));
    }
    let attempt = TcpStream::connect(&addresses[..]);
    match tokio::time::timeout(CONNECT_TIMEOUT, attempt).await {
        Ok(Ok(stream)) => Ok(stream),
        Ok(Err(e)) => Err(format!("cannot connect to `{host}:{port}`: {e}")),
        Err(_) => Err(format!("connecting to `{host}:{port}` timed out")),
    }
}

/// Forwards one connection from libgit2 to the server its request names.
async fn forward(mut client: TcpStream, allow_private: bool, refused: Arc<Mutex<Option<String>>>) {
    let Some(head) = read_head(&mut client).await else {
        return;
    };
    let Some(target) = target(&head) else {
        let _ = refuse(&mut client, "400 Bad Request", "not a proxy request").await;
        return;
    };
    let (Target::Tunnel(host, port) | Target::Forward(host, port)) = &target;
    let mut server = match connect(host, *port, allow_private).await {
        Ok(server) => server,
        Err(why) => {
            let _ = refuse(&mut client, "403 Forbidden", &why).await;
            if let Ok(mut last) = refused.lock() {
                *last = Some(why);
            }
            return;
        }
    };
    let opened = match target {
        Target::Tunnel(..) => client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await
            .is_ok(),
        Target::Forward(..) => server.write_all(&head).await.is_ok(),
    };
    if opened {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
    }
}

/// Answers `status` with `why` as the body and closes.
async fn refuse(client: &mut TcpStream, status: &str, why: &str) -> std::io::Result<()> {
    let answer = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{why}",
        why.len()
    );
    client.write_all(answer.as_bytes()).await?;
    client.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_read_from_both_request_forms() {
        assert_eq!(
            target(b"CONNECT git.example:443 HTTP/1.1\r\nHost: git.example:443\r\n\r\n"),
            Some(Target::Tunnel("git.example".into(), 443))
        );
        assert_eq!(
            target(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n"),
            Some(Target::Tunnel("[::1]".into(), 8443))
        );
        assert_eq!(
            target(
                b"GET http://git.example/r.git/info/refs?service=git-upload-pack HTTP/1.1\r\n\r\n"
            ),
            Some(Target::Forward("git.example".into(), 80))
        );
        assert_eq!(
            target(b"POST http://10.0.0.1:8080/r.git/git-upload-pack HTTP/1.1\r\n\r\n"),
            Some(Target::Forward("10.0.0.1".into(), 8080))
        );
        for bad in [
            &b"GET /r.git HTTP/1.1\r\n\r\n"[..],
            b"GET file:///etc/passwd HTTP/1.1\r\n\r\n",
            b"\xff\xfe\r\n\r\n",
            b"",
        ] {
            assert_eq!(target(bad), None, "{bad:?}");
        }
    }

    #[tokio::test]
    async fn a_refused_tunnel_is_answered_403_and_its_reason_kept() {
        let server = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = server.local_addr().unwrap().port();
        let proxy = DeadlineProxy::start(Instant::now() + Duration::from_secs(30), false)
            .await
            .unwrap();
        assert_eq!(proxy.refusal(), None);
        let mut client = TcpStream::connect(proxy.url().trim_start_matches("http://"))
            .await
            .unwrap();
        client
            .write_all(format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut answer = String::new();
        client.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        let why = proxy.refusal().expect("the reason is kept");
        assert!(
            why.contains("loopback") && why.contains("--allow-private-git-hosts"),
            "{why}"
        );
    }

    #[tokio::test]
    async fn a_restricted_server_is_refused_unless_allowed() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let refused = connect("127.0.0.1", port, false).await.unwrap_err();
        assert!(refused.contains("loopback"), "{refused}");
        assert!(connect("127.0.0.1", port, true).await.is_ok());
    }
}
