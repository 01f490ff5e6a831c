//! Checkpoint storage: the [`Checkpointer`] trait and its backends.
//!
//! A checkpoint is an append-only record of a thread's state after a step: its parent, its
//! metadata, the engine's plan for the next step, and for every field the *version* that
//! holds its value. A version is the id of the checkpoint that last wrote the field, so a
//! field that did not change is not written again. Fields of append-style reducers are
//! stored as *deltas* (the update a write added, on top of the previous version) with a full
//! *snapshot* now and then; [`Checkpointer::get`] returns each field as its chain (the
//! nearest snapshot and the deltas after it), and the engine folds the chain with the field's
//! reducer. A backend never needs to know the state's type.
//!
//! *Pending writes* are stored per checkpoint and task: the result of a task that finished
//! while others in its step still ran, interrupts and the values that resume them, durable
//! step results, errors. They are what makes a resumed or recovered step skip finished work.
//!
//! Backends: [`MemoryCheckpointer`] (tests, benchmarks), and with features `sqlite` and
//! `postgres` the durable ones. All pass the conformance suite in `testkit`.

mod claim;
mod memory;
#[cfg(all(test, feature = "postgres", feature = "testkit"))]
mod pg_claims_tests;
#[cfg(feature = "postgres")]
mod pg_fence_batch;
#[cfg(all(test, feature = "postgres", feature = "testkit"))]
mod pg_flush_tests;
#[cfg(feature = "postgres")]
mod pg_group_commit;
#[cfg(all(test, feature = "postgres", feature = "testkit"))]
mod pg_plans_tests;
#[cfg(feature = "postgres")]
mod pg_sql;
#[cfg(feature = "postgres")]
mod pg_writes_batch;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(all(test, feature = "sqlite", feature = "testkit"))]
mod sqlite_plans_tests;
#[cfg(feature = "sqlite")]
mod sqlite_sql;
#[cfg(feature = "sqlite")]
mod sqlite_unsynced;
mod timing;

pub use claim::FenceClaim;
pub use memory::MemoryCheckpointer;
#[cfg(feature = "postgres")]
pub use postgres::PostgresCheckpointer;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use sql::without_nul;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteCheckpointer;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Raw JSON text, stored and returned without being re-parsed.
pub type Json = Box<RawValue>;

/// Makes a [`Json`] from JSON text that is known to be valid.
///
/// # Errors
/// When `text` is not valid JSON.
pub fn json(text: String) -> Result<Json, CheckpointError> {
    RawValue::from_string(text).map_err(|e| CheckpointError::Decode(e.to_string()))
}

/// One checkpoint's record (without field values).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CheckpointRecord {
    /// The thread it belongs to.
    pub thread_id: String,
    /// Its id (a UUIDv7: ids sort by creation time).
    pub checkpoint_id: String,
    /// The checkpoint it was derived from.
    pub parent_id: Option<String>,
    /// Its position in the thread's write order (1, 2, ...): the head has the highest.
    /// A put must use the expected head's `seq + 1`.
    pub seq: i64,
    /// When it was written, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// Metadata: `source` (input, loop, update, fork), `step`, `run_id`, `turn`, and the keys
    /// a caller added. Filters in [`ListOptions`] match on it.
    pub metadata: Map<String, Value>,
    /// For every field that has a value: the version that holds it.
    pub versions: BTreeMap<String, String>,
    /// The engine's plan for the next step (tasks due, join barriers, snapshot counters),
    /// as JSON text.
    pub plan: Json,
}

impl CheckpointRecord {
    /// The metadata's `run_id`, if any.
    pub fn run_id(&self) -> Option<&str> {
        self.metadata.get("run_id").and_then(Value::as_str)
    }
}

/// One stored value of one field.
#[derive(Clone, Debug)]
pub struct FieldBlob {
    /// The field's name.
    pub field: String,
    /// This version's id (the id of the checkpoint that wrote it).
    pub version: String,
    /// For a delta: the version it applies on top of (`None`: on top of the default).
    pub prev: Option<String>,
    /// A delta (a JSON array of the field's updates, applied in order) or a full value.
    pub delta: bool,
    /// The JSON.
    pub value: Json,
}

/// A write recorded against a checkpoint by one of its tasks.
#[derive(Clone, Debug)]
pub struct PendingWrite {
    /// The task that wrote it.
    pub task_id: String,
    /// What it is (`__result__`, `__interrupt__`, `__resume__`, `__step__:<name>`, `__error__`).
    pub channel: String,
    /// Its position among the task's writes to the channel.
    pub idx: i64,
    /// The JSON.
    pub value: Json,
}

/// The channel whose writes replace an earlier write with the same key; every other
/// channel keeps the first write (so a recorded durable step result never changes).
pub const REPLACING_CHANNEL: &str = "__error__";

