//! A checkpointer wrapper that counts write calls and the payload bytes they carry.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::wrapper::{Around, Wrapped};
use crate::checkpoint::{
    CheckpointError, CheckpointRecord, Checkpointer, PendingWrite, PutCheckpoint,
};

/// A checkpointer that counts `put` / `put_writes` calls and payload bytes (see [`Counts`]).
pub type Counting = Wrapped<Counts>;

/// What [`Counting`] counted.
#[derive(Default)]
pub struct Counts {
    /// `put` calls.
    pub puts: AtomicU64,
    /// `put_writes` calls.
    pub put_writes: AtomicU64,
    /// Reads (`get`, `get_without_values`, `head`).
    pub reads: AtomicU64,
    /// JSON bytes written (record, field values, pending writes).
    pub bytes: AtomicU64,
    /// The puts seen since [`Counts::keep_puts`], when keeping.
    kept: Mutex<Option<Vec<PutCheckpoint>>>,
}

impl Counting {
    /// Wraps a checkpointer.
    pub fn new(inner: Arc<dyn Checkpointer>) -> Self {
        Wrapped::around(inner, Counts::default())
    }
}

impl Counts {
    /// Keeps a copy of every put from now on (`put` and `put_claiming`), in call order,
    /// until [`Counts::take_puts`]: a benchmark replays them without the engine.
    pub fn keep_puts(&self) {
        *self.kept.lock().unwrap_or_else(|e| e.into_inner()) = Some(Vec::new());
    }

    /// The puts kept since [`Counts::keep_puts`]; stops keeping.
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

#[async_trait]
impl Around for Counts {
    /// Counts a put and its bytes (record and field values).
    async fn before_put(&self, put: &PutCheckpoint) -> Result<(), CheckpointError> {
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
        Ok(())
    }

    fn before_writes(&self, _checkpoint_id: &str, writes: &[PendingWrite]) {
        self.put_writes.fetch_add(1, Ordering::Relaxed);
        let bytes: u64 = writes
            .iter()
            .map(|w| (w.value.get().len() + w.channel.len() + w.task_id.len()) as u64)
            .sum();
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    fn before_read(&self) {
        self.reads.fetch_add(1, Ordering::Relaxed);
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
