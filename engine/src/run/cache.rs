//! A per-graph cache of the state at each thread's latest checkpoint.
//!
//! The state at a checkpoint never changes (checkpoints are append-only), so a cached state
//! is valid for as long as its checkpoint id is the thread's head. A run takes the entry
//! out (so it owns the state and can update it in place), reads only the checkpoint's record
//! and pending writes from storage, and puts the final state back when it ends. A long
//! conversation is then not re-read and re-folded from storage at every turn.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

pub(crate) struct StateCache<S> {
    entries: Mutex<HashMap<String, (String, Arc<S>)>>,
    capacity: usize,
}

impl<S> StateCache<S> {
    pub(crate) fn new(capacity: usize) -> Self {
        StateCache {
            entries: Mutex::new(HashMap::new()),
            capacity,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, (String, Arc<S>)>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Removes and returns the thread's entry (checkpoint id, state).
    pub(crate) fn take(&self, thread_id: &str) -> Option<(String, Arc<S>)> {
        if self.capacity == 0 {
            return None;
        }
        self.lock().remove(thread_id)
    }

    /// The cached state of `checkpoint_id`, leaving it cached.
    pub(crate) fn peek(&self, thread_id: &str, checkpoint_id: &str) -> Option<Arc<S>> {
        if self.capacity == 0 {
            return None;
        }
        self.lock()
            .get(thread_id)
            .filter(|(id, _)| id == checkpoint_id)
            .map(|(_, s)| s.clone())
    }

    /// Caches the state at `checkpoint_id`.
    pub(crate) fn put(&self, thread_id: &str, checkpoint_id: &str, state: Arc<S>) {
        if self.capacity == 0 {
            return;
        }
        let mut entries = self.lock();
        if entries.len() >= self.capacity && !entries.contains_key(thread_id) {
            if let Some(victim) = entries.keys().next().cloned() {
                entries.remove(&victim);
            }
        }
        entries.insert(thread_id.to_string(), (checkpoint_id.to_string(), state));
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Forgets a thread.
    pub(crate) fn forget(&self, thread_id: &str) {
        self.lock().remove(thread_id);
    }
}