/// A fencing token: the right of one writer (a worker holding a run's lease) to write a
/// thread, at an epoch that only grows.
///
/// Whoever hands the thread to a new writer calls [`Checkpointer::advance_fence`] with a
/// higher epoch *before* the new writer reads the thread. A fenced write is stored only
/// while its epoch is the thread's current one (checked in the same statement that stores
/// it, and ordered against the advance by a row lock); any other is refused with
/// [`CheckpointError::Fenced`], so a writer that lost its lease (a paused process, a network
/// partition, a database outage longer than the lease) can never write over its successor.
/// Writes without a fence (`update_state` from an operator, tests) are not checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fence {
    /// What is fenced: the thread's id.
    pub key: String,
    /// The writer's epoch.
    pub epoch: i64,
}

impl Fence {
    /// The fence of `key` at `epoch`.
    pub fn new(key: impl Into<String>, epoch: i64) -> Self {
        Fence {
            key: key.into(),
            epoch,
        }
    }

    /// `Ok` while the key's fence stands at this writer's epoch (`current`), else this
    /// writer's refusal, [`CheckpointError::Fenced`].
    ///
    /// # Errors
    /// [`CheckpointError::Fenced`] when `current` is another epoch.
    pub fn check(&self, current: i64) -> Result<(), CheckpointError> {
        if current == self.epoch {
            Ok(())
        } else {
            Err(CheckpointError::Fenced {
                key: self.key.clone(),
                epoch: self.epoch,
                current,
            })
        }
    }
}

/// When a write's commit must be on disk.
///
/// A run's records of its request (its input checkpoint, a resume's answers) are held by
/// the caller until the run's first checkpoint after them, which is [`Flush::Now`]: a
/// database that crashes before that loses the run's progress in any case, and the caller
/// (or the server's run record) still has the request. Such writes may ask for
/// [`Flush::WithNext`]: committed and visible to every reader when the write returns, and
/// durable with the writer's next [`Flush::Now`] write (or [`Checkpointer::flush`]), so the
/// run's first node need not wait for the disk. Every run ends with its writes flushed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Flush {
    /// On disk before the write returns.
    #[default]
    Now,
    /// Committed when the write returns; on disk by the next flushed write to the store.
    /// Backends that cannot tell the two apart flush at once.
    WithNext,
}

/// A checkpoint to store, with the field versions it introduces.
#[derive(Clone, Debug)]
pub struct PutCheckpoint {
    /// The record.
    pub record: CheckpointRecord,
    /// The values of the fields this checkpoint wrote.
    pub blobs: Vec<FieldBlob>,
    /// The thread's head this checkpoint was computed from; if another writer moved the
    /// head in the meantime the put fails with [`CheckpointError::Conflict`].
    pub expected_head: Option<String>,
    /// The writer's fence, if it holds one: the put fails with [`CheckpointError::Fenced`]
    /// once a newer epoch was handed out.
    pub fence: Option<Fence>,
    /// When the commit must be on disk.
    pub flush: Flush,
}

/// A field's value as stored: the nearest full value and the deltas written after it.
#[derive(Clone, Debug)]
pub struct FieldChain {
    /// The field's name.
    pub field: String,
    /// The version the checkpoint references.
    pub version: String,
    /// The nearest full value (`None`: start from the default).
    pub base: Option<Json>,
    /// The deltas after `base`, oldest first.
    pub deltas: Vec<Json>,
}

/// A checkpoint read back, with its field chains and pending writes.
#[derive(Clone, Debug)]
pub struct LoadedCheckpoint {
    /// The record.
    pub record: CheckpointRecord,
    /// One chain per entry of `record.versions`.
    pub fields: Vec<FieldChain>,
    /// The pending writes, ordered by task, channel, index.
    pub writes: Vec<PendingWrite>,
}

/// Options of [`Checkpointer::list`].
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// Only checkpoints older than this id.
    pub before: Option<String>,
    /// At most this many.
    pub limit: Option<usize>,
    /// Only checkpoints whose metadata contains every one of these top-level entries.
    pub filter: Option<Map<String, Value>>,
}

impl ListOptions {
    /// Whether a record's metadata matches the filter.
    pub fn matches(&self, metadata: &Map<String, Value>) -> bool {
        self.filter
            .as_ref()
            .is_none_or(|f| f.iter().all(|(k, v)| metadata.get(k) == Some(v)))
    }
}

/// What [`Checkpointer::prune`] keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PruneStrategy {
    /// Only the thread's latest checkpoint (with its pending writes).
    KeepLatest,
    /// Checkpoints written at or after this time (ms since the epoch), and always the latest.
    KeepNewerThan(i64),
    /// Nothing: the whole thread is deleted.
    DeleteAll,
}

