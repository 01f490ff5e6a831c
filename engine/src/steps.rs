//! Durable steps inside a node: work whose result a node that runs again (after a resume, a
//! retry or a crash) gets back instead of doing the work again.
//!
//! - [`NodeContext::step`] records the result before it returns: nothing it did is repeated,
//!   whatever happens next (a paid LLM call, a payment, a message sent).
//! - [`NodeContext::memo`] keeps the result in memory and records it only if the node
//!   suspends (an interrupt), in the same write as the interrupt: the node re-entered with
//!   the answer sees what it saw when it asked. A node that finishes records nothing for it
//!   (its update supersedes it), which saves a write per step; after a crash before the node
//!   finished, the body runs again. For reads and computations that cost little and may be
//!   repeated (the user's document list, a deterministic local model).
//!
//! Steps are matched by name and by how many steps of that name ran before in this node
//! (both kinds count together).

use std::future::Future;

use serde::{de::DeserializeOwned, Serialize};
use tracing::Instrument;

use crate::checkpoint::{Json, PendingWrite};
use crate::context::{MemoRecord, NodeContext, STEP_CHANNEL_PREFIX};
use crate::node::NodeError;

impl NodeContext {
    /// Runs `body` once per task, durably: its result is recorded with the checkpoint's
    /// pending writes before this returns; when the node runs again (after a resume, a retry
    /// or a crash) the recorded result is returned and `body` is not polled.
    ///
    /// Steps are matched by name and by how many steps of that name ran before in this node.
    ///
    /// # Errors
    /// The body's error (nothing is recorded, so a retry runs it again). When the result
    /// cannot be recorded (storage unavailable, or another writer took the thread), an
    /// [`ErrorKind::Unavailable`](crate::node::ErrorKind::Unavailable) error: the node must
    /// return it, and the run stops with the storage error instead of failing.
    pub async fn step<T, E, F>(&self, name: &str, body: F) -> Result<T, NodeError>
    where
        T: Serialize + DeserializeOwned,
        E: Into<NodeError>,
        F: Future<Output = Result<T, E>>,
    {
        self.traced_step(name, body).await
    }

    /// Runs `body` once per task, like [`NodeContext::step`], but records its result only
    /// if the node suspends (in the same write as its interrupt, so no write of its own):
    /// the node re-entered after the resume gets the result back and `body` is not polled.
    /// When the node finishes, nothing is recorded; when the run is cut off before the node
    /// finished (a crash, a storage outage), the node's next run polls `body` again. Use it
    /// for work that may be repeated at little cost: reads, deterministic local models.
    ///
    /// # Errors
    /// The body's error (nothing is kept, so a retry runs it again).
    ///
    /// The result is kept as a value, and serialized only if the node suspends: a result
    /// the node gets cheaply by cloning (an `Arc`, say) costs nothing more when the node
    /// finishes. A result that does not serialize is not stored with the interrupt (the
    /// node re-entered runs `body` again).
    pub async fn memo<T, E, F>(&self, name: &str, body: F) -> Result<T, NodeError>
    where
        T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
        E: Into<NodeError>,
        F: Future<Output = Result<T, E>>,
    {
        self.memo_step(name, body)
            .instrument(step_span(name, true))
            .await
    }

    async fn memo_step<T, E, F>(&self, name: &str, body: F) -> Result<T, NodeError>
    where
        T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
        E: Into<NodeError>,
        F: Future<Output = Result<T, E>>,
    {
        let channel = format!("{STEP_CHANNEL_PREFIX}{name}");
        let idx = self.inner.next_step_index(name);
        // Stored with an interrupt before this attempt (a resumed node), or kept by an
        // earlier attempt of this task (a retry).
        if let Some(recorded) = self.recorded(name, &channel, idx) {
            return recorded;
        }
        if let Some(kept) = self.inner.kept_memo(&channel, idx) {
            if let Some(value) = kept.as_any().downcast_ref::<T>() {
                tracing::Span::current().record("step.replayed", true);
                return Ok(value.clone());
            }
        }
        let value = body.await.map_err(Into::into)?;
        self.inner
            .deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(MemoRecord {
                channel,
                idx,
                value: std::sync::Arc::new(value.clone()),
            });
        Ok(value)
    }

    async fn traced_step<T, E, F>(&self, name: &str, body: F) -> Result<T, NodeError>
    where
        T: Serialize + DeserializeOwned,
        E: Into<NodeError>,
        F: Future<Output = Result<T, E>>,
    {
        self.keyed_step(name, body)
            .instrument(step_span(name, false))
            .await
    }

    /// The result recorded for step `(channel, idx)` before this attempt, decoded, if one
    /// was (noted on the step's span).
    fn recorded<T: DeserializeOwned>(
        &self,
        name: &str,
        channel: &str,
        idx: i64,
    ) -> Option<Result<T, NodeError>> {
        let raw = self
            .inner
            .recorded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(channel.to_string(), idx))
            .cloned();
        tracing::Span::current().record("step.replayed", raw.is_some());
        raw.map(|raw| {
            serde_json::from_str(raw.get()).map_err(|e| {
                NodeError::fatal(format!(
                    "recorded result of step `{name}` does not fit: {e}"
                ))
            })
        })
    }

    async fn keyed_step<T, E, F>(&self, name: &str, body: F) -> Result<T, NodeError>
    where
        T: Serialize + DeserializeOwned,
        E: Into<NodeError>,
        F: Future<Output = Result<T, E>>,
    {
        let channel = format!("{STEP_CHANNEL_PREFIX}{name}");
        let idx = self.inner.next_step_index(name);
        if let Some(recorded) = self.recorded(name, &channel, idx) {
            return recorded;
        }
        let value = body.await.map_err(Into::into)?;
        let raw: Json = serde_json::value::to_raw_value(&value).map_err(|e| {
            NodeError::fatal(format!("result of step `{name}` does not serialize: {e}"))
        })?;
        let write = PendingWrite {
            task_id: self.inner.task_id.clone(),
            channel: channel.clone(),
            idx,
            value: raw.clone(),
        };
        let stored = self
            .inner
            .run
            .put_writes(&self.inner.checkpoint_id, vec![write])
            .instrument(tracing::info_span!("checkpoint.put_writes", writes = 1))
            .await;
        if let Err(e) = stored {
            let err = NodeError::unavailable(format!(
                "the result of step `{name}` could not be recorded: {e}"
            ));
            *self
                .inner
                .storage_failure
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = Some(e);
            return Err(err);
        }
        // A retry of the node in this process gets it back.
        self.inner
            .recorded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((channel, idx), raw);
        Ok(value)
    }
}

/// The span of a durable step: its name, whether it was replayed (set when known) and
/// whether it is kept until the node suspends (a memo step).
fn step_span(name: &str, deferred: bool) -> tracing::Span {
    let span = tracing::info_span!(
        "durable_step",
        otel.name = tracing::field::Empty,
        step.name = name,
        step.replayed = tracing::field::Empty,
        step.deferred = deferred,
    );
    crate::observe::name_span(&span, format_args!("step {name}"));
    span
}
