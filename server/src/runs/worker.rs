//! The worker: claims runs, executes them, keeps their leases alive, records how they
//! ended; and the watcher that streams a run's events.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::Stream;
use palgraph::dynamic::DynInput;
use palgraph::{
    Cancellation, Event, EventSink, ListOptions, Resume, RunConfig, RunError, RunEvent, RunStatus,
    StreamModes,
};
use serde_json::Value;
use tracing::Instrument;

use super::hub::RunChannel;
use super::spec::RunSpec;
use super::{reason, Running, Runs};
use crate::store::{CancelAction, EventRow, Run, RunState};

/// Sends a run's events to the hub and the writer, numbering them after any events an
/// earlier attempt of the run stored. The terminal event is held back until the run's end
/// is recorded, so a client that sees it can start the next run on the thread at once.
struct RunSink {
    run_id: String,
    thread_id: String,
    offset: u64,
    channel: Arc<RunChannel>,
    writer: super::writer::EventWriter,
    held: std::sync::Mutex<Option<RunEvent>>,
    last_seq: std::sync::atomic::AtomicU64,
}

impl RunSink {
    fn publish(&self, event: RunEvent) {
        self.last_seq
            .fetch_max(event.seq, std::sync::atomic::Ordering::AcqRel);
        self.writer.push(EventRow {
            run_id: self.run_id.clone(),
            seq: event.seq as i64,
            thread_id: self.thread_id.clone(),
            event: serde_json::to_value(&event.event).unwrap_or_default(),
        });
        self.channel.push(event);
    }

    fn take_terminal(&self) -> Option<RunEvent> {
        self.held.lock().ok().and_then(|mut h| h.take())
    }
}

impl EventSink for RunSink {
    fn send(&self, mut event: RunEvent) {
        event.seq += self.offset;
        if event.event.is_terminal() {
            if let Ok(mut h) = self.held.lock() {
                *h = Some(event);
            }
            return;
        }
        self.publish(event);
    }
}

/// Claims runs while there is room, then sleeps until woken or the poll interval passes.
pub(crate) async fn claim_loop(runs: Arc<Runs>) {
    loop {
        if runs.stop_claiming.is_cancelled() {
            return;
        }
        while runs.running_count() < runs.settings.max_concurrent
            && !runs.stop_claiming.is_cancelled()
        {
            match runs
                .store
                .claim_run(
                    &runs.worker_id,
                    runs.settings.lease.as_millis() as i64,
                    None,
                )
                .await
            {
                Ok(Some(run)) => start(&runs, run),
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(error = %e, "could not claim runs");
                    break;
                }
            }
        }
        tokio::select! {
            _ = runs.wake.notified() => {}
            _ = tokio::time::sleep(runs.settings.poll) => {}
            _ = runs.stop_claiming.cancelled() => return,
        }
    }
}

