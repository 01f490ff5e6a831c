//! Runs: created as rows, executed by workers in the background, watched by any number
//! of clients.
//!
//! - [`Runs::create`] inserts the run (applying the thread's multitask strategy and the
//!   client's idempotency key in one transaction) and wakes the worker;
//! - the worker ([`worker`]) claims runs under a lease, executes them with the graph, and
//!   sends every event to the live [`hub`] and to the [`writer`] that stores it;
//! - [`Runs::watch`] streams a run's events from any position: from the hub when the run
//!   lives in this process, from the `run_events` table otherwise;
//! - [`Runs::cancel`] stops a run cooperatively wherever it runs.

pub(crate) mod hub;
pub mod spec;
pub(crate) mod waiters;
pub(crate) mod worker;
pub(crate) mod writer;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures_util::Stream;
use palgraph::{CancelReason, Cancellation, Event, RunEvent};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::graphs::Graphs;
use crate::store::{CancelAction, CreatedRun, EventRow, NewRun, Run, RunState, Store, StoreError};
use hub::Hub;
use waiters::Waiters;
use writer::EventWriter;

/// A run executing in this process.
pub(crate) struct Running {
    pub(crate) cancel: Cancellation,
    pub(crate) abort: Option<tokio::task::AbortHandle>,
}

/// Settings of the run machinery.
#[derive(Clone, Debug)]
pub struct RunSettings {
    /// How long a worker's claim on a run lasts without a heartbeat.
    pub lease: Duration,
    /// Runs executed at once by this process.
    pub max_concurrent: usize,
    /// How often the worker looks for runs when nothing woke it.
    pub poll: Duration,
}

impl Default for RunSettings {
    fn default() -> Self {
        RunSettings {
            lease: Duration::from_secs(30),
            max_concurrent: 256,
            poll: Duration::from_millis(250),
        }
    }
}

/// The run machinery of one server process.
pub struct Runs {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) graphs: Graphs,
    pub(crate) hub: Hub,
    pub(crate) writer: EventWriter,
    pub(crate) worker_id: String,
    pub(crate) settings: RunSettings,
    running: Mutex<HashMap<String, Running>>,
    /// Watchers of runs executed by other processes wait here for their NOTIFY.
    pub(crate) remote: Waiters,
    /// Watchers of a thread's next run (thread streams) wait here, by thread id.
    pub(crate) threads: Waiters,
    pub(crate) wake: Notify,
    pub(crate) stop_claiming: CancellationToken,
}

/// The reason enum for a stored reason string.
pub(crate) fn reason(s: Option<&str>) -> CancelReason {
    match s {
        Some("superseded") => CancelReason::Superseded,
        Some("disconnect") => CancelReason::Disconnect,
        Some("shutdown") => CancelReason::Shutdown,
        _ => CancelReason::UserCancelled,
    }
}

impl Runs {
    /// The machinery on a store; call [`Runs::start`] to run the worker.
    pub fn new(store: Arc<dyn Store>, graphs: Graphs, settings: RunSettings) -> Arc<Self> {
        Arc::new(Runs {
            writer: EventWriter::start(store.clone()),
            store,
            graphs,
            hub: Hub::default(),
            worker_id: format!("worker-{}", uuid::Uuid::new_v4().simple()),
            settings,
            running: Mutex::new(HashMap::new()),
            remote: Waiters::default(),
            threads: Waiters::default(),
            wake: Notify::new(),
            stop_claiming: CancellationToken::new(),
        })
    }

    /// Starts the worker, its heartbeat and the listener for other processes' news.
    pub fn start(self: &Arc<Self>) {
        let runs = self.clone();
        tokio::spawn(async move {
            match runs.store.recover_orphans().await {
                Ok(0) => {}
                Ok(n) => {
                    tracing::info!(runs = n, "resuming runs left running by a previous process")
                }
                Err(e) => tracing::warn!(error = %e, "could not look for runs left running"),
            }
            worker::claim_loop(runs).await;
        });
        tokio::spawn(worker::heartbeat_loop(self.clone()));
        let runs = self.clone();
        tokio::spawn(async move {
            if let Some(mut rx) = runs.store.notifications().await {
                while let Some(n) = rx.recv().await {
                    runs.on_notification(n).await;
                }
            }
        });
    }

