//! The server's tables in SQLite (the embedded default). Writes that must be atomic run in
//! `BEGIN IMMEDIATE` transactions: SQLite has one writer at a time, which is the lock.

use async_trait::async_trait;
use serde_json::Value;
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqlitePool};

use super::postgres::{action_str, parse_action, parse_strategy};
use super::{
    decide, merge_metadata, now_ms, CancelAction, Claim, CreatedRun, EventRow, Finish, IfExists,
    NewRun, Renewed, Run, RunState, Store, StoreError, Thread, ThreadQuery,
};

/// The store on SQLite.
#[derive(Clone)]
pub(crate) struct SqliteStore {
    pool: SqlitePool,
}

impl SqliteStore {
    pub(crate) fn new(pool: SqlitePool) -> Self {
        SqliteStore { pool }
    }
}

macro_rules! run_columns {
    () => {
        "run_id, thread_id, thread_seq, owner, assistant_id, graph_id, status, kwargs, metadata, multitask_strategy, \
         idempotency_key, cancel_action, cancel_reason, worker_id, lease_until_ms, attempt, error, \
         created_at_ms, updated_at_ms"
    };
}

const THREAD_COLUMNS: &str = "thread_id, owner, metadata, status, created_at_ms, updated_at_ms";

fn json(text: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Decode(e.to_string()))
}

fn thread_from_row(r: &SqliteRow) -> Result<Thread, StoreError> {
    Ok(Thread {
        thread_id: r.try_get("thread_id")?,
        owner: r.try_get("owner")?,
        metadata: json(r.try_get::<&str, _>("metadata")?)?,
        status: r.try_get("status")?,
        created_at_ms: r.try_get("created_at_ms")?,
        updated_at_ms: r.try_get("updated_at_ms")?,
    })
}

fn run_from_row(r: &SqliteRow) -> Result<Run, StoreError> {
    let status: String = r.try_get("status")?;
    Ok(Run {
        run_id: r.try_get("run_id")?,
        thread_id: r.try_get("thread_id")?,
        thread_seq: r.try_get("thread_seq")?,
        owner: r.try_get("owner")?,
        assistant_id: r.try_get("assistant_id")?,
        graph_id: r.try_get("graph_id")?,
        status: RunState::parse(&status)
            .ok_or_else(|| StoreError::Decode(format!("run status `{status}`")))?,
        kwargs: json(r.try_get::<&str, _>("kwargs")?)?,
        metadata: json(r.try_get::<&str, _>("metadata")?)?,
        multitask_strategy: parse_strategy(r.try_get::<&str, _>("multitask_strategy")?),
        idempotency_key: r.try_get("idempotency_key")?,
        cancel_action: parse_action(r.try_get("cancel_action")?),
        cancel_reason: r.try_get("cancel_reason")?,
        worker_id: r.try_get("worker_id")?,
        lease_until_ms: r.try_get("lease_until_ms")?,
        attempt: r.try_get("attempt")?,
        error: r.try_get("error")?,
        created_at_ms: r.try_get("created_at_ms")?,
        updated_at_ms: r.try_get("updated_at_ms")?,
    })
}

type Tx<'a> = sqlx::Transaction<'a, sqlx::Sqlite>;

