//! A fence handed to its writer by the writer's first write.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::{CheckpointError, Checkpointer, Fence, PutCheckpoint};

/// A writer's [`Fence`] that is advanced by the writer's first write instead of before it
/// reads, which saves a new claim of a thread one commit: the advance goes in the same
/// statement as the claim's first checkpoint ([`Checkpointer::put_claiming`]).
///
/// The advance may wait because everything a run does before its first write is reading
/// (the head its input applies to), and nothing it read is trusted without the advance: a
/// writer of an earlier claim that writes after those reads moves the head, so the first
/// put is refused as a [`CheckpointError::Conflict`] (the claim is then held, by the refused
/// put or by [`FenceClaim::hold`], and the run reads again). Any other write, and every
/// node, waits for the fence: a run holds it before its first step and before it records
/// a resume's answers.
///
/// Clones share the state: the caller keeps one to learn whether the run held the fence
/// (a run that wrote nothing did not) before it records anything itself.
#[derive(Clone, Debug)]
pub struct FenceClaim {
    fence: Fence,
    held: Arc<AtomicBool>,
}

impl FenceClaim {
    /// A claim of `fence`, not advanced yet.
    pub fn new(fence: Fence) -> Self {
        FenceClaim {
            fence,
            held: Arc::default(),
        }
    }

    /// The fence claimed.
    pub fn fence(&self) -> &Fence {
        &self.fence
    }

    /// Whether the fence was advanced to this claim's epoch (by a write or by
    /// [`FenceClaim::hold`]).
    pub fn is_held(&self) -> bool {
        self.held.load(Ordering::Acquire)
    }

    /// Advances the fence unless it is held already.
    ///
    /// # Errors
    /// [`CheckpointError::Fenced`] when a newer epoch holds the thread; storage errors.
    pub async fn hold(&self, cp: &dyn Checkpointer) -> Result<(), CheckpointError> {
        if self.is_held() {
            return Ok(());
        }
        let current = cp.advance_fence(&self.fence.key, self.fence.epoch).await?;
        self.fence.check(current)?;
        self.held.store(true, Ordering::Release);
        Ok(())
    }

    /// Stores `put` (which carries this claim's fence), advancing the fence with it while
    /// it is not held.
    ///
    /// # Errors
    /// As [`Checkpointer::put_claiming`].
    pub(crate) async fn put(
        &self,
        cp: &dyn Checkpointer,
        put: &PutCheckpoint,
    ) -> Result<(), CheckpointError> {
        if self.is_held() {
            return cp.put(put).await;
        }
        cp.put_claiming(put).await?;
        self.held.store(true, Ordering::Release);
        Ok(())
    }
}
