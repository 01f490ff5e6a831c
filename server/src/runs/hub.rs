//! Live fan-out of run events inside one process.
//!
//! Each run started or executed here has a channel: an append-only log of its events and a
//! `watch` of how far the log goes. Any number of watchers read the log from wherever they
//! are and wait for it to grow, so a slow watcher never holds the run back and a new watcher
//! never misses an event. Runs executed elsewhere (another replica) are read from the
//! `run_events` table instead.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use palgraph::RunEvent;
use tokio::sync::watch;

/// One run's live events.
pub(crate) struct RunChannel {
    log: Mutex<Vec<RunEvent>>,
    progress: watch::Sender<(u64, bool)>,
}

impl RunChannel {
    fn new() -> Self {
        RunChannel {
            log: Mutex::new(Vec::new()),
            progress: watch::channel((0, false)).0,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<RunEvent>> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends an event (events arrive in seq order from the run's emitter).
    pub(crate) fn push(&self, event: RunEvent) {
        let seq = event.seq;
        self.lock().push(event);
        self.progress.send_modify(|p| p.0 = p.0.max(seq));
    }

    /// Marks the run finished: watchers stop waiting after the last event.
    pub(crate) fn close(&self) {
        self.progress.send_modify(|p| p.1 = true);
    }

    /// Events after `seq`, and whether the run finished.
    pub(crate) fn after(&self, seq: u64) -> (Vec<RunEvent>, bool) {
        let done = self.progress.borrow().1;
        let log = self.lock();
        let start = log.partition_point(|e| e.seq <= seq);
        (log[start..].to_vec(), done)
    }

    /// A receiver that wakes when the log grows or the run finishes.
    pub(crate) fn subscribe(&self) -> watch::Receiver<(u64, bool)> {
        self.progress.subscribe()
    }
}

/// The channels of the runs this process knows live.
#[derive(Default)]
pub(crate) struct Hub {
    runs: Mutex<HashMap<String, Arc<RunChannel>>>,
}

impl Hub {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<RunChannel>>> {
        self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The run's channel, created if needed.
    pub(crate) fn open(&self, run_id: &str) -> Arc<RunChannel> {
        self.lock()
            .entry(run_id.to_string())
            .or_insert_with(|| Arc::new(RunChannel::new()))
            .clone()
    }

    /// The run's channel, if this process has one.
    pub(crate) fn get(&self, run_id: &str) -> Option<Arc<RunChannel>> {
        self.lock().get(run_id).cloned()
    }

    /// Closes and forgets a run's channel (watchers holding it still read it to the end).
    pub(crate) fn remove(&self, run_id: &str) {
        if let Some(c) = self.lock().remove(run_id) {
            c.close();
        }
    }
}
