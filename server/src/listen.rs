//! Accepting HTTP connections with limits a hostile or broken client cannot get around.
//!
//! - **Header and idle timeout**: a connection must send a whole request head within
//!   [`HttpLimits::header_timeout`], and an idle keep-alive connection is closed after the
//!   same time: a client that opens a connection and sends half a request (or nothing) does
//!   not hold it for ever.
//! - **Connection cap**: at most [`HttpLimits::max_connections`] connections are served at
//!   once (kept under the process's file limit); more wait in the listen backlog until one
//!   closes, so the process never runs out of file descriptors and `/healthz` stays
//!   answerable.
//! - `TCP_NODELAY`: SSE writes many small frames; Nagle would hold each behind the client's
//!   delayed ACK.
//! - **Graceful shutdown**: on `stop`, no new connection is accepted, in-flight requests
//!   finish (streams end when the server's shutdown token fires) within the grace period.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Connection limits.
#[derive(Clone, Copy, Debug)]
pub struct HttpLimits {
    /// Time to send a request head, and to keep an idle connection.
    pub header_timeout: Duration,
    /// Connections served at once.
    pub max_connections: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            header_timeout: Duration::from_secs(10),
            max_connections: 4096,
        }
    }
}

/// The most connections this process can serve: its open-file limit less a reserve for
/// database connections, files and the listener.
pub fn connection_ceiling() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let soft: usize = line.split_whitespace().nth(3)?.parse().ok()?;
    Some(soft.saturating_sub(128).max(16))
}

/// Serves `app` on `listener` until `stop` resolves, then lets in-flight requests finish
/// within `drain` before returning.
///
/// # Errors
/// Never for accept errors (they are logged and retried); the listener's local address.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: HttpLimits,
    stop: impl Future<Output = ()> + Send,
    drain: Duration,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let service = TowerToHyperService::new(app);
    tokio::pin!(stop);
    loop {
        let slot = tokio::select! {
            biased;
            _ = &mut stop => break,
            slot = slots.clone().acquire_owned() => match slot {
                Ok(s) => s,
                Err(_) => break,
            },
        };
        let (tcp, _peer) = tokio::select! {
            biased;
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it was
                    // accepted: wait a little and go on.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        let conn = http.serve_connection(TokioIo::new(tcp), service.clone());
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    if tokio::time::timeout(drain, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("some connections were still open after the shutdown grace period");
    }
    Ok(())
}
