//! A per-graph cache of the state at each thread's latest checkpoint.
//!
//! The state at a checkpoint never changes (checkpoints are append-only), so a cached state
//! is valid for as long as its checkpoint id is the thread's head. A run takes the entry
//! out (so it owns the state and can update it in place) and puts the final state back when
//! it ends. A long conversation is then not re-read and re-folded from storage at every turn.
//!
//! When a run completed, its last checkpoint has no pending writes and nothing left to run,
//! so the entry also keeps that checkpoint's record and plan ([`CleanHead`]): the next turn
//! can start from the entry without reading storage at all, betting that the head has not
//! moved. The bet is checked where it matters: the turn's first checkpoint is saved with
//! the cached head as its expected head, and a conflict sends the turn back to storage.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::checkpoint::{CheckpointRecord, PendingWrite};

use super::plan::Plan;

/// A completed run's last checkpoint: enough to start the next turn from it.
pub(crate) struct CleanHead {
    pub(crate) record: CheckpointRecord,
    pub(crate) plan: Plan,
}

/// An interrupted run's last checkpoint with every pending write stored at it: enough to
/// resume from it without reading storage, betting that it is still the head with those
/// writes. The resume's answers are written only if the bet holds (see
/// [`crate::checkpoint::Checkpointer::put_writes_at_head`]), before any node runs.
pub(crate) struct WaitingHead {
    pub(crate) record: CheckpointRecord,
    pub(crate) writes: Vec<PendingWrite>,
}

/// One thread's cached head.
pub(crate) struct Entry<S> {
    /// The checkpoint whose state this is.
    pub(crate) checkpoint_id: String,
    pub(crate) state: Arc<S>,
    /// Set when the checkpoint has no pending writes and no tasks due.
    pub(crate) clean: Option<CleanHead>,
    /// Set when a run stopped at the checkpoint on interrupts (and knew all its writes).
    pub(crate) waiting: Option<WaitingHead>,
}

pub(crate) struct StateCache<S> {
    entries: Mutex<HashMap<String, Entry<S>>>,
    capacity: usize,
}

impl<S> StateCache<S> {
    pub(crate) fn new(capacity: usize) -> Self {
        StateCache {
            entries: Mutex::new(HashMap::new()),
            capacity,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry<S>>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Removes and returns the thread's entry.
    pub(crate) fn take(&self, thread_id: &str) -> Option<Entry<S>> {
        if self.capacity == 0 {
            return None;
        }
        self.lock().remove(thread_id)
    }

    /// Removes and returns the thread's entry when it holds a [`WaitingHead`].
    pub(crate) fn take_waiting(&self, thread_id: &str) -> Option<Entry<S>> {
        if self.capacity == 0 {
            return None;
        }
        let mut entries = self.lock();
        if entries.get(thread_id).is_some_and(|e| e.waiting.is_some()) {
            entries.remove(thread_id)
        } else {
            None
        }
    }

    /// The cached state of `checkpoint_id`, leaving it cached.
    pub(crate) fn peek(&self, thread_id: &str, checkpoint_id: &str) -> Option<Arc<S>> {
        if self.capacity == 0 {
            return None;
        }
        self.lock()
            .get(thread_id)
            .filter(|e| e.checkpoint_id == checkpoint_id)
            .map(|e| e.state.clone())
    }

    /// Caches the state at `checkpoint_id` (with its record and plan when it is clean, with
    /// its record and writes when a run waits there).
    pub(crate) fn put(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
        state: Arc<S>,
        clean: Option<CleanHead>,
        waiting: Option<WaitingHead>,
    ) {
        if self.capacity == 0 {
            return;
        }
        let mut entries = self.lock();
        if entries.len() >= self.capacity && !entries.contains_key(thread_id) {
            if let Some(victim) = entries.keys().next().cloned() {
                entries.remove(&victim);
            }
        }
        entries.insert(
            thread_id.to_string(),
            Entry {
                checkpoint_id: checkpoint_id.to_string(),
                state,
                clean,
                waiting,
            },
        );
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Forgets a thread.
    pub(crate) fn forget(&self, thread_id: &str) {
        self.lock().remove(thread_id);
    }
}
