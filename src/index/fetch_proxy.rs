//! A loopback proxy per network git fetch that holds libgit2 to the fetch's deadline in
//! every phase.
//!
//! libgit2 checks a fetch's progress callbacks only while objects arrive; during the ref
//! advertisement and negotiation nothing of ours runs, and its read timeout restarts with
//! every byte, so a server trickling one byte every 20 s held a fetch (its blocking
//! thread, its connection, its sync slot) for as long as it liked. Every fetch over the
//! network therefore reaches its server through one of these, and at the deadline the
//! proxy closes every connection it carries, so libgit2's next read fails whatever phase
//! it is in and the thread returns. Dropping the proxy (the sync ended, was abandoned, or
//! the server stops) closes them as well. How the fetch is routed depends on its
//! transport ([`Route`]):
//!
//! - `https://`: libgit2 is given the proxy as its HTTP proxy and tunnels through it with
//!   `CONNECT`; bytes are forwarded unchanged, TLS stays end to end.
//! - `http://`: libgit2 (1.9) writes a proxy's request form for plain HTTP but connects
//!   to the server directly, so the fetch is instead pointed at the proxy's own URL, a
//!   relay for the one server: each request is forwarded with the server's `Host`
//!   (parsed and written by hyper on both sides), and a redirect may only stay on that
//!   server (libgit2 would follow any other one directly, around the proxy).
//! - `git://`: the fetch is pointed at the relay too; the request's first packet line
//!   names the virtual host (`host=`), which is set back to the server's before the
//!   bytes are forwarded unchanged.
//!
//! Every connection it opens is judged again by [`restricted_address`] unless private
//! hosts are allowed, so a redirect or a name that resolves differently at fetch time
//! cannot lead the fetch into the server's own network; the reason of the last refusal is
//! kept for the fetch's error (libgit2 reports only a status or a closed connection).

use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use http::{HeaderValue, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use super::source::{GitTransport, restricted_address};

/// Longest request head accepted from libgit2, in bytes.
const MAX_HEAD: usize = 16 * 1024;
/// How long connecting to the git server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How libgit2 is to reach the server through a [`DeadlineProxy`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Give libgit2 this URL as its proxy (`https://`).
    Proxy(String),
    /// Fetch from this URL instead of the server's (`http://`, `git://`): the relay.
    Relay(String),
}

/// What a proxy does with the connections libgit2 opens.
#[derive(Debug, Clone)]
enum Mode {
    /// A forwarding proxy: `CONNECT` tunnels.
    Forwarding,
    /// A relay for one HTTP server.
    Http(Upstream),
    /// A relay for one `git://` daemon.
    Git(Upstream),
}

/// The one server a relay forwards to.
#[derive(Debug, Clone)]
struct Upstream {
    /// Host name or address (IPv6 without brackets).
    host: String,
    /// Port.
    port: u16,
    /// `host[:port]` as the URL wrote it: the `Host` the server expects.
    authority: String,
    /// The relay's own `http://127.0.0.1:port`, for rewriting redirects.
    relay_base: String,
}

/// A future the proxy's task drives (and drops at the deadline).
type Task = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What every connection of one proxy shares.
#[derive(Clone)]
struct Shared {
    allow_private: bool,
    /// Why the last refused or failed connection failed.
    refused: Arc<Mutex<Option<String>>>,
    /// Futures to drive beside the connections (the relay's server-side HTTP
    /// connections), so that they are closed with them.
    tasks: mpsc::UnboundedSender<Task>,
}

impl Shared {
    fn refuse(&self, why: String) -> String {
        if let Ok(mut last) = self.refused.lock() {
            *last = Some(why.clone());
        }
        why
    }
}

/// A running proxy; stopping it (drop) closes every connection it forwards.
#[derive(Debug)]
pub struct DeadlineProxy {
    route: Route,
    task: JoinHandle<()>,
    /// Why the last refused connection was refused: libgit2 reports only the status.
    refused: Arc<Mutex<Option<String>>>,
}

