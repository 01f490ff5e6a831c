//! The event stream of a run.
//!
//! Every run emits, in order:
//!
//! 1. [`Event::RunStarted`];
//! 2. for each step, for each task in the step's (deterministic) task order:
//!    [`Event::NodeStarted`]; while the nodes run, any [`Event::Status`], [`Event::Custom`]
//!    and [`Event::MessageDelta`] they emit; once the step's checkpoint is durable,
//!    [`Event::NodeFinished`] for each task in task order (unless the sink does not want
//!    `updates`: [`EventSink::wants`]), then [`Event::Values`] (when the `values` mode is
//!    on and the sink wants it) and [`Event::Checkpoint`];
//! 3. exactly one terminal event: [`Event::Completed`], [`Event::Interrupted`],
//!    [`Event::Failed`] or [`Event::Cancelled`].
//!
//! Events go to an [`EventSink`]. [`ChannelSink`] (what [`CompiledGraph::stream`] uses)
//! never blocks the run: structural events (a bounded number per step) are always queued,
//! while high-volume events (token deltas, custom events) are dropped once `capacity` of them
//! wait unread, and the consumer is told with [`Event::Lagged`].
//!
//! [`CompiledGraph::stream`]: crate::CompiledGraph::stream

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use futures_util::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::cancel::CancelReason;
use crate::interrupt::InterruptInfo;

/// One thing that happened in a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// The run began.
    RunStarted {
        /// The run.
        run_id: String,
        /// The thread.
        thread_id: String,
        /// What started it: `turn`, `resume`, `continue`, `command`.
        input: String,
    },
    /// A node began (once per task, not per retry).
    NodeStarted {
        /// The node.
        node: String,
        /// The task.
        task_id: String,
        /// The step.
        step: i64,
        /// The node's declared status line ("Finding documents..."); `None` when it has none
        /// or reports it itself (`NodeBuilder::reports_status`).
        status: Option<String>,
    },
    /// A status line a node reported while it ran, with details (e.g. `docs_found`).
    Status {
        /// The node.
        node: String,
        /// The line.
        message: String,
        /// Details (an object; `null` when none).
        details: Value,
    },
    /// A custom event a node emitted with `ctx.emit`.
    Custom {
        /// The node.
        node: String,
        /// What it emitted.
        value: Value,
    },
    /// Streamed LLM text.
    MessageDelta {
        /// The node.
        node: String,
        /// The id of the message being written.
        message_id: String,
        /// The new text.
        delta: String,
    },
    /// The text streamed so far for a message is void: it is being written again from the
    /// start, by a node that runs again after an error its retry policy retries (the engine
    /// emits it before the new attempt), or after its run was taken over (a crash, a lost
    /// lease, a storage outage: whoever resumes runs across processes emits it). A consumer
    /// replaces the message's partial text with the deltas that follow.
    MessageReset {
        /// The node.
        node: String,
        /// The id of the message being written again.
        message_id: String,
    },
    /// A node finished and its step is checkpointed.
    NodeFinished {
        /// The node.
        node: String,
        /// The task.
        task_id: String,
        /// The step.
        step: i64,
        /// The update it returned (JSON of the state's update type).
        update: Value,
        /// The node's declared status line.
        status: Option<String>,
        /// The update came from the node's cache: the node did not run (see
        /// [`crate::node_cache`]).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        cached: bool,
    },
    /// The whole state after a step (only with the `values` mode on).
    Values {
        /// The step.
        step: i64,
        /// The state.
        values: Value,
    },
    /// A checkpoint was written.
    Checkpoint {
        /// Its id.
        checkpoint_id: String,
        /// Its step (steps count on across a thread's turns; the first input is -1).
        step: i64,
        /// What wrote it: `input` (a new turn), `loop` (a step), `update` (a command).
        #[serde(default)]
        source: String,
        /// The nodes due next.
        next: Vec<String>,
    },
    /// Some high-volume events were dropped because the consumer read too slowly.
    Lagged {
        /// How many.
        dropped: u64,
    },
    /// An event of a subgraph running inside a node of this run (LangGraph's
    /// `(namespace, chunk)` with `subgraphs=True`; see [`crate::graph::subgraph`]). Only a
    /// subgraph's step events are passed up (node starts and finishes, values, checkpoints,
    /// custom events, status lines, tokens), never its own start or end.
    Subgraph {
        /// Where it ran, outermost first: `["node:task_id", ...]` (LangGraph's
        /// `checkpoint_ns` split on `|`).
        namespace: Vec<String>,
        /// The subgraph's event.
        event: Box<Event>,
    },
    /// Terminal: the graph reached its end.
    Completed {
        /// The final checkpoint.
        checkpoint_id: Option<String>,
    },
    /// Terminal: the graph waits for a resume.
    Interrupted {
        /// The pending interrupts.
        interrupts: Vec<InterruptInfo>,
    },
    /// Terminal: a node or the engine failed; the thread keeps its last good checkpoint.
    Failed {
        /// The node that failed, if a node did.
        node: Option<String>,
        /// What happened.
        error: String,
    },
    /// Terminal: the run was cancelled; what completed stays checkpointed.
    Cancelled {
        /// Why.
        reason: CancelReason,
    },
}