/// What a prune removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PruneStats {
    /// Checkpoints deleted.
    pub checkpoints: u64,
    /// Field versions deleted (only those no remaining checkpoint needs).
    pub blobs: u64,
    /// Pending writes deleted.
    pub writes: u64,
}

/// Storage failures. Messages say what happened and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// Another writer moved the thread's head first.
    #[error("thread `{thread_id}` was changed by another writer (expected head {expected:?}, found {actual:?}); reload and retry")]
    Conflict {
        /// The thread.
        thread_id: String,
        /// The head the writer expected.
        expected: Option<String>,
        /// The head found.
        actual: Option<String>,
    },
    /// A checkpoint that does not exist.
    #[error("thread `{thread_id}` has no checkpoint `{checkpoint_id}`")]
    NotFound {
        /// The thread.
        thread_id: String,
        /// The checkpoint asked for.
        checkpoint_id: String,
    },
    /// A stored row that cannot be decoded (corruption or a foreign writer).
    #[error("stored checkpoint data does not decode: {0}")]
    Decode(String),
    /// A field version a checkpoint references is missing.
    #[error("thread `{thread_id}`: field `{field}` version `{version}` is missing from storage")]
    MissingVersion {
        /// The thread.
        thread_id: String,
        /// The field.
        field: String,
        /// The version.
        version: String,
    },
    /// Migrating the database failed: its schema is newer than this binary, an applied
    /// migration was changed, or the database failed (see
    /// [`crate::db::migrate::MigrateError`]).
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    #[error(transparent)]
    Migrate(#[from] crate::db::migrate::MigrateError),
    /// A writer whose fence was superseded: another writer owns the thread now.
    #[error("thread `{key}` belongs to another writer now (epoch {current}, this writer's {epoch}); this writer must stop")]
    Fenced {
        /// The fenced key (the thread).
        key: String,
        /// The refused writer's epoch.
        epoch: i64,
        /// The epoch that holds now.
        current: i64,
    },
    /// The database is unreachable for now (connection lost, restarting, a deadlock or
    /// serialization failure): the same operation may succeed when retried.
    #[error("checkpoint storage is unavailable for now: {0}")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The database failed.
    #[error("checkpoint storage failed: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl CheckpointError {
    /// Wraps a backend error.
    pub fn backend(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        CheckpointError::Backend(Box::new(e))
    }

    /// Whether retrying the same operation later may succeed (the storage was unreachable,
    /// or a transaction lost a deadlock or serialization race).
    pub fn is_transient(&self) -> bool {
        match self {
            CheckpointError::Unavailable(_) => true,
            #[cfg(any(feature = "sqlite", feature = "postgres"))]
            CheckpointError::Migrate(e) => e.is_transient(),
            _ => false,
        }
    }
}

