//! Running a compiled graph: inputs, configuration, outcomes and errors, and the entry
//! points [`CompiledGraph::invoke`], [`CompiledGraph::stream`] and [`CompiledGraph::run`].
//!
//! The Pregel loop itself is split by job: `cursor` loads a checkpoint into a typed state
//! and writes the next one; `input` turns a [`RunInput`] into the cursor the first step runs
//! from, refusing what `admission`'s rules refuse; `plan` decides which tasks are due;
//! `step` runs a step's tasks and applies their results; `task` runs one task with its
//! retry policy; `executor` ties a run's steps together; `update` is `update_state`;
//! `failure` records a failure on a thread after the fact.

mod admission;
pub mod breakpoint;
pub(crate) mod cache;
pub(crate) mod cursor;
mod executor;
mod failure;
mod input;
pub(crate) mod landing;
pub(crate) mod plan;
mod step;
mod task;
mod update;

pub use breakpoint::{Breakpoint, BreakpointWhen, NodeSet};
pub use landing::Durability;
pub(crate) use update::update_state;

use std::sync::Arc;

use futures_util::{Stream, StreamExt};
use serde_json::{Map, Value};

use crate::cancel::{CancelReason, Cancellation};
use crate::checkpoint::{CheckpointError, Fence, FenceClaim};
use crate::graph::CompiledGraph;
use crate::interrupt::{InterruptInfo, Resume};
use crate::node::{Command, NodeError};
use crate::reducer::ReduceError;
use crate::state::{State, StateError};
use crate::stream::{ChannelSink, EventSink, NullSink, RunEvent, StreamModes};

/// What starts a run.
#[derive(Debug, Clone)]
pub enum RunInput<S: State> {
    /// A new turn: transient fields are reset to their defaults, then the update is applied
    /// as the input and the graph runs from START. A thread waiting at an interrupt abandons
    /// it.
    Turn(S::Update),
    /// Answers pending interrupts and re-enters the interrupted nodes.
    Resume(Resume),
    /// Continues from the checkpoint's pending tasks (after a crash, or to replay from a
    /// checkpoint given in [`RunConfig::checkpoint_id`]).
    Continue,
    /// A LangGraph-style command: apply `update` (not a new turn) and/or go to `goto`
    /// instead of the pending tasks, then continue.
    Command(Command<S>),
}

impl<S: State> RunInput<S> {
    fn kind(&self) -> &'static str {
        match self {
            RunInput::Turn(_) => "turn",
            RunInput::Resume(_) => "resume",
            RunInput::Continue => "continue",
            RunInput::Command(_) => "command",
        }
    }
}

/// How to run.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RunConfig {
    /// The thread.
    pub thread_id: String,
    /// The run's id (a fresh UUID by default); recorded in checkpoint metadata.
    pub run_id: String,
    /// Run from this checkpoint instead of the latest (fork / replay).
    pub checkpoint_id: Option<String>,
    /// Steps this run may take (the graph's default when `None`).
    pub recursion_limit: Option<usize>,
    /// Tasks of one step that run at once (the graph's default when `None`; see
    /// [`CompiledGraph::with_max_concurrency`]).
    pub max_concurrency: Option<usize>,
    /// Tasks one step may plan before the run fails (the graph's default when `None`; see
    /// [`CompiledGraph::with_max_sends_per_step`]).
    pub max_sends_per_step: Option<usize>,
    /// Extra metadata recorded on every checkpoint the run writes.
    pub metadata: Map<String, Value>,
    /// Run-scoped context nodes read with `ctx.context()` (e.g. the calling user); not
    /// stored in checkpoints.
    pub context: Arc<Map<String, Value>>,
    /// Which optional events to produce (`values` costs a serialization per step).
    pub stream_modes: StreamModes,
    /// Whether a step's checkpoint is stored before the next step begins (the default) or
    /// while it runs (see [`Durability`]; every checkpoint is stored either way).
    pub durability: Durability,
    /// Cancels the run.
    pub cancel: Cancellation,
    /// The writer's fence: every checkpoint and pending write of the run carries it, and
    /// the run fails with [`CheckpointError::Fenced`] as soon as another writer was handed
    /// the thread (see [`Fence`]).
    pub fence: Option<Fence>,
    /// The fence's claim, when the caller leaves its advance to the run's first write (set
    /// with [`RunConfig::claiming`]; see [`FenceClaim`]).
    pub claim: Option<FenceClaim>,
    /// Stop before these nodes run (replaces the graph's list for this run; see
    /// [`breakpoint`]).
    pub interrupt_before: Option<NodeSet>,
    /// Stop after these nodes ran (replaces the graph's list for this run; see
    /// [`breakpoint`]).
    pub interrupt_after: Option<NodeSet>,
    /// The long-term store nodes reach with [`NodeContext::store`](crate::NodeContext::store)
    /// (replaces the graph's, [`CompiledGraph::with_store`](crate::CompiledGraph::with_store);
    /// a server gives each run its user's [`Scoped`](crate::store::Scoped) view).
    pub store: Option<Arc<dyn crate::store::Store>>,
}