impl DeadlineProxy {
    /// Starts the proxy a fetch of `url` over `transport` goes through, on a free loopback
    /// port, forwarding until `deadline`; private and loopback servers are refused unless
    /// `allow_private`. `None` for transports without a network connection of libgit2's
    /// own (local repositories).
    pub async fn for_fetch(
        url: &str,
        transport: &GitTransport,
        deadline: Instant,
        allow_private: bool,
    ) -> std::io::Result<Option<Self>> {
        let relayed_scheme = match transport {
            GitTransport::Https => None,
            GitTransport::Http => Some("http"),
            GitTransport::Git => Some("git"),
            GitTransport::Ssh | GitTransport::Local(_) => return Ok(None),
        };
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let relay_base = format!("http://{}", listener.local_addr()?);
        let invalid = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidInput, why);
        let relayed = |scheme: &str| -> std::io::Result<(Upstream, String)> {
            let parsed = url::Url::parse(url).map_err(|e| invalid(&format!("not a URL ({e})")))?;
            let host = parsed
                .host_str()
                .ok_or_else(|| invalid("the URL has no host"))?;
            let port = parsed
                .port_or_known_default()
                .or((scheme == "git").then_some(9418))
                .ok_or_else(|| invalid("the URL has no port"))?;
            let authority = match parsed.port() {
                Some(p) => format!("{host}:{p}"),
                None => host.to_string(),
            };
            let mut relay = parsed.clone();
            let local = listener.local_addr()?;
            let moved = relay.set_host(Some(&local.ip().to_string())).is_ok()
                && relay.set_port(Some(local.port())).is_ok()
                && relay.set_username("").is_ok()
                && relay.set_password(None).is_ok();
            if !moved {
                return Err(invalid("the URL cannot be relayed"));
            }
            let upstream = Upstream {
                host: host
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_string(),
                port,
                authority,
                relay_base: relay_base.clone(),
            };
            Ok((upstream, relay.into()))
        };
        let (mode, route) = match relayed_scheme {
            None => (Mode::Forwarding, Route::Proxy(relay_base.clone())),
            Some(scheme) => {
                let (upstream, relay) = relayed(scheme)?;
                match scheme {
                    "git" => (Mode::Git(upstream), Route::Relay(relay)),
                    _ => (Mode::Http(upstream), Route::Relay(relay)),
                }
            }
        };
        Ok(Some(Self::serve(
            listener,
            mode,
            route,
            deadline,
            allow_private,
        )))
    }

    /// A forwarding (`CONNECT`) proxy on a free loopback port, whatever the URL.
    pub async fn forwarding(deadline: Instant, allow_private: bool) -> std::io::Result<Self> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let route = Route::Proxy(format!("http://{}", listener.local_addr()?));
        Ok(Self::serve(
            listener,
            Mode::Forwarding,
            route,
            deadline,
            allow_private,
        ))
    }

    fn serve(
        listener: TcpListener,
        mode: Mode,
        route: Route,
        deadline: Instant,
        allow_private: bool,
    ) -> Self {
        let refused = Arc::new(Mutex::new(None));
        let (tasks, mut more) = mpsc::unbounded_channel::<Task>();
        let shared = Shared {
            allow_private,
            refused: refused.clone(),
            tasks,
        };
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => break,
                    accepted = listener.accept() => match accepted {
                        Ok((client, _)) => {
                            let shared = shared.clone();
                            connections.spawn(match &mode {
                                Mode::Forwarding => Box::pin(forward(client, shared)) as Task,
                                Mode::Http(up) => Box::pin(relay_http(client, up.clone(), shared)),
                                Mode::Git(up) => Box::pin(relay_git(client, up.clone(), shared)),
                            });
                        }
                        // Out of descriptors: the fetch's own connect fails or retries.
                        Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                    },
                    Some(task) = more.recv() => {
                        connections.spawn(task);
                    }
                    // Reap finished connections so a long fetch does not accumulate them.
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
            // Dropping the set aborts every forwarding task, closing both sockets.
        });
        Self {
            route,
            task,
            refused,
        }
    }

    /// How libgit2 reaches the server through this proxy.
    pub fn route(&self) -> &Route {
        &self.route
    }

    /// Why a connection was refused (a redirect to a private address, a name that
    /// resolves there now, a redirect off the relayed server), for the fetch's error:
    /// libgit2 says only "403" or that the connection closed.
    pub fn refusal(&self) -> Option<String> {
        self.refused.lock().ok().and_then(|r| r.clone())
    }
}