/// Durable storage of checkpoints. See the module docs for the model.
#[async_trait]
pub trait Checkpointer: Send + Sync + 'static {
    /// Stores a checkpoint and its field versions atomically and makes it the thread's head.
    ///
    /// The put is lent, not given: the engine keeps its record as the run's head once it is
    /// stored, and a backend that sends it to a database has no need to own it (one that
    /// keeps it, as the in-memory one does, copies it).
    ///
    /// # Errors
    /// [`CheckpointError::Conflict`] when the head is not `expected_head`,
    /// [`CheckpointError::Fenced`] when the put's fence was superseded; nothing is written.
    async fn put(&self, put: &PutCheckpoint) -> Result<(), CheckpointError>;

    /// [`Checkpointer::put`] by a writer that was not handed its thread yet: advances the
    /// put's fence (as [`Checkpointer::advance_fence`]) and stores the checkpoint, so that a
    /// new claim's first checkpoint costs one commit instead of two (see [`FenceClaim`]).
    /// The fence is advanced even when the checkpoint is refused for a moved head, unless
    /// the put failed as a whole (then nothing is known to be written). A put without a
    /// fence is a plain put. The default advances, then puts; backends override it with one
    /// statement.
    ///
    /// # Errors
    /// [`CheckpointError::Fenced`] when a newer epoch holds the thread,
    /// [`CheckpointError::Conflict`] when the head is not `expected_head`; no checkpoint is
    /// written.
    async fn put_claiming(&self, put: &PutCheckpoint) -> Result<(), CheckpointError> {
        if let Some(f) = &put.fence {
            f.check(self.advance_fence(&f.key, f.epoch).await?)?;
        }
        self.put(put).await
    }

    /// Stores pending writes against a checkpoint. A write whose (task, channel, idx) exists
    /// is ignored, except on [`REPLACING_CHANNEL`] where it replaces the old one.
    ///
    /// # Errors
    /// [`CheckpointError::Fenced`] when `fence` was superseded; nothing is written.
    async fn put_writes(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
        writes: Vec<PendingWrite>,
        fence: Option<&Fence>,
    ) -> Result<(), CheckpointError>;

    /// [`Checkpointer::put_writes`] only while `checkpoint_id` is the thread's head and holds
    /// exactly `expected_writes` pending writes (so a caller's copy of it is current):
    /// `Ok(false)` stores nothing. A run resuming from its own copy of the checkpoint it
    /// stopped at records the answers with this instead of reading the checkpoint first.
    /// The default reads the head, then writes; backends override it with one statement.
    /// `flush` says when the writes must be on disk (see [`Flush`]).
    ///
    /// # Errors
    /// [`CheckpointError::Fenced`] when `fence` was superseded; nothing is written.
    async fn put_writes_at_head(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
        expected_writes: usize,
        writes: Vec<PendingWrite>,
        fence: Option<&Fence>,
        flush: Flush,
    ) -> Result<bool, CheckpointError> {
        let _ = flush;
        let Some(head) = self.get_without_values(thread_id, None).await? else {
            return Ok(false);
        };
        if head.record.checkpoint_id != checkpoint_id || head.writes.len() != expected_writes {
            return Ok(false);
        }
        self.put_writes(thread_id, checkpoint_id, writes, fence)
            .await?;
        Ok(true)
    }

    /// Puts every write to `thread_id` stored with [`Flush::WithNext`] on disk. The default
    /// does nothing: a backend that defers no flush has nothing to do.
    ///
    /// # Errors
    /// Storage errors.
    async fn flush(&self, thread_id: &str) -> Result<(), CheckpointError> {
        let _ = thread_id;
        Ok(())
    }

    /// Hands thread `key` to the writer holding `epoch`: from now on fenced writes with a
    /// lower epoch are refused (a lower `epoch` than the current one changes nothing).
    /// Returns the epoch in force afterwards.
    async fn advance_fence(&self, key: &str, epoch: i64) -> Result<i64, CheckpointError>;

    /// The thread's latest checkpoint (`checkpoint_id: None`) or a given one, with its field
    /// chains and pending writes; `None` when it does not exist.
    async fn get(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<LoadedCheckpoint>, CheckpointError>;

    /// Like [`Checkpointer::get`] but without field values (`fields` is empty): what a
    /// caller that already holds the state of that checkpoint needs. Backends override it to
    /// skip reading the chains.
    async fn get_without_values(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<LoadedCheckpoint>, CheckpointError> {
        Ok(self.get(thread_id, checkpoint_id).await?.map(|mut l| {
            l.fields.clear();
            l
        }))
    }

    /// The id of the thread's latest checkpoint.
    async fn head(&self, thread_id: &str) -> Result<Option<String>, CheckpointError>;

    /// Checkpoint records, newest first.
    async fn list(
        &self,
        thread_id: &str,
        options: &ListOptions,
    ) -> Result<Vec<CheckpointRecord>, CheckpointError>;

    /// Deletes everything stored for a thread, its fence and its subgraphs' namespaces (the
    /// threads `"{thread}|..."`, see [`crate::graph::subgraph`]) included; a missing thread
    /// is not an error.
    async fn delete_thread(&self, thread_id: &str) -> Result<(), CheckpointError>;

    /// Copies every checkpoint, field version and pending write of `from` to the new thread
    /// `to` (which must not exist), its subgraphs' namespaces included (as `"{to}|..."`);
    /// ids are kept so history reads the same.
    async fn copy_thread(&self, from: &str, to: &str) -> Result<(), CheckpointError>;

    /// Deletes the checkpoints the given runs wrote (and their pending writes), keeps every
    /// field version another checkpoint still needs, and moves the head back to the newest
    /// checkpoint left.
    async fn delete_for_runs(
        &self,
        thread_id: &str,
        run_ids: &[String],
    ) -> Result<PruneStats, CheckpointError>;

    /// A cached node result (see [`crate::CachePolicy`]): the value stored under
    /// (`namespace`, `key`) unless it expired before `now_ms`.
    async fn cache_get(
        &self,
        namespace: &str,
        key: &str,
        now_ms: i64,
    ) -> Result<Option<Json>, CheckpointError>;

    /// Stores (or replaces) a cached node result, to expire at `expires_at_ms` (`None`:
    /// never); entries of the namespace that expired before `now_ms` may be removed.
    async fn cache_put(
        &self,
        namespace: &str,
        key: &str,
        value: Json,
        expires_at_ms: Option<i64>,
        now_ms: i64,
    ) -> Result<(), CheckpointError>;

    /// Retention: removes old checkpoints of a thread without breaking the delta chains of
    /// the ones kept.
    async fn prune(
        &self,
        thread_id: &str,
        strategy: PruneStrategy,
    ) -> Result<PruneStats, CheckpointError>;
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