/// Extends the leases of the runs held here and applies cancels asked through the store.
pub(crate) async fn heartbeat_loop(runs: Arc<Runs>) {
    let every = runs.settings.lease / 3;
    loop {
        tokio::time::sleep(every).await;
        let ids: Vec<String> = runs.running().keys().cloned().collect();
        match runs
            .store
            .heartbeat(
                &runs.worker_id,
                &ids,
                runs.settings.lease.as_millis() as i64,
            )
            .await
        {
            Ok(cancelled) => {
                for r in cancelled {
                    if let Some(local) = runs.running().get(&r.run_id) {
                        local.cancel.cancel(reason(r.cancel_reason.as_deref()));
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "heartbeat failed"),
        }
    }
}

/// Executes a claimed run in the background, registered as running here.
pub(crate) fn start(runs: &Arc<Runs>, run: Run) {
    let cancel = Cancellation::new();
    if run.cancel_action.is_some() {
        cancel.cancel(reason(run.cancel_reason.as_deref()));
    }
    let span = tracing::info_span!("run", run_id = %run.run_id, thread_id = %run.thread_id, graph = %run.graph_id, attempt = run.attempt);
    runs.running().insert(
        run.run_id.clone(),
        Running {
            cancel: cancel.clone(),
            abort: None,
        },
    );
    let run_id = run.run_id.clone();
    let handle = tokio::spawn(execute(runs.clone(), run, cancel).instrument(span));
    if let Some(r) = runs.running().get_mut(&run_id) {
        r.abort = Some(handle.abort_handle());
    }
}

/// The input of this attempt: the spec's on the first one; on a later one (the worker that
/// held the run died) whatever continues from the run's last checkpoint without applying
/// its input twice.
async fn input_for(
    run: &Run,
    spec: &RunSpec,
    graph: &Arc<dyn palgraph::dynamic::DynGraph>,
) -> (DynInput, bool) {
    let mut resumed_before = false;
    if run.attempt > 1 {
        let filter =
            serde_json::Map::from_iter([("run_id".to_string(), Value::String(run.run_id.clone()))]);
        let progress = graph
            .checkpointer()
            .list(
                &run.thread_id,
                &ListOptions {
                    filter: Some(filter),
                    limit: Some(1),
                    ..Default::default()
                },
            )
            .await
            .map(|l| !l.is_empty())
            .unwrap_or(false);
        if progress {
            return (DynInput::Continue, true);
        }
        resumed_before = true;
    }
    let input = match &spec.command {
        Some(cmd) if cmd.resume.is_some() => {
            let value = cmd
                .resume
                .as_ref()
                .map(|r| r.value.clone())
                .unwrap_or(Value::Null);
            DynInput::Resume(resume_for(value, &run.thread_id, graph).await)
        }
        Some(cmd) if cmd.update.is_some() || !cmd.goto.is_empty() => DynInput::Command {
            update: cmd.update.clone(),
            goto: cmd.goto.clone(),
        },
        _ => match &spec.input {
            Some(v) if !v.is_null() => DynInput::Turn(v.clone()),
            _ => DynInput::Continue,
        },
    };
    (input, resumed_before)
}

/// An object whose keys are all pending interrupt ids answers them by id; anything else is
/// one value.
async fn resume_for(
    value: Value,
    thread_id: &str,
    graph: &Arc<dyn palgraph::dynamic::DynGraph>,
) -> Resume {
    if let Value::Object(map) = &value {
        if !map.is_empty() {
            if let Ok(Some(snap)) = graph.state(thread_id, None).await {
                if map
                    .keys()
                    .all(|k| snap.interrupts.iter().any(|i| &i.id == k))
                {
                    return Resume::ById(map.clone().into_iter().collect::<BTreeMap<_, _>>());
                }
            }
        }
    }
    Resume::Value(value)
}

fn modes(spec: &RunSpec) -> StreamModes {
    spec.stream_modes
        .iter()
        .copied()
        .collect::<StreamModes>()
        .with(palgraph::StreamMode::Debug)
}

async fn execute(runs: Arc<Runs>, run: Run, cancel: Cancellation) {
    let (outcome, sink) = run_graph(&runs, &run, cancel).await;
    let (status, error) = match &outcome {
        Ok(RunStatus::Completed) => (RunState::Success, None),
        Ok(RunStatus::Interrupted(_)) => (RunState::Interrupted, None),
        Ok(RunStatus::Cancelled(_)) => (RunState::Cancelled, None),
        Err(e) => (RunState::Error, Some(e.clone())),
    };
    runs.writer.flush().await;
    // A rollback deletes the run and what it wrote.
    let latest = runs.store.get_run_any(&run.run_id).await.ok().flatten();
    let rollback = latest.as_ref().and_then(|r| r.cancel_action) == Some(CancelAction::Rollback);
    if rollback {
        if let Some(entry) = runs.graphs.find(&run.graph_id) {
            if let Err(e) = entry
                .graph
                .checkpointer()
                .delete_for_runs(&run.thread_id, std::slice::from_ref(&run.run_id))
                .await
            {
                tracing::warn!(error = %e, "could not roll back the run's checkpoints");
            }
            entry.graph.forget(&run.thread_id);
        }
    }
    let recorded = match runs
        .store
        .finish_run(&run.run_id, &runs.worker_id, status, error.as_deref())
        .await
    {
        Ok(true) => true,
        Ok(false) => {
            tracing::warn!("lost the run's lease before it finished; another worker owns it");
            false
        }
        Err(e) => {
            tracing::error!(error = %e, "could not record the run's end");
            false
        }
    };
    if rollback {
        // Gone before anyone hears the run ended.
        let _ = runs.store.delete_run(&run.run_id).await;
    }
    if let (Some(sink), true) = (sink, recorded) {
        // The terminal event, now that the run's end is recorded (one is made up when the
        // run failed before the graph could say so).
        let terminal = sink.take_terminal().unwrap_or_else(|| {
            let event = match &outcome {
                Ok(RunStatus::Completed) => Event::Completed {
                    checkpoint_id: None,
                },
                Ok(RunStatus::Interrupted(i)) => Event::Interrupted {
                    interrupts: i.clone(),
                },
                Ok(RunStatus::Cancelled(r)) => Event::Cancelled { reason: r.clone() },
                Err(e) => Event::Failed {
                    node: None,
                    error: e.clone(),
                },
            };
            RunEvent {
                seq: sink.last_seq.load(std::sync::atomic::Ordering::Acquire) + 1,
                event,
            }
        });
        if rollback {
            sink.channel.push(terminal);
        } else {
            sink.publish(terminal);
            runs.writer.flush().await;
        }
    }
    runs.hub.remove(&run.run_id);
    runs.running().remove(&run.run_id);
    runs.wake.notify_one();
}

/// Runs the graph; the error is the message of a failure. Returns the sink holding the
/// run's terminal event (none when an earlier attempt had already ended the run).
async fn run_graph(
    runs: &Arc<Runs>,
    run: &Run,
    cancel: Cancellation,
) -> (Result<RunStatus, String>, Option<Arc<RunSink>>) {
    let channel = runs.hub.open(&run.run_id);
    let earlier = match runs.store.events_after(&run.run_id, 0).await {
        Ok(e) => e,
        Err(e) => return (Err(e.to_string()), None),
    };
    // An attempt that already ended the run (terminal event stored) is not run again.
    if let Some(last) = earlier.last() {
        if let Ok(ev) = serde_json::from_value::<Event>(last.event.clone()) {
            let done = match ev {
                Event::Completed { .. } => Some(Ok(RunStatus::Completed)),
                Event::Interrupted { interrupts } => Some(Ok(RunStatus::Interrupted(interrupts))),
                Event::Cancelled { reason } => Some(Ok(RunStatus::Cancelled(reason))),
                Event::Failed { error, .. } => Some(Err(error)),
                _ => None,
            };
            if let Some(d) = done {
                return (d, None);
            }
        }
    }
    // Earlier attempts' events keep their numbers (this attempt's follow them) and are
    // replayed to watchers from the hub.
    let offset = earlier.last().map(|e| e.seq as u64).unwrap_or(0);
    if channel.after(0).0.is_empty() {
        for e in &earlier {
            if let Ok(event) = serde_json::from_value::<Event>(e.event.clone()) {
                channel.push(RunEvent {
                    seq: e.seq as u64,
                    event,
                });
            }
        }
    }
    let sink = Arc::new(RunSink {
        run_id: run.run_id.clone(),
        thread_id: run.thread_id.clone(),
        offset,
        channel,
        writer: runs.writer.clone(),
        held: std::sync::Mutex::new(None),
        last_seq: std::sync::atomic::AtomicU64::new(offset),
    });
    let Some(entry) = runs.graphs.find(&run.graph_id).cloned() else {
        return (Err(format!("unknown graph `{}`", run.graph_id)), Some(sink));
    };
    let spec: RunSpec = match serde_json::from_value(run.kwargs.clone()) {
        Ok(s) => s,
        Err(e) => return (Err(format!("bad run spec: {e}")), Some(sink)),
    };
    let dyn_sink: Arc<dyn EventSink> = sink.clone();
    let (input, recovering) = input_for(run, &spec, &entry.graph).await;
    let mut cfg = RunConfig::new(&run.thread_id)
        .run_id(&run.run_id)
        .stream_modes(modes(&spec))
        .cancel(cancel);
    cfg.context = Arc::new(spec.context.clone());
    cfg.recursion_limit = spec.recursion_limit;
    if !recovering {
        cfg.checkpoint_id = spec.checkpoint_id.clone();
    }
    if let Value::Object(meta) = &run.metadata {
        cfg.metadata = meta.clone();
    }
    let is_resume = matches!(input, DynInput::Resume(_));
    let result = entry.graph.run(cfg.clone(), input, dyn_sink.clone()).await;
    let result = match result {
        // A resume recorded by a worker that died before its first checkpoint is continued.
        Err(RunError::NothingToResume { .. }) if is_resume && run.attempt > 1 => {
            let _ = sink.take_terminal();
            entry.graph.run(cfg, DynInput::Continue, dyn_sink).await
        }
        other => other,
    };
    (
        result.map(|o| o.status).map_err(|e| e.to_string()),
        Some(sink),
    )
}

/// Sets a thread's status from its runs and its state: busy while a run is active,
/// otherwise interrupted / error / idle as its last run ended.
pub(crate) async fn settle_thread(runs: &Runs, thread_id: &str, last: Option<RunState>) {
    let active = runs
        .store
        .active_runs(thread_id)
        .await
        .map(|a| !a.is_empty())
        .unwrap_or(false);
    let status = if active {
        "busy"
    } else {
        match last {
            Some(RunState::Error) => "error",
            Some(RunState::Interrupted) => "interrupted",
            _ => "idle",
        }
    };
    if let Err(e) = runs.store.set_thread_status(thread_id, status).await {
        tracing::warn!(error = %e, "could not update the thread's status");
    }
}

/// Streams a run's events after `after`, ending after its terminal event.
pub(crate) fn watch(
    runs: Arc<Runs>,
    run_id: String,
    after: u64,
) -> impl Stream<Item = RunEvent> + Send + 'static {
    async_stream(move |tx| async move {
        let mut last = after;
        let waiter = runs.remote.waiter(&run_id);
        loop {
            // Executed in this process: read the hub's log and wait on it.
            if let Some(ch) = runs.hub.get(&run_id) {
                if follow_channel(&runs, &run_id, &ch, &tx, &mut last).await == Follow::Done {
                    break;
                }
            }
            // Elsewhere (another replica), not started yet, or finished: read the table,
            // waking on the other process's NOTIFY (and polling now and then in case one is
            // lost), until the terminal event or until the run starts here.
            if follow_stored(&runs, &run_id, &waiter, &tx, &mut last).await == Follow::Done {
                break;
            }
        }
        drop(waiter);
        runs.remote.release(&run_id);
    })
}

/// How long a follower waits for the terminal event of a run recorded as finished.
const TERMINAL_GRACE: Duration = Duration::from_secs(5);

/// How following a run's events stopped.
#[derive(PartialEq, Eq)]
enum Follow {
    /// The terminal event was sent, or the client left.
    Done,
    /// Go on from the other source.
    Switch,
}

async fn send(tx: &tokio::sync::mpsc::Sender<RunEvent>, e: RunEvent, last: &mut u64) -> Follow {
    *last = e.seq;
    let terminal = e.event.is_terminal();
    if tx.send(e).await.is_err() || terminal {
        Follow::Done
    } else {
        Follow::Switch
    }
}

async fn follow_channel(
    runs: &Arc<Runs>,
    run_id: &str,
    ch: &Arc<RunChannel>,
    tx: &tokio::sync::mpsc::Sender<RunEvent>,
    last: &mut u64,
) -> Follow {
    let mut rx = ch.subscribe();
    // Events stored (by an earlier attempt or before this process took the run) that the
    // channel does not hold.
    let (first, _) = ch.after(*last);
    if first.first().is_some_and(|e| e.seq > *last + 1) {
        if let Ok(rows) = runs.store.events_after(run_id, *last as i64).await {
            for r in rows {
                if first.first().is_some_and(|e| r.seq as u64 >= e.seq) {
                    break;
                }
                if let Ok(event) = serde_json::from_value(r.event) {
                    let ev = RunEvent {
                        seq: r.seq as u64,
                        event,
                    };
                    if send(tx, ev, last).await == Follow::Done {
                        return Follow::Done;
                    }
                }
            }
        }
    }
    loop {
        let (events, done) = ch.after(*last);
        for e in events {
            if send(tx, e, last).await == Follow::Done {
                return Follow::Done;
            }
        }
        if done || rx.changed().await.is_err() {
            return Follow::Switch;
        }
    }
}

async fn follow_stored(
    runs: &Arc<Runs>,
    run_id: &str,
    waiter: &tokio::sync::Notify,
    tx: &tokio::sync::mpsc::Sender<RunEvent>,
    last: &mut u64,
) -> Follow {
    let mut idle = Duration::from_millis(10);
    // When the run was first seen finished with its terminal event not stored yet.
    let mut finished_at: Option<std::time::Instant> = None;
    loop {
        let notified = waiter.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let rows = match runs.store.events_after(run_id, *last as i64).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "could not read run events");
                return Follow::Done;
            }
        };
        let got = !rows.is_empty();
        for r in rows {
            let Ok(event) = serde_json::from_value::<Event>(r.event) else {
                continue;
            };
            if send(
                tx,
                RunEvent {
                    seq: r.seq as u64,
                    event,
                },
                last,
            )
            .await
                == Follow::Done
            {
                return Follow::Done;
            }
        }
        if got {
            idle = Duration::from_millis(10);
            continue;
        }
        match runs.store.get_run_any(run_id).await {
            Ok(Some(r)) if r.status.is_final() => {
                // The worker records the run's end first and stores the terminal event
                // right after (so whoever sees it may start the next run at once): wait
                // for it. Only a worker that died in between loses it; then nothing more
                // comes.
                let since = *finished_at.get_or_insert_with(std::time::Instant::now);
                let left = TERMINAL_GRACE.saturating_sub(since.elapsed());
                if left.is_zero() {
                    tracing::warn!(run_id, "the run ended without a stored terminal event");
                    return Follow::Done;
                }
                let _ = tokio::time::timeout(left.min(Duration::from_millis(50)), notified).await;
                continue;
            }
            Ok(None) => return Follow::Done,
            _ => {}
        }
        if runs.hub.get(run_id).is_some() {
            // The run started in this process: follow it live.
            return Follow::Switch;
        }
        let _ = tokio::time::timeout(idle, notified).await;
        idle = (idle * 2).min(Duration::from_millis(250));
    }
}

/// A stream fed by an async producer through a small channel.
fn async_stream<F, Fut>(produce: F) -> impl Stream<Item = RunEvent> + Send + 'static
where
    F: FnOnce(tokio::sync::mpsc::Sender<RunEvent>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(produce(tx));
    tokio_stream_from(rx)
}

fn tokio_stream_from(
    mut rx: tokio::sync::mpsc::Receiver<RunEvent>,
) -> impl Stream<Item = RunEvent> + Send + 'static {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}
