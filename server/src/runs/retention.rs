//! Run events expire: a background sweep deletes the events of runs that ended longer ago
//! than [`RunSettings::event_retention`](super::RunSettings::event_retention), a bounded
//! number of runs per statement, so it never holds up the runs being made. A watcher of a
//! run whose events are gone gets its terminal event rebuilt from the run's row
//! ([`terminal_of`]).

use std::sync::Arc;
use std::time::Duration;

use palgraph::{Event, RunEvent};

use super::Runs;
use crate::store::{now_ms, Run, RunState};

/// Runs whose events one statement deletes.
const RUNS_PER_SWEEP: i64 = 500;

/// Sweeps now and then, forever (does nothing when events are kept).
pub(crate) async fn sweep_loop(runs: Arc<Runs>) {
    let Some(keep) = runs.settings.event_retention else {
        return;
    };
    let every = (keep / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
    loop {
        tokio::time::sleep(every).await;
        if runs.stop_claiming.is_cancelled() {
            return;
        }
        match sweep(&runs, keep).await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(rows = n, "expired run events"),
            Err(e) => tracing::warn!(error = %e, "could not expire run events"),
        }
    }
}

/// Deletes what has expired; returns how many rows went.
pub(crate) async fn sweep(runs: &Runs, keep: Duration) -> Result<u64, crate::store::StoreError> {
    let cutoff_ms = now_ms() - keep.as_millis() as i64;
    let cut = run_id_at(cutoff_ms);
    let mut total = 0;
    loop {
        let n = runs
            .store
            .expire_events(&cut, cutoff_ms, RUNS_PER_SWEEP)
            .await?;
        total += n;
        if n == 0 {
            return Ok(total);
        }
        tokio::task::yield_now().await;
    }
}

/// The smallest run id (UUIDv7) minted at `ms`: every run made before sorts below it.
fn run_id_at(ms: i64) -> String {
    let ms = ms.max(0) as u64;
    let ts = uuid::Timestamp::from_unix(uuid::NoContext, ms / 1000, (ms % 1000) as u32 * 1_000_000);
    let id = uuid::Uuid::new_v7(ts).as_u128();
    // Keep the 48-bit time and the version; clear the random bits.
    let floor = id & !((1u128 << 80) - 1) | (0x7u128 << 76);
    uuid::Uuid::from_u128(floor).to_string()
}

/// The terminal event of an ended run whose events have expired, from its row (and, for a
/// run that stopped at an interrupt, the thread's pending interrupts, if it still waits).
pub(crate) async fn terminal_of(runs: &Runs, run: &Run, seq: u64) -> Option<RunEvent> {
    let event = match run.status {
        RunState::Success => Event::Completed {
            checkpoint_id: None,
        },
        RunState::Error => Event::Failed {
            node: None,
            error: run
                .error
                .clone()
                .unwrap_or_else(|| "the run failed".to_string()),
        },
        RunState::Interrupted => Event::Interrupted {
            interrupts: match runs.graphs.find(&run.graph_id) {
                Some(g) => g
                    .graph
                    .state(&run.thread_id, None)
                    .await
                    .ok()
                    .flatten()
                    .map(|s| s.interrupts)
                    .unwrap_or_default(),
                None => Vec::new(),
            },
        },
        RunState::Cancelled => Event::Cancelled {
            reason: crate::store::cancel_reason(run.cancel_reason.as_deref()),
        },
        RunState::Pending | RunState::Running => return None,
    };
    Some(RunEvent { seq, event })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cut_sorts_between_runs_made_before_and_after() {
        let before = uuid::Uuid::now_v7().to_string();
        std::thread::sleep(Duration::from_millis(3));
        let cut = run_id_at(now_ms());
        std::thread::sleep(Duration::from_millis(3));
        let after = uuid::Uuid::now_v7().to_string();
        assert!(before < cut, "{before} < {cut}");
        assert!(cut < after, "{cut} < {after}");
        assert_eq!(
            uuid::Uuid::parse_str(&cut)
                .map(|u| u.get_version_num())
                .ok(),
            Some(7)
        );
    }
}
