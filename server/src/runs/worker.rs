//! The worker: claims runs while it has room, keeps their leases alive, and gives a run up
//! the moment its lease may have passed to someone else.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use palgraph::Cancellation;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::{Running, Runs};
use crate::store::cancel_reason;
use crate::store::Run;

/// How often the claim loop looks for runs whose process is gone.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// Claims runs while there is room, then sleeps until woken or the poll interval passes;
/// about once a second, ends the leases of runs whose process is gone.
pub(crate) async fn claim_loop(runs: Arc<Runs>) {
    let mut gone: HashMap<String, Instant> = HashMap::new();
    let mut last_sweep = Instant::now();
    loop {
        if runs.stop_claiming.is_cancelled() {
            return;
        }
        if last_sweep.elapsed() >= SWEEP_EVERY {
            last_sweep = Instant::now();
            match runs
                .store
                .sweep_orphans(&runs.worker_id, &mut gone, runs.settings.orphan_grace)
                .await
            {
                Ok(0) => {}
                Ok(n) => tracing::info!(runs = n, "taking over the runs of a process that is gone"),
                Err(e) => {
                    // Not seen for a while by us says nothing while we cannot see either.
                    gone.clear();
                    tracing::debug!(error = %e, "could not look for runs of gone processes");
                }
            }
        }
        while runs.running_count() < runs.settings.max_concurrent
            && !runs.stop_claiming.is_cancelled()
        {
            let sent = Instant::now();
            match runs
                .store
                .claim_run(
                    &runs.worker_id,
                    runs.settings.lease.as_millis() as i64,
                    None,
                )
                .await
            {
                Ok(Some(run)) => start(&runs, run, sent),
                Ok(None) => {
                    runs.backlog.store(false, Ordering::Relaxed);
                    break;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not claim runs");
                    break;
                }
            }
        }
        if runs.running_count() >= runs.settings.max_concurrent {
            runs.backlog.store(true, Ordering::Relaxed);
        }
        tokio::select! {
            _ = runs.wake.notified() => {}
            _ = tokio::time::sleep(runs.settings.poll) => {}
            _ = runs.stop_claiming.cancelled() => return,
        }
    }
}

