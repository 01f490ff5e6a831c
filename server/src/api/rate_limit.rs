//! Per-client request rate: each client gets [`RequestRate::per_second`] requests a second
//! with bursts of up to [`RequestRate::burst`] (a GCRA token bucket, by the `governor`
//! crate); a request beyond it is answered `429 Too Many Requests` with a JSON error and
//! `Retry-After`, and changes nothing. A client is its user when the request carries valid
//! credentials, otherwise its IP address (auth-less local mode has one user, so there it is
//! the address too). Health probes are never limited.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};
use serde_json::json;

use super::AppState;
use crate::auth::User;
use crate::config::RequestRate;

/// Whose budget a request spends.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
enum Client {
    User(String),
    Address(IpAddr),
}

/// The limiter of a server.
#[derive(Clone)]
pub(crate) struct RateLimiter {
    rate: RequestRate,
    limiter: Arc<DefaultKeyedRateLimiter<Client>>,
    checks: Arc<AtomicU64>,
}

/// Clients remembered before the idle ones are forgotten.
const FORGET_ABOVE: usize = 10_000;

impl RateLimiter {
    /// A limiter allowing `rate` to each client.
    pub(crate) fn new(rate: RequestRate) -> Self {
        let per_second = NonZeroU32::new(rate.per_second).unwrap_or(NonZeroU32::MIN);
        let burst = NonZeroU32::new(rate.burst.max(rate.per_second)).unwrap_or(per_second);
        RateLimiter {
            rate,
            limiter: Arc::new(DefaultKeyedRateLimiter::keyed(
                Quota::per_second(per_second).allow_burst(burst),
            )),
            checks: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Spends one request of `client`'s budget, or says how many seconds until one is
    /// free.
    fn check(&self, client: &Client) -> Result<(), u64> {
        if self
            .checks
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(4096)
            && self.limiter.len() > FORGET_ABOVE
        {
            // Clients whose bucket is full again are the same as new ones: forget them, so
            // the table is bounded by the clients active within a burst's refill time.
            self.limiter.retain_recent();
            self.limiter.shrink_to_fit();
        }
        self.limiter.check_key(client).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
        })
    }
}

/// Paths never limited: probes must get through a busy client's storm.
const UNLIMITED: [&str; 3] = ["/healthz", "/ok", "/readyz"];

/// The middleware (state: the server's [`AppState`] and its limiter).
pub(crate) async fn limit_rate(
    State((state, limiter)): State<(AppState, RateLimiter)>,
    req: Request,
    next: Next,
) -> Response {
    if UNLIMITED.contains(&req.uri().path()) {
        return next.run(req).await;
    }
    let (mut parts, body) = req.into_parts();
    let address = parts
        .extensions
        .get::<ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip());
    let client = match (
        state.auth.enabled(),
        User::from_request_parts(&mut parts, &state).await,
    ) {
        (true, Ok(user)) => {
            // The handler's `User` is this one: credentials are checked once a request.
            parts.extensions.insert(user.clone());
            Client::User(user.id)
        }
        _ => Client::Address(address.unwrap_or(IpAddr::from([0, 0, 0, 0]))),
    };
    if let Err(retry_after) = limiter.check(&client) {
        let rate = limiter.rate;
        let mut resp = (
            StatusCode::TOO_MANY_REQUESTS,
            Json(json!({
                "detail": format!(
                    "too many requests: at most {} a second (bursts of {}) per client; retry in {retry_after} s",
                    rate.per_second, rate.burst
                ),
                "code": "rate_limited",
            })),
        )
            .into_response();
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(retry_after.max(1)));
        return resp;
    }
    next.run(Request::from_parts(parts, body)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_passes_then_the_client_waits_and_others_do_not() {
        let limiter = RateLimiter::new(RequestRate {
            per_second: 1,
            burst: 3,
        });
        let alice = Client::User("alice".into());
        for _ in 0..3 {
            assert_eq!(limiter.check(&alice), Ok(()));
        }
        let wait = limiter.check(&alice).expect_err("over the burst");
        assert!((1..=2).contains(&wait), "{wait}");
        assert_eq!(limiter.check(&Client::User("bob".into())), Ok(()));
        assert_eq!(
            limiter.check(&Client::Address([10, 0, 0, 1].into())),
            Ok(())
        );
    }
}