    async fn on_notification(&self, n: crate::store::Notification) {
        use crate::store::Notification;
        match n {
            Notification::Events(run_id) => self.remote.wake(&run_id),
            Notification::Cancel(run_id) => {
                if self.running().contains_key(&run_id) {
                    if let Ok(Some(run)) = self.store.get_run_any(&run_id).await {
                        self.signal_cancel(&run).await;
                    }
                }
            }
            Notification::Runs(key) => {
                self.threads.wake(&key);
                self.wake.notify_one();
            }
            Notification::Lost => {
                self.remote.wake_all();
                self.threads.wake_all();
                self.wake.notify_one();
            }
        }
    }

    pub(crate) fn running(&self) -> MutexGuard<'_, HashMap<String, Running>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Creates a run; cancels what its strategy supersedes.
    pub async fn create(self: &Arc<Self>, new: NewRun) -> Result<CreatedRun, StoreError> {
        let created = self.store.create_run(new).await?;
        if !created.existing {
            for c in &created.cancelled {
                self.signal_cancel(c).await;
            }
            self.threads.wake(&created.run.thread_id);
            self.claim_created(&created.run).await;
        }
        Ok(created)
    }

    /// Runs a run made here in this process when there is room (its stream then follows it
    /// live, not through the events table), before another replica's claim loop hears of
    /// it; otherwise leaves it to whichever claim loop comes first.
    async fn claim_created(self: &Arc<Self>, run: &Run) {
        if run.status != RunState::Pending
            || self.stop_claiming.is_cancelled()
            || self.running_count() >= self.settings.max_concurrent
        {
            self.wake.notify_one();
            return;
        }
        let lease = self.settings.lease.as_millis() as i64;
        match self
            .store
            .claim_run(&self.worker_id, lease, Some(&run.run_id))
            .await
        {
            Ok(Some(claimed)) => worker::start(self, claimed),
            // Queued behind another run of its thread, or taken elsewhere already.
            Ok(None) => self.wake.notify_one(),
            Err(e) => {
                tracing::warn!(error = %e, "could not claim the new run; the claim loop will");
                self.wake.notify_one();
            }
        }
    }

    /// Asks a run to stop. Idempotent; returns the run as it is afterwards.
    pub async fn cancel(
        &self,
        run_id: &str,
        action: CancelAction,
        why: CancelReason,
    ) -> Result<Option<Run>, StoreError> {
        let run = self
            .store
            .request_cancel(run_id, action, why.as_str())
            .await?;
        if let Some(r) = &run {
            self.signal_cancel(r).await;
        }
        Ok(run)
    }

    /// Makes a cancel take effect: a run running here is told at once (other replicas see
    /// the flag at their next heartbeat); a run cancelled before it started gets its
    /// terminal event.
    async fn signal_cancel(&self, run: &Run) {
        if run.status == RunState::Cancelled {
            let ch = self.hub.open(&run.run_id);
            let event = RunEvent {
                seq: 1,
                event: Event::Cancelled {
                    reason: reason(run.cancel_reason.as_deref()),
                },
            };
            ch.push(event.clone());
            self.writer.push(EventRow {
                run_id: run.run_id.clone(),
                seq: 1,
                thread_id: run.thread_id.clone(),
                event: serde_json::to_value(&event.event).unwrap_or_default(),
            });
            self.writer.flush().await;
            self.hub.remove(&run.run_id);
            worker::settle_thread(self, &run.thread_id, None).await;
            return;
        }
        if let Some(r) = self.running().get(&run.run_id) {
            r.cancel.cancel(reason(run.cancel_reason.as_deref()));
        }
    }

    /// A run's events after `after_seq`, live until its terminal event.
    pub fn watch(
        self: &Arc<Self>,
        run_id: &str,
        after_seq: u64,
    ) -> impl Stream<Item = RunEvent> + Send + 'static {
        worker::watch(self.clone(), run_id.to_string(), after_seq)
    }

    /// Stops claiming, lets running runs finish within `grace`, then gives the rest back to
    /// the queue for another process.
    pub async fn shutdown(&self, grace: Duration) {
        self.stop_claiming.cancel();
        let deadline = tokio::time::Instant::now() + grace;
        while !self.running().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let left: Vec<(String, Option<tokio::task::AbortHandle>)> = self
            .running()
            .iter()
            .map(|(id, r)| (id.clone(), r.abort.clone()))
            .collect();
        for (id, abort) in left {
            if let Some(a) = abort {
                a.abort();
            }
            if let Err(e) = self.store.release_run(&id, &self.worker_id).await {
                tracing::warn!(run_id = %id, error = %e, "could not release run at shutdown");
            }
            self.running().remove(&id);
        }
        self.writer.flush().await;
    }

    /// How many runs execute here now.
    pub fn running_count(&self) -> usize {
        self.running().len()
    }
}
