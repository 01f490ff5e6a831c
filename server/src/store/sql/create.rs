//! Creating a run the long way: one write transaction that holds the thread, applies the
//! multitask strategy to its active runs and inserts the run (SQLite always; Postgres when
//! a run cannot go in a batch), and cancelling an active run inside such a transaction.

use sqlx::types::Json;
use sqlx::{AssertSqlSafe, Encode, Executor, FromRow, IntoArguments, Type};

use super::super::dialect::Dialect;
use super::super::rows::{json, Claimed, StoredJson};
use super::super::{
    cancelled_event, decide, now_ms, CancelAction, CreatedRun, EventRow, Finish, NewRun, Renewed,
    Run, RunState, StoreError, Thread,
};
use super::{announce, SqlStore, ACTIVE_RUNS};

impl<DB> SqlStore<DB>
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
    /// Creates a run in a write transaction of its own: the thread first (created when it is
    /// new), then its active runs, cancelled or queued behind as the strategy says.
    pub(super) async fn create_run_in_tx(&self, new: &NewRun) -> Result<CreatedRun, StoreError> {
        let _turn = DB::write_turn(&self.pool).await;
        let mut tx = self.pool.begin_with(DB::BEGIN_WRITE).await?;
        if let Some(t) = &new.new_thread {
            sqlx::query(
                "INSERT INTO threads (thread_id, owner, metadata, status, created_at_ms, updated_at_ms)
                 VALUES ($1, $2, $3, $4, $5, $5)
                 ON CONFLICT (thread_id) DO NOTHING",
            )
            .bind(t.thread_id.as_str())
            .bind(t.owner.as_str())
            .bind(json::<DB>(&t.metadata))
            .bind(t.status.as_str())
            .bind(t.created_at_ms)
            .execute(&mut *tx)
            .await?;
        }
        // The thread first, always: one lock order for everything that touches a thread
        // and its runs.
        if new.check_thread {
            let thread: Option<Thread> = sqlx::query_as(AssertSqlSafe(format!(
                concat!(
                    "SELECT ",
                    thread_columns!(),
                    " FROM threads WHERE thread_id = $1{}"
                ),
                DB::FOR_UPDATE
            )))
            .bind(new.thread_id.as_str())
            .fetch_optional(&mut *tx)
            .await?;
            let refusal = match &thread {
                Some(t) if t.owner != new.owner => {
                    Some(StoreError::NotFound(format!("thread `{}`", new.thread_id)))
                }
                Some(t) if names_other_graph(&t.metadata, &new.graph_id) => {
                    Some(StoreError::OtherGraph(new.thread_id.clone()))
                }
                _ => None,
            };
            if let Some(e) = refusal {
                tx.rollback().await?;
                return Err(e);
            }
        }
        // -1: the thread that was to be new is someone else's.
        let run_seq: Option<i64> = sqlx::query_scalar(AssertSqlSafe(format!(
            "SELECT CASE WHEN $2 IS NOT NULL AND owner <> $2 THEN -1 ELSE run_seq END
             FROM threads WHERE thread_id = $1{}",
            DB::FOR_UPDATE
        )))
        .bind(new.thread_id.as_str())
        .bind(new.new_thread.as_ref().map(|_| new.owner.as_str()))
        .fetch_optional(&mut *tx)
        .await?;
        let Some(run_seq) = run_seq else {
            tx.rollback().await?;
            return Err(StoreError::NotFound(format!("thread `{}`", new.thread_id)));
        };
        if run_seq < 0 {
            tx.rollback().await?;
            return Err(StoreError::Exists(format!("thread `{}`", new.thread_id)));
        }
        if let Some(key) = &new.idempotency_key {
            let existing: Option<Run> = sqlx::query_as(concat!(
                "SELECT ",
                run_columns!(),
                " FROM runs WHERE owner = $1 AND idempotency_key = $2"
            ))
            .bind(new.owner.as_str())
            .bind(key.as_str())
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(run) = existing {
                tx.commit().await?;
                return Ok(CreatedRun {
                    run,
                    existing: true,
                    cancelled: Vec::new(),
                });
            }
        }
        let active: Vec<Run> = sqlx::query_as(ACTIVE_RUNS)
            .bind(new.thread_id.as_str())
            .fetch_all(&mut *tx)
            .await?;
        let decision = match decide(&new.thread_id, &active, new.multitask_strategy) {
            Ok(d) => d,
            Err(e) => {
                tx.rollback().await?;
                return Err(e);
            }
        };
        let now = now_ms();
        let mut cancelled = Vec::new();
        for (run, action) in decision {
            cancelled
                .extend(Self::cancel_in(&mut tx, &run.run_id, action, "superseded", now).await?);
        }
        // Claimed here and now when nothing else is active on the thread: the run could be
        // claimed by nobody else first anyway (it is the thread's first unfinished run).
        let claim = new.claim.as_ref().filter(|_| active.is_empty());
        let run: Run = sqlx::query_as(concat!(
            "INSERT INTO runs (run_id, thread_id, thread_seq, owner, assistant_id, graph_id, status,
                 kwargs, metadata, multitask_strategy, idempotency_key, created_at_ms, updated_at_ms,
                 worker_id, lease_until_ms, attempt, trace_context)
             VALUES ($1, $2, $11, $3, $4, $5, CASE WHEN $12 IS NULL THEN 'pending' ELSE 'running' END,
                 $6, $7, $8, $9, $10, $10, $12, CASE WHEN $12 IS NULL THEN NULL ELSE $13 END,
                 CASE WHEN $12 IS NULL THEN 0 ELSE 1 END, $14)
             RETURNING ",
            run_columns!()
        ))
        .bind(new.run_id.as_str())
        .bind(new.thread_id.as_str())
        .bind(new.owner.as_str())
        .bind(new.assistant_id.as_str())
        .bind(new.graph_id.as_str())
        .bind(json::<DB>(&new.kwargs))
        .bind(json::<DB>(&new.metadata))
        .bind(new.multitask_strategy)
        .bind(new.idempotency_key.as_deref())
        .bind(now)
        .bind(run_seq + 1)
        .bind(claim.map(|c| c.worker.as_str()))
        .bind(now + claim.map_or(0, |c| c.lease_ms))
        .bind(new.trace_context.as_deref())
        .fetch_one(&mut *tx)
        .await?;
        sqlx::query(AssertSqlSafe(format!(
            "WITH n AS (SELECT {notify})
             UPDATE threads SET status = 'busy', updated_at_ms = $2, run_seq = run_seq + 1,
                 metadata = {with_graph}
             FROM n WHERE thread_id = $1",
            // A run claimed at creation wakes the thread's watchers, not the claim loops.
            notify = announce::<DB>(
                if claim.is_some() {
                    "palgraph_started"
                } else {
                    "palgraph_runs"
                },
                "$1"
            ),
            with_graph = DB::WITH_GRAPH
        )))
        .bind(new.thread_id.as_str())
        .bind(now)
        .bind(new.graph_id.as_str())
        .bind(new.assistant_id.as_str())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(CreatedRun {
            run,
            existing: false,
            cancelled,
        })
    }

    /// Cancels an active run inside a write transaction that holds its thread: a pending run
    /// ends at once with its terminal event (a rollback deletes it); a running one is flagged
    /// for its worker. Returns the run as it is afterwards (`None` if it was not active).
    pub(super) async fn cancel_in(
        conn: &mut DB::Connection,
        run_id: &str,
        action: CancelAction,
        reason: &str,
        now: i64,
    ) -> Result<Option<Run>, StoreError> {
        let run: Option<Run> = sqlx::query_as(concat!(
            "UPDATE runs SET cancel_action = COALESCE(cancel_action, $2),
                 cancel_reason = COALESCE(cancel_reason, $3), updated_at_ms = $4,
                 status = CASE WHEN status = 'pending' THEN 'cancelled' ELSE status END
             WHERE run_id = $1 AND status IN ('pending', 'running')
             RETURNING ",
            run_columns!()
        ))
        .bind(run_id)
        .bind(action)
        .bind(reason)
        .bind(now)
        .fetch_optional(&mut *conn)
        .await?;
        let Some(run) = run else {
            return Ok(None);
        };
        if run.status == RunState::Cancelled {
            // It never started: it ends here, with its terminal event, or goes entirely.
            let reason = run.cancel_reason.as_deref().unwrap_or(reason);
            let finish = Finish {
                status: RunState::Cancelled,
                error: None,
                terminal: (1, cancelled_event(reason)),
                delete: run.cancel_action == Some(CancelAction::Rollback),
            };
            DB::end_run(conn, run_id, &run.thread_id, &finish, now).await?;
        } else if let Some(notify) = DB::notify("palgraph_cancel", "$1") {
            sqlx::query(AssertSqlSafe(format!("SELECT {notify}")))
                .bind(run_id)
                .execute(&mut *conn)
                .await?;
        }
        Ok(Some(run))
    }
}

/// Whether a thread's metadata names a graph other than `graph_id` (the graph its last run
/// ran: see [`NewRun::check_thread`]).
pub(crate) fn names_other_graph(metadata: &serde_json::Value, graph_id: &str) -> bool {
    metadata
        .get("graph_id")
        .and_then(serde_json::Value::as_str)
        .is_some_and(|g| g != graph_id)
}