impl RunConfig {
    /// A run on `thread_id` with a fresh run id.
    pub fn new(thread_id: impl Into<String>) -> Self {
        RunConfig {
            thread_id: thread_id.into(),
            run_id: uuid::Uuid::new_v4().to_string(),
            checkpoint_id: None,
            recursion_limit: None,
            max_concurrency: None,
            max_sends_per_step: None,
            metadata: Map::new(),
            context: Arc::new(Map::new()),
            stream_modes: StreamModes::default(),
            durability: Durability::default(),
            cancel: Cancellation::new(),
            fence: None,
            claim: None,
            interrupt_before: None,
            interrupt_after: None,
            store: None,
        }
    }

    /// With a long-term store (see [`RunConfig::store`]).
    #[must_use]
    pub fn store(mut self, store: Arc<dyn crate::store::Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Stopping before `nodes` run (see [`breakpoint`]).
    #[must_use]
    pub fn interrupt_before(mut self, nodes: impl Into<NodeSet>) -> Self {
        self.interrupt_before = Some(nodes.into());
        self
    }

    /// Stopping after `nodes` ran (see [`breakpoint`]).
    #[must_use]
    pub fn interrupt_after(mut self, nodes: impl Into<NodeSet>) -> Self {
        self.interrupt_after = Some(nodes.into());
        self
    }

    /// With a given run id.
    #[must_use]
    pub fn run_id(mut self, id: impl Into<String>) -> Self {
        self.run_id = id.into();
        self
    }

    /// Running from a given checkpoint.
    #[must_use]
    pub fn from_checkpoint(mut self, id: impl Into<String>) -> Self {
        self.checkpoint_id = Some(id.into());
        self
    }

    /// With a recursion limit.
    #[must_use]
    pub fn recursion_limit(mut self, limit: usize) -> Self {
        self.recursion_limit = Some(limit);
        self
    }

    /// With at most `tasks` tasks of a step running at once (see
    /// [`RunConfig::max_concurrency`]).
    #[must_use]
    pub fn max_concurrency(mut self, tasks: usize) -> Self {
        self.max_concurrency = Some(tasks);
        self
    }

    /// With at most `tasks` tasks planned per step (see [`RunConfig::max_sends_per_step`]).
    #[must_use]
    pub fn max_sends_per_step(mut self, tasks: usize) -> Self {
        self.max_sends_per_step = Some(tasks);
        self
    }

    /// With stream modes.
    #[must_use]
    pub fn stream_modes(mut self, modes: StreamModes) -> Self {
        self.stream_modes = modes;
        self
    }

    /// With a durability mode (see [`Durability`]).
    #[must_use]
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// With a cancellation handle.
    #[must_use]
    pub fn cancel(mut self, cancel: Cancellation) -> Self {
        self.cancel = cancel;
        self
    }

    /// Writing under a fence (see [`RunConfig::fence`]).
    #[must_use]
    pub fn fence(mut self, fence: Fence) -> Self {
        self.fence = Some(fence);
        self
    }

    /// Writing under `claim`'s fence, which the run advances with its first write instead
    /// of the caller before the run (see [`FenceClaim`]).
    #[must_use]
    pub fn claiming(mut self, claim: FenceClaim) -> Self {
        self.fence = Some(claim.fence().clone());
        self.claim = Some(claim);
        self
    }

    /// With one more context entry (see [`RunConfig::context`]).
    #[must_use]
    pub fn context(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        Arc::make_mut(&mut self.context).insert(key.into(), value.into());
        self
    }

    /// With one more metadata entry.
    #[must_use]
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }
}

/// How a run ended (failures are [`RunError`]s).
#[derive(Clone, Debug, PartialEq)]
pub enum RunStatus {
    /// The graph reached END.
    Completed,
    /// The graph waits for these interrupts to be resumed; an empty list: it stopped at a
    /// breakpoint (see [`breakpoint`]) and [`RunInput::Continue`] runs on.
    Interrupted(Vec<InterruptInfo>),
    /// The run was cancelled; what completed is checkpointed.
    Cancelled(CancelReason),
}

