//! One forwarding checkpointer for the test wrappers: [`Wrapped`] passes every call to the
//! checkpointer it wraps and calls its [`Around`]'s hooks on the way, so each wrapper
//! (counting, cleanup, pacing) says only what it adds.

use std::ops::Deref;
use std::sync::Arc;

use async_trait::async_trait;

use crate::checkpoint::{
    CheckpointError, CheckpointRecord, Checkpointer, Fence, Flush, Json, ListOptions,
    LoadedCheckpoint, PendingWrite, PruneStats, PruneStrategy, PutCheckpoint,
};

/// What a wrapper does around the calls it forwards; every hook does nothing by default.
#[async_trait]
pub trait Around: Send + Sync + 'static {
    /// Before a put (`put` or `put_claiming`); an error refuses it, storing nothing.
    async fn before_put(&self, _put: &PutCheckpoint) -> Result<(), CheckpointError> {
        Ok(())
    }
    /// After a put was stored.
    fn after_put(&self, _put: &PutCheckpoint) {}
    /// Before pending writes at `checkpoint_id` (`put_writes` or `put_writes_at_head`).
    fn before_writes(&self, _checkpoint_id: &str, _writes: &[PendingWrite]) {}
    /// Before a read (`get`, `get_without_values`, `head`).
    fn before_read(&self) {}
}

/// A checkpointer forwarding to `inner`, with `around`'s hooks; derefs to `around`.
pub struct Wrapped<A> {
    // Declared first, so dropped first: a cleanup runs before the inner checkpointer goes.
    around: A,
    inner: Arc<dyn Checkpointer>,
}

impl<A: Around> Wrapped<A> {
    /// Wraps `inner` with `around`.
    pub fn around(inner: Arc<dyn Checkpointer>, around: A) -> Self {
        Wrapped { around, inner }
    }

    pub(crate) fn hooks_mut(&mut self) -> &mut A {
        &mut self.around
    }
}

impl<A> Deref for Wrapped<A> {
    type Target = A;

    fn deref(&self) -> &A {
        &self.around
    }
}

impl<A: Around> Wrapped<A> {
    async fn put_with(&self, put: &PutCheckpoint, claiming: bool) -> Result<(), CheckpointError> {
        self.around.before_put(put).await?;
        if claiming {
            self.inner.put_claiming(put).await?;
        } else {
            self.inner.put(put).await?;
        }
        self.around.after_put(put);
        Ok(())
    }
}

#[async_trait]
impl<A: Around> Checkpointer for Wrapped<A> {
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
        self.put_with(put, false).await
    }
    async fn put_claiming(&self, put: &PutCheckpoint) -> Result<(), CheckpointError> {
        self.put_with(put, true).await
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
        self.around.before_writes(c, &w);
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
        self.around.before_writes(c, &w);
        self.inner.put_writes_at_head(t, c, n, w, f, flush).await
    }
    async fn get(
        &self,
        t: &str,
        c: Option<&str>,
    ) -> Result<Option<LoadedCheckpoint>, CheckpointError> {
        self.around.before_read();
        self.inner.get(t, c).await
    }
    async fn get_without_values(
        &self,
        t: &str,
        c: Option<&str>,
    ) -> Result<Option<LoadedCheckpoint>, CheckpointError> {
        self.around.before_read();
        self.inner.get_without_values(t, c).await
    }
    async fn head(&self, t: &str) -> Result<Option<String>, CheckpointError> {
        self.around.before_read();
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
