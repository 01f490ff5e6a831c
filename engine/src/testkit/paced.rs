//! A checkpointer wrapper whose flushed puts take a while (a slow disk), one of which can be
//! made to fail, and which logs the order in which writes reach it: what a test of
//! [`crate::Durability::Async`] needs to see that nothing of a step is stored before the
//! checkpoint it belongs to.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use super::wrapper::{Around, Wrapped};
use crate::checkpoint::{CheckpointError, Checkpointer, Flush, PendingWrite, PutCheckpoint};

/// A checkpointer whose flushed puts are paced by [`Pacing`].
pub type Paced = Wrapped<Pacing>;

/// Delays every [`Flush::Now`] put by `delay` before storing it (no delay at all, not even
/// a timer's tick, when it is zero), fails the `fail_at`-th one (counting from 1; it stores
/// nothing), and logs writes as they happen.
pub struct Pacing {
    delay: Duration,
    fail_at: Option<usize>,
    flushed_puts: AtomicUsize,
    log: Arc<Mutex<Vec<String>>>,
}

impl Paced {
    /// Wraps `inner`, each flushed put taking `delay` longer.
    pub fn new(inner: Arc<dyn Checkpointer>, delay: Duration) -> Self {
        Wrapped::around(
            inner,
            Pacing {
                delay,
                fail_at: None,
                flushed_puts: AtomicUsize::new(0),
                log: Arc::new(Mutex::new(Vec::new())),
            },
        )
    }

    /// Fails the `n`-th flushed put (from 1) with [`CheckpointError::Unavailable`].
    #[must_use]
    pub fn failing_put(mut self, n: usize) -> Self {
        self.hooks_mut().fail_at = Some(n);
        self
    }
}

impl Pacing {
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
}

#[async_trait]
impl Around for Pacing {
    async fn before_put(&self, put: &PutCheckpoint) -> Result<(), CheckpointError> {
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
        Ok(())
    }

    fn after_put(&self, put: &PutCheckpoint) {
        self.note(format!("stored {}", put.record.checkpoint_id));
    }

    fn before_writes(&self, checkpoint_id: &str, _writes: &[PendingWrite]) {
        self.note(format!("writes {checkpoint_id}"));
    }
}
