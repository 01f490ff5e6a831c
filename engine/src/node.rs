//! What a node is: an async function over the state and a [`NodeContext`] that returns a
//! partial update or a [`Command`]; its errors ([`NodeError`]) and its [`RetryPolicy`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::context::NodeContext;
use crate::graph::parent::ParentCommand;
use crate::send;
use crate::state::State;

/// What a node returns: an update, and optionally where to go next.
///
/// `#[derive(State)]` makes a state's update convert into a `Command`, so a node can return
/// either. `goto` and `sends` override the node's edges.
#[derive(Debug, Clone)]
pub struct Command<S: State> {
    /// The update to apply.
    pub update: Option<S::Update>,
    /// Nodes to run next instead of the node's edges (`END` ends the graph).
    pub goto: Vec<String>,
    /// Tasks to start next instead of the node's edges, one per send, each with its own
    /// input (see [`crate::send`]).
    pub sends: Vec<send::Send>,
    /// A command for the parent graph instead (a node inside a subgraph; see
    /// [`crate::graph::parent`]): the rest of this command is dropped.
    pub parent: Option<ParentCommand>,
}

impl<S: State> Default for Command<S> {
    fn default() -> Self {
        Command {
            update: None,
            goto: Vec::new(),
            sends: Vec::new(),
            parent: None,
        }
    }
}

impl<S: State> Command<S> {
    /// An empty command (no update, follow the edges).
    pub fn new() -> Self {
        Self::default()
    }

    /// A command that applies `update`.
    pub fn with_update(update: S::Update) -> Self {
        Command {
            update: Some(update),
            ..Default::default()
        }
    }

    /// A command for the parent graph: from a node inside a subgraph, the subgraph stops
    /// and the parent applies `parent` as the subgraph node's result (LangGraph's
    /// `Command(graph=Command.PARENT, ...)`; see [`crate::graph::parent`]).
    pub fn to_parent(parent: ParentCommand) -> Self {
        Command {
            parent: Some(parent),
            ..Default::default()
        }
    }

    /// Also go to `node` next (instead of the node's edges).
    #[must_use]
    pub fn goto(mut self, node: impl Into<String>) -> Self {
        self.goto.push(node.into());
        self
    }

    /// Also start a task for `send` next (instead of the node's edges).
    #[must_use]
    pub fn send(mut self, send: send::Send) -> Self {
        self.sends.push(send);
        self
    }

    /// Replace the update.
    #[must_use]
    pub fn update(mut self, update: S::Update) -> Self {
        self.update = Some(update);
        self
    }
}

/// Whether a node error may go away if the node runs again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Running again will not help.
    Fatal,
    /// Transient (a rate limit, a timeout): the node's retry policy may run it again.
    Retryable,
    /// Not an error: the node called `interrupt` and waits for a resume.
    Interrupt,
    /// Not an error: the run was cancelled while the node ran.
    Cancelled,
    /// A service the node depends on (its database, say) is unavailable for now. The node
    /// is not retried in place and nothing is recorded as a failure: the run stops with
    /// [`crate::RunError::Unavailable`], and whoever runs it continues from its last
    /// checkpoint once the service is back.
    Unavailable,
}

/// An error returned by a node. Any `std::error::Error` converts into a fatal one with `?`.
pub struct NodeError {
    kind: ErrorKind,
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl NodeError {
    /// A fatal error with a message.
    pub fn fatal(message: impl Into<String>) -> Self {
        NodeError {
            kind: ErrorKind::Fatal,
            message: message.into(),
            source: None,
        }
    }

    /// A transient error the retry policy may retry.
    pub fn retryable(message: impl Into<String>) -> Self {
        NodeError {
            kind: ErrorKind::Retryable,
            message: message.into(),
            source: None,
        }
    }

    /// A dependency is unavailable for now (see [`ErrorKind::Unavailable`]).
    pub fn unavailable(message: impl Into<String>) -> Self {
        NodeError {
            kind: ErrorKind::Unavailable,
            message: message.into(),
            source: None,
        }
    }

    pub(crate) fn interrupt() -> Self {
        NodeError {
            kind: ErrorKind::Interrupt,
            message: "interrupted: waiting for a resume".into(),
            source: None,
        }
    }

    /// The error a node returns when it stops because the run was cancelled.
    pub fn cancelled() -> Self {
        NodeError {
            kind: ErrorKind::Cancelled,
            message: "cancelled".into(),
            source: None,
        }
    }

    /// The same error with another kind.
    #[must_use]
    pub fn with_kind(mut self, kind: ErrorKind) -> Self {
        self.kind = kind;
        self
    }

    /// Wraps an error, keeping it as the source.
    pub fn from_error(kind: ErrorKind, e: impl std::error::Error + Send + Sync + 'static) -> Self {
        NodeError {
            kind,
            message: e.to_string(),
            source: Some(Box::new(e)),
        }
    }

    /// Its kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Whether the retry policy may retry it.
    pub fn is_retryable(&self) -> bool {
        self.kind == ErrorKind::Retryable
    }

    /// Its message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The wrapped error, if any.
    pub fn source(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.source.as_deref()
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for NodeError {
    fn from(e: E) -> Self {
        NodeError::from_error(ErrorKind::Fatal, e)
    }
}

impl fmt::Display for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeError")
            .field("kind", &self.kind)
            .field("message", &self.message)
            .finish()
    }
}

/// When and how often a failed call is tried again: attempts in all, and an exponential
/// backoff with jitter between them.
///
/// The one retry policy of palgraph: a node's retries (which errors: [`retry_on`]), the
/// LLM clients' and the agent's retries of a model call, and the server's retries of a run
/// after a storage error all wait by [`RetryPolicy::backoff`].
///
/// [`retry_on`]: RetryPolicy::retry_on
#[derive(Clone)]
pub struct RetryPolicy {
    /// Attempts in all (1: no retry).
    pub max_attempts: u32,
    /// Wait before the second attempt.
    pub initial_interval: Duration,
    /// Factor applied to the wait after each attempt.
    pub backoff_factor: f64,
    /// Longest wait.
    pub max_interval: Duration,
    /// Add up to 50% random jitter to each wait.
    pub jitter: bool,
    /// Which errors to retry (default: [`NodeError::is_retryable`]).
    pub retry_on: Arc<dyn Fn(&NodeError) -> bool + Send + Sync>,
}

impl fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("max_attempts", &self.max_attempts)
            .field("initial_interval", &self.initial_interval)
            .field("backoff_factor", &self.backoff_factor)
            .field("max_interval", &self.max_interval)
            .field("jitter", &self.jitter)
            .finish()
    }
}

