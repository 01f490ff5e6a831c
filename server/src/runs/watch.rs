//! Watching a run: its events from any position, live until its terminal event, whether it
//! runs in this process (read from the hub), elsewhere, or not yet (read from the events
//! table, woken by other processes' NOTIFY). Once this process's shutdown is over
//! ([`Runs::closed`]) a watcher delivers what the hub and the table hold and ends: a run
//! that finished here ends with its terminal event, one running elsewhere or handed back
//! ends without it (its client reconnects to a replica that carries on).

use std::sync::Arc;
use std::time::Duration;

use futures_util::Stream;
use palgraph::{CancelReason, Event, RunEvent};
use tokio::sync::mpsc::Sender;

use super::hub::RunChannel;
use super::Runs;

/// Streams a run's events after `after`, ending after its terminal event.
pub(crate) fn watch(
    runs: Arc<Runs>,
    run_id: String,
    after: u64,
) -> impl Stream<Item = RunEvent> + Send + 'static {
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(async move {
        let mut last = after;
        let waiter = runs.remote.guard(&run_id);
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
    });
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// How following a run's events stopped.
#[derive(PartialEq, Eq)]
enum Follow {
    /// The terminal event was sent, or the client left.
    Done,
    /// Go on from the other source.
    Switch,
}

async fn send(tx: &Sender<RunEvent>, e: RunEvent, last: &mut u64) -> Follow {
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
    tx: &Sender<RunEvent>,
    last: &mut u64,
) -> Follow {
    let mut rx = ch.subscribe();
    loop {
        let (events, done) = ch.after(*last);
        // Events before the channel's first that it does not hold: stored by an earlier
        // claim, here or in another process (each claim numbers its events from a new
        // base). Looked for whenever the channel's next event is not the one after the
        // last sent, not only when following began: a watcher can switch to a channel
        // that holds nothing yet, the claim's first event arriving after it.
        if let Some(next) = events.first().map(|e| e.seq) {
            if next > *last + 1 {
                if let Ok(stored) = runs.stored_events(run_id, *last).await {
                    for ev in stored.into_iter().take_while(|ev| ev.seq < next) {
                        if send(tx, ev, last).await == Follow::Done {
                            return Follow::Done;
                        }
                    }
                }
            }
        }
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
    tx: &Sender<RunEvent>,
    last: &mut u64,
) -> Follow {
    let mut idle = Duration::from_millis(10);
    // The run's end was seen: one more read finds its terminal event (stored with it).
    let mut ended: Option<crate::store::Run> = None;
    // Why it was cancelled, if it was: said when it disappears (a rollback deletes it).
    let mut cancel_reason: Option<String> = None;
    loop {
        if tx.is_closed() {
            return Follow::Done;
        }
        if runs.hub.get(run_id).is_some() {
            // The run started in this process (its start wakes the wait below): follow it
            // live before reading anything, so every watcher of the run sees its first
            // events as they happen (the channel reads what it does not hold from the
            // table). A channel is in the hub only until its run ends here.
            return Follow::Switch;
        }
        // Shutdown is over: what the table holds now is all this process will deliver (the
        // event writer was flushed before), so one more read and the watcher ends.
        let closing = runs.closed.is_cancelled();
        let notified = waiter.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let events = match runs.stored_events(run_id, *last).await {
            Ok(r) => r,
            Err(_) if closing => return Follow::Done,
            Err(e) => {
                // The database is away: keep the client, look again soon.
                tracing::debug!(error = %e, "could not read run events; retrying");
                wait(runs, notified, Duration::from_millis(500)).await;
                continue;
            }
        };
        let got = !events.is_empty();
        for ev in events {
            if send(tx, ev, last).await == Follow::Done {
                return Follow::Done;
            }
        }
        if got {
            idle = Duration::from_millis(10);
            continue;
        }
        if closing {
            return Follow::Done;
        }
        if let Some(run) = ended.take() {
            // Its events expired (or were never stored): its row says how it ended.
            if let Some(ev) = super::retention::terminal_of(runs, &run, *last + 1).await {
                let _ = send(tx, ev, last).await;
            } else {
                tracing::warn!(run_id, "the run ended without a stored terminal event");
            }
            return Follow::Done;
        }
        match runs.store.get_run_any(run_id).await {
            Ok(Some(r)) if r.status.is_final() => {
                ended = Some(r);
                continue;
            }
            Ok(Some(r)) => cancel_reason = r.cancel_reason.or(cancel_reason),
            Ok(None) => {
                // Rolled back: deleted with its events (callers only watch runs they saw
                // exist). It ended cancelled.
                let reason = match cancel_reason.as_deref() {
                    Some(r) => crate::store::cancel_reason(Some(r)),
                    None => CancelReason::Superseded,
                };
                let ev = RunEvent {
                    seq: *last + 1,
                    event: Event::Cancelled { reason },
                };
                let _ = send(tx, ev, last).await;
                return Follow::Done;
            }
            Err(e) => tracing::debug!(error = %e, "could not read the run; retrying"),
        }
        wait(runs, notified, idle).await;
        idle = (idle * 2).min(Duration::from_millis(250));
    }
}

/// Waits for `notified`, at most `idle`, and no longer than until shutdown is over.
async fn wait(runs: &Runs, notified: impl std::future::Future<Output = ()>, idle: Duration) {
    tokio::select! {
        _ = tokio::time::timeout(idle, notified) => {}
        _ = runs.closed.cancelled() => {}
    }
}
