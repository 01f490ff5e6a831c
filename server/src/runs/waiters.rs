//! Wake-ups keyed by id: a watcher waits on its run's or thread's [`Notify`], whoever learns
//! of news (this process, or a NOTIFY from another one) wakes it. Entries exist only while
//! someone waits.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

/// A registry of [`Notify`]s by key.
#[derive(Default)]
pub(crate) struct Waiters {
    by_key: Mutex<HashMap<String, Arc<Notify>>>,
}

impl Waiters {
    fn map(&self) -> MutexGuard<'_, HashMap<String, Arc<Notify>>> {
        self.by_key.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What a watcher of `key` waits on, released when the guard is dropped (also when
    /// the future holding it is: a client that leaves mid-wait leaves nothing behind).
    pub(crate) fn guard<'a>(&'a self, key: &str) -> WaiterGuard<'a> {
        let notify = self
            .map()
            .entry(key.to_string())
            .or_insert_with(|| Arc::new(Notify::new()))
            .clone();
        WaiterGuard {
            notify,
            waiters: self,
            key: key.to_string(),
        }
    }

    /// Wakes every watcher of `key`.
    pub(crate) fn wake(&self, key: &str) {
        if let Some(n) = self.map().get(key) {
            n.notify_waiters();
        }
    }

    /// Wakes every watcher of every key.
    pub(crate) fn wake_all(&self) {
        for n in self.map().values() {
            n.notify_waiters();
        }
    }
}

/// A waiter of [`Waiters::guard`]: released on drop.
pub(crate) struct WaiterGuard<'a> {
    notify: Arc<Notify>,
    waiters: &'a Waiters,
    key: String,
}

impl std::ops::Deref for WaiterGuard<'_> {
    type Target = Notify;

    fn deref(&self) -> &Notify {
        &self.notify
    }
}

impl Drop for WaiterGuard<'_> {
    fn drop(&mut self) {
        // Forgotten when the map's and this guard's are the only holders.
        let mut map = self.waiters.map();
        if map
            .get(&self.key)
            .is_some_and(|n| Arc::ptr_eq(n, &self.notify) && Arc::strong_count(n) <= 2)
        {
            map.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;

    use super::*;

    #[tokio::test]
    async fn wakes_the_watchers_of_a_key_and_forgets_released_keys() {
        let w = Waiters::default();
        let a = w.guard("a");
        {
            let woken = a.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            w.wake("b");
            assert!(
                woken.as_mut().now_or_never().is_none(),
                "another key's news does not wake"
            );
            w.wake("a");
            assert!(woken.as_mut().now_or_never().is_some());
        }
        drop(a);
        assert!(w.map().is_empty());
    }

    #[tokio::test]
    async fn a_guard_dropped_mid_wait_releases_its_key() {
        let w = Waiters::default();
        let waiting = async {
            let g = w.guard("run");
            g.notified().await;
        };
        // The waiting future is dropped before anything woke it (a client that left).
        assert!(waiting.now_or_never().is_none());
        assert!(w.map().is_empty(), "nothing left behind");
        let kept = w.guard("run");
        {
            let _g = w.guard("run");
        }
        assert_eq!(w.map().len(), 1, "another watcher still holds it");
        drop(kept);
        assert!(w.map().is_empty());
    }
}
