//! Executing one claim of a run, from the fence to the recorded end.
//!
//! 1. **Fence.** The thread is handed to this claim ([`palgraph::Checkpointer::advance_fence`])
//!    by the run's first checkpoint, in the same statement ([`FenceClaim`]), or before the
//!    run's first other write or step, or before its end is recorded when it wrote nothing:
//!    from then on every checkpoint and pending write of an earlier claim is refused. A
//!    writer of an earlier claim that slipped in before the first checkpoint makes it a
//!    conflict: the thread is handed over and the run reads it again.
//! 2. **Run.** The graph runs from the run's input, or, when an earlier claim or try already
//!    wrote a checkpoint for this run, continues from the thread's last checkpoint.
//! 3. **Storage outages are ridden out.** A transient storage error (connection lost, the
//!    database restarting, a deadlock) or a node's unavailable dependency does not fail the
//!    run: the claim backs off and runs on from the last checkpoint, for as long as
//!    [`RunSettings::storage_retry`](super::RunSettings::storage_retry) allows and the lease
//!    holds. A node that was cut off runs again (its durable steps are not repeated), and
//!    its streamed message starts over with a reset.
//! 4. **End.** The run's status, its terminal event (in one row with the run's events not
//!    stored yet) and its thread's status are recorded in one transaction under the claim; a failure is first recorded on the thread, so the
//!    next turn starts from the state before the failed one. A claim that was lost (the
//!    lease passed to another worker, or the fence was superseded) writes nothing more.

use std::sync::Arc;
use std::time::{Duration, Instant};