impl Drop for DeadlineProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The `host:port` of a `CONNECT` request head; `None` for anything else (libgit2 sends
/// only `CONNECT` to its proxy: plain HTTP goes through the relay).
fn tunnel_target(head: &[u8]) -> Option<(String, u16)> {
    let line = head.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end_matches('\r');
    let mut parts = line.split(' ');
    let (method, target) = (parts.next()?, parts.next()?);
    if !method.eq_ignore_ascii_case("CONNECT") {
        return None;
    }
    let url = url::Url::parse(&format!("https://{target}")).ok()?;
    let host = url.host_str()?.to_string();
    Some((host, url.port_or_known_default()?))
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

/// Tunnels one `CONNECT` from libgit2 to the server it names.
async fn forward(mut client: TcpStream, shared: Shared) {
    let Some(head) = read_head(&mut client).await else {
        return;
    };
    let Some((host, port)) = tunnel_target(&head) else {
        let _ = refuse(&mut client, "400 Bad Request", "not a CONNECT request").await;
        return;
    };
    let mut server = match connect(&host, port, shared.allow_private).await {
        Ok(server) => server,
        Err(why) => {
            let why = shared.refuse(why);
            let _ = refuse(&mut client, "403 Forbidden", &why).await;
            return;
        }
    };
    let opened = client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .is_ok();
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

/// Serves one HTTP connection from libgit2, forwarding each request to the server.
async fn relay_http(client: TcpStream, upstream: Upstream, shared: Shared) {
    let upstream = Arc::new(upstream);
    let service = hyper::service::service_fn(move |request| {
        relay_request(request, upstream.clone(), shared.clone())
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(client), service)
        .await;
}

/// Forwards one request to the server over a connection of its own, with the server's
/// `Host`; its answer comes back as it streams, a redirect rewritten onto the relay.
async fn relay_request(
    mut request: Request<Incoming>,
    upstream: Arc<Upstream>,
    shared: Shared,
) -> Result<Response<Body>, Infallible> {
    let failed = |status: StatusCode, why: String| {
        let mut answer = Response::new(Body::from(why));
        *answer.status_mut() = status;
        Ok(answer)
    };
    // Why the server cannot be relayed, kept for the sync's error.
    let gateway = |why: String| {
        shared.refuse(format!(
            "the git server `{}` failed: {why}",
            upstream.authority
        ))
    };
    let server = match connect(&upstream.host, upstream.port, shared.allow_private).await {
        Ok(server) => server,
        Err(why) => return failed(StatusCode::FORBIDDEN, shared.refuse(why)),
    };
    let (mut sender, connection) =
        match hyper::client::conn::http1::handshake(TokioIo::new(server)).await {
            Ok(pair) => pair,
            Err(e) => return failed(StatusCode::BAD_GATEWAY, gateway(e.to_string())),
        };
    // Driven by the proxy's task, so that the deadline closes it too.
    let _ = shared.tasks.send(Box::pin(async move {
        let _ = connection.await;
    }));
    match HeaderValue::from_str(&upstream.authority) {
        Ok(host) => request.headers_mut().insert(header::HOST, host),
        Err(_) => {
            let why = gateway("its host name cannot be sent as a `Host` header".into());
            return failed(StatusCode::BAD_GATEWAY, why);
        }
    };
    let mut answer = match sender.send_request(request).await {
        Ok(answer) => answer,
        Err(e) => return failed(StatusCode::BAD_GATEWAY, gateway(e.to_string())),
    };
    // Only a redirect is followed; a `Location` on any other answer is left as it is.
    let redirect = answer.status().is_redirection();
    if let Some(location) = answer.headers().get(header::LOCATION).filter(|_| redirect) {
        let location = location.to_str().unwrap_or_default().to_string();
        match relayed_location(&location, &upstream) {
            Some(moved) => match HeaderValue::from_str(&moved) {
                Ok(value) => {
                    answer.headers_mut().insert(header::LOCATION, value);
                }
                Err(_) => {
                    let why = gateway(format!("it redirected to `{location}`, not a URL"));
                    return failed(StatusCode::BAD_GATEWAY, why);
                }
            },
            None => {
                let why = shared.refuse(format!(
                    "the server redirected the fetch to `{location}`, off the registered \
                     server, over plain http; register the URL it redirects to"
                ));
                return failed(StatusCode::FORBIDDEN, why);
            }
        }
    }
    Ok(answer.map(Body::new))
}

/// Where a redirect from the relayed server sends libgit2: a path stays, a URL on the
/// same server moves onto the relay; anything else (another host, another scheme) is
/// `None`: libgit2 would follow it directly, around the deadline and the address check.
fn relayed_location(location: &str, upstream: &Upstream) -> Option<String> {
    if location.starts_with('/') && !location.starts_with("//") {
        return Some(location.to_string());
    }
    let url = url::Url::parse(location).ok()?;
    let host = url
        .host_str()?
        .trim_start_matches('[')
        .trim_end_matches(']');
    let same = url.scheme() == "http"
        && host.eq_ignore_ascii_case(&upstream.host)
        && url.port_or_known_default() == Some(upstream.port);
    same.then(|| {
        let rest = &url[url::Position::BeforePath..];
        format!("{}{rest}", upstream.relay_base)
    })
}

/// Longest git packet line.
const MAX_PKT: usize = 65_520;

/// Relays one `git://` connection: the request's first packet line gets the server's
/// virtual host back, then bytes flow unchanged both ways.
async fn relay_git(mut client: TcpStream, upstream: Upstream, shared: Shared) {
    let mut length = [0u8; 4];
    if client.read_exact(&mut length).await.is_err() {
        return;
    }
    let Some(length) = std::str::from_utf8(&length)
        .ok()
        .and_then(|l| usize::from_str_radix(l, 16).ok())
        .filter(|l| (5..=MAX_PKT).contains(l))
    else {
        return;
    };
    let mut request = vec![0u8; length - 4];
    if client.read_exact(&mut request).await.is_err() {
        return;
    }
    let request = with_virtual_host(&request, &upstream.authority);
    let mut server = match connect(&upstream.host, upstream.port, shared.allow_private).await {
        Ok(server) => server,
        Err(why) => {
            shared.refuse(why);
            return;
        }
    };
    let line = format!("{:04x}", request.len() + 4);
    if server.write_all(line.as_bytes()).await.is_ok() && server.write_all(&request).await.is_ok() {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
    }
}

/// A `git://` request line (`git-upload-pack /path\0host=h\0…`) with its `host=` set to
/// `authority`; a request without one is returned as it is.
fn with_virtual_host(request: &[u8], authority: &str) -> Vec<u8> {
    let mut fields: Vec<Vec<u8>> = request.split(|b| *b == 0).map(<[u8]>::to_vec).collect();
    if let Some(host) = fields.iter_mut().find(|f| f.starts_with(b"host=")) {
        *host = format!("host={authority}").into_bytes();
    }
    fields.join(&0u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tunnels_are_read_from_connect_requests_only() {
        assert_eq!(
            tunnel_target(b"CONNECT git.example:443 HTTP/1.1\r\nHost: git.example:443\r\n\r\n"),
            Some(("git.example".into(), 443))
        );
        assert_eq!(
            tunnel_target(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n"),
            Some(("[::1]".into(), 8443))
        );
        for bad in [
            &b"GET http://git.example/r.git/info/refs HTTP/1.1\r\n\r\n"[..],
            b"GET /r.git HTTP/1.1\r\n\r\n",
            b"\xff\xfe\r\n\r\n",
            b"",
        ] {
            assert_eq!(tunnel_target(bad), None, "{bad:?}");
        }
    }

    fn upstream() -> Upstream {
        Upstream {
            host: "git.example".into(),
            port: 8080,
            authority: "git.example:8080".into(),
            relay_base: "http://127.0.0.1:4000".into(),
        }
    }

    #[test]
    fn redirects_stay_on_the_relayed_server() {
        let up = upstream();
        assert_eq!(
            relayed_location("/other.git/info/refs?service=git-upload-pack", &up).as_deref(),
            Some("/other.git/info/refs?service=git-upload-pack")
        );
        assert_eq!(
            relayed_location("http://GIT.example:8080/r.git/info/refs?x=1", &up).as_deref(),
            Some("http://127.0.0.1:4000/r.git/info/refs?x=1")
        );
        for away in [
            "http://git.example/r.git/info/refs",       // another port
            "https://git.example:8080/r.git/info/refs", // another scheme
            "http://10.0.0.1:8080/r.git/info/refs",     // another host
            "//evil.example/r.git",                     // scheme-relative
            "not a url",
        ] {
            assert_eq!(relayed_location(away, &up), None, "{away}");
        }
    }

    #[test]
    fn the_virtual_host_of_a_git_request_is_the_servers() {
        assert_eq!(
            with_virtual_host(
                b"git-upload-pack /r.git\0host=127.0.0.1:4000\0",
                "git.example"
            ),
            b"git-upload-pack /r.git\0host=git.example\0"
        );
        // Protocol v2's extra parameters after the second NUL are kept.
        assert_eq!(
            with_virtual_host(
                b"git-upload-pack /r.git\0host=127.0.0.1:4000\0\0version=2\0",
                "git.example:9419"
            ),
            b"git-upload-pack /r.git\0host=git.example:9419\0\0version=2\0"
        );
        assert_eq!(
            with_virtual_host(b"git-upload-pack /r.git\0", "git.example"),
            b"git-upload-pack /r.git\0"
        );
    }

    #[tokio::test]
    async fn a_refused_tunnel_is_answered_403_and_its_reason_kept() {
        let server = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = server.local_addr().unwrap().port();
        let proxy = DeadlineProxy::forwarding(Instant::now() + Duration::from_secs(30), false)
            .await
            .unwrap();
        assert_eq!(proxy.refusal(), None);
        let Route::Proxy(url) = proxy.route().clone() else {
            panic!("a forwarding proxy is given as a proxy");
        };
        let mut client = TcpStream::connect(url.trim_start_matches("http://"))
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
    async fn fetches_are_routed_by_transport() {
        let deadline = Instant::now() + Duration::from_secs(30);
        let route = |url: &'static str, transport: GitTransport| async move {
            DeadlineProxy::for_fetch(url, &transport, deadline, false)
                .await
                .unwrap()
                .map(|p| p.route().clone())
        };
        assert!(matches!(
            route("https://git.example/r.git", GitTransport::Https).await,
            Some(Route::Proxy(u)) if u.starts_with("http://127.0.0.1:")
        ));
        let Some(Route::Relay(http)) = route("http://git.example/r.git", GitTransport::Http).await
        else {
            panic!("http is relayed");
        };
        assert!(
            http.starts_with("http://127.0.0.1:") && http.ends_with("/r.git"),
            "{http}"
        );
        let Some(Route::Relay(git)) = route("git://git.example/a/r.git", GitTransport::Git).await
        else {
            panic!("git is relayed");
        };
        assert!(
            git.starts_with("git://127.0.0.1:") && git.ends_with("/a/r.git"),
            "{git}"
        );
        assert_eq!(
            route("/srv/r.git", GitTransport::Local("/srv/r.git".into())).await,
            None
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
