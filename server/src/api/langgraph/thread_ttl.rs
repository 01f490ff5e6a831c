//! Threads' time to live: the `ttl` of `POST /threads` and `PATCH /threads/{id}` (minutes,
//! or `{"strategy": "delete" | "keep_latest", "ttl": minutes}`, as the SDKs send it), and
//! the sweep that applies it. A thread expires `ttl` minutes after its last change (its
//! creation, a run's start or end, a metadata or state change, or the `ttl` itself) and
//! never while a run is active: `delete` removes it with its runs, events, checkpoints and
//! crons; `keep_latest` keeps it with only its latest checkpoint, and sweeps it again only
//! after it changes. Every replica sweeps; a thread is taken by one statement that checks
//! it is still due, so two sweeps, or a sweep and a new run, never both have it.

use std::time::Duration;

use palgraph::checkpoint::PruneStrategy;
use serde_json::Value;

use super::common::thread_graph;
use crate::api::error::{ApiError, ApiResult};
use crate::api::AppState;
use crate::store::{now_ms, StoreError, Thread, ThreadTtl, TtlStrategy};

/// Threads one look of the sweep lists.
const THREADS_PER_LOOK: i64 = 100;

/// The longest time to live accepted, in minutes (about a hundred years).
const MAX_MINUTES: f64 = 100.0 * 366.0 * 24.0 * 60.0;

/// A request's `ttl`: absent or null leaves the thread's as it is.
pub(crate) fn parse(ttl: Option<&Value>) -> ApiResult<Option<ThreadTtl>> {
    let (strategy, minutes) = match ttl {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => (None, n.as_f64()),
        Some(Value::Object(o)) => {
            if let Some(k) = o.keys().find(|k| *k != "strategy" && *k != "ttl") {
                return Err(ApiError::Invalid(format!(
                    "ttl has an unknown field `{k}` (it takes `strategy` and `ttl`)"
                )));
            }
            let strategy = match o.get("strategy") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(TtlStrategy::parse(s).ok_or_else(|| {
                    ApiError::Invalid(format!(
                        "ttl.strategy must be `delete` or `keep_latest`, not `{s}`"
                    ))
                })?),
                Some(other) => {
                    return Err(ApiError::Invalid(format!(
                        "ttl.strategy must be `delete` or `keep_latest`, not {other}"
                    )))
                }
            };
            match o.get("ttl") {
                Some(Value::Number(n)) => (strategy, n.as_f64()),
                Some(other) => {
                    return Err(ApiError::Invalid(format!(
                        "ttl.ttl must be a number of minutes, not {other}"
                    )))
                }
                None => {
                    return Err(ApiError::Invalid(
                        "ttl needs `ttl`, a number of minutes".into(),
                    ))
                }
            }
        }
        Some(other) => {
            return Err(ApiError::Invalid(format!(
                "ttl must be a number of minutes or {{\"strategy\", \"ttl\"}}, not {other}"
            )))
        }
    };
    match minutes {
        Some(m) if m > 0.0 && m <= MAX_MINUTES => Ok(Some(ThreadTtl {
            strategy: strategy.unwrap_or(TtlStrategy::Delete),
            ttl_ms: ((m * 60_000.0).round() as i64).max(1),
        })),
        _ => Err(ApiError::Invalid(format!(
            "ttl must be a positive number of minutes, at most {MAX_MINUTES}"
        ))),
    }
}

/// Sweeps every `every` until shutdown (or until the server drains).
pub(crate) fn spawn_sweeper(state: AppState, every: Duration) {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = state.shutdown.cancelled() => break,
                () = tokio::time::sleep(every) => {}
            }
            if state.runs.is_draining() {
                break;
            }
            match sweep(&state).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(threads = n, "expired threads swept"),
                Err(e) => tracing::warn!(error = %e, "could not sweep expired threads"),
            }
        }
    });
}

/// Applies every time to live that has run out; returns how many threads it swept.
#[tracing::instrument(name = "thread_ttl_sweep", skip_all)]
pub(crate) async fn sweep(state: &AppState) -> Result<usize, StoreError> {
    let now = now_ms();
    let mut swept = 0;
    for strategy in [TtlStrategy::Delete, TtlStrategy::KeepLatest] {
        loop {
            let due = state
                .store
                .expired_threads(strategy, now, THREADS_PER_LOOK)
                .await?;
            for t in &due {
                if state
                    .store
                    .take_expired_thread(&t.thread_id, strategy, now)
                    .await?
                {
                    sweep_one(state, t, strategy).await;
                    swept += 1;
                }
            }
            if (due.len() as i64) < THREADS_PER_LOOK {
                break;
            }
            tokio::task::yield_now().await;
        }
    }
    Ok(swept)
}

/// What is left of a thread's sweep once the store has taken it: for `delete` its crons and
/// checkpoints, for `keep_latest` the checkpoints before its latest. A failure is logged
/// (the thread is no longer due either way).
async fn sweep_one(state: &AppState, t: &Thread, strategy: TtlStrategy) {
    if strategy == TtlStrategy::Delete {
        if let Err(e) = state.crons.delete_for_thread(&t.owner, &t.thread_id).await {
            tracing::warn!(thread_id = %t.thread_id, error = %e, "could not delete an expired thread's crons");
        }
    }
    let Some(g) = thread_graph(state, t) else {
        return;
    };
    let checkpoints = g.graph.checkpointer();
    let outcome = match strategy {
        TtlStrategy::Delete => checkpoints.delete_thread(&t.thread_id).await,
        TtlStrategy::KeepLatest => checkpoints
            .prune(&t.thread_id, PruneStrategy::KeepLatest)
            .await
            .map(|_| ()),
    };
    g.graph.forget(&t.thread_id);
    if let Err(e) = outcome {
        tracing::warn!(thread_id = %t.thread_id, error = %e, "could not remove an expired thread's checkpoints");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn ttl(v: Value) -> ApiResult<Option<ThreadTtl>> {
        parse(Some(&v))
    }

    #[test]
    fn a_ttl_is_minutes_or_the_sdks_object() {
        assert_eq!(parse(None).unwrap(), None);
        assert_eq!(ttl(Value::Null).unwrap(), None);
        let delete = |ttl_ms| {
            Some(ThreadTtl {
                strategy: TtlStrategy::Delete,
                ttl_ms,
            })
        };
        assert_eq!(ttl(json!(2)).unwrap(), delete(120_000));
        assert_eq!(ttl(json!(0.5)).unwrap(), delete(30_000));
        assert_eq!(ttl(json!({"ttl": 1})).unwrap(), delete(60_000));
        assert_eq!(
            ttl(json!({"strategy": "delete", "ttl": 1})).unwrap(),
            delete(60_000)
        );
        assert_eq!(
            ttl(json!({"strategy": "keep_latest", "ttl": 0.01})).unwrap(),
            Some(ThreadTtl {
                strategy: TtlStrategy::KeepLatest,
                ttl_ms: 600
            })
        );
    }

    #[test]
    fn a_bad_ttl_is_refused() {
        for bad in [
            json!(0),
            json!(-1),
            json!(1e300),
            json!("10"),
            json!(true),
            json!([1]),
            json!({}),
            json!({"ttl": "1"}),
            json!({"ttl": 1, "strategy": "archive"}),
            json!({"ttl": 1, "strategy": 3}),
            json!({"ttl": 1, "expires": 2}),
        ] {
            assert!(
                matches!(ttl(bad.clone()), Err(ApiError::Invalid(_))),
                "{bad} should be refused"
            );
        }
    }
}