impl Default for RetryPolicy {
    /// No retries.
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 1,
            initial_interval: Duration::from_millis(500),
            backoff_factor: 2.0,
            max_interval: Duration::from_secs(30),
            jitter: true,
            retry_on: Arc::new(NodeError::is_retryable),
        }
    }
}

impl RetryPolicy {
    /// Retry retryable errors up to `max_attempts` attempts in all, with the default backoff
    /// (0.5 s doubling up to 30 s, jittered).
    pub fn attempts(max_attempts: u32) -> Self {
        RetryPolicy {
            max_attempts: max_attempts.max(1),
            ..Default::default()
        }
    }

    /// The same policy with another first wait.
    #[must_use]
    pub fn initial_interval(mut self, d: Duration) -> Self {
        self.initial_interval = d;
        self
    }

    /// The same policy with another longest wait.
    #[must_use]
    pub fn max_interval(mut self, d: Duration) -> Self {
        self.max_interval = d;
        self
    }

    /// The same policy without jitter.
    #[must_use]
    pub fn no_jitter(mut self) -> Self {
        self.jitter = false;
        self
    }

    /// The same policy retrying the errors `pred` accepts.
    #[must_use]
    pub fn retry_on(mut self, pred: impl Fn(&NodeError) -> bool + Send + Sync + 'static) -> Self {
        self.retry_on = Arc::new(pred);
        self
    }

    /// The wait before attempt `attempt + 1` (attempt counts from 1).
    pub fn backoff(&self, attempt: u32) -> Duration {
        let base = self.initial_interval.as_secs_f64()
            * self.backoff_factor.powi(attempt.saturating_sub(1) as i32);
        let capped = base.min(self.max_interval.as_secs_f64());
        let factor = if self.jitter {
            1.0 + (uuid::Uuid::new_v4().as_u128() % 1000) as f64 / 2000.0
        } else {
            1.0
        };
        Duration::from_secs_f64((capped * factor).min(self.max_interval.as_secs_f64()))
    }
}

/// A boxed future, as nodes are stored.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// A node as the engine stores it.
pub(crate) type NodeFn<S> =
    Arc<dyn Fn(Arc<S>, NodeContext) -> BoxFuture<Result<Command<S>, NodeError>> + Send + Sync>;

/// Turns an async function or closure into a stored node.
pub(crate) fn erase_node<S, F, Fut, O>(f: F) -> NodeFn<S>
where
    S: State,
    F: Fn(Arc<S>, NodeContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, NodeError>> + Send + 'static,
    O: Into<Command<S>> + 'static,
{
    Arc::new(move |state, ctx| {
        let fut = f(state, ctx);
        Box::pin(async move {
            let mut cmd: Command<S> = fut.await?.into();
            // A command for the parent leaves the subgraph's run the way an error does, and
            // the subgraph node in the parent takes it from there (see `graph::parent`).
            match cmd.parent.take() {
                Some(p) => Err(NodeError::from_error(ErrorKind::Fatal, p)),
                None => Ok(cmd),
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap_and_jitter_adds_at_most_half() {
        let plain = RetryPolicy::attempts(9)
            .initial_interval(Duration::from_millis(100))
            .max_interval(Duration::from_millis(350))
            .no_jitter();
        assert_eq!(plain.backoff(1), Duration::from_millis(100));
        assert_eq!(plain.backoff(2), Duration::from_millis(200));
        assert_eq!(plain.backoff(3), Duration::from_millis(350));
        assert_eq!(plain.backoff(40), Duration::from_millis(350));
        let jittered = RetryPolicy::attempts(9)
            .initial_interval(Duration::from_millis(100))
            .max_interval(Duration::from_secs(10));
        for _ in 0..100 {
            let wait = jittered.backoff(2);
            assert!(
                wait >= Duration::from_millis(200) && wait <= Duration::from_millis(300),
                "{wait:?}"
            );
        }
    }
}