/// Sets a thread's status once one of its runs ended: busy while another is active.
async fn settle_thread_in(
    tx: &mut Tx<'_>,
    thread_id: &str,
    status: &str,
    now: i64,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE threads SET updated_at_ms = ?2,
             status = CASE WHEN EXISTS (SELECT 1 FROM runs o WHERE o.thread_id = threads.thread_id
                                        AND o.status IN ('pending', 'running'))
                           THEN 'busy' ELSE ?3 END
         WHERE thread_id = ?1",
    )
    .bind(thread_id)
    .bind(now)
    .bind(status)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Cancels an active run inside a write transaction (see the Postgres store's `cancel_in`).
async fn cancel_in(
    tx: &mut Tx<'_>,
    run_id: &str,
    action: CancelAction,
    reason: &str,
    now: i64,
) -> Result<Option<Run>, StoreError> {
    let n = sqlx::query(
        "UPDATE runs SET cancel_action = COALESCE(cancel_action, ?2),
             cancel_reason = COALESCE(cancel_reason, ?3), updated_at_ms = ?4,
             status = CASE WHEN status = 'pending' THEN 'cancelled' ELSE status END
         WHERE run_id = ?1 AND status IN ('pending', 'running')",
    )
    .bind(run_id)
    .bind(action_str(action))
    .bind(reason)
    .bind(now)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    if n == 0 {
        return Ok(None);
    }
    let Some(run) = get_run_in(tx, run_id).await? else {
        return Ok(None);
    };
    if run.status == RunState::Cancelled {
        if run.cancel_action == Some(CancelAction::Rollback) {
            sqlx::query("DELETE FROM runs WHERE run_id = ?1")
                .bind(run_id)
                .execute(&mut **tx)
                .await?;
        } else {
            sqlx::query(
                "INSERT INTO run_events (run_id, seq, thread_id, event) VALUES (?1, 1, ?2, ?3)
                 ON CONFLICT DO NOTHING",
            )
            .bind(run_id)
            .bind(&run.thread_id)
            .bind(
                super::cancelled_event(run.cancel_reason.as_deref().unwrap_or(reason)).to_string(),
            )
            .execute(&mut **tx)
            .await?;
        }
        settle_thread_in(tx, &run.thread_id, "idle", now).await?;
    }
    Ok(Some(run))
}

async fn get_run_in(tx: &mut Tx<'_>, run_id: &str) -> Result<Option<Run>, StoreError> {
    let row = sqlx::query(concat!(
        "SELECT ",
        run_columns!(),
        " FROM runs WHERE run_id = ?1"
    ))
    .bind(run_id)
    .fetch_optional(&mut **tx)
    .await?;
    row.as_ref().map(run_from_row).transpose()
}

#[async_trait]
impl Store for SqliteStore {
    async fn recover_orphans(&self) -> Result<u64, StoreError> {
        // One process owns an embedded database: a run still `running` at start was left
        // by a process that died, and is claimable at once (not after its lease runs out).
        Ok(
            sqlx::query("UPDATE runs SET lease_until_ms = 0 WHERE status = 'running'")
                .execute(&self.pool)
                .await?
                .rows_affected(),
        )
    }

    async fn create_thread(&self, t: Thread, if_exists: IfExists) -> Result<Thread, StoreError> {
        let inserted = sqlx::query(
            "INSERT INTO threads (thread_id, owner, metadata, status, created_at_ms, updated_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?5) ON CONFLICT (thread_id) DO NOTHING",
        )
        .bind(&t.thread_id)
        .bind(&t.owner)
        .bind(t.metadata.to_string())
        .bind(&t.status)
        .bind(t.created_at_ms)
        .execute(&self.pool)
        .await?
        .rows_affected();
        if inserted == 1 {
            return Ok(t);
        }
        match self.get_thread(&t.owner, &t.thread_id).await? {
            Some(existing) if if_exists == IfExists::DoNothing => Ok(existing),
            _ => Err(StoreError::Exists(format!("thread `{}`", t.thread_id))),
        }
    }

    async fn get_thread(&self, owner: &str, thread_id: &str) -> Result<Option<Thread>, StoreError> {
        Ok(self
            .get_thread_any(thread_id)
            .await?
            .filter(|t| t.owner == owner))
    }

    async fn get_thread_any(&self, thread_id: &str) -> Result<Option<Thread>, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {THREAD_COLUMNS} FROM threads WHERE thread_id = ?1"
        )))
        .bind(thread_id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(thread_from_row).transpose()
    }

    async fn search_threads(
        &self,
        owner: &str,
        q: &ThreadQuery,
    ) -> Result<Vec<Thread>, StoreError> {
        let ids = q
            .ids
            .as_ref()
            .map(|ids| serde_json::to_string(ids).unwrap_or_default());
        let rows = sqlx::query(
            "SELECT thread_id, owner, metadata, status, created_at_ms, updated_at_ms
             FROM threads t
             WHERE owner = ?1
               AND NOT EXISTS (SELECT 1 FROM json_each(?2) f
                               WHERE json_extract(t.metadata, '$.\"' || f.key || '\"') IS NOT f.value)
               AND (?3 IS NULL OR status = ?3)
               AND (?4 IS NULL OR thread_id IN (SELECT value FROM json_each(?4)))
             ORDER BY updated_at_ms DESC, thread_id
             LIMIT ?5 OFFSET ?6",
        )
        .bind(owner)
        .bind(Value::Object(q.metadata.clone()).to_string())
        .bind(q.status.as_deref())
        .bind(ids)
        .bind(q.limit)
        .bind(q.offset)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(thread_from_row).collect()
    }

    async fn patch_thread(
        &self,
        owner: &str,
        thread_id: &str,
        patch: &Value,
    ) -> Result<Option<Thread>, StoreError> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {THREAD_COLUMNS} FROM threads WHERE thread_id = ?1 AND owner = ?2"
        )))
        .bind(thread_id)
        .bind(owner)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            tx.rollback().await?;
            return Ok(None);
        };
        let mut t = thread_from_row(&row)?;
        t.metadata = merge_metadata(&t.metadata, patch);
        t.updated_at_ms = now_ms();
        sqlx::query("UPDATE threads SET metadata = ?2, updated_at_ms = ?3 WHERE thread_id = ?1")
            .bind(thread_id)
            .bind(t.metadata.to_string())
            .bind(t.updated_at_ms)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Some(t))
    }

    async fn delete_thread(&self, owner: &str, thread_id: &str) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let n = sqlx::query("DELETE FROM threads WHERE thread_id = ?1 AND owner = ?2")
            .bind(thread_id)
            .bind(owner)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if n == 1 {
            sqlx::query("DELETE FROM run_events WHERE thread_id = ?1")
                .bind(thread_id)
                .execute(&mut *tx)
                .await?;
            sqlx::query("DELETE FROM runs WHERE thread_id = ?1")
                .bind(thread_id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(n == 1)
    }

    async fn create_run(&self, new: NewRun) -> Result<CreatedRun, StoreError> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let run_seq: Option<i64> =
            sqlx::query_scalar("SELECT run_seq FROM threads WHERE thread_id = ?1")
                .bind(&new.thread_id)
                .fetch_optional(&mut *tx)
                .await?;
        let Some(run_seq) = run_seq else {
            tx.rollback().await?;
            return Err(StoreError::NotFound(format!("thread `{}`", new.thread_id)));
        };
        if let Some(key) = &new.idempotency_key {
            let existing = sqlx::query(concat!(
                "SELECT ",
                run_columns!(),
                " FROM runs WHERE owner = ?1 AND idempotency_key = ?2"
            ))
            .bind(&new.owner)
            .bind(key)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(row) = existing {
                tx.commit().await?;
                return Ok(CreatedRun {
                    run: run_from_row(&row)?,
                    existing: true,
                    cancelled: Vec::new(),
                });
            }
        }
        let active: Vec<Run> = sqlx::query(concat!(
            "SELECT ",
            run_columns!(),
            " FROM runs WHERE thread_id = ?1 AND status IN ('pending', 'running') ORDER BY thread_seq"
        ))
        .bind(&new.thread_id)
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(run_from_row)
        .collect::<Result<_, _>>()?;
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
            if let Some(r) = cancel_in(&mut tx, &run.run_id, action, "superseded", now).await? {
                cancelled.push(r);
            }
        }
        sqlx::query(
            "INSERT INTO runs (run_id, thread_id, thread_seq, owner, assistant_id, graph_id, status,
                 kwargs, metadata, multitask_strategy, idempotency_key, created_at_ms, updated_at_ms)
             VALUES (?1, ?2, ?11, ?3, ?4, ?5, 'pending', ?6, ?7, ?8, ?9, ?10, ?10)",
        )
        .bind(&new.run_id)
        .bind(&new.thread_id)
        .bind(&new.owner)
        .bind(&new.assistant_id)
        .bind(&new.graph_id)
        .bind(new.kwargs.to_string())
        .bind(new.metadata.to_string())
        .bind(new.multitask_strategy.as_str())
        .bind(new.idempotency_key.as_deref())
        .bind(now)
        .bind(run_seq + 1)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "UPDATE threads SET status = 'busy', updated_at_ms = ?2, run_seq = run_seq + 1,
                 metadata = json_set(metadata, '$.graph_id', ?3, '$.assistant_id', ?4)
             WHERE thread_id = ?1",
        )
        .bind(&new.thread_id)
        .bind(now)
        .bind(&new.graph_id)
        .bind(&new.assistant_id)
        .execute(&mut *tx)
        .await?;
        let run = get_run_in(&mut tx, &new.run_id)
            .await?
            .ok_or_else(|| StoreError::Decode("the run just inserted is missing".into()))?;
        tx.commit().await?;
        Ok(CreatedRun {
            run,
            existing: false,
            cancelled,
        })
    }

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

    async fn get_run_any(&self, run_id: &str) -> Result<Option<Run>, StoreError> {
        let row = sqlx::query(concat!(
            "SELECT ",
            run_columns!(),
            " FROM runs WHERE run_id = ?1"
        ))
        .bind(run_id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(run_from_row).transpose()
    }

    async fn list_runs(
        &self,
        thread_id: &str,
        limit: i64,
        offset: i64,
    ) -> Result<Vec<Run>, StoreError> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            run_columns!(),
            " FROM runs WHERE thread_id = ?1 ORDER BY thread_seq DESC LIMIT ?2 OFFSET ?3"
        ))
        .bind(thread_id)
        .bind(limit)
        .bind(offset)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(run_from_row).collect()
    }

    async fn active_runs(&self, thread_id: &str) -> Result<Vec<Run>, StoreError> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            run_columns!(),
            " FROM runs WHERE thread_id = ?1 AND status IN ('pending', 'running') ORDER BY thread_seq"
        ))
        .bind(thread_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(run_from_row).collect()
    }

    async fn claim_run(
        &self,
        worker: &str,
        lease_ms: i64,
        only: Option<&str>,
    ) -> Result<Option<Run>, StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let id: Option<String> = sqlx::query_scalar(
            "SELECT r.run_id FROM runs r
             WHERE r.status IN ('pending', 'running')
               AND (r.status = 'pending' OR r.lease_until_ms < ?1)
               AND (?2 IS NULL OR r.run_id = ?2)
               AND NOT EXISTS (SELECT 1 FROM runs o
                               WHERE o.thread_id = r.thread_id AND o.status IN ('pending', 'running')
                                 AND o.thread_seq < r.thread_seq)
             ORDER BY r.run_id LIMIT 1",
        )
        .bind(now)
        .bind(only)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(id) = id else {
            tx.rollback().await?;
            return Ok(None);
        };
        sqlx::query(
            "UPDATE runs SET status = 'running', worker_id = ?2, lease_until_ms = ?3, attempt = attempt + 1,
                 updated_at_ms = ?4
             WHERE run_id = ?1",
        )
        .bind(&id)
        .bind(worker)
        .bind(now + lease_ms)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let run = get_run_in(&mut tx, &id).await?;
        tx.commit().await?;
        Ok(run)
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
        let claims = serde_json::to_string(held).map_err(|e| StoreError::Decode(e.to_string()))?;
        let rows = sqlx::query(
            "UPDATE runs SET lease_until_ms = ?3
             WHERE worker_id = ?1 AND status = 'running'
               AND EXISTS (SELECT 1 FROM json_each(?2) h
                           WHERE json_extract(h.value, '$[0]') = runs.run_id
                             AND json_extract(h.value, '$[1]') = runs.attempt)
             RETURNING run_id, cancel_action, cancel_reason",
        )
        .bind(worker)
        .bind(&claims)
        .bind(now_ms() + lease_ms)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(Renewed {
                    run_id: r.try_get("run_id")?,
                    cancel_action: parse_action(r.try_get("cancel_action")?),
                    cancel_reason: r.try_get("cancel_reason")?,
                })
            })
            .collect()
    }

    async fn finish_run(&self, claim: Claim<'_>, finish: &Finish) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let thread_id: Option<String> = sqlx::query_scalar(
            "SELECT thread_id FROM runs
             WHERE run_id = ?1 AND worker_id = ?2 AND attempt = ?3 AND status = 'running'",
        )
        .bind(claim.run_id)
        .bind(claim.worker)
        .bind(claim.attempt)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(thread_id) = thread_id else {
            tx.rollback().await?;
            return Ok(false);
        };
        let now = now_ms();
        if finish.delete {
            for stmt in [
                "DELETE FROM run_events WHERE run_id = ?1",
                "DELETE FROM runs WHERE run_id = ?1",
            ] {
                sqlx::query(stmt)
                    .bind(claim.run_id)
                    .execute(&mut *tx)
                    .await?;
            }
        } else {
            let (seq, event) = &finish.terminal;
            sqlx::query(
                "INSERT INTO run_events (run_id, seq, thread_id, event) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT DO NOTHING",
            )
            .bind(claim.run_id)
            .bind(seq)
            .bind(&thread_id)
            .bind(event.to_string())
            .execute(&mut *tx)
            .await?;
            sqlx::query(
                "UPDATE runs SET status = ?2, error = ?3, updated_at_ms = ?4, lease_until_ms = NULL
                 WHERE run_id = ?1",
            )
            .bind(claim.run_id)
            .bind(finish.status.as_str())
            .bind(finish.error.as_deref())
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        settle_thread_in(
            &mut tx,
            &thread_id,
            super::thread_status_after(finish.status),
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn release_run(&self, claim: Claim<'_>) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE runs SET status = 'pending', worker_id = NULL, lease_until_ms = NULL, updated_at_ms = ?4
             WHERE run_id = ?1 AND worker_id = ?2 AND attempt = ?3 AND status = 'running'",
        )
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
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let run = match cancel_in(&mut tx, run_id, action, reason, now_ms()).await? {
            Some(r) => Some(r),
            None => get_run_in(&mut tx, run_id).await?,
        };
        tx.commit().await?;
        Ok(run)
    }

    async fn delete_run(&self, run_id: &str) -> Result<(), StoreError> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        sqlx::query("DELETE FROM run_events WHERE run_id = ?1")
            .bind(run_id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM runs WHERE run_id = ?1")
            .bind(run_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn append_events(&self, rows: &[EventRow]) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        for r in rows {
            sqlx::query(
                "INSERT INTO run_events (run_id, seq, thread_id, event)
                 SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM runs
                     WHERE run_id = ?1 AND attempt = ?5 AND status = 'running')
                 ON CONFLICT DO NOTHING",
            )
            .bind(&r.run_id)
            .bind(r.seq)
            .bind(&r.thread_id)
            .bind(r.event.to_string())
            .bind(r.attempt)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn events_after(
        &self,
        run_id: &str,
        after_seq: i64,
    ) -> Result<Vec<EventRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT seq, thread_id, event FROM run_events WHERE run_id = ?1 AND seq > ?2 ORDER BY seq",
        )
        .bind(run_id)
        .bind(after_seq)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(EventRow {
                    run_id: run_id.to_string(),
                    seq: r.try_get("seq")?,
                    thread_id: r.try_get("thread_id")?,
                    event: json(r.try_get::<&str, _>("event")?)?,
                    attempt: 0,
                })
            })
            .collect()
    }
}