impl Event {
    /// Whether this is the run's last event.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            Event::Completed { .. }
                | Event::Interrupted { .. }
                | Event::Failed { .. }
                | Event::Cancelled { .. }
        )
    }

    /// The stream mode that carries this event (`None`: lifecycle, always delivered).
    pub fn mode(&self) -> Option<StreamMode> {
        match self {
            Event::NodeStarted { .. } => Some(StreamMode::Tasks),
            Event::Checkpoint { .. } => Some(StreamMode::Checkpoints),
            Event::NodeFinished { .. } => Some(StreamMode::Updates),
            Event::Values { .. } => Some(StreamMode::Values),
            Event::Status { .. } | Event::Custom { .. } => Some(StreamMode::Custom),
            Event::MessageDelta { .. } | Event::MessageReset { .. } => Some(StreamMode::Messages),
            Event::Subgraph { event, .. } => event.mode(),
            _ => None,
        }
    }

    /// Whether the event may be dropped for a slow consumer.
    pub fn is_lossy(&self) -> bool {
        match self {
            Event::Subgraph { event, .. } => event.is_lossy(),
            e => matches!(e, Event::MessageDelta { .. } | Event::Custom { .. }),
        }
    }
}

/// An event with its position in the run (1, 2, 3, ...).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunEvent {
    /// Its position.
    pub seq: u64,
    /// The event.
    #[serde(flatten)]
    pub event: Event,
}

/// Stream modes, as in LangGraph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StreamMode {
    /// The whole state after each step.
    Values,
    /// Each node's update.
    Updates,
    /// Status lines and custom events nodes emit.
    Custom,
    /// LLM token deltas.
    Messages,
    /// Everything, including node starts and checkpoints.
    Debug,
    /// Node starts (with their declared status lines), without the rest of `debug` (a chat
    /// client's status line needs them, not the whole state).
    Tasks,
    /// Checkpoints as they are written.
    Checkpoints,
}

/// A set of stream modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamModes(u8);

impl StreamModes {
    /// No mode: lifecycle events only.
    pub const NONE: StreamModes = StreamModes(0);
    /// Every mode.
    pub const ALL: StreamModes = StreamModes(0b111_1111);

    fn bit(m: StreamMode) -> u8 {
        match m {
            StreamMode::Values => 1,
            StreamMode::Updates => 2,
            StreamMode::Custom => 4,
            StreamMode::Messages => 8,
            StreamMode::Debug => 16,
            StreamMode::Tasks => 32,
            StreamMode::Checkpoints => 64,
        }
    }

    /// The set with `m` added.
    #[must_use]
    pub fn with(self, m: StreamMode) -> Self {
        StreamModes(self.0 | Self::bit(m))
    }

    /// Whether `m` is in the set (`debug` includes every mode).
    pub fn contains(&self, m: StreamMode) -> bool {
        self.0 & (Self::bit(m) | Self::bit(StreamMode::Debug)) != 0
    }

    /// Whether an event is delivered under these modes.
    pub fn delivers(&self, event: &Event) -> bool {
        event.mode().is_none_or(|m| self.contains(m))
    }
}

impl Default for StreamModes {
    /// Updates, custom and messages (everything but the costly `values` and `debug`).
    fn default() -> Self {
        StreamModes::NONE
            .with(StreamMode::Updates)
            .with(StreamMode::Custom)
            .with(StreamMode::Messages)
    }
}

impl FromIterator<StreamMode> for StreamModes {
    fn from_iter<T: IntoIterator<Item = StreamMode>>(iter: T) -> Self {
        iter.into_iter().fold(StreamModes::NONE, StreamModes::with)
    }
}

/// Where a run's events go. `send` must not block.
pub trait EventSink: Send + Sync {
    /// Takes one event.
    fn send(&self, event: RunEvent);

    /// Whether events are wanted at all (false lets the engine skip building them).
    fn is_active(&self) -> bool {
        true
    }

    /// Whether the events of stream mode `mode` are wanted: false lets the engine skip
    /// building what only they carry (a node's update, serialized for
    /// [`Event::NodeFinished`], when nobody streams `updates`). Every mode of an active
    /// sink by default.
    fn wants(&self, mode: StreamMode) -> bool {
        let _ = mode;
        self.is_active()
    }
}

/// A sink that drops everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullSink;

impl EventSink for NullSink {
    fn send(&self, _event: RunEvent) {}

    fn is_active(&self) -> bool {
        false
    }
}

/// Collects every event (for tests).
#[derive(Debug, Default)]
pub struct VecSink(pub std::sync::Mutex<Vec<RunEvent>>);

impl VecSink {
    /// The events so far.
    pub fn events(&self) -> Vec<Event> {
        self.0
            .lock()
            .map(|v| v.iter().map(|e| e.event.clone()).collect())
            .unwrap_or_default()
    }
}

impl EventSink for VecSink {
    fn send(&self, event: RunEvent) {
        if let Ok(mut v) = self.0.lock() {
            v.push(event);
        }
    }
}

