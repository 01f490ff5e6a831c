//! The server's own tables: threads, runs (the work queue, with worker leases) and run
//! events (what watchers replay). One trait, implemented once over SQL (`sql`) with the
//! little that differs between SQLite and Postgres in a dialect each.

#[cfg(test)]
mod batch_tests;
#[cfg(test)]
mod check_tests;
mod dialect;
#[cfg(test)]
mod lock_order_tests;
mod migrations;
mod packed;
mod pg_listen;
pub mod postgres;
mod rows;
mod run_batches;
pub(crate) mod sql;
pub(crate) mod sqlite;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod ttl_tests;

pub use migrations::MIGRATIONS;
pub use packed::stored_event;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What went wrong in the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A thread or run id that exists already.
    #[error("{0} already exists")]
    Exists(String),
    /// A thread or run that does not exist.
    #[error("{0} not found")]
    NotFound(String),
    /// A run created with [`NewRun::check_thread`] on a thread whose metadata names another
    /// graph: nothing was written; the caller decides whether the thread may change graphs.
    #[error("thread `{0}` was last run with another graph")]
    OtherGraph(String),
    /// A second run on a busy thread under the `reject` strategy.
    #[error("thread `{0}` is already running a task; wait for it to finish, cancel it, or choose another multitask strategy")]
    Busy(String),
    /// The server is shutting down and takes no new runs.
    #[error("the server is shutting down; retry on another replica")]
    ShuttingDown,
    /// The database failed.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// A stored value that does not decode.
    #[error("stored value does not decode: {0}")]
    Decode(String),
}

/// A thread.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Thread {
    /// Its id.
    pub thread_id: String,
    /// The user it belongs to.
    pub owner: String,
    /// Metadata (LangGraph keeps `graph_id` and `assistant_id` here).
    pub metadata: Value,
    /// idle, busy, interrupted or error.
    pub status: String,
    /// Created, ms since the epoch.
    pub created_at_ms: i64,
    /// Updated, ms since the epoch.
    pub updated_at_ms: i64,
}

/// Gives an enum its stored (and wire) names, and stores it as that text in any database
/// whose text type it can use: `as_str`, `parse` and sqlx's `Type`, `Encode` and `Decode`.
macro_rules! stored_as_text {
    ($ty:ident { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// Its stored name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }

            /// Parses a stored name.
            pub fn parse(s: &str) -> Option<Self> {
                match s {
                    $($name => Some($ty::$variant),)+
                    _ => None,
                }
            }
        }

        impl<DB: sqlx::Database> sqlx::Type<DB> for $ty
        where
            str: sqlx::Type<DB>,
        {
            fn type_info() -> DB::TypeInfo {
                <str as sqlx::Type<DB>>::type_info()
            }

            fn compatible(ty: &DB::TypeInfo) -> bool {
                <str as sqlx::Type<DB>>::compatible(ty)
            }
        }

        impl<'q, DB: sqlx::Database> sqlx::Encode<'q, DB> for $ty
        where
            for<'a> &'a str: sqlx::Encode<'a, DB>,
        {
            fn encode_by_ref(
                &self,
                buf: &mut DB::ArgumentBuffer,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                <&str as sqlx::Encode<'_, DB>>::encode_by_ref(&self.as_str(), buf)
            }
        }

        impl<'r, DB: sqlx::Database> sqlx::Decode<'r, DB> for $ty
        where
            &'r str: sqlx::Decode<'r, DB>,
        {
            fn decode(value: DB::ValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
                let s = <&str as sqlx::Decode<DB>>::decode(value)?;
                Self::parse(s)
                    .ok_or_else(|| format!("`{s}` is not a {}", stringify!($ty)).into())
            }
        }
    };
}

mod ttl;
pub use ttl::{ThreadTtl, TtlStrategy};

/// Run states as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Waiting for a worker.
    Pending,
    /// A worker holds it.
    Running,
    /// Reached the end.
    Success,
    /// Failed.
    Error,
    /// Stopped at an interrupt, waiting for the user.
    Interrupted,
    /// Cancelled.
    Cancelled,
}

stored_as_text!(RunState {
    Pending => "pending",
    Running => "running",
    Success => "success",
    Error => "error",
    Interrupted => "interrupted",
    Cancelled => "cancelled",
});

