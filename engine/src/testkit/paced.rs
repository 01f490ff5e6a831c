//! A checkpointer wrapper whose flushed puts take a while (a slow disk), one of which can be
//! made to fail, and which logs the order in which writes reach it: what a test of
//! [`crate::Durability::Async`] needs to see that nothing of a step is stored before the
//! checkpoint it belongs to.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use crate::checkpoint::{
    CheckpointError, CheckpointRecord, Checkpointer, Fence, Flush, Json, ListOptions,
    LoadedCheckpoint, PendingWrite, PruneStats, PruneStrategy, PutCheckpoint,
};

/// Delays every [`Flush::Now`] put by `delay` before storing it (no delay at all, not even
/// a timer's tick, when it is zero), fails the `fail_at`-th one (counting from 1; it stores
/// nothing), and logs writes as they happen.
pub struct Paced {
    inner: Arc<dyn Checkpointer>,
    delay: Duration,
    fail_at: Option<usize>,
    flushed_puts: AtomicUsize,
    log: Arc<Mutex<Vec<String>>>,
}

impl Paced {
    /// Wraps `inner`, each flushed put taking `delay` longer.
    pub fn new(inner: Arc<dyn Checkpointer>, delay: Duration) -> Self {
        Paced {
            inner,
            delay,
            fail_at: None,
            flushed_puts: AtomicUsize::new(0),
            log: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Fails the `n`-th flushed put (from 1) with [`CheckpointError::Unavailable`].
    #[must_use]
    pub fn failing_put(mut self, n: usize) -> Self {
        self.fail_at = Some(n);
        self
    }

    /// The log, shared: a test's nodes may add their own lines. Lines this wrapper writes:
    /// `put <checkpoint id>` when a put starts, `stored <checkpoint id>` once it is stored,
    /// `failed <checkpoint id>`, and `writes <checkpoint id>` when pending writes arrive.
    pub fn log(&self) -> Arc<Mutex<Vec<String>>> {
        self.log.clone()
    }

    fn note(&self, line: String) {
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(line);
    }

    async fn paced_put(&self, put: &PutCheckpoint, claiming: bool) -> Result<(), CheckpointError> {
        let id = &put.record.checkpoint_id;
        self.note(format!("put {id}"));
        if put.flush == Flush::Now {
            let n = self.flushed_puts.fetch_add(1, Ordering::SeqCst) + 1;
            if !self.delay.is_zero() {
                tokio::time::sleep(self.delay).await;
            }
            if self.fail_at == Some(n) {
                self.note(format!("failed {id}"));
                return Err(CheckpointError::Unavailable(
                    format!("put {n} failed on purpose").into(),
                ));
            }
        }
        let stored = if claiming {
            self.inner.put_claiming(put).await
        } else {
            self.inner.put(put).await
        };
        if stored.is_ok() {
            self.note(format!("stored {id}"));
        }
        stored
    }
}

#[async_trait]
impl Checkpointer for Paced {
    async fn cache_get(
        &self,
        ns: &str,
        key: &str,
        now_ms: i64,
    ) -> Result<Option<Json>, CheckpointError> {
        self.inner.cache_get(ns, key, now_ms).await
    }
    async fn cache_put(
        &self,
        ns: &str,
        key: &str,
        value: Json,
        expires_at_ms: Option<i64>,
        now_ms: i64,
    ) -> Result<(), CheckpointError> {
        self.inner
            .cache_put(ns, key, value, expires_at_ms, now_ms)
            .await
    }
    async fn put(&self, put: &PutCheckpoint) -> Result<(), CheckpointError> {
        self.paced_put(put, false).await
    }
    async fn put_claiming(&self, put: &PutCheckpoint) -> Result<(), CheckpointError> {
        self.paced_put(put, true).await
    }
    async fn flush(&self, t: &str) -> Result<(), CheckpointError> {
        self.inner.flush(t).await
    }
    async fn put_writes(
        &self,
        t: &str,
        c: &str,
        w: Vec<PendingWrite>,
        f: Option<&Fence>,
    ) -> Result<(), CheckpointError> {
        self.note(format!("writes {c}"));
        self.inner.put_writes(t, c, w, f).await
    }
    async fn put_writes_at_head(
        &self,
        t: &str,
        c: &str,
        n: usize,
        w: Vec<PendingWrite>,
        f: Option<&Fence>,
        flush: Flush,
    ) -> Result<bool, CheckpointError> {
        self.note(format!("writes {c}"));
        self.inner.put_writes_at_head(t, c, n, w, f, flush).await
    }
    async fn get(
        &self,
        t: &str,
        c: Option<&str>,
    ) -> Result<Option<LoadedCheckpoint>, CheckpointError> {
        self.inner.get(t, c).await
    }
    async fn get_without_values(
        &self,
        t: &str,
        c: Option<&str>,
    ) -> Result<Option<LoadedCheckpoint>, CheckpointError> {
        self.inner.get_without_values(t, c).await
    }
    async fn head(&self, t: &str) -> Result<Option<String>, CheckpointError> {
        self.inner.head(t).await
    }
    async fn list(
        &self,
        t: &str,
        o: &ListOptions,
    ) -> Result<Vec<CheckpointRecord>, CheckpointError> {
        self.inner.list(t, o).await
    }
    async fn advance_fence(&self, k: &str, e: i64) -> Result<i64, CheckpointError> {
        self.inner.advance_fence(k, e).await
    }
    async fn delete_thread(&self, t: &str) -> Result<(), CheckpointError> {
        self.inner.delete_thread(t).await
    }
    async fn copy_thread(&self, f: &str, t: &str) -> Result<(), CheckpointError> {
        self.inner.copy_thread(f, t).await
    }
    async fn delete_for_runs(&self, t: &str, r: &[String]) -> Result<PruneStats, CheckpointError> {
        self.inner.delete_for_runs(t, r).await
    }
    async fn prune(&self, t: &str, s: PruneStrategy) -> Result<PruneStats, CheckpointError> {
        self.inner.prune(t, s).await
    }
}
