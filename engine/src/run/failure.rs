//! Recording a run's failure on its thread after the fact: when a run ends in a failure that
//! its node could not record (storage was down at the time), or gives up on a storage error
//! after its retries, whoever ran it records the failure here so the thread reads exactly as
//! if the node had failed: the next turn starts from the state before the failed turn.
//!
//! And settling a failed turn: what it leaves behind (its question, the partial answer a
//! node streamed before it failed) written on the state before it, so the next turn starts
//! from there instead.

use std::sync::Arc;

use tracing::Instrument;

use crate::checkpoint::Fence;
use crate::graph::CompiledGraph;
use crate::state::{State, StateUpdate};
use crate::stream::{NullSink, StreamModes};

use super::cursor::{write, Cursor, StepWrites, StoredError, ERROR};
use super::executor::Executor;
use super::{RunConfig, RunError};

impl<S: State> CompiledGraph<S> {
    /// Records that run `run_id` failed with `message` (in `node`, when known), if the
    /// thread's latest checkpoint was written by that run and still has work due. Returns
    /// whether it recorded the failure now; a failure recorded before, a run that wrote no
    /// checkpoint (nothing of its turn is on the thread) and a finished run change nothing.
    ///
    /// # Errors
    /// Storage errors (a superseded `fence` included).
    pub async fn record_failure(
        &self,
        thread_id: &str,
        run_id: &str,
        node: Option<&str>,
        message: &str,
        fence: Option<&Fence>,
    ) -> Result<bool, RunError> {
        let Some(loaded) = self
            .checkpointer
            .get_without_values(thread_id, None)
            .await?
        else {
            return Ok(false);
        };
        if loaded.record.run_id() != Some(run_id) {
            return Ok(false);
        }
        let head = Cursor::<S>::with_state(loaded, Default::default())?;
        if head.failed() {
            return Ok(false);
        }
        let due = head.plan.tasks.iter().find(|t| {
            head.writes
                .get(&t.id)
                .is_none_or(|w| w.result.is_none() && w.unanswered().next().is_none())
        });
        let Some(task) = due else {
            return Ok(false);
        };
        let error = StoredError {
            node: node.unwrap_or(&task.node).to_string(),
            message: message.to_string(),
        };
        let checkpoint_id = head.id().unwrap_or_default().to_string();
        self.checkpointer
            .put_writes(
                thread_id,
                &checkpoint_id,
                vec![write(&task.id, ERROR, 0, &error)?],
                fence,
            )
            .instrument(tracing::info_span!("checkpoint.put_writes", writes = 1))
            .await?;
        self.forget_cached(thread_id);
        Ok(true)
    }

    /// Settles run `run_id`'s failed turn: applies `update` to the state the turn started
    /// from (its `turn_base`; the empty state for a thread's first turn) and writes the result
    /// as a new checkpoint with nothing due, so the thread keeps what `update` says of the
    /// failed turn (its question and a partial answer, say) and the next turn starts from
    /// there. Only when the thread's latest checkpoint is `run_id`'s recorded failure;
    /// otherwise nothing is written and `None` returned. Returns the new checkpoint's id.
    ///
    /// # Errors
    /// An update that does not fit the state; storage errors (a superseded `fence`
    /// included).
    pub async fn settle_failed_turn(
        &self,
        thread_id: &str,
        run_id: &str,
        mut update: S::Update,
        fence: Option<&Fence>,
    ) -> Result<Option<String>, RunError> {
        let mut cfg = RunConfig::new(thread_id)
            .run_id(run_id)
            .stream_modes(StreamModes::NONE);
        cfg.fence = fence.cloned();
        let mut ex = Executor::new(self, cfg, Arc::new(NullSink));
        let Some(head) = ex.load(None).await? else {
            return Ok(None);
        };
        let failed_here = head.record.as_ref().and_then(|r| r.run_id()) == Some(run_id);
        if !failed_here || !head.failed() {
            return Ok(None);
        }
        ex.set_head(&head);
        let mut cur = match head.turn_base() {
            Some(base) => ex.load(Some(base)).await?.unwrap_or_else(Cursor::empty),
            None => Cursor::empty(),
        };
        let mut writes = StepWrites::new::<S>();
        update.normalize();
        writes.record::<S>(&update)?;
        Arc::make_mut(&mut cur.state).apply(update)?;
        let mut plan = cur.plan.clone();
        plan.tasks.clear();
        let mut meta = ex.metadata("update", cur.step() + 1, head.turn(), head.turn_base());
        meta.insert("settles".into(), "failed_turn".into());
        ex.save(&mut cur, &writes, plan, meta).await?;
        self.forget_cached(thread_id);
        Ok(cur.id().map(str::to_string))
    }
}