impl RunState {
    /// Whether the run is over.
    pub fn is_final(self) -> bool {
        !matches!(self, RunState::Pending | RunState::Running)
    }
}

/// How a second run on a busy thread is handled (LangGraph's multitask strategies).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MultitaskStrategy {
    /// Refuse it (409).
    Reject,
    /// Cancel the running run (reason `superseded`), keep its progress, then run this one.
    Interrupt,
    /// Cancel the running run and delete it and its checkpoints, then run this one.
    Rollback,
    /// Run it after the current one.
    Enqueue,
}

stored_as_text!(MultitaskStrategy {
    Reject => "reject",
    Interrupt => "interrupt",
    Rollback => "rollback",
    Enqueue => "enqueue",
});

/// A cancel asked of a run: what to do with its work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CancelAction {
    /// Stop it; keep what it completed.
    Interrupt,
    /// Stop it and delete it and its checkpoints.
    Rollback,
}

stored_as_text!(CancelAction {
    Interrupt => "interrupt",
    Rollback => "rollback",
});

impl StoreError {
    /// Whether the same operation may succeed when retried (the database was unreachable,
    /// or the transaction lost a deadlock or a serialization race).
    pub fn is_transient(&self) -> bool {
        matches!(self, StoreError::Database(e) if palgraph::db::is_transient(e))
    }
}

/// A run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Run {
    /// Its id (a UUIDv7).
    pub run_id: String,
    /// Its thread.
    pub thread_id: String,
    /// Its place among its thread's runs (1, 2, ...), assigned under the thread's lock: a
    /// thread's runs execute in this order.
    pub thread_seq: i64,
    /// The user.
    pub owner: String,
    /// The assistant it runs.
    pub assistant_id: String,
    /// The graph behind the assistant.
    pub graph_id: String,
    /// Its state.
    pub status: RunState,
    /// What to run: input or command, config, context, stream modes (see `runs::RunSpec`).
    pub kwargs: Value,
    /// Caller metadata.
    pub metadata: Value,
    /// Its multitask strategy.
    pub multitask_strategy: MultitaskStrategy,
    /// The client's idempotency key.
    pub idempotency_key: Option<String>,
    /// A requested cancel (action), if any.
    pub cancel_action: Option<CancelAction>,
    /// Why it was cancelled (`user_cancelled`, `superseded`, `disconnect`, ...).
    pub cancel_reason: Option<String>,
    /// The worker holding it.
    pub worker_id: Option<String>,
    /// Until when the worker's lease holds (ms since the epoch).
    pub lease_until_ms: Option<i64>,
    /// How many times a worker claimed it: the claim's epoch, which fences every write the
    /// worker makes for the run.
    pub attempt: i64,
    /// The error of a failed run.
    pub error: Option<String>,
    /// Created (ms).
    pub created_at_ms: i64,
    /// Updated (ms).
    pub updated_at_ms: i64,
    /// The W3C `traceparent` of the span it was created under, when traces were exported:
    /// the parent of its run span wherever it executes.
    pub trace_context: Option<String>,
}

/// A run to create.
#[derive(Clone, Debug)]
pub struct NewRun {
    /// Its id.
    pub run_id: String,
    /// The thread (must exist and belong to `owner`).
    pub thread_id: String,
    /// The user.
    pub owner: String,
    /// The assistant.
    pub assistant_id: String,
    /// Its graph.
    pub graph_id: String,
    /// What to run.
    pub kwargs: Value,
    /// Caller metadata.
    pub metadata: Value,
    /// What to do when the thread is busy.
    pub multitask_strategy: MultitaskStrategy,
    /// Makes a retried create return the same run.
    pub idempotency_key: Option<String>,
    /// The W3C `traceparent` of the span creating it (see [`crate::telemetry`]).
    pub trace_context: Option<String>,
    /// A thread to create in the same transaction when it does not exist yet (a run on a
    /// new thread costs one commit, not two). An existing thread of another owner is
    /// [`StoreError::Exists`].
    pub new_thread: Option<Thread>,
    /// The thread was not read before this create: the create checks it in the same
    /// transaction. A thread of another owner is [`StoreError::NotFound`], as a missing one
    /// is (also when `new_thread` is set); one whose metadata names a graph other than
    /// `graph_id` is [`StoreError::OtherGraph`], and nothing is written.
    pub check_thread: bool,
    /// Claims the run for this worker in the same transaction when nothing else is active
    /// on its thread (the creating replica runs it at once, without a second write).
    pub claim: Option<ClaimAtCreate>,
}

