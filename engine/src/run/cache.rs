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
//!
//! A full cache evicts its least recently used threads (put or read), an eighth of it at a
//! time.

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
    inner: Mutex<Slots<S>>,
    capacity: usize,
}

/// The entries, each with when it was last put or read: a full cache evicts its least
/// recently used entries.
struct Slots<S> {
    entries: HashMap<String, (Entry<S>, u64)>,
    clock: u64,
}

impl<S> Slots<S> {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// Makes room for one more entry: evicts the least recently used eighth (at least one),
    /// so that a cache kept full scans its entries once per eighth of its capacity.
    fn evict(&mut self, capacity: usize) {
        if self.entries.len() < capacity || self.entries.is_empty() {
            return;
        }
        let mut stamps: Vec<u64> = self.entries.values().map(|(_, used)| *used).collect();
        let k = (capacity / 8).clamp(1, stamps.len()) - 1;
        let (_, cutoff, _) = stamps.select_nth_unstable(k);
        let cutoff = *cutoff;
        self.entries.retain(|_, (_, used)| *used > cutoff);
    }
}

impl<S> StateCache<S> {
    pub(crate) fn new(capacity: usize) -> Self {
        StateCache {
            inner: Mutex::new(Slots {
                entries: HashMap::new(),
                clock: 0,
            }),
            capacity,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Slots<S>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Removes and returns the thread's entry.
    pub(crate) fn take(&self, thread_id: &str) -> Option<Entry<S>> {
        if self.capacity == 0 {
            return None;
        }
        self.lock().entries.remove(thread_id).map(|(e, _)| e)
    }

    /// Removes and returns the thread's entry when it holds a [`WaitingHead`].
    pub(crate) fn take_waiting(&self, thread_id: &str) -> Option<Entry<S>> {
        if self.capacity == 0 {
            return None;
        }
        let mut slots = self.lock();
        if slots
            .entries
            .get(thread_id)
            .is_some_and(|(e, _)| e.waiting.is_some())
        {
            slots.entries.remove(thread_id).map(|(e, _)| e)
        } else {
            None
        }
    }

    /// The cached state of `checkpoint_id`, leaving it cached (and counting as a use).
    pub(crate) fn peek(&self, thread_id: &str, checkpoint_id: &str) -> Option<Arc<S>> {
        if self.capacity == 0 {
            return None;
        }
        let mut slots = self.lock();
        let now = slots.tick();
        let (entry, used) = slots
            .entries
            .get_mut(thread_id)
            .filter(|(e, _)| e.checkpoint_id == checkpoint_id)?;
        *used = now;
        Some(entry.state.clone())
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
        let mut slots = self.lock();
        if !slots.entries.contains_key(thread_id) {
            slots.evict(self.capacity);
        }
        let now = slots.tick();
        slots.entries.insert(
            thread_id.to_string(),
            (
                Entry {
                    checkpoint_id: checkpoint_id.to_string(),
                    state,
                    clean,
                    waiting,
                },
                now,
            ),
        );
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Forgets a thread.
    pub(crate) fn forget(&self, thread_id: &str) {
        self.lock().entries.remove(thread_id);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn put(c: &StateCache<u32>, thread: &str, v: u32) {
        c.put(thread, &format!("c{v}"), Arc::new(v), None, None);
    }

    #[test]
    fn a_full_cache_evicts_its_least_recently_used_threads() {
        let c = StateCache::new(16);
        for i in 0..16 {
            put(&c, &format!("t{i}"), i);
        }
        // t0 is read, so t1 is now the least recently used.
        assert_eq!(c.peek("t0", "c0").as_deref(), Some(&0));
        put(&c, "new", 99);
        assert!(c.peek("t1", "c1").is_none(), "the least recently used goes");
        assert_eq!(c.peek("t0", "c0").as_deref(), Some(&0));
        assert_eq!(c.peek("new", "c99").as_deref(), Some(&99));
        assert!(c.lock().entries.len() <= 16);
        // A thread put again keeps its place without evicting anyone.
        let before = c.lock().entries.len();
        put(&c, "new", 100);
        assert_eq!(c.lock().entries.len(), before);
        assert!(
            c.peek("new", "c99").is_none(),
            "a peek names the checkpoint"
        );
    }

    #[test]
    fn under_a_stream_of_new_threads_the_newest_stay_cached() {
        // Each turn of a busy server is often a new thread: the state a run just put must
        // still be there when its answer is read, a few puts later (an arbitrary victim
        // used to be the newest entry about half the time).
        let c = StateCache::new(64);
        for i in 0..5_000u32 {
            put(&c, &format!("t{i}"), i);
            for back in 0..8.min(i + 1) {
                let j = i - back;
                assert_eq!(
                    c.peek(&format!("t{j}"), &format!("c{j}")).as_deref(),
                    Some(&j),
                    "thread {j} evicted {back} puts after it was cached"
                );
            }
            assert!(c.lock().entries.len() <= 64);
        }
    }

    #[test]
    fn a_cache_of_capacity_zero_keeps_nothing() {
        let c = StateCache::new(0);
        put(&c, "t", 1);
        assert!(c.peek("t", "c1").is_none());
        assert!(c.take("t").is_none());
    }
}
