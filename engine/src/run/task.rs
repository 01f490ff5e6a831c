//! Running one task: the node with its retry policy, and what came of it.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::FutureExt;

use crate::context::{NodeContext, Raised, TaskShared};
use crate::graph::GraphInner;
use crate::node::{Command, ErrorKind, NodeError};
use crate::state::State;

use super::panic_message;

/// What came of a task.
pub(crate) enum TaskOutcome<S: State> {
    /// It returned an update (already normalized).
    Done(Command<S>),
    /// Its node's cache held its result: it did not run.
    Cached(Command<S>),
    /// It called `interrupt` and waits for a resume.
    Interrupted(Raised),
    /// It failed after its retries.
    Failed(NodeError),
    /// It panicked (the panic's message).
    Panicked(String),
    /// It stopped because a dependency is unavailable ([`ErrorKind::Unavailable`]).
    Unavailable(NodeError),
    /// It stopped because storage failed (a write it needed could not be made).
    Storage(crate::checkpoint::CheckpointError),
    /// It stopped (or was dropped) because the run was cancelled.
    Cancelled,
}

/// Runs node `idx` until it succeeds, interrupts, or fails for good.
pub(crate) async fn run_task<S: State>(
    graph: Arc<GraphInner<S>>,
    idx: usize,
    shared: Arc<TaskShared>,
    state: Arc<S>,
) -> TaskOutcome<S> {
    let spec = &graph.nodes[idx];
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        shared.begin_attempt();
        crate::observe::attempt_begun();
        let ctx = NodeContext {
            inner: shared.clone(),
        };
        let fut = (spec.func)(state.clone(), ctx);
        // A panic reaches the retry policy as a fatal error (the default policy does not
        // retry it); when the task fails for good on it, it is reported as a panic.
        let (result, panicked) = match AssertUnwindSafe(fut).catch_unwind().await {
            Ok(r) => (r, None),
            Err(panic) => {
                let msg = panic_message(&*panic);
                let error = NodeError::fatal(format!("node panicked: {msg}"));
                (Err(error), Some(msg))
            }
        };
        let raised = shared.take_raised();
        match result {
            Ok(mut cmd) => {
                if let Some(r) = raised {
                    // The node swallowed its interrupt; it still waits for a resume.
                    return TaskOutcome::Interrupted(r);
                }
                if let Some(u) = cmd.update.as_mut() {
                    crate::state::StateUpdate::normalize(u);
                }
                return TaskOutcome::Done(cmd);
            }
            Err(e) => match (e.kind(), raised) {
                (_, Some(r)) if e.kind() == ErrorKind::Interrupt => {
                    return TaskOutcome::Interrupted(r)
                }
                (ErrorKind::Interrupt, None) => {
                    return TaskOutcome::Failed(NodeError::fatal(
                        "node returned an interrupt error without calling ctx.interrupt",
                    ))
                }
                (ErrorKind::Cancelled, _) => return TaskOutcome::Cancelled,
                _ if shared.has_storage_failure() => {
                    return match shared.take_storage_failure() {
                        Some(s) => TaskOutcome::Storage(s),
                        None => TaskOutcome::Unavailable(e),
                    }
                }
                (ErrorKind::Unavailable, _) => return TaskOutcome::Unavailable(e),
                _ => {
                    let policy = &spec.retry;
                    if attempt < policy.max_attempts
                        && (policy.retry_on)(&e)
                        && !shared.run.cancel.is_cancelled()
                    {
                        let wait = policy.backoff(attempt);
                        tracing::warn!(node = %spec.name, attempt, error = %e, ?wait, "node failed; retrying");
                        tokio::select! {
                            _ = tokio::time::sleep(wait) => continue,
                            _ = shared.run.cancel.cancelled() => return TaskOutcome::Cancelled,
                        }
                    }
                    tracing::warn!(node = %spec.name, attempt, error = %e, "node failed");
                    return match panicked {
                        Some(message) => TaskOutcome::Panicked(message),
                        None => TaskOutcome::Failed(e),
                    };
                }
            },
        }
    }
}