/// A claim taken with the run's creation ([`NewRun::claim`]).
#[derive(Clone, Debug)]
pub struct ClaimAtCreate {
    /// The worker that runs it.
    pub worker: String,
    /// Its lease, milliseconds from now.
    pub lease_ms: i64,
}

/// The result of creating a run.
#[derive(Clone, Debug)]
pub struct CreatedRun {
    /// The run (the existing one for a repeated idempotency key).
    pub run: Run,
    /// Whether the idempotency key matched an existing run.
    pub existing: bool,
    /// Runs that must be cancelled for this one (interrupt / rollback strategies).
    pub cancelled: Vec<Run>,
}

/// One stored run event.
#[derive(Clone, Debug)]
pub struct EventRow {
    /// The run.
    pub run_id: String,
    /// Its position in the run: increasing, never reused (see `runs::worker`).
    pub seq: i64,
    /// The thread (its run's: not stored with the event, read from the run).
    pub thread_id: String,
    /// The event as stored: one event, or a run's events of one flush window (see
    /// `runs::compact`); the store does not look inside.
    pub event: Value,
    /// The claim that produced it: it is stored only while that claim holds the run.
    pub attempt: i64,
}

/// A worker's claim on a run: every write made under it is refused once the run has been
/// claimed again (by another worker, or by this one after it lost the lease).
#[derive(Clone, Copy, Debug)]
pub struct Claim<'a> {
    /// The run.
    pub run_id: &'a str,
    /// The worker.
    pub worker: &'a str,
    /// The claim's epoch (the run's `attempt` when it was claimed).
    pub attempt: i64,
}

/// How a claimed run ends, as [`Store::finish_run`] records it.
#[derive(Clone, Debug)]
pub struct Finish {
    /// Its final status.
    pub status: RunState,
    /// The error of a failed run.
    pub error: Option<String>,
    /// The terminal event and its seq, stored in the same transaction.
    pub terminal: (i64, Value),
    /// Delete the run and its events instead (a rollback).
    pub delete: bool,
}

/// A held run a heartbeat renewed, with the cancel asked of it, if any.
#[derive(Clone, Debug)]
pub struct Renewed {
    /// The run.
    pub run_id: String,
    /// A requested cancel.
    pub cancel_action: Option<CancelAction>,
    /// Why.
    pub cancel_reason: Option<String>,
}

/// Search filters for threads.
#[derive(Clone, Debug, Default)]
pub struct ThreadQuery {
    /// Metadata entries that must all match.
    pub metadata: serde_json::Map<String, Value>,
    /// Only this status.
    pub status: Option<String>,
    /// Only these ids.
    pub ids: Option<Vec<String>>,
    /// Page size.
    pub limit: i64,
    /// Page offset.
    pub offset: i64,
}

/// What happens when a thread id is created twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IfExists {
    /// Refuse (409).
    #[default]
    Raise,
    /// Return the existing thread.
    DoNothing,
}

/// A change another process announced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notification {
    /// New events of this run are stored.
    Events(String),
    /// A cancel was asked of this run.
    Cancel(String),
    /// A run became claimable; the payload is its thread's id (a new run) or its own id
    /// (a run handed back).
    Runs(String),
    /// A run was created already claimed by the replica that made it; the payload is its
    /// thread's id (the thread's watchers look, the claim loops need not).
    Started(String),
    /// Announcements may have been missed (the listener reconnected): look again.
    Lost,
}

/// The server's storage.
#[async_trait]
pub trait Store: Send + Sync {
    /// Announcements from other processes sharing the database (Postgres LISTEN/NOTIFY);
    /// `None` when the database has a single process (SQLite).
    async fn notifications(&self) -> Option<tokio::sync::mpsc::UnboundedReceiver<Notification>> {
        None
    }

    /// At start, in a database only this process uses: gives back the runs a previous
    /// process left running (their leases cannot be renewed by anyone).
    async fn recover_orphans(&self) -> Result<u64, StoreError> {
        Ok(0)
    }

