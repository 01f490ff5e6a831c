//! Storing a step's checkpoint while the next step runs ([`Durability::Async`]).
//!
//! A step's checkpoint is built, its statement sent, and the next step's tasks start while
//! the commit is on its way to disk. Nothing of the next step reaches storage or a listener
//! before that commit lands:
//!
//! - every pending write of the next step's tasks (a result, an interrupt, a durable step's
//!   outcome) waits for the [`Gate`], so no write is stored at a checkpoint that is not;
//! - the next step's events are held back by the run's emitter, and sent right after the
//!   landed step's own (`NodeFinished`, `Values`, `Checkpoint`): a listener sees the same
//!   stream, in the same order, as with [`Durability::Sync`];
//! - the next checkpoint is only put once the one before it landed, and the run reports its
//!   outcome only once its last checkpoint landed.
//!
//! So a crash repeats what it would with every checkpoint stored before the next step: the
//! steps whose checkpoints had not landed. A checkpoint that fails to land (a lost fence, the
//! database gone) stops the step that started on it as soon as the failure arrives (no task
//! starts when it arrived already), its held events dropped, and the run fails with the
//! checkpoint's error, as it would have before the step began; unlike with
//! [`Durability::Sync`], that step may have begun its work by then.
//!
//! What does not wait: a subgraph node's own run (its checkpoints are under its own thread,
//! stored with the parent run's durability, as LangGraph's subgraphs inherit it), the node
//! cache and the long-term store. Like the rest of the step, they are done again when the
//! checkpoint before them does not land.

use std::task::Poll;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use tokio::sync::watch;

use crate::checkpoint::CheckpointError;
use crate::context::RunScope;
use crate::stream::Event;

/// When a step's checkpoint must be stored, relative to the next step (LangGraph's
/// `durability`).
///
/// The default is [`Durability::Sync`], where LangGraph's is `async`: `async` gives back a
/// lone run's time between commits only when commits are fast and the CPU would otherwise
/// wait, and under load it costs CPU: the server serves fewer turns a second with it
/// (`benchmarks/durability-modes.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Durability {
    /// Stored before the next step begins (the default).
    #[default]
    Sync,
    /// Stored while the next step runs: the next step's writes and events wait for it,
    /// and the run returns only once every checkpoint it made is stored, so a crash loses
    /// and repeats exactly what it would with [`Durability::Sync`] (see the module docs).
    Async,
}

impl Durability {
    /// The mode LangGraph calls `name` (`"sync"`, `"async"`; `"exit"`, which stores only
    /// the run's last checkpoint, is served as `"async"`: every step stays durable).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "sync" => Some(Durability::Sync),
            "async" | "exit" => Some(Durability::Async),
            _ => None,
        }
    }
}

/// Whether the run's last checkpoint is stored: what a pending write waits for.
pub(crate) struct Gate(watch::Sender<Landing>);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Landing {
    Stored,
    InFlight,
    Failed,
}

impl Default for Gate {
    fn default() -> Self {
        Gate(watch::Sender::new(Landing::Stored))
    }
}

impl Gate {
    fn set(&self, landing: Landing) {
        self.0.send_replace(landing);
    }

    /// Waits until the run's last checkpoint is stored; an error when it could not be.
    pub(crate) async fn stored(&self) -> Result<(), CheckpointError> {
        if *self.0.borrow() == Landing::Stored {
            return Ok(());
        }
        let mut rx = self.0.subscribe();
        let landed = rx.wait_for(|l| *l != Landing::InFlight).await;
        if landed.is_ok_and(|l| *l == Landing::Stored) {
            Ok(())
        } else {
            Err(CheckpointError::Unavailable(
                "the checkpoint this write belongs to could not be stored".into(),
            ))
        }
    }
}

/// A step's checkpoint on its way to storage, and the step's events that follow it.
pub(super) struct InFlight {
    /// The put (polled once already: its statement is sent); in a mutex only so that the
    /// executor holding it stays `Sync` (it is only ever moved or borrowed mutably).
    put: std::sync::Mutex<BoxFuture<'static, Result<(), CheckpointError>>>,
    /// The step's `NodeFinished`, `Values` and `Checkpoint` events.
    pub(super) events: Vec<Event>,
}

impl InFlight {
    /// Starts storing a checkpoint with `put`: from now on the run's pending writes wait for
    /// it, and its events are held back.
    pub(super) async fn launch(
        scope: &RunScope,
        put: BoxFuture<'static, Result<(), CheckpointError>>,
    ) -> Self {
        scope.landing.set(Landing::InFlight);
        scope.emitter.hold();
        let mut flight = InFlight {
            put: std::sync::Mutex::new(put),
            events: Vec::new(),
        };
        // One poll starts the put (sends its statement, when a connection is free at once);
        // what the run does next overlaps its commit.
        if let Poll::Ready(stored) = flight.poll_once().await {
            *flight.put() = futures_util::future::ready(stored).boxed();
        }
        flight
    }

    /// The put, to poll until it is stored (then hand its result to [`InFlight::landed`]).
    pub(super) fn put(&mut self) -> &mut BoxFuture<'static, Result<(), CheckpointError>> {
        self.put.get_mut().unwrap_or_else(|e| e.into_inner())
    }

    /// Polls the put once, without waiting.
    pub(super) async fn poll_once(&mut self) -> Poll<Result<(), CheckpointError>> {
        let put = self.put();
        std::future::poll_fn(|cx| Poll::Ready(put.poll_unpin(cx))).await
    }

    /// Waits for the checkpoint to be stored, then [`InFlight::landed`].
    pub(super) async fn land(mut self, scope: &RunScope) -> Result<(), CheckpointError> {
        let stored = self.put().await;
        self.landed(scope, stored)
    }

    /// Once the put is done (`stored`): sends the step's events ahead of those held back
    /// since, and opens the gate. When it could not be stored, the events held back stay
    /// held: the run drops them when it fails, once the step that started on it stopped.
    pub(super) fn landed(
        self,
        scope: &RunScope,
        stored: Result<(), CheckpointError>,
    ) -> Result<(), CheckpointError> {
        match &stored {
            Ok(()) => {
                scope.flushed();
                for event in self.events {
                    scope.emitter.emit_ahead(event);
                }
                scope.emitter.release(true);
                scope.landing.set(Landing::Stored);
            }
            Err(_) => scope.landing.set(Landing::Failed),
        }
        stored
    }
}