/// The result of a run that did not fail.
#[derive(Clone, Debug)]
pub struct RunOutcome<S: State> {
    /// The run.
    pub run_id: String,
    /// The thread.
    pub thread_id: String,
    /// How it ended.
    pub status: RunStatus,
    /// The state at the thread's latest checkpoint.
    pub state: Arc<S>,
    /// The thread's latest checkpoint.
    pub checkpoint_id: Option<String>,
}

impl<S: State> RunOutcome<S> {
    /// The pending interrupts, if the run was interrupted.
    pub fn interrupts(&self) -> &[InterruptInfo] {
        match &self.status {
            RunStatus::Interrupted(i) => i,
            _ => &[],
        }
    }
}

/// Why a run failed or was refused. Refusals (`NothingToResume`, `AmbiguousResume`,
/// `UnknownInterrupt`, `UnknownCheckpoint`, `UnknownNode`) change nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// A resume on a thread that waits for nothing.
    #[error("thread `{thread_id}` has no pending interrupt to resume")]
    NothingToResume {
        /// The thread.
        thread_id: String,
    },
    /// A single resume value while several interrupts wait.
    #[error("{} interrupts are pending ({}); resume them by id", pending.len(), pending.join(", "))]
    AmbiguousResume {
        /// The ids of the pending interrupts.
        pending: Vec<String>,
    },
    /// A resume for an interrupt id that is not pending.
    #[error("no pending interrupt has id `{id}`")]
    UnknownInterrupt {
        /// The id given.
        id: String,
    },
    /// A resume or run from a checkpoint that is not the thread's latest.
    #[error("checkpoint `{checkpoint_id}` is not the latest of thread `{thread_id}`; interrupts can only be resumed at the latest checkpoint")]
    ResumeNotAtHead {
        /// The thread.
        thread_id: String,
        /// The checkpoint given.
        checkpoint_id: String,
    },
    /// A checkpoint id the thread does not have.
    #[error("thread `{thread_id}` has no checkpoint `{checkpoint_id}`")]
    UnknownCheckpoint {
        /// The thread.
        thread_id: String,
        /// The id given.
        checkpoint_id: String,
    },
    /// A node name the graph does not have (goto, update_state's as_node).
    #[error("the graph has no node `{0}`")]
    UnknownNode(String),
    /// Input (or an update) that does not fit the graph's state.
    #[error("input does not fit the graph's state: {0}")]
    InvalidInput(String),
    /// A node failed (after its retries).
    #[error("node `{node}` failed: {error}")]
    Node {
        /// The node.
        node: String,
        /// Its error.
        error: NodeError,
    },
    /// A node panicked (`node: None`: the run's own task did). The panic was caught: like a
    /// node error it fails the run, is recorded on the thread, and the next turn starts from
    /// the state before the failed turn. The node's retry policy sees a panic as a fatal
    /// error, so the default policy does not retry it.
    #[error("{}", panic_text(node.as_deref(), message))]
    Panic {
        /// The node that panicked (`None`: the run's own task).
        node: Option<String>,
        /// The panic's message.
        message: String,
    },
    /// The run's task was aborted before it returned (its runtime shut down): what
    /// completed is checkpointed, and running on from the last checkpoint continues it.
    #[error("the run was aborted before it finished")]
    Aborted,
    /// A node stopped because a service it depends on is unavailable for now
    /// ([`crate::ErrorKind::Unavailable`]): nothing failed for good, and running on from the
    /// last checkpoint later may succeed. Nothing is recorded as a failure.
    #[error("node `{node}` could not run: {error}")]
    Unavailable {
        /// The node.
        node: String,
        /// Its error.
        error: NodeError,
    },
    /// Two tasks of one step wrote the same overwrite field.
    #[error("field `{field}` was written by {} in the same step; give it an accumulating reducer or write it from one node", nodes.join(" and "))]
    ConflictingWrites {
        /// The field.
        field: String,
        /// The nodes that wrote it.
        nodes: Vec<String>,
    },
    /// A reducer refused an update.
    #[error("update refused: {0}")]
    Reduce(#[from] ReduceError),
    /// The run took more steps than its recursion limit.
    #[error("recursion limit of {limit} steps reached without hitting END; raise it with RunConfig::recursion_limit if the graph is meant to loop this long")]
    RecursionLimit {
        /// The limit.
        limit: usize,
    },
    /// A step planned more tasks (nodes and sends) than the run's limit
    /// ([`RunConfig::max_sends_per_step`]). From a command's sends, the run is refused
    /// before anything is written; from a step, the run fails at that step's end, and its
    /// checkpoint keeps the state before the fan-out.
    #[error("{source_name} planned {planned} tasks for one step, over the limit of {limit}; send fewer items per step (or raise the limit: RunConfig::max_sends_per_step)")]
    SendLimit {
        /// What planned them: a node, or `__input__` for a command's sends.
        source_name: String,
        /// How many tasks it planned.
        planned: usize,
        /// The limit.
        limit: usize,
    },
    /// A router or goto named a target it may not.
    #[error("node `{node}` routed to `{target}`, which is not one of its declared targets")]
    BadRoute {
        /// The node.
        node: String,
        /// The target.
        target: String,
    },
    /// Stored state that does not fit the state type.
    #[error(transparent)]
    State(#[from] StateError),
    /// Storage failed.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
}

fn panic_text(node: Option<&str>, message: &str) -> String {
    match node {
        Some(n) => format!("node `{n}` panicked: {message}"),
        None => format!("the run panicked: {message}"),
    }
}

/// The message of a caught panic (its `&str` or `String` payload).
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

impl RunError {
    /// Whether running on from the thread's last checkpoint later may succeed: storage was
    /// unreachable, or a node's dependency was ([`RunError::Unavailable`]). What completed
    /// is checkpointed; nothing was recorded as a failure.
    pub fn is_transient(&self) -> bool {
        match self {
            RunError::Unavailable { .. } => true,
            RunError::Checkpoint(e) => e.is_transient(),
            _ => false,
        }
    }

    /// Whether the run stopped because another writer was handed its thread.
    pub fn is_fenced(&self) -> bool {
        matches!(self, RunError::Checkpoint(CheckpointError::Fenced { .. }))
    }

    /// Whether the run was refused before it changed anything.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            RunError::NothingToResume { .. }
                | RunError::AmbiguousResume { .. }
                | RunError::UnknownInterrupt { .. }
                | RunError::UnknownCheckpoint { .. }
                | RunError::ResumeNotAtHead { .. }
                | RunError::UnknownNode(_)
                | RunError::InvalidInput(_)
        ) || matches!(self, RunError::SendLimit { source_name, .. } if source_name == plan::INPUT_SOURCE)
    }
}

