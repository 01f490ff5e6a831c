//! Runs: created as rows, executed by workers in the background, watched by any number
//! of clients.
//!
//! - [`Runs::create`] inserts the run (applying the thread's multitask strategy and the
//!   client's idempotency key in one transaction) and wakes the worker;
//! - the worker (`worker`) claims runs under a lease and keeps the leases alive;
//!   `execute` runs one claim: it hands the thread to the claim (a fencing token the
//!   checkpointer checks on every write), executes the graph, rides out storage outages by
//!   continuing from the last checkpoint, and records the end with its terminal event;
//!   `sink` numbers and publishes the events, the `hub` fans them out live and the
//!   `writer` stores them;
//! - [`Runs::watch`] streams a run's events from any position (`watch`): from the hub when
//!   the run lives in this process, from the `run_events` table otherwise;
//! - [`Runs::cancel`] stops a run cooperatively wherever it runs.
//!
//! **Claims are fenced.** A claim is a run's `attempt` number: heartbeats, events, the
//! run's end and its checkpoints are all written under it, and refused once the run was
//! claimed again. A worker that cannot renew its lease in time (a paused process, a
//! database outage longer than the lease) stops the run at once and writes nothing more.

mod codec;
mod compact;
mod execute;
mod failed_turn;
pub(crate) mod hub;
mod retention;
mod sink;
pub(crate) mod spec;
pub(crate) mod waiters;
mod watch;
pub(crate) mod worker;
pub(crate) mod writer;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures_util::Stream;
use palgraph::{CancelReason, Cancellation, RunEvent};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::graphs::Graphs;
use crate::store::{CancelAction, Claim, CreatedRun, NewRun, Run, RunState, Store, StoreError};
use hub::Hub;
use waiters::Waiters;
use writer::EventWriter;

/// A claim executing in this process.
pub(crate) struct Running {
    /// The claim's epoch (the run's attempt).
    pub(crate) attempt: i64,
    pub(crate) cancel: Cancellation,
    /// Cancelled when the lease was lost: the run stops and writes nothing more.
    pub(crate) lost: CancellationToken,
    /// Until when the lease surely holds, by this process's clock.
    pub(crate) deadline: Instant,
    pub(crate) abort: Option<tokio::task::AbortHandle>,
    /// Cancelled when the claim's task has ended.
    pub(crate) done: CancellationToken,
    /// Cancelled when the claim starts recording the run's end: from then on the run may
    /// be no longer `running` in the store without its lease being lost (the end's own
    /// write tells whether it was).
    pub(crate) ending: CancellationToken,
}

impl Running {
    /// Gives the run up: it stops at once and writes nothing more.
    pub(crate) fn lose(&self) {
        self.lost.cancel();
        self.cancel.cancel(CancelReason::Shutdown);
    }
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
    /// How long a claim keeps retrying after storage errors (connection lost, database
    /// restarting, deadlock) before the run fails; the run continues from its last
    /// checkpoint on each retry.
    pub storage_retry: Duration,
    /// Claims of one run before it fails (a run that kills its process every time).
    pub max_attempts: i64,
    /// How long another process must have been gone from the database before its runs are
    /// taken over without waiting for their leases (Postgres).
    pub orphan_grace: Duration,
    /// How long the event writer gathers events before it stores them (token deltas of one
    /// message within a window are stored as one row). Watchers on this process see events
    /// at once; watchers on other replicas, up to this much later.
    pub event_flush: Duration,
    /// How long a finished run's events are kept for replays; after that only its terminal
    /// event stays (`None`: kept until the thread is deleted).
    pub event_retention: Option<Duration>,
    /// Tasks of one run's step that run at once (a run may ask for fewer).
    pub max_concurrency: usize,
    /// Tasks one step of a run may plan.
    pub max_sends_per_step: usize,
}

