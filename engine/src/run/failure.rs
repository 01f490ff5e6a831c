//! Recording a run's failure on its thread after the fact: when a run ends in a failure that
//! its node could not record (storage was down at the time), or gives up on a storage error
//! after its retries, whoever ran it records the failure here so the thread reads exactly as
//! if the node had failed: the next turn starts from the state before the failed turn.

use crate::checkpoint::Fence;
use crate::graph::CompiledGraph;
use crate::state::State;

use super::cursor::{write, Cursor, StoredError, ERROR};
use super::RunError;

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
            .await?;
        self.forget_cached(thread_id);
        Ok(true)
    }
}
