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

use metrics::{Key, Label};

use crate::metric;

/// Seconds a checkpoint write took.
pub(crate) const WRITE_SECONDS: &str = "palgraph_checkpoint_write_duration_seconds";
/// Seconds a checkpoint load took.
pub(crate) const LOAD_SECONDS: &str = "palgraph_checkpoint_load_duration_seconds";
/// Rows one group commit carried.
pub(crate) const BATCH_SIZE: &str = "palgraph_group_commit_batch_size";

/// Where checkpoints are stored (the `backend` label).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Backend {
    /// In memory.
    Memory,
    /// SQLite.
    Sqlite,
    /// Postgres.
    Postgres,
}

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

/// The labels `backend` and `kind` of one timing, as a `static`.
macro_rules! labels {
    ($backend:literal, $kind:literal) => {{
        static LABELS: [Label; 2] = [
            Label::from_static_parts("backend", $backend),
            Label::from_static_parts("kind", $kind),
        ];
        &LABELS
    }};
}

/// The four keys of a backend, by [`Op`].
macro_rules! keys_of {
    ($backend:literal) => {
        [
            Key::from_static_parts(WRITE_SECONDS, labels!($backend, "checkpoint")),
            Key::from_static_parts(WRITE_SECONDS, labels!($backend, "writes")),
            Key::from_static_parts(LOAD_SECONDS, labels!($backend, "values")),
            Key::from_static_parts(LOAD_SECONDS, labels!($backend, "metadata")),
        ]
    };
}

/// Every key of the timings, by [`Backend`] then [`Op`] (no key is built when recording).
static KEYS: [[Key; 4]; 3] = [keys_of!("memory"), keys_of!("sqlite"), keys_of!("postgres")];

/// The key of the batch sizes of the Postgres group commit.
#[cfg(feature = "postgres")]
static BATCH_KEY: Key = Key::from_static_parts(BATCH_SIZE, {
    static LABELS: [Label; 1] = [Label::from_static_parts("kind", "checkpoints")];
    &LABELS
});

/// Records the time from its making to its drop (so an error or a cancelled call counts
/// too: what the caller waited for).
#[must_use = "the timer records when it is dropped"]
pub(crate) struct Timer {
    key: &'static Key,
    started: Instant,
}

impl Timer {
    /// Starts timing `op` on `backend`.
    pub(crate) fn start(backend: Backend, op: Op) -> Self {
        Timer {
            key: &KEYS[backend as usize][op as usize],
            started: Instant::now(),
        }
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        metric::histogram(self.key, self.started.elapsed().as_secs_f64());
    }
}

/// Records how many checkpoints one group commit carried.
#[cfg(feature = "postgres")]
pub(crate) fn batch(rows: usize) {
    metric::histogram(&BATCH_KEY, rows as f64);
}

/// Records how many calls' pending writes one group commit carried.
#[cfg(feature = "postgres")]
pub(crate) fn writes_batch(calls: usize) {
    metrics::histogram!(BATCH_SIZE, "kind" => "checkpoint_writes").record(calls as f64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_backend_and_op_has_its_labels() {
        let labels = |b, o| {
            let t = Timer::start(b, o);
            let k = t.key;
            std::mem::forget(t);
            let l: Vec<_> = k.labels().map(|l| l.value().to_string()).collect();
            (k.name().to_string(), l)
        };
        assert_eq!(
            labels(Backend::Postgres, Op::Writes),
            (
                WRITE_SECONDS.into(),
                vec!["postgres".into(), "writes".into()]
            )
        );
        assert_eq!(
            labels(Backend::Memory, Op::LoadMetadata),
            (
                LOAD_SECONDS.into(),
                vec!["memory".into(), "metadata".into()]
            )
        );
        assert_eq!(
            labels(Backend::Sqlite, Op::Put),
            (
                WRITE_SECONDS.into(),
                vec!["sqlite".into(), "checkpoint".into()]
            )
        );
        assert_eq!(
            labels(Backend::Sqlite, Op::Load),
            (LOAD_SECONDS.into(), vec!["sqlite".into(), "values".into()])
        );
    }
}
