//! The accept loop: HTTP/1.1 connections served by hyper with limits `axum::serve` does
//! not offer. A client must send its request head within [`ConnectionLimits::header_read_timeout`]
//! (slow-header clients no longer hold a connection for ever), and at most
//! [`ConnectionLimits::max_connections`] connections are open at once, at most
//! [`ConnectionLimits::max_per_client`] of them from one address: beyond either, a client
//! gets an immediate `503` with `Retry-After` instead of a hang, and one client cannot
//! take every place.

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

/// Limits on the connections of one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Time a client has to send a request's head (the request line and headers), on a
    /// new connection and between requests on a kept-alive one.
    pub header_read_timeout: Duration,
    /// Connections open at once; more are answered `503` and closed.
    pub max_connections: usize,
    /// Connections one client address may hold at once (its share of
    /// `max_connections`); more from it are answered `503`. Behind a reverse proxy every
    /// connection comes from the proxy: set it to `max_connections` there.
    pub max_per_client: usize,
    /// Longest a write to the client may wait without progress (a client that stopped
    /// reading a stream, with its socket buffers full); then the connection is closed and
    /// what it held is freed.
    pub write_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            max_connections: 1024,
            max_per_client: 256,
            write_timeout: Duration::from_secs(30),
        }
    }
}

/// Connections open per client address.
#[derive(Debug, Default)]
struct PerClient(Mutex<HashMap<IpAddr, usize>>);

/// One connection's place in its client's share; dropping it gives the place back.
struct ClientPlace {
    clients: Arc<PerClient>,
    ip: IpAddr,
}

impl PerClient {
    /// A place for a connection from `ip`, unless it holds `max` already.
    fn take(self: &Arc<Self>, ip: IpAddr, max: usize) -> Option<ClientPlace> {
        let mut open = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let held = open.entry(ip).or_default();
        if *held >= max {
            return None;
        }
        *held += 1;
        Some(ClientPlace {
            clients: self.clone(),
            ip,
        })
    }
}

impl Drop for ClientPlace {
    fn drop(&mut self) {
        let mut open = self
            .clients
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(held) = open.get_mut(&self.ip) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// What a client over the connection cap reads before the connection closes.
fn busy_response() -> Vec<u8> {
    let body = r#"{"error":{"code":"busy","message":"the server has as many connections open as it may; retry shortly"}}"#;
    format!(
        "HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Serves `app` on `listener` until `shutdown` resolves; then stops accepting, asks every
/// open connection to finish its current request, and returns once all have closed (the
/// caller bounds that wait: streams such as SSE never end by themselves).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let max = limits.max_connections.max(1);
    let per_client = limits.max_per_client.clamp(1, max);
    let slots = Arc::new(Semaphore::new(max));
    let clients = Arc::new(PerClient::default());
    let (closing, closed) = watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of file descriptors and the like: wait instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let place = clients.take(peer.ip(), per_client);
        let slot = place
            .is_some()
            .then(|| slots.clone().try_acquire_owned().ok())
            .flatten();
        let (Some(place), Some(slot)) = (place, slot) else {
            tokio::spawn(async move {
                let mut stream = stream;
                let _ = tokio::time::timeout(
                    Duration::from_secs(1),
                    stream.write_all(&busy_response()),
                )
                .await;
                let _ = stream.shutdown().await;
            });
            continue;
        };
        let service = TowerToHyperService::new(app.clone());
        let mut closed = closed.clone();
        tokio::spawn(async move {
            let mut stream = tokio_io_timeout::TimeoutStream::new(stream);
            stream.set_write_timeout(Some(limits.write_timeout));
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_read_timeout)
                .serve_connection(TokioIo::new(Box::pin(stream)), service);
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!(error = %e, "connection ended");
                    }
                }
                () = async { let _ = closed.wait_for(|c| *c).await; } => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
            drop(slot);
            drop(place);
        });
    }
    drop(listener);
    let _ = closing.send(true);
    // Every connection holds a slot until it has closed.
    let _ = slots.acquire_many(max as u32).await;
    Ok(())
}
