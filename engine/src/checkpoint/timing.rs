//! What checkpoint storage takes, recorded through the [`metrics`] facade (a no-op unless
//! the process installed a recorder, as `palgraph serve` does for `GET /metrics`):
//!
//! - `palgraph_checkpoint_write_duration_seconds{backend, kind}`: a checkpoint put
//!   (`kind="checkpoint"`) or a task's pending writes (`kind="writes"`);
//! - `palgraph_checkpoint_load_duration_seconds{backend, kind}`: a checkpoint read with its
//!   values (`kind="values"`) or without them (`kind="metadata"`, a head the engine has
//!   cached);
//! - `palgraph_group_commit_batch_size{kind}`: the checkpoints (`kind="checkpoints"`) or
//!   the tasks' pending writes (`kind="checkpoint_writes"`) one group commit carried
//!   (Postgres).

use std::time::Instant;

/// Seconds a checkpoint write took.
pub(crate) const WRITE_SECONDS: &str = "palgraph_checkpoint_write_duration_seconds";
/// Seconds a checkpoint load took.
pub(crate) const LOAD_SECONDS: &str = "palgraph_checkpoint_load_duration_seconds";
/// Rows one group commit carried.
pub(crate) const BATCH_SIZE: &str = "palgraph_group_commit_batch_size";

/// What is timed.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    /// A checkpoint put.
    Put,
    /// Pending writes of a task.
    Writes,
    /// A checkpoint read with its values.
    Load,
    /// A checkpoint read without its values.
    LoadMetadata,
}

/// Records the time from its making to its drop (so an error or a cancelled call counts
/// too: what the caller waited for).
#[must_use = "the timer records when it is dropped"]
pub(crate) struct Timer {
    backend: &'static str,
    op: Op,
    started: Instant,
}

impl Timer {
    /// Starts timing `op` on `backend` (`memory`, `sqlite`, `postgres`).
    pub(crate) fn start(backend: &'static str, op: Op) -> Self {
        Timer {
            backend,
            op,
            started: Instant::now(),
        }
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        let secs = self.started.elapsed().as_secs_f64();
        match self.op {
            Op::Put => {
                metrics::histogram!(WRITE_SECONDS, "backend" => self.backend, "kind" => "checkpoint")
                    .record(secs);
            }
            Op::Writes => {
                metrics::histogram!(WRITE_SECONDS, "backend" => self.backend, "kind" => "writes")
                    .record(secs);
            }
            Op::Load => {
                metrics::histogram!(LOAD_SECONDS, "backend" => self.backend, "kind" => "values")
                    .record(secs);
            }
            Op::LoadMetadata => {
                metrics::histogram!(LOAD_SECONDS, "backend" => self.backend, "kind" => "metadata")
                    .record(secs);
            }
        }
    }
}

/// Records how many checkpoints one group commit carried.
#[cfg(feature = "postgres")]
pub(crate) fn batch(rows: usize) {
    metrics::histogram!(BATCH_SIZE, "kind" => "checkpoints").record(rows as f64);
}

/// Records how many calls' pending writes one group commit carried.
pub(crate) fn writes_batch(calls: usize) {
    metrics::histogram!(BATCH_SIZE, "kind" => "checkpoint_writes").record(calls as f64);
}
