//! Accepting HTTP connections with limits a hostile or broken client cannot get around.
//!
//! - **Header and idle timeout**: a connection must send a whole request head within
//!   [`HttpLimits::header_timeout`] (else `408`, and it is closed: `head_deadline`), and an
//!   idle keep-alive connection is closed after the same time: a client that opens a
//!   connection and sends half a request (or nothing) does not hold it for ever.
//! - **Body deadline**: a request's whole body must arrive within
//!   [`HttpLimits::body_timeout`] ([`body_deadline`]): 408 and the connection
//!   closed otherwise.
//! - **Connection caps**: at most [`HttpLimits::max_connections`] connections are served at
//!   once (kept under the process's file limit), and at most
//!   [`HttpLimits::max_connections_per_client`] from one IP address.
//! - **Health under saturation**: beyond either cap a connection is still accepted, into
//!   one of [`HttpLimits::reserve`] reserved slots, with a short head timeout and no
//!   keep-alive: it is answered `/healthz`, `/ok` and `/readyz` as usual and anything else
//!   at once with a JSON 503 (the server is full) or 429 (this address has too many
//!   connections), instead of waiting in the listen backlog. When the reserve is full too,
//!   connections wait in the backlog. For a probe that no client can crowd out, serve
//!   health on its own port ([`serve_health`], `PALGRAPH_HEALTH_PORT`).
//! - `TCP_NODELAY`: SSE writes many small frames; Nagle would hold each behind the client's
//!   delayed ACK.
//! - **Graceful shutdown**: on `stop`, no new connection is accepted, in-flight requests
//!   finish (streams end when the server's shutdown token fires) within the grace period.

pub(crate) mod body_deadline;
mod head_deadline;

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower::ServiceExt;

use body_deadline::{limit_body_time, BodyDeadline};
use head_deadline::HeadDeadline;

/// Connection limits.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HttpLimits {
    /// Time to send a request head, and to keep an idle connection.
    pub header_timeout: Duration,
    /// Time to send a request's whole body, from the end of its head.
    pub body_timeout: Duration,
    /// Connections served at once.
    pub max_connections: usize,
    /// Connections served at once from one IP address.
    pub max_connections_per_client: usize,
    /// Connections accepted beyond the caps, answered health and a refusal only.
    pub reserve: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            max_connections: 4096,
            max_connections_per_client: 1024,
            reserve: 64,
        }
    }
}

impl HttpLimits {
    /// The limits `cfg` gives, the connections capped by what the open-file limit allows.
    pub(crate) fn of(cfg: &crate::config::ServeConfig) -> Self {
        let ceiling = connection_ceiling().unwrap_or(cfg.max_connections);
        if cfg.max_connections > ceiling {
            tracing::warn!(
                asked = cfg.max_connections,
                serving = ceiling,
                "PALGRAPH_MAX_CONNECTIONS is above what the open-file limit allows"
            );
        }
        HttpLimits {
            header_timeout: Duration::from_secs(cfg.header_timeout_secs.max(1)),
            body_timeout: Duration::from_secs(cfg.body_timeout_secs.max(1)),
            max_connections: cfg.max_connections.min(ceiling).max(1),
            max_connections_per_client: usize::try_from(cfg.max_connections_per_client)
                .unwrap_or(usize::MAX),
            ..Default::default()
        }
    }
}

/// Head timeout of a connection in a reserved slot: long enough for a prober on a busy
/// machine, short enough that a silent client frees the slot soon.
const RESERVED_HEADER_TIMEOUT: Duration = Duration::from_secs(2);

/// How much after the head deadline hyper's own head timeout closes a connection.
const HYPER_HEAD_BACKSTOP: Duration = Duration::from_secs(5);

/// The paths a connection in a reserved slot is served.
const HEALTH_PATHS: [&str; 3] = ["/healthz", "/ok", "/readyz"];

/// The most connections this process can serve: its open-file limit less a reserve for
/// database connections, files and the listener.
pub(crate) fn connection_ceiling() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let soft: usize = line.split_whitespace().nth(3)?.parse().ok()?;
    Some(soft.saturating_sub(128).max(16))
}