/// Extends the leases of the claims held here; applies cancels asked through the store;
/// gives up claims the store says are held no more.
pub(crate) async fn heartbeat_loop(runs: Arc<Runs>) {
    let every = runs.settings.lease / 3;
    loop {
        tokio::time::sleep(every).await;
        let held: Vec<(String, i64)> = runs
            .running()
            .iter()
            .filter(|(_, r)| !r.lost.is_cancelled())
            .map(|(id, r)| (id.clone(), r.attempt))
            .collect();
        if held.is_empty() {
            continue;
        }
        let sent = Instant::now();
        match runs
            .store
            .heartbeat(
                &runs.worker_id,
                &held,
                runs.settings.lease.as_millis() as i64,
            )
            .await
        {
            Ok(renewed) => {
                let renewed: HashMap<String, crate::store::Renewed> =
                    renewed.into_iter().map(|r| (r.run_id.clone(), r)).collect();
                let mut running = runs.running();
                for (id, attempt) in &held {
                    let Some(local) = running.get_mut(id).filter(|r| r.attempt == *attempt) else {
                        continue;
                    };
                    match renewed.get(id) {
                        Some(r) => {
                            local.deadline = sent + runs.settings.lease;
                            if r.cancel_action.is_some() {
                                local
                                    .cancel
                                    .cancel(cancel_reason(r.cancel_reason.as_deref()));
                            }
                        }
                        None => {
                            not_renewed(id, local);
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "heartbeat failed"),
        }
    }
}

/// A claim held here that the heartbeat did not renew: lost (given up), unless it has
/// started recording its end, which may have ended the run in the store between the
/// heartbeat's list and its renewal (that end's own write tells whether the claim held).
/// Returns whether the claim was given up.
fn not_renewed(id: &str, local: &Running) -> bool {
    if local.ending.is_cancelled() {
        return false;
    }
    tracing::warn!(run_id = %id, attempt = local.attempt, "lost the run's lease: another worker holds it");
    local.lose();
    true
}

/// Gives up every claim whose lease may have run out by now (its last renewal is older than
/// the lease, less a margin for clocks that disagree): another worker may hold it already,
/// so the run must stop before it writes anything more.
pub(crate) async fn watchdog_loop(runs: Arc<Runs>) {
    let lease = runs.settings.lease;
    let margin = lease / 10;
    let every = (lease / 10).clamp(Duration::from_millis(20), Duration::from_secs(1));
    loop {
        tokio::time::sleep(every).await;
        let now = Instant::now();
        for (id, r) in runs.running().iter() {
            if !r.lost.is_cancelled() && now + margin >= r.deadline {
                tracing::warn!(run_id = %id, "the run's lease could not be renewed in time; giving the run up");
                r.lose();
            }
        }
    }
}

/// Executes a claim in the background, registered as running here. `sent` is when the
/// claim was asked for: the lease holds until `sent + lease` at least.
pub(crate) fn start(runs: &Arc<Runs>, run: Run, sent: Instant) {
    let cancel = Cancellation::new();
    if run.cancel_action.is_some() {
        cancel.cancel(cancel_reason(run.cancel_reason.as_deref()));
    }
    // A root span here, made the child of the span the run was created under (stored with
    // the run): the run is one trace with its request, whichever replica executes it.
    let span = tracing::info_span!(
        parent: None,
        "run",
        run_id = %run.run_id,
        thread_id = %run.thread_id,
        graph = %run.graph_id,
        assistant_id = %run.assistant_id,
        user.id = %run.owner,
        attempt = run.attempt,
        run.status = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    if let Some(parent) = &run.trace_context {
        crate::telemetry::set_remote_parent(&span, parent);
    }
    let lost = CancellationToken::new();
    let done = CancellationToken::new();
    let ending = CancellationToken::new();
    // An earlier claim of this run by this process may still be winding down (it lost its
    // lease and the run came back here): this one starts once that one has ended.
    let earlier = runs.running().insert(
        run.run_id.clone(),
        Running {
            attempt: run.attempt,
            cancel: cancel.clone(),
            lost: lost.clone(),
            deadline: sent + runs.settings.lease,
            abort: None,
            done: done.clone(),
            ending: ending.clone(),
        },
    );
    if let Some(e) = &earlier {
        e.lose();
    }
    let run_id = run.run_id.clone();
    // Its channel is in the hub before the task is first polled: a stream opened as soon as
    // the run was created follows it live at once rather than looking in the events table,
    // and one that opened earlier, and waits between looks at the table, switches to it now
    // (not at its next look, up to 250 ms later, behind a watcher that opened after it).
    runs.hub.open(&run_id);
    runs.remote.wake(&run_id);
    let task = super::execute::execute(runs.clone(), run, cancel, lost, done, ending);
    let handle = tokio::spawn(
        async move {
            if let Some(e) = earlier {
                e.done.cancelled().await;
            }
            task.await;
        }
        .instrument(span),
    );
    if let Some(r) = runs.running().get_mut(&run_id) {
        r.abort = Some(handle.abort_handle());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running() -> Running {
        Running {
            attempt: 1,
            cancel: Cancellation::new(),
            lost: CancellationToken::new(),
            deadline: Instant::now(),
            abort: None,
            done: CancellationToken::new(),
            ending: CancellationToken::new(),
        }
    }

    #[test]
    fn a_claim_not_renewed_is_lost_unless_it_is_recording_its_end() {
        let held = running();
        assert!(not_renewed("r1", &held));
        assert!(held.lost.is_cancelled());
        assert!(held.cancel.is_cancelled());

        let ending = running();
        ending.ending.cancel();
        assert!(!not_renewed("r2", &ending));
        assert!(!ending.lost.is_cancelled(), "a finished run is not lost");
        assert!(!ending.cancel.is_cancelled());
    }
}
