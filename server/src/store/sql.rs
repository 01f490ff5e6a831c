//! The store written once, in the SQL that SQLite and Postgres share: [`SqlStore`] runs the
//! same statements on both (with `$1, $2, ...` parameters, which sqlx-sqlite reads as
//! argument 1, 2, ... as Postgres does), and a [`Dialect`] holds what differs: how a writer
//! takes its locks, how other processes hear of changes, how JSON is searched and unpacked,
//! and the few writes Postgres makes in one statement where SQLite needs several.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use palgraph::db::reuse::Reused;
use serde_json::Value;
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, Database, Encode, Executor, FromRow, IntoArguments, Pool, Type};
use tokio::sync::mpsc::UnboundedReceiver;

use super::dialect::Dialect;
use super::rows::{json, Claimed, StoredJson};
use super::run_batches::{Created, RunBatches};
use super::{
    merge_metadata, now_ms, CancelAction, Claim, CreatedRun, EventRow, Finish, IfExists, NewRun,
    Notification, Renewed, Run, RunState, Store, StoreError, Thread, ThreadQuery, ThreadTtl,
    TtlStrategy,
};

/// Connections of [`SqlStore::hot`]: a thread read or insert takes tens of microseconds,
/// so a few serve hundreds of requests a second.
const HOT_CONNECTIONS: usize = 4;

/// The server's store on a SQLite or Postgres database migrated with [`super::MIGRATIONS`].
pub(crate) struct SqlStore<DB: Database> {
    pool: Pool<DB>,
    /// A few connections for the hottest single statements (reading and creating a
    /// thread), reused without sqlx's ping on every return to the pool.
    hot: Reused<DB>,
    /// Group commit of run rows, where the database has it (Postgres), started on first use.
    batches: OnceLock<Option<RunBatches>>,
}

impl<DB: Dialect> SqlStore<DB> {
    pub(crate) fn new(pool: Pool<DB>) -> Self {
        SqlStore {
            hot: Reused::new(pool.clone(), HOT_CONNECTIONS),
            pool,
            batches: OnceLock::new(),
        }
    }

    /// The run batches (call within the runtime: the first call starts their tasks).
    fn batches(&self) -> Option<&RunBatches> {
        self.batches
            .get_or_init(|| DB::run_batches(&self.pool))
            .as_ref()
    }
}

macro_rules! thread_columns {
    () => {
        "thread_id, owner, metadata, status, created_at_ms, updated_at_ms"
    };
}

macro_rules! run_columns {
    () => {
        "run_id, thread_id, thread_seq, owner, assistant_id, graph_id, status, kwargs, metadata, \
         multitask_strategy, idempotency_key, cancel_action, cancel_reason, worker_id, \
         lease_until_ms, attempt, error, created_at_ms, updated_at_ms, trace_context"
    };
}

const ACTIVE_RUNS: &str = concat!(
    "SELECT ",
    run_columns!(),
    " FROM runs WHERE thread_id = $1 AND status IN ('pending', 'running') ORDER BY thread_seq"
);

const RUN: &str = concat!("SELECT ", run_columns!(), " FROM runs WHERE run_id = $1");

/// What a write's `WITH n AS (SELECT ...)`, joined into it, evaluates once to announce the
/// change (see [`Dialect::notify`]); `NULL` where nobody listens. The announcement costs no
/// statement of its own.
fn announce<DB: Dialect>(channel: &str, payload: &str) -> String {
    DB::notify(channel, payload).unwrap_or_else(|| "NULL".into())
}