/// Connections open per client address; a [`ClientSlot`] gives its one back when dropped.
#[derive(Clone, Default)]
struct PerClient(Arc<Mutex<HashMap<IpAddr, usize>>>);

/// One connection counted against its address.
struct ClientSlot {
    clients: PerClient,
    ip: IpAddr,
}

impl PerClient {
    /// Counts a connection from `ip` when it has fewer than `max` open.
    fn take(&self, ip: IpAddr, max: usize) -> Option<ClientSlot> {
        let mut open = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = open.entry(ip).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(ClientSlot {
            clients: self.clone(),
            ip,
        })
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut open = self
            .clients
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// Why a connection is in a reserved slot.
#[derive(Clone, Copy)]
enum Refusal {
    /// Every connection slot is taken.
    Full,
    /// Its address has its share of connections.
    TooManyFromClient(usize),
    /// The health port serves the probes only.
    NotAProbe,
}

impl Refusal {
    fn response(self) -> Response {
        let (status, code, detail) = match self {
            Refusal::Full => (
                StatusCode::SERVICE_UNAVAILABLE,
                "busy",
                "the server is serving as many connections as it can; retry shortly".to_string(),
            ),
            Refusal::NotAProbe => (
                StatusCode::NOT_FOUND,
                "not_found",
                "this port serves /healthz, /ok and /readyz only".to_string(),
            ),
            Refusal::TooManyFromClient(max) => (
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_connections",
                format!(
                    "at most {max} connections are served at once from one address; \
                     reuse connections or retry when one closes"
                ),
            ),
        };
        let mut resp = (status, Json(json!({"detail": detail, "code": code}))).into_response();
        let headers = resp.headers_mut();
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        resp
    }
}

/// How an accepted connection is served.
enum Admission {
    /// Fully, holding a slot of the cap and of its client.
    Served(OwnedSemaphorePermit, ClientSlot),
    /// In a reserved slot: health only.
    Reserved(OwnedSemaphorePermit, Refusal),
    /// Its address has its share: it waits, holding the slot it was accepted in (so the
    /// process's descriptors stay bounded), for a reserved slot, within the head timeout.
    Waiting(OwnedSemaphorePermit, usize),
}

/// Serves `app` on `listener` until `stop` resolves, then lets in-flight requests finish
/// within `drain` before returning.
///
/// # Errors
/// Never for accept errors (they are logged and retried); the listener's local address.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: HttpLimits,
    stop: impl Future<Output = ()> + Send,
    drain: Duration,
) -> std::io::Result<()> {
    let app = app.layer(axum::middleware::from_fn_with_state(
        BodyDeadline {
            limit: limits.body_timeout,
        },
        limit_body_time,
    ));
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let reserve = Arc::new(Semaphore::new(limits.reserve));
    let clients = PerClient::default();
    let per_client = limits.max_connections_per_client.max(1);
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    // The head deadline is `HeadDeadline`'s (it answers 408); hyper's, later, is a backstop.
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout + HYPER_HEAD_BACKSTOP)
        .keep_alive(true);
    let mut reserved = hyper::server::conn::http1::Builder::new();
    reserved
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout.min(RESERVED_HEADER_TIMEOUT))
        .keep_alive(false);
    tokio::pin!(stop);
    loop {
        // A free slot of either kind before accepting: with both full, connections wait in
        // the backlog and this process keeps its file descriptors.
        tokio::select! {
            biased;
            _ = &mut stop => break,
            _ = wait_for_any(&slots, &reserve) => {}
        }
        let (tcp, peer) = tokio::select! {
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
        nodelay(&tcp);
        let admission = match slots.clone().try_acquire_owned() {
            Ok(slot) => match clients.take(peer.ip(), per_client) {
                Some(client) => Admission::Served(slot, client),
                None => Admission::Waiting(slot, per_client),
            },
            Err(_) => match reserve.clone().try_acquire_owned() {
                Ok(r) => Admission::Reserved(r, Refusal::Full),
                // `wait_for_any` saw a free permit, and only this loop takes them.
                Err(_) => continue,
            },
        };
        let watcher = graceful.watcher();
        match admission {
            Admission::Served(slot, client) => {
                let app = app.clone();
                let requests = head_deadline::Requests::default();
                let io = HeadDeadline::new(tcp, limits.header_timeout, requests.clone());
                let service = tower::service_fn(move |mut req: Request<hyper::body::Incoming>| {
                    // The peer's address, for per-client limits and logs.
                    req.extensions_mut().insert(ConnectInfo(peer));
                    requests.began();
                    let (app, requests) = (app.clone(), requests.clone());
                    async move {
                        let resp = app.oneshot(req.map(Body::new)).await?;
                        Ok::<_, Infallible>(resp.map(|b| requests.answer_with(b)))
                    }
                });
                let conn =
                    http.serve_connection(TokioIo::new(io), TowerToHyperService::new(service));
                tokio::spawn(async move {
                    if let Err(e) = watcher.watch(conn).await {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                    drop((slot, client));
                });
            }
            Admission::Reserved(slot, refusal) => {
                tokio::spawn(serve_reserved(
                    reserved.clone(),
                    tcp,
                    app.clone(),
                    refusal,
                    slot,
                    watcher,
                ));
            }
            Admission::Waiting(slot, max) => {
                let (reserve, app, builder) = (reserve.clone(), app.clone(), reserved.clone());
                let wait = limits.header_timeout;
                tokio::spawn(async move {
                    let Ok(Ok(r)) = tokio::time::timeout(wait, reserve.acquire_owned()).await
                    else {
                        return;
                    };
                    drop(slot);
                    let refusal = Refusal::TooManyFromClient(max);
                    serve_reserved(builder, tcp, app, refusal, r, watcher).await;
                });
            }
        }
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

/// A connection's service that answers the probes with `app` and anything else with
/// `refusal`.
fn probes_only(
    app: Router,
    refusal: Refusal,
) -> TowerToHyperService<
    impl tower::Service<
            Request<hyper::body::Incoming>,
            Response = Response,
            Error = Infallible,
            Future = impl Future<Output = Result<Response, Infallible>> + Send,
        > + Clone,
> {
    TowerToHyperService::new(tower::service_fn(
        move |req: Request<hyper::body::Incoming>| {
            let app = app.clone();
            async move {
                if HEALTH_PATHS.contains(&req.uri().path()) {
                    app.oneshot(req.map(Body::new)).await
                } else {
                    Ok(refusal.response())
                }
            }
        },
    ))
}

/// Serves a connection in a reserved slot: the probes as usual, anything else `refusal`.
async fn serve_reserved(
    builder: hyper::server::conn::http1::Builder,
    tcp: TcpStream,
    app: Router,
    refusal: Refusal,
    slot: OwnedSemaphorePermit,
    watcher: hyper_util::server::graceful::Watcher,
) {
    let conn = builder.serve_connection(TokioIo::new(tcp), probes_only(app, refusal));
    if let Err(e) = watcher.watch(conn).await {
        tracing::debug!(error = %e, "reserved connection ended with an error");
    }
    drop(slot);
}

/// Resolves once either semaphore has a permit free (without taking it).
async fn wait_for_any(a: &Arc<Semaphore>, b: &Arc<Semaphore>) {
    if a.available_permits() > 0 || b.available_permits() > 0 {
        return;
    }
    tokio::select! {
        p = a.acquire() => drop(p),
        p = b.acquire() => drop(p),
    }
}

fn nodelay(tcp: &TcpStream) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(error = %e, "could not set TCP_NODELAY");
    }
}

/// Serves only `/healthz`, `/ok` and `/readyz` of `app` on `listener` (its own port, for
/// probes no client can crowd out) until `stop` resolves.
///
/// # Errors
/// Never for accept errors (they are logged and retried).
pub(crate) async fn serve_health(
    listener: TcpListener,
    app: Router,
    stop: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(64));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(RESERVED_HEADER_TIMEOUT)
        .keep_alive(true);
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
        let tcp = tokio::select! {
            biased;
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed on the health port");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        nodelay(&tcp);
        let conn = http.serve_connection(
            TokioIo::new(tcp),
            probes_only(app.clone(), Refusal::NotAProbe),
        );
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "health connection ended with an error");
            }
            drop(slot);
        });
    }
    Ok(())
}
