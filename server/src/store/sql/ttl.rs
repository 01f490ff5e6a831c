//! Threads' time to live: setting it, listing the threads whose time ran out (a range of
//! the partial index `threads_expiry_idx`, which holds only threads with a time to live
//! that are due for a sweep), and taking one for its sweep under the same conditions, so a
//! run or a change that came in between keeps the thread.

use sqlx::types::Json;
use sqlx::{Encode, Executor, FromRow, IntoArguments, Type};

use super::super::dialect::Dialect;
use super::super::rows::{Claimed, StoredJson};
use super::super::{EventRow, Renewed, Run, StoreError, Thread, ThreadTtl, TtlStrategy};
use super::SqlStore;

/// A thread whose time ran out and that is due for a sweep, on `threads` (`$1`: now, `$2`:
/// the strategy). The last term is the partial index's predicate, as written there.
const DUE: &str = "ttl_ms IS NOT NULL AND updated_at_ms + ttl_ms <= $1 AND ttl_strategy = $2
     AND status <> 'busy'
     AND (ttl_swept_at_ms IS NULL OR ttl_swept_at_ms < updated_at_ms)";

/// A time to live as two binds, the milliseconds and the strategy: no strategy (NULL) for
/// none, so that no optional number is bound.
pub(super) fn binds(ttl: Option<ThreadTtl>) -> (i64, Option<&'static str>) {
    match ttl {
        Some(t) => (t.ttl_ms, Some(t.strategy.as_str())),
        None => (0, None),
    }
}

/// The threads due for a sweep (`$1`: now, `$2`: the strategy, `$3`: how many), the longest
/// expired first.
pub(in crate::store) fn due_query() -> String {
    format!(
        concat!(
            "SELECT ",
            thread_columns!(),
            " FROM threads WHERE {due} ORDER BY updated_at_ms + ttl_ms LIMIT $3"
        ),
        due = DUE
    )
}

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
    /// Sets or clears a thread's time to live; setting it counts as a change of the thread
    /// (its time runs from now).
    pub(super) async fn set_ttl(
        &self,
        owner: &str,
        thread_id: &str,
        ttl: Option<ThreadTtl>,
        now_ms: i64,
    ) -> Result<Option<Thread>, StoreError> {
        let (ttl_ms, strategy) = binds(ttl);
        let _turn = DB::write_turn(&self.pool).await;
        Ok(sqlx::query_as(concat!(
            "UPDATE threads SET
                 ttl_ms = CASE WHEN $4 IS NULL THEN NULL ELSE $3 END,
                 ttl_strategy = $4, ttl_swept_at_ms = NULL, updated_at_ms = $5
             WHERE thread_id = $1 AND owner = $2 RETURNING ",
            thread_columns!()
        ))
        .bind(thread_id)
        .bind(owner)
        .bind(ttl_ms)
        .bind(strategy)
        .bind(now_ms)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// The threads due for a sweep, the longest expired first.
    pub(super) async fn due(
        &self,
        strategy: TtlStrategy,
        now_ms: i64,
        limit: i64,
    ) -> Result<Vec<Thread>, StoreError> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(due_query()))
            .bind(now_ms)
            .bind(strategy.as_str())
            .bind(limit)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Takes a thread for its sweep if it is still due.
    pub(super) async fn take_due(
        &self,
        thread_id: &str,
        strategy: TtlStrategy,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        if strategy == TtlStrategy::KeepLatest {
            let _turn = DB::write_turn(&self.pool).await;
            let done = sqlx::query(sqlx::AssertSqlSafe(format!(
                "UPDATE threads SET ttl_swept_at_ms = $1 WHERE thread_id = $3 AND {DUE}"
            )))
            .bind(now_ms)
            .bind(strategy.as_str())
            .bind(thread_id)
            .execute(&self.pool)
            .await?;
            return Ok(DB::rows_affected(&done) > 0);
        }
        let _turn = DB::write_turn(&self.pool).await;
        let mut tx = self.pool.begin_with(DB::BEGIN_WRITE).await?;
        // The thread first (deleting it locks it, and a run created after finds no thread),
        // then its runs: every writer's lock order.
        let deleted: Option<(String,)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "DELETE FROM threads WHERE thread_id = $3 AND {DUE} RETURNING thread_id"
        )))
        .bind(now_ms)
        .bind(strategy.as_str())
        .bind(thread_id)
        .fetch_optional(&mut *tx)
        .await?;
        if deleted.is_none() {
            tx.rollback().await?;
            return Ok(false);
        }
        super::delete_runs_of::<DB>(&mut tx, thread_id).await?;
        tx.commit().await?;
        Ok(true)
    }
}