impl Default for RunSettings {
    fn default() -> Self {
        RunSettings {
            lease: Duration::from_secs(30),
            max_concurrent: 256,
            poll: Duration::from_millis(250),
            storage_retry: Duration::from_secs(60),
            max_attempts: 20,
            orphan_grace: Duration::from_secs(2),
            event_flush: Duration::from_millis(50),
            event_retention: Some(Duration::from_secs(3600)),
            max_concurrency: palgraph::DEFAULT_MAX_CONCURRENCY,
            max_sends_per_step: palgraph::DEFAULT_MAX_SENDS_PER_STEP,
        }
    }
}

impl RunSettings {
    /// The settings `cfg` gives.
    pub(crate) fn of(cfg: &crate::config::ServeConfig) -> Self {
        RunSettings {
            lease: Duration::from_secs(cfg.lease_secs.max(1)),
            max_concurrent: cfg.max_runs.max(1),
            storage_retry: Duration::from_secs(cfg.storage_retry_secs),
            max_attempts: cfg.max_attempts.max(1),
            event_flush: Duration::from_millis(cfg.event_flush_ms.min(1000)),
            event_retention: (cfg.event_retention_secs > 0)
                .then(|| Duration::from_secs(cfg.event_retention_secs)),
            max_concurrency: usize::try_from(cfg.max_concurrency).unwrap_or(usize::MAX),
            max_sends_per_step: usize::try_from(cfg.max_sends_per_step).unwrap_or(usize::MAX),
            ..Default::default()
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
    /// Woken whenever a claim ends here.
    pub(crate) ended: Notify,
    /// Watchers of runs executed by other processes wait here for their NOTIFY.
    pub(crate) remote: Waiters,
    /// Watchers of a thread's next run (thread streams) wait here, by thread id.
    pub(crate) threads: Waiters,
    pub(crate) wake: Notify,
    /// Runs may be waiting that this process had no room for (its claim loop stopped at
    /// `max_concurrent`): a run ending here wakes the claim loop.
    pub(crate) backlog: AtomicBool,
    /// Other processes' news arrive (Postgres LISTEN): a queued run that becomes claimable
    /// is announced, so a run ending here need not wake the claim loop to look.
    pub(crate) announced: AtomicBool,
    pub(crate) stop_claiming: CancellationToken,
    /// Cancelled once shutdown is over: every run of this process has ended or been handed
    /// back, and their events are in the hub and written; watchers then deliver what is
    /// there and end instead of waiting for more.
    pub(crate) closed: CancellationToken,
    /// The long-term store runs reach as `ctx.store()`, each through its user's view.
    pub(crate) long_term: std::sync::OnceLock<Arc<dyn palgraph::store::Store>>,
}

/// A new worker id: its connections carry it, so other processes can tell it is alive.
pub(crate) fn new_worker_id() -> String {
    format!("worker-{}", uuid::Uuid::new_v4().simple())
}

impl Runs {
    /// The machinery on a store, with a fresh worker id; call [`Runs::start`] to run the
    /// worker.
    pub fn new(store: Arc<dyn Store>, graphs: Graphs, settings: RunSettings) -> Arc<Self> {
        Self::with_worker_id(store, graphs, settings, new_worker_id())
    }

    /// The machinery under a given worker id (the one its database connections announce).
    pub fn with_worker_id(
        store: Arc<dyn Store>,
        graphs: Graphs,
        settings: RunSettings,
        worker_id: String,
    ) -> Arc<Self> {
        Arc::new(Runs {
            writer: EventWriter::start(store.clone(), settings.storage_retry, settings.event_flush),
            store,
            graphs,
            hub: Hub::default(),
            worker_id,
            settings,
            running: Mutex::new(HashMap::new()),
            ended: Notify::new(),
            remote: Waiters::default(),
            threads: Waiters::default(),
            wake: Notify::new(),
            backlog: AtomicBool::new(false),
            announced: AtomicBool::new(false),
            stop_claiming: CancellationToken::new(),
            closed: CancellationToken::new(),
            long_term: std::sync::OnceLock::new(),
        })
    }

    /// Gives every run `store` as its long-term store, seen through the view of the run's
    /// user ([`palgraph::store::Scoped`]); a second call is ignored.
    pub fn set_long_term_store(&self, store: Arc<dyn palgraph::store::Store>) {
        let _ = self.long_term.set(store);
    }

    /// `user`'s view of the long-term store, if the runs have one.
    pub(crate) fn long_term_for(&self, user: &str) -> Option<Arc<dyn palgraph::store::Store>> {
        let store = self.long_term.get()?;
        match palgraph::store::Scoped::new(store.clone(), user) {
            Ok(view) => Some(Arc::new(view)),
            Err(e) => {
                tracing::warn!(error = %e, "this user id cannot scope the long-term store; the run has none");
                None
            }
        }
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
        tokio::spawn(worker::watchdog_loop(self.clone()));
        tokio::spawn(retention::sweep_loop(self.clone()));
        let runs = self.clone();
        tokio::spawn(async move {
            if let Some(mut rx) = runs.store.notifications().await {
                runs.announced.store(true, Ordering::Relaxed);
                while let Some(n) = rx.recv().await {
                    runs.on_notification(n).await;
                }
            }
        });
    }

    /// A run's stored events after `after`, as a watcher that saw everything up to it gets
    /// them (coalesced deltas cut at `after`).
    pub(crate) async fn stored_events(
        &self,
        run_id: &str,
        after: u64,
    ) -> Result<Vec<palgraph::RunEvent>, crate::store::StoreError> {
        let rows = self.store.events_after(run_id, after as i64).await?;
        Ok(compact::replay(rows, after))
    }

    /// Deletes the events of runs that ended longer ago than the retention (what the
    /// background sweep does); returns how many rows went.
    ///
    /// # Errors
    /// A storage error.
    pub async fn expire_events(&self) -> Result<u64, crate::store::StoreError> {
        match self.settings.event_retention {
            Some(keep) => retention::sweep(self, keep).await,
            None => Ok(0),
        }
    }

    async fn on_notification(&self, n: crate::store::Notification) {
        use crate::store::Notification;
        match n {
            Notification::Events(run_id) => self.remote.wake(&run_id),
            Notification::Cancel(run_id) => {
                if self.running().contains_key(&run_id) {
                    if let Ok(Some(run)) = self.store.get_run_any(&run_id).await {
                        self.signal_cancel(&run);
                    }
                }
            }
            Notification::Runs(key) => {
                self.threads.wake(&key);
                self.wake.notify_one();
            }
            Notification::Started(thread_id) => self.threads.wake(&thread_id),
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

    /// Whether the process is shutting down (it takes no new runs).
    pub fn is_draining(&self) -> bool {
        self.stop_claiming.is_cancelled()
    }

    /// Creates a run; cancels what its strategy supersedes.
    ///
    /// # Errors
    /// [`StoreError::ShuttingDown`] once shutdown began, [`StoreError::Busy`] for a busy
    /// thread under `reject`, storage errors. A refused run is left to the caller in `new`
    /// (its claim set here), to be created again.
    pub async fn create(self: &Arc<Self>, new: &mut NewRun) -> Result<CreatedRun, StoreError> {
        if self.is_draining() {
            return Err(StoreError::ShuttingDown);
        }
        // Room here: the run is claimed with its creation (when its thread is free).
        new.claim = if self.running_count() < self.settings.max_concurrent {
            Some(crate::store::ClaimAtCreate {
                worker: self.worker_id.clone(),
                lease_ms: self.settings.lease.as_millis() as i64,
            })
        } else {
            self.backlog.store(true, Ordering::Relaxed);
            None
        };
        let sent = Instant::now();
        let created = self.store.create_run(new).await?;
        if !created.existing {
            for c in &created.cancelled {
                self.signal_cancel(c);
            }
            self.threads.wake(&created.run.thread_id);
            let run = &created.run;
            if run.status == RunState::Running
                && run.worker_id.as_deref() == Some(self.worker_id.as_str())
            {
                worker::start(self, run.clone(), sent);
            } else {
                self.claim_created(run).await;
            }
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
        let sent = Instant::now();
        match self
            .store
            .claim_run(&self.worker_id, lease, Some(&run.run_id))
            .await
        {
            Ok(Some(claimed)) => worker::start(self, claimed, sent),
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
            self.signal_cancel(r);
        }
        Ok(run)
    }

    /// Waits until run `run_id` has ended (its end is recorded, with its terminal event) or
    /// `deadline` passes; returns the run as it is then (`None`: it no longer exists, as
    /// after a rollback). Woken when a run of this process ends or another process announces
    /// the run's events, and looks again every 250 ms in case an announcement was missed.
    pub async fn wait_ended(
        &self,
        run_id: &str,
        deadline: tokio::time::Instant,
    ) -> Result<Option<Run>, StoreError> {
        let waiter = self.remote.guard(run_id);
        let result = loop {
            let ended = self.ended.notified();
            let announced = waiter.notified();
            tokio::pin!(ended, announced);
            ended.as_mut().enable();
            announced.as_mut().enable();
            let run = match self.store.get_run_any(run_id).await {
                Ok(r) => r,
                Err(e) => break Err(e),
            };
            let over = run.as_ref().is_none_or(|r| r.status.is_final());
            if over || tokio::time::Instant::now() >= deadline {
                break Ok(run);
            }
            tokio::select! {
                _ = ended => {}
                _ = announced => {}
                _ = tokio::time::sleep(Duration::from_millis(250)) => {}
                _ = tokio::time::sleep_until(deadline) => {}
            }
        };
        drop(waiter);
        result
    }

    /// Makes a cancel take effect: a run running here is told at once (other replicas hear
    /// of it by NOTIFY or at their next heartbeat); watchers of a run cancelled before it
    /// started read its stored terminal event.
    fn signal_cancel(&self, run: &Run) {
        if run.status == RunState::Cancelled {
            self.remote.wake(&run.run_id);
            self.threads.wake(&run.thread_id);
            return;
        }
        if let Some(r) = self.running().get(&run.run_id) {
            r.cancel
                .cancel(crate::store::cancel_reason(run.cancel_reason.as_deref()));
        }
    }

    /// A run's events after `after_seq`, live until its terminal event.
    pub fn watch(
        self: &Arc<Self>,
        run_id: &str,
        after_seq: u64,
    ) -> impl Stream<Item = RunEvent> + Send + 'static {
        watch::watch(self.clone(), run_id.to_string(), after_seq)
    }

    /// Stops claiming, lets running runs finish within `grace`, then gives the rest back to
    /// the queue for another process. Watchers of runs then end once they have delivered
    /// every event this process has: a run that finished gets its terminal event to its
    /// watchers, one handed back ends its watchers' streams (its clients reconnect to a
    /// replica that carries on).
    pub async fn shutdown(&self, grace: Duration) {
        self.stop_claiming.cancel();
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if self.running().is_empty() {
                break;
            }
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                break;
            }
        }
        let left: Vec<(String, i64, Option<tokio::task::AbortHandle>)> = self
            .running()
            .iter()
            .map(|(id, r)| {
                r.lose();
                (id.clone(), r.attempt, r.abort.clone())
            })
            .collect();
        for (id, attempt, abort) in left {
            if let Some(a) = abort {
                a.abort();
            }
            let claim = Claim {
                run_id: &id,
                worker: &self.worker_id,
                attempt,
            };
            if let Err(e) = self.store.release_run(claim).await {
                tracing::warn!(run_id = %id, error = %e, "could not release run at shutdown");
            }
            self.running().remove(&id);
            self.hub.remove(&id);
        }
        self.writer.flush().await;
        self.closed.cancel();
    }

    /// How many runs execute here now.
    pub fn running_count(&self) -> usize {
        self.running().len()
    }
}