    /// Creates a thread.
    async fn create_thread(&self, t: Thread, if_exists: IfExists) -> Result<Thread, StoreError>;
    /// A thread, if it exists and belongs to `owner`.
    async fn get_thread(&self, owner: &str, thread_id: &str) -> Result<Option<Thread>, StoreError> {
        Ok(self
            .get_thread_any(thread_id)
            .await?
            .filter(|t| t.owner == owner))
    }
    /// A thread by id, whoever owns it.
    async fn get_thread_any(&self, thread_id: &str) -> Result<Option<Thread>, StoreError>;
    /// The owner's threads, newest update first.
    async fn search_threads(&self, owner: &str, q: &ThreadQuery)
        -> Result<Vec<Thread>, StoreError>;
    /// Merges `patch` into a thread's metadata and, when `ttl` is given, replaces its time
    /// to live, in one transaction.
    async fn patch_thread(
        &self,
        owner: &str,
        thread_id: &str,
        patch: &Value,
        ttl: Option<ThreadTtl>,
    ) -> Result<Option<Thread>, StoreError>;
    /// Deletes a thread with its runs and events (not its checkpoints).
    async fn delete_thread(&self, owner: &str, thread_id: &str) -> Result<bool, StoreError>;
    /// Sets a thread's time to live (`None` clears it); the thread as it is now, or `None`
    /// when the owner has no such thread.
    async fn set_thread_ttl(
        &self,
        owner: &str,
        thread_id: &str,
        ttl: Option<ThreadTtl>,
    ) -> Result<Option<Thread>, StoreError>;
    /// Up to `limit` threads with this strategy whose time to live ran out by `now_ms` and
    /// that have no active run (and, for `keep_latest`, changed since their last sweep),
    /// the longest expired first: an index range, whatever the number of threads.
    async fn expired_threads(
        &self,
        strategy: TtlStrategy,
        now_ms: i64,
        limit: i64,
    ) -> Result<Vec<Thread>, StoreError>;
    /// Takes an expired thread for its sweep if it is still expired and idle at `now_ms`
    /// (a run started or a change made since it was listed keeps it): `delete` deletes its
    /// row, runs and events (its checkpoints and crons are the caller's), `keep_latest`
    /// records the sweep. False when it is no longer due.
    async fn take_expired_thread(
        &self,
        thread_id: &str,
        strategy: TtlStrategy,
        now_ms: i64,
    ) -> Result<bool, StoreError>;