use palgraph::checkpoint::{CheckpointError, Fence, FenceClaim};
use palgraph::dynamic::{DynGraph, DynInput};
use palgraph::{
    Cancellation, Event, EventSink, ListOptions, RunConfig, RunError, RunEvent, RunStatus,
    StreamModes,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::failed_turn;
use super::sink::RunSink;
use super::spec::RunSpec;
use super::Runs;
use crate::graphs::GraphEntry;
use crate::retry::Transient;
use crate::store::{CancelAction, Claim, EventRow, Finish, Run, RunState};

/// The keys of the runs' durations, built once per graph and status.
static RUN_SECONDS: palgraph::metric::KeyCache =
    palgraph::metric::KeyCache::new(crate::metric::RUN_SECONDS);

/// The fencing epoch of a claim: later runs of a thread and later claims of a run always
/// have higher epochs.
fn epoch(run: &Run) -> i64 {
    (run.thread_seq << 20) | run.attempt.clamp(0, (1 << 20) - 1)
}

/// Cancels `done` when dropped (the claim's task ended, or was aborted).
struct Done(CancellationToken);

impl Drop for Done {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// One claim of a run, executing here.
struct Attempt {
    runs: Arc<Runs>,
    run: Run,
    cancel: Cancellation,
    lost: CancellationToken,
    /// Cancelled when the run's end starts being recorded (the heartbeat's cue).
    ending: CancellationToken,
    /// The thread's fence at this claim's epoch, advanced by the run's first write.
    claim: FenceClaim,
    sink: Arc<RunSink>,
    /// The run's request, read once from its row's `kwargs` (an error: why it could not be).
    spec: Result<RunSpec, String>,
    /// When this claim started executing (the run's duration in the metrics).
    started: Instant,
}

impl Attempt {
    fn claim(&self) -> Claim<'_> {
        Claim {
            run_id: &self.run.run_id,
            worker: &self.runs.worker_id,
            attempt: self.run.attempt,
        }
    }

    fn is_lost(&self) -> bool {
        self.lost.is_cancelled()
    }

    /// Waits `wait`, or less if the claim is lost meanwhile; false when it was.
    async fn pause(&self, wait: Duration) -> bool {
        tokio::select! {
            _ = tokio::time::sleep(wait) => !self.is_lost(),
            _ = self.lost.cancelled() => false,
        }
    }

    /// Runs a storage operation until it succeeds, fails for good, or the retry budget is
    /// spent (its last result), or the claim is lost (`None`).
    async fn persist<T, E, F, Fut>(&self, what: &str, op: F) -> Option<Result<T, E>>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, E>>,
        E: std::fmt::Display + Transient,
    {
        let result = crate::retry::transient(
            what,
            self.runs.settings.storage_retry,
            || !self.is_lost(),
            op,
        )
        .await;
        (!self.is_lost()).then_some(result)
    }
}

/// Executes a claim (see the module docs).
pub(crate) async fn execute(
    runs: Arc<Runs>,
    run: Run,
    cancel: Cancellation,
    lost: CancellationToken,
    done: CancellationToken,
    ending: CancellationToken,
) {
    let _done = Done(done);
    let channel = runs.hub.open(&run.run_id);
    let spec = RunSpec::from_kwargs(&run.kwargs).map_err(|e| e.to_string());
    let wanted = spec.as_ref().map(modes).unwrap_or(StreamModes::ALL);
    let subgraphs = spec
        .as_ref()
        .ok()
        .and_then(|s| s.api.get("stream_subgraphs"))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    let sink = Arc::new(
        RunSink::new(
            &run.run_id,
            &run.thread_id,
            run.attempt,
            channel,
            runs.writer.clone(),
            wanted,
        )
        .with_subgraphs(subgraphs),
    );
    let attempt = Attempt {
        claim: FenceClaim::new(Fence::new(&run.thread_id, epoch(&run))),
        runs: runs.clone(),
        run,
        cancel,
        lost,
        ending,
        sink,
        spec,
        started: Instant::now(),
    };
    match attempt.execute().await {
        Some(terminal) => attempt.sink.channel.push(terminal),
        None => attempt.sink.stop(),
    }
    let id = &attempt.run.run_id;
    {
        let mut running = runs.running();
        if running
            .get(id)
            .is_some_and(|r| r.attempt == attempt.run.attempt)
        {
            running.remove(id);
            runs.hub.remove(id);
        }
    }
    runs.ended.notify_waiters();
    // Room was made: the claim loop looks for runs that waited for it. A run queued behind
    // this one on its thread is announced by the end's own write where news are heard.
    if runs.backlog.load(std::sync::atomic::Ordering::Relaxed)
        || !runs.announced.load(std::sync::atomic::Ordering::Relaxed)
    {
        runs.wake.notify_one();
    }
}

impl Attempt {
    /// Runs the claim; the terminal event once the end is recorded, `None` when the claim
    /// was lost (nothing was recorded).
    async fn execute(&self) -> Option<RunEvent> {
        let Some(entry) = self.runs.graphs.find(&self.run.graph_id).cloned() else {
            return self
                .fail(None, None, format!("unknown graph `{}`", self.run.graph_id))
                .await;
        };
        if self.run.attempt > self.runs.settings.max_attempts {
            let msg = format!(
                "gave up after {} attempts (each was cut off before the run ended)",
                self.runs.settings.max_attempts
            );
            return self.fail(Some(&entry), None, msg).await;
        }
        let spec = match &self.spec {
            Ok(s) => s,
            Err(e) => {
                return self
                    .fail(Some(&entry), None, format!("bad run spec: {e}"))
                    .await
            }
        };
        let started = Instant::now();
        let mut retries = 0u32;
        let outcome = loop {
            let result = self.run_graph(&entry, spec, retries).await;
            if self.is_lost() {
                return None;
            }
            match result {
                Err(RunError::Checkpoint(CheckpointError::Conflict { .. }))
                    if !self.claim.is_held() =>
                {
                    // A writer of an earlier claim slipped in before this claim's first
                    // checkpoint: the thread is handed over, then read again.
                    if let Err(e) = self.hold_thread(&entry).await? {
                        break Err(e.into());
                    }
                    retries += 1;
                    self.sink.begin_retry();
                }
                Err(e) if e.is_fenced() => {
                    tracing::warn!(error = %e, "another worker took the thread over; stopping");
                    return None;
                }
                Err(e)
                    if retryable(&e)
                        && started.elapsed() < self.runs.settings.storage_retry
                        && !self.cancel.is_cancelled() =>
                {
                    retries += 1;
                    tracing::warn!(error = %e, retry = retries, "storage unavailable; the run continues from its last checkpoint");
                    if !self
                        .pause(crate::retry::storage_policy().backoff(retries))
                        .await
                    {
                        return None;
                    }
                    self.sink.begin_retry();
                }
                other => break other,
            }
        };
        match outcome {
            Ok(status) => match self.hold_thread(&entry).await? {
                Ok(()) => self.succeed(&entry, status).await,
                Err(e) => self.fail(Some(&entry), None, e.to_string()).await,
            },
            Err(e) => {
                let node = match &e {
                    RunError::Node { node, .. } | RunError::Unavailable { node, .. } => {
                        Some(node.clone())
                    }
                    RunError::Panic { node, .. } => node.clone(),
                    _ => None,
                };
                self.fail(Some(&entry), node, e.to_string()).await
            }
        }
    }

    /// One try at running the graph.
    async fn run_graph(
        &self,
        entry: &GraphEntry,
        spec: &RunSpec,
        retries: u32,
    ) -> Result<RunStatus, RunError> {
        let again = self.run.attempt > 1 || retries > 0;
        let input = self.input(spec, &entry.graph, again).await?;
        let mut cfg = RunConfig::new(&self.run.thread_id)
            .run_id(&self.run.run_id)
            .stream_modes(modes(spec))
            .cancel(self.cancel.clone())
            .claiming(self.claim.clone());
        cfg.context = Arc::new(spec.context.clone());
        cfg.recursion_limit = spec.recursion_limit;
        let places = self.runs.settings.max_concurrency;
        cfg.max_concurrency = Some(spec.max_concurrency.map_or(places, |n| n.min(places)));
        cfg.max_sends_per_step = Some(self.runs.settings.max_sends_per_step);
        cfg.interrupt_before = spec.interrupt_before.clone();
        cfg.interrupt_after = spec.interrupt_after.clone();
        cfg.store = self.runs.long_term_for(&self.run.owner);
        if let Some(durability) = spec.durability {
            cfg.durability = durability;
        }
        if !matches!(input, DynInput::Continue) || !again {
            cfg.checkpoint_id = spec.checkpoint_id.clone();
        }
        if let Value::Object(meta) = &self.run.metadata {
            cfg.metadata = meta.clone();
        }
        let sink: Arc<dyn EventSink> = self.sink.clone();
        let is_resume = matches!(input, DynInput::Resume(_));
        match entry
            .graph
            .run_to_status(cfg.clone(), input, sink.clone())
            .await
        {
            // A resume recorded by a try that stopped before its first checkpoint.
            Err(RunError::NothingToResume { .. }) if is_resume && again => {
                let _ = self.sink.take_terminal();
                cfg.checkpoint_id = None;
                entry
                    .graph
                    .run_to_status(cfg, DynInput::Continue, sink)
                    .await
            }
            other => other,
        }
    }

    /// The input of a try: the spec's (checked and normalized at admission), unless an
    /// earlier claim or try of this run already wrote a checkpoint, in which case the run
    /// continues from the thread's last one (applying the input twice would repeat it).
    async fn input(
        &self,
        spec: &RunSpec,
        graph: &Arc<dyn DynGraph>,
        again: bool,
    ) -> Result<DynInput, RunError> {
        if again {
            let filter = serde_json::Map::from_iter([(
                "run_id".to_string(),
                Value::String(self.run.run_id.clone()),
            )]);
            let progress = graph
                .checkpointer()
                .list(
                    &self.run.thread_id,
                    &ListOptions {
                        filter: Some(filter),
                        limit: Some(1),
                        ..Default::default()
                    },
                )
                .await?;
            if !progress.is_empty() {
                return Ok(DynInput::Continue);
            }
        }
        Ok(spec.input.clone())
    }

    /// Hands the thread to this claim unless the run's first write did: `None` when the
    /// claim was lost or a newer claim holds the thread (nothing more may be recorded).
    async fn hold_thread(&self, entry: &GraphEntry) -> Option<Result<(), CheckpointError>> {
        if self.claim.is_held() {
            return Some(Ok(()));
        }
        let cp = entry.graph.checkpointer();
        match self
            .persist("handing the thread to this worker", || {
                self.claim.hold(&*cp)
            })
            .await?
        {
            Err(CheckpointError::Fenced { epoch, current, .. }) => {
                tracing::warn!(epoch, newer = current, "a newer claim holds the thread");
                None
            }
            other => Some(other),
        }
    }

    /// Records a run that ended (completed, interrupted, cancelled).
    async fn succeed(&self, entry: &GraphEntry, status: RunStatus) -> Option<RunEvent> {
        let (state, mut delete) = match &status {
            RunStatus::Completed => (RunState::Success, false),
            RunStatus::Interrupted(_) => (RunState::Interrupted, false),
            RunStatus::Cancelled(_) => (RunState::Cancelled, self.rolls_back().await?),
        };
        if delete {
            // A rollback deletes the run and everything it wrote.
            let cp = entry.graph.checkpointer();
            let ids = [self.run.run_id.clone()];
            match self
                .persist("rolling the run back", || {
                    cp.delete_for_runs(&self.run.thread_id, &ids)
                })
                .await?
            {
                Ok(_) => entry.graph.forget(&self.run.thread_id),
                Err(e) => {
                    tracing::warn!(error = %e, "could not roll back the run's checkpoints");
                    delete = false;
                }
            }
        }
        // The engine's own terminal event (it sends exactly one for every run it ends).
        let Some(terminal) = self.sink.take_terminal() else {
            return self
                .fail(
                    Some(entry),
                    None,
                    "the run ended without its terminal event".into(),
                )
                .await;
        };
        self.finish(state, None, terminal, delete).await
    }

    /// Whether the run was cancelled with `rollback` (read from the store).
    async fn rolls_back(&self) -> Option<bool> {
        let run = match self
            .persist("reading the run", || {
                self.runs.store.get_run_any(&self.run.run_id)
            })
            .await?
        {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the run's cancel action");
                None
            }
        };
        Some(run.and_then(|r| r.cancel_action) == Some(CancelAction::Rollback))
    }

    /// Records a failed run: first on its thread (the next turn starts before it), then
    /// the run's end.
    async fn fail(
        &self,
        entry: Option<&GraphEntry>,
        node: Option<String>,
        message: String,
    ) -> Option<RunEvent> {
        if let Some(entry) = entry {
            if let Err(e) = self.hold_thread(entry).await? {
                tracing::warn!(error = %e, "could not hand the thread to this worker");
            }
            let recorded = self
                .persist("recording the failure on the thread", || {
                    entry.graph.record_failure(
                        &self.run.thread_id,
                        &self.run.run_id,
                        node.as_deref(),
                        &message,
                        Some(self.claim.fence()),
                    )
                })
                .await?;
            if let Err(e) = recorded {
                if e.is_fenced() {
                    return None;
                }
                tracing::warn!(error = %e, "could not record the failure on the thread");
            }
            if let Some(streamed) = self.sink.last_streamed() {
                let client_turn_id = self.spec.as_ref().ok().and_then(|s| {
                    s.context
                        .get("client_turn_id")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                });
                let settled = self
                    .persist("keeping the failed turn's partial answer", || {
                        failed_turn::settle(
                            entry,
                            &self.run,
                            self.claim.fence(),
                            &streamed,
                            client_turn_id.as_deref(),
                            &message,
                        )
                    })
                    .await?;
                match settled {
                    Err(e) if e.is_fenced() => return None,
                    Err(e) => {
                        tracing::warn!(error = %e, "could not keep the failed turn's partial answer")
                    }
                    Ok(_) => {}
                }
            }
        }
        // The terminal event says what the run's status says, whatever the engine sent.
        let _ = self.sink.take_terminal();
        let terminal = self.sink.terminal(Event::Failed {
            node,
            error: message.clone(),
        });
        self.finish(RunState::Error, Some(message), terminal, false)
            .await
    }

    /// Records the run's end with its terminal event, once every earlier event is stored.
    async fn finish(
        &self,
        status: RunState,
        error: Option<String>,
        terminal: RunEvent,
        delete: bool,
    ) -> Option<RunEvent> {
        let span = tracing::Span::current();
        span.record("run.status", status.as_str());
        if status == RunState::Error {
            span.record("otel.status_code", "error");
        }
        // The events not stored yet are stored with the end, in the terminal event's row.
        let pending = self
            .runs
            .writer
            .take(&self.run.run_id, self.run.attempt)
            .await;
        let row = EventRow {
            run_id: self.run.run_id.clone(),
            seq: terminal.seq as i64,
            thread_id: self.run.thread_id.clone(),
            event: serde_json::to_value(&terminal.event).unwrap_or_default(),
            attempt: self.run.attempt,
        };
        let finish = Finish {
            status,
            error,
            terminal: (row.seq, super::compact::terminal_row(pending.clone(), row)),
            delete,
        };
        // From here the store may say the run is no longer running: the heartbeat must not
        // take that for a lost lease.
        self.ending.cancel();
        match self
            .persist("recording the run's end", || {
                self.runs.store.finish_run(self.claim(), &finish)
            })
            .await?
        {
            Ok(true) => {
                palgraph::metric::histogram(
                    &RUN_SECONDS.key(&[("graph", &self.run.graph_id), ("status", status.as_str())]),
                    self.started.elapsed().as_secs_f64(),
                );
                Some(terminal)
            }
            Ok(false) => {
                tracing::warn!("lost the run's lease before it finished; another worker owns it");
                None
            }
            Err(e) => {
                tracing::error!(error = %e, "could not record the run's end; its lease will run out and another claim will finish it");
                // Its events are stored as they would have been without the end (while the
                // claim still holds the run).
                for row in pending {
                    self.runs.writer.push(row);
                }
                None
            }
        }
    }
}

/// Errors after which running on from the last checkpoint may succeed: storage or a
/// dependency unavailable, or a conflict with a writer that slipped in before this claim's
/// fence (the next try reads its checkpoint).
fn retryable(e: &RunError) -> bool {
    e.is_transient() || matches!(e, RunError::Checkpoint(CheckpointError::Conflict { .. }))
}

/// The engine events a run produces (and so stores): what the chat contract streams (status
/// lines, custom events, tokens), and for a LangGraph API run also the stream modes its
/// client asked for; tokens are kept for every run because the SDKs join a run with other
/// modes than it was created with (`joinStream(..., {streamMode: "messages-tuple"})`).
/// Never the whole state, the node updates or the checkpoints unless a client asked.
fn modes(spec: &RunSpec) -> StreamModes {
    use palgraph::StreamMode;
    let chat = StreamModes::NONE
        .with(StreamMode::Tasks)
        .with(StreamMode::Custom)
        .with(StreamMode::Messages);
    spec.stream_modes
        .iter()
        .copied()
        .fold(chat, StreamModes::with)
}