/// A non-blocking channel sink with a cap on queued high-volume events.
pub struct ChannelSink {
    tx: mpsc::UnboundedSender<RunEvent>,
    modes: StreamModes,
    lossy_queued: Arc<AtomicUsize>,
    dropped: AtomicU64,
    capacity: usize,
}

impl ChannelSink {
    /// A sink and its receiving stream; at most `capacity` token/custom events wait unread.
    pub fn new(modes: StreamModes, capacity: usize) -> (ChannelSink, EventStream) {
        let (tx, rx) = mpsc::unbounded_channel();
        let lossy_queued = Arc::new(AtomicUsize::new(0));
        (
            ChannelSink {
                tx,
                modes,
                lossy_queued: lossy_queued.clone(),
                dropped: AtomicU64::new(0),
                capacity,
            },
            EventStream { rx, lossy_queued },
        )
    }
}

impl EventSink for ChannelSink {
    fn send(&self, event: RunEvent) {
        if !self.modes.delivers(&event.event) {
            return;
        }
        if event.event.is_lossy() {
            if self.lossy_queued.load(Ordering::Acquire) >= self.capacity {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            self.lossy_queued.fetch_add(1, Ordering::AcqRel);
        } else {
            let dropped = self.dropped.swap(0, Ordering::Relaxed);
            if dropped > 0 {
                let _ = self.tx.send(RunEvent {
                    seq: event.seq,
                    event: Event::Lagged { dropped },
                });
            }
        }
        let _ = self.tx.send(event);
    }

    fn wants(&self, mode: StreamMode) -> bool {
        self.modes.contains(mode)
    }
}

/// The receiving side of a [`ChannelSink`].
pub struct EventStream {
    rx: mpsc::UnboundedReceiver<RunEvent>,
    lossy_queued: Arc<AtomicUsize>,
}

impl Stream for EventStream {
    type Item = RunEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<RunEvent>> {
        let polled = self.rx.poll_recv(cx);
        if let Poll::Ready(Some(e)) = &polled {
            if e.event.is_lossy() {
                self.lossy_queued.fetch_sub(1, Ordering::AcqRel);
            }
        }
        polled
    }
}

/// Numbers events and hands them to the sink.
///
/// While a step's checkpoint is stored in the background (see `run::landing`), the events
/// of the next step are held back: they are sent once that checkpoint's own events went
/// out, so the stream keeps the order of a run that stores every checkpoint before its next
/// step begins.
pub(crate) struct Emitter {
    sink: Arc<dyn EventSink>,
    seq: AtomicU64,
    active: bool,
    pub(crate) modes: StreamModes,
    /// Whether events are being held back (a fast check before taking `held`).
    holding: AtomicBool,
    /// The events held back, in order (`None`: none are).
    held: Mutex<Option<Vec<Event>>>,
}

impl Emitter {
    pub(crate) fn new(sink: Arc<dyn EventSink>, modes: StreamModes) -> Self {
        Emitter {
            active: sink.is_active(),
            sink,
            seq: AtomicU64::new(0),
            modes,
            holding: AtomicBool::new(false),
            held: Mutex::new(None),
        }
    }

    /// Whether anyone listens.
    pub(crate) fn is_active(&self) -> bool {
        self.active
    }

    /// Whether the sink wants the events of `mode` (the run config's modes aside: they
    /// decide only whether `values` events are made).
    pub(crate) fn wants(&self, mode: StreamMode) -> bool {
        self.active && self.sink.wants(mode)
    }

    /// Builds and sends an event, unless nobody listens; while events are held back, holds
    /// it back too.
    pub(crate) fn emit_with(&self, make: impl FnOnce() -> Event) {
        if !self.active {
            return;
        }
        if self.holding.load(Ordering::Acquire) {
            let mut held = self.held();
            if let Some(events) = held.as_mut() {
                events.push(make());
                return;
            }
            // Released meanwhile: the held events went out before the lock was free.
        }
        self.send(make());
    }

    /// Sends `event` now, ahead of any held back.
    pub(crate) fn emit_ahead(&self, event: Event) {
        if self.active {
            self.send(event);
        }
    }

    /// Holds back every event emitted from now on, until [`Emitter::release`].
    pub(crate) fn hold(&self) {
        if self.active {
            let mut held = self.held();
            held.get_or_insert_with(Vec::new);
            self.holding.store(true, Ordering::Release);
        }
    }

    /// Stops holding events back: sends those held (`send`), or drops them.
    pub(crate) fn release(&self, send: bool) {
        if !self.active {
            return;
        }
        let mut held = self.held();
        if let Some(events) = held.take() {
            if send {
                for event in events {
                    self.send(event);
                }
            }
        }
        // Only now: an event emitted meanwhile waited for the lock, and goes out after them.
        self.holding.store(false, Ordering::Release);
    }

    fn held(&self) -> MutexGuard<'_, Option<Vec<Event>>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn send(&self, event: Event) {
        let seq = self.seq.fetch_add(1, Ordering::AcqRel) + 1;
        self.sink.send(RunEvent { seq, event });
    }
}