    /// Creates a run under the thread's lock, applying the multitask strategy and the
    /// idempotency key atomically; it is given the thread's next `thread_seq`. A pending run
    /// the strategy cancels gets its terminal event in the same transaction. A refused run
    /// ([`StoreError::OtherGraph`], say) leaves `new` to the caller, who may create it again.
    async fn create_run(&self, new: &NewRun) -> Result<CreatedRun, StoreError>;
    /// A run of the owner's thread.
    async fn get_run(
        &self,
        owner: &str,
        thread_id: &str,
        run_id: &str,
    ) -> Result<Option<Run>, StoreError> {
        Ok(self
            .get_run_any(run_id)
            .await?
            .filter(|r| r.owner == owner && r.thread_id == thread_id))
    }
    /// A run by id.
    async fn get_run_any(&self, run_id: &str) -> Result<Option<Run>, StoreError>;
    /// A thread's runs, newest first.
    async fn list_runs(
        &self,
        thread_id: &str,
        limit: i64,
        offset: i64,
    ) -> Result<Vec<Run>, StoreError>;
    /// The thread's pending or running runs, in `thread_seq` order.
    async fn active_runs(&self, thread_id: &str) -> Result<Vec<Run>, StoreError>;
    /// Claims the next runnable run: the first unfinished run (by `thread_seq`) of its
    /// thread that is pending or whose worker's lease expired; marks it running under
    /// `worker`'s lease with `attempt + 1`. With `only`, claims that run if it is runnable,
    /// and nothing else.
    async fn claim_run(
        &self,
        worker: &str,
        lease_ms: i64,
        only: Option<&str>,
    ) -> Result<Option<Run>, StoreError>;
    /// Extends the leases of the runs `worker` holds under the given claims (run id,
    /// attempt); returns those it still holds. A claim missing from the answer was lost.
    async fn heartbeat(
        &self,
        worker: &str,
        held: &[(String, i64)],
        lease_ms: i64,
    ) -> Result<Vec<Renewed>, StoreError>;
    /// Records a run's end under `claim`, with its terminal event and its thread's status, in
    /// one transaction; `false` (and nothing written) when the claim no longer holds.
    async fn finish_run(&self, claim: Claim<'_>, finish: &Finish) -> Result<bool, StoreError>;
    /// Gives a run back to the queue (graceful shutdown of its worker).
    async fn release_run(&self, claim: Claim<'_>) -> Result<(), StoreError>;
    /// Asks a run to stop: a pending run is cancelled at once with its terminal event (or
    /// deleted, for a rollback) and returned as cancelled; a running one is flagged for its
    /// worker.
    async fn request_cancel(
        &self,
        run_id: &str,
        action: CancelAction,
        reason: &str,
    ) -> Result<Option<Run>, StoreError>;
    /// Deletes a finished run and its events.
    async fn delete_run(&self, run_id: &str) -> Result<(), StoreError>;
    /// Another process's claims whose process is gone (it has no session on the database):
    /// their leases are ended so they can be claimed at once. Only where many processes
    /// share the database; `debounce` is how long a worker must have been gone.
    async fn sweep_orphans(
        &self,
        _worker: &str,
        _gone: &mut std::collections::HashMap<String, std::time::Instant>,
        _debounce: std::time::Duration,
    ) -> Result<u64, StoreError> {
        Ok(0)
    }

    /// Appends events (idempotent on (run, seq)); a row whose claim no longer holds its run
    /// is not stored.
    async fn append_events(&self, rows: &[EventRow]) -> Result<(), StoreError>;
    /// A run's events after `after_seq`, in order.
    async fn events_after(&self, run_id: &str, after_seq: i64)
        -> Result<Vec<EventRow>, StoreError>;

    /// Deletes the events of up to `limit` runs whose ids sort before `before_run_id` (run
    /// ids are UUIDv7: created before then) and that ended before `ended_before_ms`;
    /// returns how many rows went.
    async fn expire_events(
        &self,
        before_run_id: &str,
        ended_before_ms: i64,
        limit: i64,
    ) -> Result<u64, StoreError>;
}

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    palgraph::checkpoint::now_ms()
}

/// The reason a stored reason string names.
pub(crate) fn cancel_reason(s: Option<&str>) -> palgraph::CancelReason {
    use palgraph::CancelReason;
    match s {
        Some("superseded") => CancelReason::Superseded,
        Some("disconnect") => CancelReason::Disconnect,
        Some("shutdown") => CancelReason::Shutdown,
        _ => CancelReason::UserCancelled,
    }
}

/// The terminal event of a run cancelled before it started.
pub(crate) fn cancelled_event(reason: &str) -> Value {
    serde_json::to_value(palgraph::Event::Cancelled {
        reason: cancel_reason(Some(reason)),
    })
    .unwrap_or(Value::Null)
}

/// A thread's status once its last run ended this way (and no other run is active).
pub fn thread_status_after(status: RunState) -> &'static str {
    match status {
        RunState::Error => "error",
        RunState::Interrupted => "interrupted",
        _ => "idle",
    }
}

/// Merges `patch` into `base` (top-level keys).
pub fn merge_metadata(base: &Value, patch: &Value) -> Value {
    let mut out = base.as_object().cloned().unwrap_or_default();
    if let Some(p) = patch.as_object() {
        for (k, v) in p {
            out.insert(k.clone(), v.clone());
        }
    }
    Value::Object(out)
}

/// What creating a run does on a busy thread: which active runs to cancel.
pub(crate) fn decide(
    thread_id: &str,
    active: &[Run],
    strategy: MultitaskStrategy,
) -> Result<Vec<(Run, CancelAction)>, StoreError> {
    if active.is_empty() {
        return Ok(Vec::new());
    }
    match strategy {
        MultitaskStrategy::Reject => Err(StoreError::Busy(thread_id.to_string())),
        MultitaskStrategy::Enqueue => Ok(Vec::new()),
        MultitaskStrategy::Interrupt => Ok(active
            .iter()
            .map(|r| (r.clone(), CancelAction::Interrupt))
            .collect()),
        MultitaskStrategy::Rollback => Ok(active
            .iter()
            .map(|r| (r.clone(), CancelAction::Rollback))
            .collect()),
    }
}
