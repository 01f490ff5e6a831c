//! A checkpointer wrapper that counts write calls and the payload bytes they carry.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::checkpoint::{
    CheckpointError, CheckpointRecord, Checkpointer, Fence, Flush, ListOptions, LoadedCheckpoint,
    PendingWrite, PruneStats, PruneStrategy, PutCheckpoint,
};
use async_trait::async_trait;

/// Counts `put` / `put_writes` calls and payload bytes.
pub struct Counting {
    inner: Arc<dyn Checkpointer>,
    /// `put` calls.
    pub puts: AtomicU64,
    /// `put_writes` calls.
    pub put_writes: AtomicU64,
    /// Reads (`get`, `get_without_values`, `head`).
    pub reads: AtomicU64,
    /// JSON bytes written (record, field values, pending writes).
    pub bytes: AtomicU64,
    /// The puts seen since [`Counting::keep_puts`], when keeping.
    kept: Mutex<Option<Vec<PutCheckpoint>>>,
}

impl Counting {
    /// Wraps a checkpointer.
    pub fn new(inner: Arc<dyn Checkpointer>) -> Self {
        Counting {
            inner,
            puts: AtomicU64::new(0),
            put_writes: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            kept: Mutex::new(None),
        }
    }

    /// Keeps a copy of every put from now on (`put` and `put_claiming`), in call order,
    /// until [`Counting::take_puts`]: a benchmark replays them without the engine.
    pub fn keep_puts(&self) {
        *self.kept.lock().unwrap_or_else(|e| e.into_inner()) = Some(Vec::new());
    }

    /// The puts kept since [`Counting::keep_puts`]; stops keeping.
    pub fn take_puts(&self) -> Vec<PutCheckpoint> {
        self.kept
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or_default()
    }

    /// (puts, put_writes, reads, bytes) so far.
    pub fn snapshot(&self) -> (u64, u64, u64, u64) {
        (
            self.puts.load(Ordering::Relaxed),
            self.put_writes.load(Ordering::Relaxed),
            self.reads.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
        )
    }
}

impl Counting {
    /// Counts a put and its bytes (record and field values).
    fn count_put(&self, put: &PutCheckpoint) {
        self.puts.fetch_add(1, Ordering::Relaxed);
        if let Some(kept) = self.kept.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            kept.push(put.clone());
        }
        let bytes = record_bytes(&put.record)
            + put
                .blobs
                .iter()
                .map(|b| (b.value.get().len() + b.field.len() + b.version.len() * 2) as u64)
                .sum::<u64>();
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }
}

fn record_bytes(r: &CheckpointRecord) -> u64 {
    let meta = serde_json::to_string(&r.metadata)
        .map(|s| s.len())
        .unwrap_or(0);
    let versions = serde_json::to_string(&r.versions)
        .map(|s| s.len())
        .unwrap_or(0);
    (meta + versions + r.plan.get().len() + r.checkpoint_id.len() * 2 + r.thread_id.len()) as u64
}

#[async_trait]
impl Checkpointer for Counting {
    async fn cache_get(
        &self,
        ns: &str,
        key: &str,
        now_ms: i64,
    ) -> Result<Option<crate::checkpoint::Json>, CheckpointError> {
        self.inner.cache_get(ns, key, now_ms).await
    }

    async fn cache_put(
        &self,
        ns: &str,
        key: &str,
        value: crate::checkpoint::Json,
        expires_at_ms: Option<i64>,
        now_ms: i64,
    ) -> Result<(), CheckpointError> {
        self.inner
            .cache_put(ns, key, value, expires_at_ms, now_ms)
            .await
    }

    async fn put(&self, put: &PutCheckpoint) -> Result<(), CheckpointError> {
        self.count_put(put);
        self.inner.put(put).await
    }
    async fn put_claiming(&self, put: &PutCheckpoint) -> Result<(), CheckpointError> {
        self.count_put(put);
        self.inner.put_claiming(put).await
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
        self.put_writes.fetch_add(1, Ordering::Relaxed);
        let bytes: u64 = w
            .iter()
            .map(|w| (w.value.get().len() + w.channel.len() + w.task_id.len()) as u64)
            .sum();
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
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
        self.put_writes.fetch_add(1, Ordering::Relaxed);
        let bytes: u64 = w
            .iter()
            .map(|w| (w.value.get().len() + w.channel.len() + w.task_id.len()) as u64)
            .sum();
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.inner.put_writes_at_head(t, c, n, w, f, flush).await
    }
    async fn get(
        &self,
        t: &str,
        c: Option<&str>,
    ) -> Result<Option<LoadedCheckpoint>, CheckpointError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.inner.get(t, c).await
    }
    async fn get_without_values(
        &self,
        t: &str,
        c: Option<&str>,
    ) -> Result<Option<LoadedCheckpoint>, CheckpointError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.inner.get_without_values(t, c).await
    }
    async fn head(&self, t: &str) -> Result<Option<String>, CheckpointError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
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