/// A thread's runs and their events, in the transaction that deleted the thread.
async fn delete_runs_of<DB: Dialect>(
    conn: &mut DB::Connection,
    thread_id: &str,
) -> Result<(), StoreError>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    str: Type<DB>,
    for<'a> &'a str: Encode<'a, DB>,
{
    for delete in [
        // By the runs' keys: `thread_id` has no index on the events.
        "DELETE FROM run_events WHERE run_id IN (SELECT run_id FROM runs WHERE thread_id = $1)",
        "DELETE FROM runs WHERE thread_id = $1",
    ] {
        sqlx::query(delete)
            .bind(thread_id)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

mod create;
pub(super) mod ttl;

#[async_trait]
impl<DB> Store for SqlStore<DB>
where
    DB: Dialect,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    str: Type<DB>,
    for<'a> &'a str: Encode<'a, DB>,
    for<'a> Option<&'a str>: Encode<'a, DB>,
    i64: Type<DB> + for<'a> Encode<'a, DB>,
    for<'a> Json<StoredJson<'a>>: Encode<'a, DB> + Type<DB>,
    for<'a> Option<Json<StoredJson<'a>>>: Encode<'a, DB>,
    for<'r> Thread: FromRow<'r, DB::Row>,
    for<'r> Run: FromRow<'r, DB::Row>,
    for<'r> Claimed: FromRow<'r, DB::Row>,
    for<'r> EventRow: FromRow<'r, DB::Row>,
    for<'r> Renewed: FromRow<'r, DB::Row>,
    for<'r> (i64,): FromRow<'r, DB::Row>,
    for<'r> (String,): FromRow<'r, DB::Row>,
{
    async fn notifications(&self) -> Option<UnboundedReceiver<Notification>> {
        DB::notifications(&self.pool).await
    }

    async fn recover_orphans(&self) -> Result<u64, StoreError> {
        DB::recover_orphans(&self.pool).await
    }

    async fn create_thread(&self, t: Thread, if_exists: IfExists) -> Result<Thread, StoreError> {
        let batched = match self.batches() {
            Some(batches) => batches.create_thread(&t).await,
            None => None,
        };
        let created = match batched {
            Some(created) => created,
            None => {
                // Alone, the long way.
                let mut conn = self.hot.take().await?;
                let created: Option<Thread> = sqlx::query_as(concat!(
                    "INSERT INTO threads (thread_id, owner, metadata, status, created_at_ms, updated_at_ms)
                     VALUES ($1, $2, $3, $4, $5, $5)
                     ON CONFLICT (thread_id) DO NOTHING
                     RETURNING ",
                    thread_columns!()
                ))
                .bind(t.thread_id.as_str())
                .bind(t.owner.as_str())
                .bind(json::<DB>(&t.metadata))
                .bind(t.status.as_str())
                .bind(t.created_at_ms)
                .fetch_optional(&mut *conn)
                .await?;
                conn.keep();
                created
            }
        };
        if let Some(created) = created {
            return Ok(created);
        }
        match self.get_thread(&t.owner, &t.thread_id).await? {
            Some(existing) if if_exists == IfExists::DoNothing => Ok(existing),
            _ => Err(StoreError::Exists(format!("thread `{}`", t.thread_id))),
        }
    }

    async fn get_thread_any(&self, thread_id: &str) -> Result<Option<Thread>, StoreError> {
        let mut conn = self.hot.take().await?;
        let thread = sqlx::query_as(concat!(
            "SELECT ",
            thread_columns!(),
            " FROM threads WHERE thread_id = $1"
        ))
        .bind(thread_id)
        .fetch_optional(&mut *conn)
        .await?;
        conn.keep();
        Ok(thread)
    }

    async fn search_threads(
        &self,
        owner: &str,
        q: &ThreadQuery,
    ) -> Result<Vec<Thread>, StoreError> {
        let metadata = Value::Object(q.metadata.clone());
        let ids = q.ids.clone().map(Value::from);
        Ok(sqlx::query_as(AssertSqlSafe(format!(
            concat!(
                "SELECT ",
                thread_columns!(),
                " FROM threads t
                 WHERE t.owner = $1 AND {matches} AND ($3 IS NULL OR t.status = $3)
                 ORDER BY t.updated_at_ms DESC, t.thread_id
                 LIMIT $5 OFFSET $6"
            ),
            matches = DB::THREAD_MATCHES
        )))
        .bind(owner)
        .bind(json::<DB>(&metadata))
        .bind(q.status.as_deref())
        .bind(ids.as_ref().map(json::<DB>))
        .bind(q.limit)
        .bind(q.offset)
        .fetch_all(&self.pool)
        .await?)
    }

    async fn patch_thread(
        &self,
        owner: &str,
        thread_id: &str,
        patch: &Value,
        ttl: Option<ThreadTtl>,
    ) -> Result<Option<Thread>, StoreError> {
        let _turn = DB::write_turn(&self.pool).await;
        let mut tx = self.pool.begin_with(DB::BEGIN_WRITE).await?;
        let thread: Option<Thread> = sqlx::query_as(AssertSqlSafe(format!(
            concat!(
                "SELECT ",
                thread_columns!(),
                " FROM threads WHERE thread_id = $1 AND owner = $2{}"
            ),
            DB::FOR_UPDATE
        )))
        .bind(thread_id)
        .bind(owner)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(thread) = thread else {
            tx.rollback().await?;
            return Ok(None);
        };
        // The time to live is kept unless one is given (`$5`, its strategy, not NULL).
        let (ttl_ms, strategy) = ttl::binds(ttl);
        let thread: Thread = sqlx::query_as(concat!(
            "UPDATE threads SET metadata = $2, updated_at_ms = $3,
                 ttl_ms = CASE WHEN $5 IS NULL THEN ttl_ms ELSE $4 END,
                 ttl_strategy = COALESCE($5, ttl_strategy),
                 ttl_swept_at_ms = CASE WHEN $5 IS NULL THEN ttl_swept_at_ms END
             WHERE thread_id = $1 RETURNING ",
            thread_columns!()
        ))
        .bind(thread_id)
        .bind(json::<DB>(&merge_metadata(&thread.metadata, patch)))
        .bind(now_ms())
        .bind(ttl_ms)
        .bind(strategy)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(thread))
    }

    async fn delete_thread(&self, owner: &str, thread_id: &str) -> Result<bool, StoreError> {
        let _turn = DB::write_turn(&self.pool).await;
        let mut tx = self.pool.begin_with(DB::BEGIN_WRITE).await?;
        // The thread first (deleting it locks it), then its runs: every writer's lock order.
        let deleted: Option<String> = sqlx::query_scalar(
            "DELETE FROM threads WHERE thread_id = $1 AND owner = $2 RETURNING thread_id",
        )
        .bind(thread_id)
        .bind(owner)
        .fetch_optional(&mut *tx)
        .await?;
        if deleted.is_none() {
            tx.rollback().await?;
            return Ok(false);
        }
        delete_runs_of::<DB>(&mut tx, thread_id).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn set_thread_ttl(
        &self,
        owner: &str,
        thread_id: &str,
        ttl: Option<ThreadTtl>,
    ) -> Result<Option<Thread>, StoreError> {
        self.set_ttl(owner, thread_id, ttl, now_ms()).await
    }

    async fn expired_threads(
        &self,
        strategy: TtlStrategy,
        now_ms: i64,
        limit: i64,
    ) -> Result<Vec<Thread>, StoreError> {
        self.due(strategy, now_ms, limit).await
    }

    async fn take_expired_thread(
        &self,
        thread_id: &str,
        strategy: TtlStrategy,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.take_due(thread_id, strategy, now_ms).await
    }

    async fn create_run(&self, new: &NewRun) -> Result<CreatedRun, StoreError> {
        if let Some(batches) = self.batches() {
            match batches.create(new).await {
                Some(Created::Run(run)) => {
                    return Ok(CreatedRun {
                        run: *run,
                        existing: false,
                        cancelled: Vec::new(),
                    })
                }
                Some(Created::NoThread) => {
                    return Err(StoreError::NotFound(format!("thread `{}`", new.thread_id)))
                }
                Some(Created::OthersThread) => {
                    return Err(StoreError::Exists(format!("thread `{}`", new.thread_id)))
                }
                Some(Created::OtherGraph) => {
                    return Err(StoreError::OtherGraph(new.thread_id.clone()))
                }
                Some(Created::Busy) | None => {}
            }
        }
        self.create_run_in_tx(new).await
    }

    async fn get_run_any(&self, run_id: &str) -> Result<Option<Run>, StoreError> {
        Ok(sqlx::query_as(RUN)
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await?)
    }

    async fn list_runs(
        &self,
        thread_id: &str,
        limit: i64,
        offset: i64,
    ) -> Result<Vec<Run>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            run_columns!(),
            " FROM runs WHERE thread_id = $1 ORDER BY thread_seq DESC LIMIT $2 OFFSET $3"
        ))
        .bind(thread_id)
        .bind(limit)
        .bind(offset)
        .fetch_all(&self.pool)
        .await?)
    }

    async fn active_runs(&self, thread_id: &str) -> Result<Vec<Run>, StoreError> {
        Ok(sqlx::query_as(ACTIVE_RUNS)
            .bind(thread_id)
            .fetch_all(&self.pool)
            .await?)
    }

    async fn claim_run(
        &self,
        worker: &str,
        lease_ms: i64,
        only: Option<&str>,
    ) -> Result<Option<Run>, StoreError> {
        let now = now_ms();
        let _turn = DB::write_turn(&self.pool).await;
        // One statement: the choice and the claim are one write (SQLite takes its writer
        // lock before the statement reads anything). It also says what the run was: a run
        // still `running` had a lease that lapsed, and this claim takes it over. (SQLite's
        // RETURNING may not name the FROM table, hence the subquery on the materialized pick.)
        let claimed: Option<Claimed> = sqlx::query_as(AssertSqlSafe(format!(
            concat!(
                "WITH pick AS MATERIALIZED (
                     SELECT r.run_id AS picked, r.status AS was_status FROM runs r
                     WHERE r.status IN ('pending', 'running')
                       AND (r.status = 'pending' OR r.lease_until_ms < $3)
                       AND ($4 IS NULL OR r.run_id = $4)
                       AND NOT EXISTS (SELECT 1 FROM runs o
                                       WHERE o.thread_id = r.thread_id
                                         AND o.status IN ('pending', 'running')
                                         AND o.thread_seq < r.thread_seq)
                     ORDER BY r.run_id
                     LIMIT 1{skip_locked})
                 UPDATE runs SET status = 'running', worker_id = $1, lease_until_ms = $2,
                     attempt = attempt + 1, updated_at_ms = $3
                 FROM pick WHERE run_id = pick.picked
                 RETURNING (SELECT was_status FROM pick WHERE picked = runs.run_id) AS was_status, ",
                run_columns!()
            ),
            skip_locked = DB::SKIP_LOCKED
        )))
        .bind(worker)
        .bind(now + lease_ms)
        .bind(now)
        .bind(only)
        .fetch_optional(&self.pool)
        .await?;
        Ok(claimed.map(|c| {
            if c.was_status == RunState::Running {
                metrics::counter!(crate::metric::LEASE_TAKEOVERS).increment(1);
            }
            c.run
        }))
    }

    async fn heartbeat(
        &self,
        worker: &str,
        held: &[(String, i64)],
        lease_ms: i64,
    ) -> Result<Vec<Renewed>, StoreError> {
        if held.is_empty() {
            return Ok(Vec::new());
        }
        let claims: Value = held
            .iter()
            .map(|(run, attempt)| serde_json::json!([run, attempt]))
            .collect();
        let _turn = DB::write_turn(&self.pool).await;
        // The runs are locked in their threads' order, the order in which a batch of ends
        // locks them (see `run_batches`; both in bytes' order), so a heartbeat and a batch
        // never wait on each other in a cycle.
        Ok(sqlx::query_as(AssertSqlSafe(format!(
            "UPDATE runs SET lease_until_ms = $3
             FROM (SELECT r.run_id AS id FROM runs r JOIN {held} ON r.run_id = h.id AND r.attempt = h.att
                   WHERE r.worker_id = $1 AND r.status = 'running'
                   ORDER BY r.thread_id{bytes}, r.run_id{bytes}{lock}) l
             WHERE run_id = l.id
             RETURNING run_id, cancel_action, cancel_reason",
            held = DB::HELD,
            bytes = DB::BYTE_ORDER,
            lock = if DB::FOR_UPDATE.is_empty() {
                ""
            } else {
                " FOR UPDATE OF r"
            }
        )))
        .bind(worker)
        .bind(json::<DB>(&claims))
        .bind(now_ms() + lease_ms)
        .fetch_all(&self.pool)
        .await?)
    }

    async fn finish_run(&self, claim: Claim<'_>, finish: &Finish) -> Result<bool, StoreError> {
        if let Some(done) = match self.batches() {
            Some(batches) => batches.finish(claim, finish).await,
            None => None,
        } {
            return Ok(done);
        }
        let _turn = DB::write_turn(&self.pool).await;
        let mut tx = self.pool.begin_with(DB::BEGIN_WRITE).await?;
        // The thread's lock, then the run's: the order every writer of runs takes.
        let thread_id: Option<String> = sqlx::query_scalar(AssertSqlSafe(format!(
            "WITH t AS (SELECT thread_id FROM threads
                        WHERE thread_id = (SELECT thread_id FROM runs WHERE run_id = $1){lock})
             SELECT r.thread_id FROM runs r JOIN t ON t.thread_id = r.thread_id
             WHERE r.run_id = $1 AND r.worker_id = $2 AND r.attempt = $3 AND r.status = 'running'{lock}",
            lock = DB::FOR_UPDATE
        )))
        .bind(claim.run_id)
        .bind(claim.worker)
        .bind(claim.attempt)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(thread_id) = thread_id else {
            tx.rollback().await?;
            return Ok(false);
        };
        DB::end_run(&mut tx, claim.run_id, &thread_id, finish, now_ms()).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn release_run(&self, claim: Claim<'_>) -> Result<(), StoreError> {
        let _turn = DB::write_turn(&self.pool).await;
        sqlx::query(AssertSqlSafe(format!(
            "WITH n AS (SELECT {})
             UPDATE runs SET status = 'pending', worker_id = NULL, lease_until_ms = NULL,
                 updated_at_ms = $4
             FROM n WHERE run_id = $1 AND worker_id = $2 AND attempt = $3 AND status = 'running'",
            announce::<DB>("palgraph_runs", "$1")
        )))
        .bind(claim.run_id)
        .bind(claim.worker)
        .bind(claim.attempt)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn request_cancel(
        &self,
        run_id: &str,
        action: CancelAction,
        reason: &str,
    ) -> Result<Option<Run>, StoreError> {
        let _turn = DB::write_turn(&self.pool).await;
        let mut tx = self.pool.begin_with(DB::BEGIN_WRITE).await?;
        sqlx::query(AssertSqlSafe(format!(
            "SELECT 1 FROM threads WHERE thread_id = (SELECT thread_id FROM runs WHERE run_id = $1){}",
            DB::FOR_UPDATE
        )))
        .bind(run_id)
        .execute(&mut *tx)
        .await?;
        let run = match Self::cancel_in(&mut tx, run_id, action, reason, now_ms()).await? {
            Some(run) => Some(run),
            None => {
                sqlx::query_as(RUN)
                    .bind(run_id)
                    .fetch_optional(&mut *tx)
                    .await?
            }
        };
        tx.commit().await?;
        Ok(run)
    }

    async fn delete_run(&self, run_id: &str) -> Result<(), StoreError> {
        let _turn = DB::write_turn(&self.pool).await;
        let mut tx = self.pool.begin_with(DB::BEGIN_WRITE).await?;
        for delete in [
            "DELETE FROM run_events WHERE run_id = $1",
            "DELETE FROM runs WHERE run_id = $1",
        ] {
            sqlx::query(delete).bind(run_id).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn sweep_orphans(
        &self,
        worker: &str,
        gone: &mut HashMap<String, Instant>,
        debounce: Duration,
    ) -> Result<u64, StoreError> {
        DB::sweep_orphans(&self.pool, worker, gone, debounce).await
    }

    async fn append_events(&self, rows: &[EventRow]) -> Result<(), StoreError> {
        DB::append_events(&self.pool, rows).await
    }

    async fn events_after(
        &self,
        run_id: &str,
        after_seq: i64,
    ) -> Result<Vec<EventRow>, StoreError> {
        Ok(sqlx::query_as(
            // The thread is the run's (a run's events do not repeat it).
            "SELECT run_id, seq,
                    COALESCE((SELECT thread_id FROM runs WHERE run_id = $1), '') AS thread_id,
                    event, packed
             FROM run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq",
        )
        .bind(run_id)
        .bind(after_seq)
        .fetch_all(&self.pool)
        .await?)
    }

    async fn expire_events(
        &self,
        before_run_id: &str,
        ended_before_ms: i64,
        limit: i64,
    ) -> Result<u64, StoreError> {
        // A range scan of the events' primary key below the cut, then the runs' by key: the
        // cost follows the events still kept, not the number of runs ever made.
        let _turn = DB::write_turn(&self.pool).await;
        let done = sqlx::query(
            "DELETE FROM run_events WHERE run_id IN (
                 SELECT r.run_id FROM runs r
                 WHERE r.run_id IN (SELECT DISTINCT run_id FROM run_events
                                    WHERE run_id < $1 ORDER BY run_id LIMIT $3)
                   AND r.status NOT IN ('pending', 'running')
                   AND r.updated_at_ms < $2)",
        )
        .bind(before_run_id)
        .bind(ended_before_ms)
        .bind(limit)
        .execute(&self.pool)
        .await?;
        Ok(DB::rows_affected(&done))
    }
}
