//! What differs between the store's SQL on SQLite and on Postgres: the [`Dialect`] that
//! [`super::sql::SqlStore`] asks, implemented in [`super::sqlite`] and [`super::postgres`].

use std::collections::HashMap;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use sqlx::{Database, Pool};
use tokio::sync::mpsc::UnboundedReceiver;

#[cfg(doc)]
use super::Store;
use super::{EventRow, Finish, Notification, StoreError};

/// What differs between the SQL of SQLite and Postgres. Statements name their parameters
/// `$1, $2, ...`; a fragment says which parameters it reads.
#[async_trait]
pub(crate) trait Dialect: Database {
    /// Begins a transaction that writes. SQLite's `BEGIN IMMEDIATE` takes the database's one
    /// writer lock at once: on SQLite that lock is what makes each write step atomic.
    const BEGIN_WRITE: &'static str;
    /// Ends a SELECT of rows the transaction goes on to write: Postgres locks them, so the
    /// writers of a thread and its runs queue up, thread first.
    const FOR_UPDATE: &'static str;
    /// Ends a claim's choice of its run: passes over runs other claims are taking.
    const SKIP_LOCKED: &'static str;
    /// Follows a text column in an `ORDER BY` that decides the order rows are locked in: the
    /// bytes' order, as every batch of Postgres locks them in (migration 9), whatever the
    /// database's collation.
    const BYTE_ORDER: &'static str;
    /// Whether JSON is written without NUL characters (Postgres `jsonb` refuses `\u0000`):
    /// they become U+FFFD.
    const REFUSES_NUL: bool;
    /// A thread's `metadata` with `graph_id` set to `$3` and `assistant_id` to `$4`.
    const WITH_GRAPH: &'static str;
    /// Whether thread `t` matches a search: its metadata holds every entry of the JSON object
    /// `$2` and, unless `$4` is NULL, its id is in the JSON array `$4`.
    const THREAD_MATCHES: &'static str;
    /// A heartbeat's claims, the JSON `[[run_id, attempt], ...]` in `$2`, as a table
    /// `h (id, att)`.
    const HELD: &'static str;

    /// Waits for this process's turn to write (SQLite: writers of one database queue in
    /// the order they asked, see [`palgraph::db::writers`]); `None` where the database
    /// serves many writers at once.
    async fn write_turn(_pool: &Pool<Self>) -> Option<palgraph::db::writers::WriteTurn> {
        None
    }

    /// The SQL expression that tells the other processes sharing the database `payload` (an
    /// SQL expression) on `channel` when the transaction commits; `None` where no other
    /// process shares it.
    fn notify(channel: &str, payload: &str) -> Option<String>;

    /// How many rows a statement changed.
    fn rows_affected(result: &Self::QueryResult) -> u64;

    /// Ends a run inside a write transaction holding its thread (and the run's claim, if it
    /// was claimed): stores the terminal event and final status, or deletes the run and its
    /// events; sets the thread's status; tells the run's watchers.
    async fn end_run(
        conn: &mut Self::Connection,
        run_id: &str,
        thread_id: &str,
        finish: &Finish,
        now: i64,
    ) -> Result<(), StoreError>;

    /// Starts the group commit of run rows where the database has it (Postgres); `None`
    /// where every run is written by its own transaction.
    fn run_batches(_pool: &Pool<Self>) -> Option<super::run_batches::RunBatches> {
        None
    }

    /// See [`Store::append_events`].
    async fn append_events(pool: &Pool<Self>, rows: &[EventRow]) -> Result<(), StoreError>;

    /// See [`Store::notifications`].
    async fn notifications(_pool: &Pool<Self>) -> Option<UnboundedReceiver<Notification>> {
        None
    }

    /// See [`Store::recover_orphans`].
    async fn recover_orphans(_pool: &Pool<Self>) -> Result<u64, StoreError> {
        Ok(0)
    }

    /// See [`Store::sweep_orphans`].
    async fn sweep_orphans(
        _pool: &Pool<Self>,
        _worker: &str,
        _gone: &mut HashMap<String, Instant>,
        _debounce: Duration,
    ) -> Result<u64, StoreError> {
        Ok(0)
    }
}
