//! The retries of storage work: [`storage_policy`]'s backoff (100 ms doubling to 2 s,
//! jittered) for as long as a budget allows, and only while the error is transient (the
//! database unreachable, restarting, or a transaction that lost a deadlock). Calls retried
//! in place run on backon, configured from the policy; a run that a storage error stopped
//! waits the policy's backoff before it is claimed again (`runs::execute`).

use std::future::Future;
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use palgraph::RetryPolicy;

/// Whether an error may go away when the same operation is tried again.
pub(crate) trait Transient {
    fn is_transient(&self) -> bool;
}

impl Transient for crate::store::StoreError {
    fn is_transient(&self) -> bool {
        crate::store::StoreError::is_transient(self)
    }
}

impl Transient for palgraph::checkpoint::CheckpointError {
    fn is_transient(&self) -> bool {
        palgraph::checkpoint::CheckpointError::is_transient(self)
    }
}

impl Transient for palgraph::RunError {
    fn is_transient(&self) -> bool {
        palgraph::RunError::is_transient(self)
    }
}

/// The retry policy of storage work (its attempts are bounded by a time budget instead).
pub(crate) fn storage_policy() -> RetryPolicy {
    RetryPolicy::attempts(u32::MAX)
        .initial_interval(Duration::from_millis(100))
        .max_interval(Duration::from_secs(2))
}

/// The backoff of storage retries, spending at most `budget` waiting.
pub(crate) fn storage_backoff(budget: Duration) -> ExponentialBuilder {
    let policy = storage_policy();
    let builder = ExponentialBuilder::new()
        .with_min_delay(policy.initial_interval)
        .with_max_delay(policy.max_interval)
        .with_factor(policy.backoff_factor as f32);
    let builder = if policy.jitter {
        builder.with_jitter()
    } else {
        builder
    };
    builder
        .with_jitter_seed(uuid::Uuid::new_v4().as_u64_pair().0)
        .without_max_times()
        .with_total_delay(Some(budget))
}

/// Runs `op` until it succeeds, fails for good, `keep_going` says stop, or `budget` is
/// spent; returns its last result.
pub(crate) async fn transient<T, E, F, Fut>(
    what: &str,
    budget: Duration,
    keep_going: impl Fn() -> bool,
    op: F,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: Transient + std::fmt::Display,
{
    op.retry(storage_backoff(budget))
        .sleep(tokio::time::sleep)
        .when(|e: &E| e.is_transient() && keep_going())
        .notify(|e: &E, wait: Duration| {
            tracing::warn!(error = %e, ?wait, "{what} failed; retrying");
        })
        .await
}