/// A running graph's events; [`RunStream::outcome`] waits for its result.
pub struct RunStream<S: State> {
    events: crate::stream::EventStream,
    handle: tokio::task::JoinHandle<Result<RunOutcome<S>, RunError>>,
}

impl<S: State> RunStream<S> {
    /// Reads the remaining events and returns the run's result.
    ///
    /// # Errors
    /// The run's error.
    pub async fn outcome(mut self) -> Result<RunOutcome<S>, RunError> {
        while self.events.next().await.is_some() {}
        match self.handle.await {
            Ok(r) => r,
            Err(e) if e.is_panic() => Err(RunError::Panic {
                node: None,
                message: panic_message(&*e.into_panic()),
            }),
            Err(_) => Err(RunError::Aborted),
        }
    }
}

impl<S: State> Stream for RunStream<S> {
    type Item = RunEvent;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<RunEvent>> {
        self.events.poll_next_unpin(cx)
    }
}

/// How many token/custom events a [`RunStream`] queues for a slow reader before dropping.
pub const STREAM_CAPACITY: usize = 4096;

impl<S: State> CompiledGraph<S> {
    /// Runs to the end, an interrupt, or a cancel, without streaming.
    ///
    /// # Errors
    /// See [`RunError`].
    pub async fn invoke(
        &self,
        config: RunConfig,
        input: RunInput<S>,
    ) -> Result<RunOutcome<S>, RunError> {
        self.run(config, input, Arc::new(NullSink)).await
    }

    /// Starts the run on the tokio runtime and streams its events (filtered by the config's
    /// stream modes).
    pub fn stream(&self, config: RunConfig, input: RunInput<S>) -> RunStream<S> {
        let (sink, events) = ChannelSink::new(config.stream_modes, STREAM_CAPACITY);
        let graph = self.clone();
        let handle = tokio::spawn(async move { graph.run(config, input, Arc::new(sink)).await });
        RunStream { events, handle }
    }

    /// Runs, sending every event to `sink`.
    ///
    /// # Errors
    /// See [`RunError`].
    pub async fn run(
        &self,
        config: RunConfig,
        input: RunInput<S>,
        sink: Arc<dyn EventSink>,
    ) -> Result<RunOutcome<S>, RunError> {
        executor::run(self, config, input, sink).await
    }
}
