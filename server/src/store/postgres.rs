//! The server's tables in Postgres. Run creation locks the thread row (`FOR UPDATE`) so a
//! second run and a cancel cannot race; workers claim runs with `FOR UPDATE SKIP LOCKED`.

use async_trait::async_trait;
use palgraph::db::json_without_nul;
use serde_json::Value;
use sqlx::postgres::PgRow;
use sqlx::{PgPool, Row};

use super::{
    decide, now_ms, CancelAction, CreatedRun, EventRow, IfExists, MultitaskStrategy, NewRun, Run,
    RunState, Store, StoreError, Thread, ThreadQuery,
};

/// The store on Postgres.
#[derive(Clone)]
pub(crate) struct PgStore {
    pool: PgPool,
}

impl PgStore {
    pub(crate) fn new(pool: PgPool) -> Self {
        PgStore { pool }
    }
}

macro_rules! run_columns {
    () => {
        "run_id, thread_id, owner, assistant_id, graph_id, status, kwargs::text AS kwargs, \
         metadata::text AS metadata, multitask_strategy, idempotency_key, cancel_action, cancel_reason, \
         worker_id, lease_until_ms, attempt, error, created_at_ms, updated_at_ms"
    };
}

fn json(text: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Decode(e.to_string()))
}

fn thread_from_row(r: &PgRow) -> Result<Thread, StoreError> {
    Ok(Thread {
        thread_id: r.try_get("thread_id")?,
        owner: r.try_get("owner")?,
        metadata: json(r.try_get::<&str, _>("metadata")?)?,
        status: r.try_get("status")?,
        created_at_ms: r.try_get("created_at_ms")?,
        updated_at_ms: r.try_get("updated_at_ms")?,
    })
}

pub(crate) fn parse_strategy(s: &str) -> MultitaskStrategy {
    match s {
        "interrupt" => MultitaskStrategy::Interrupt,
        "rollback" => MultitaskStrategy::Rollback,
        "enqueue" => MultitaskStrategy::Enqueue,
        _ => MultitaskStrategy::Reject,
    }
}

pub(crate) fn parse_action(s: Option<String>) -> Option<CancelAction> {
    s.map(|a| {
        if a == "rollback" {
            CancelAction::Rollback
        } else {
            CancelAction::Interrupt
        }
    })
}

pub(crate) fn action_str(a: CancelAction) -> &'static str {
    match a {
        CancelAction::Interrupt => "interrupt",
        CancelAction::Rollback => "rollback",
    }
}

fn run_from_row(r: &PgRow) -> Result<Run, StoreError> {
    let status: String = r.try_get("status")?;
    Ok(Run {
        run_id: r.try_get("run_id")?,
        thread_id: r.try_get("thread_id")?,
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

const THREAD_COLUMNS: &str =
    "thread_id, owner, metadata::text AS metadata, status, created_at_ms, updated_at_ms";

#[async_trait]
impl Store for PgStore {
    async fn notifications(
        &self,
    ) -> Option<tokio::sync::mpsc::UnboundedReceiver<super::Notification>> {
        use super::Notification;
        let mut listener = match sqlx::postgres::PgListener::connect_with(&self.pool).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, "cannot LISTEN: other replicas' events are polled");
                return None;
            }
        };
        if let Err(e) = listener
            .listen_all(["palgraph_events", "palgraph_cancel", "palgraph_runs"])
            .await
        {
            tracing::warn!(error = %e, "cannot LISTEN: other replicas' events are polled");
            return None;
        }
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            loop {
                let n = match listener.try_recv().await {
                    Ok(Some(n)) => match n.channel() {
                        "palgraph_events" => Notification::Events(n.payload().to_string()),
                        "palgraph_cancel" => Notification::Cancel(n.payload().to_string()),
                        _ => Notification::Runs(n.payload().to_string()),
                    },
                    // The connection dropped and was re-established: anything sent meanwhile
                    // is lost.
                    Ok(None) => Notification::Lost,
                    Err(e) => {
                        tracing::warn!(error = %e, "LISTEN connection failed; retrying");
                        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                        Notification::Lost
                    }
                };
                if tx.send(n).is_err() {
                    return;
                }
            }
        });
        Some(rx)
    }

    async fn create_thread(&self, t: Thread, if_exists: IfExists) -> Result<Thread, StoreError> {
        let row = sqlx::query(
            "INSERT INTO threads (thread_id, owner, metadata, status, created_at_ms, updated_at_ms)
             VALUES ($1, $2, $3::jsonb, $4, $5, $5)
             ON CONFLICT (thread_id) DO NOTHING
             RETURNING thread_id, owner, metadata::text AS metadata, status, created_at_ms, updated_at_ms",
        )
        .bind(&t.thread_id)
        .bind(&t.owner)
        .bind(json_without_nul(&t.metadata.to_string()).as_ref())
        .bind(&t.status)
        .bind(t.created_at_ms)
        .fetch_optional(&self.pool)
        .await?;
        if let Some(row) = row {
            return thread_from_row(&row);
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
            "SELECT {THREAD_COLUMNS} FROM threads WHERE thread_id = $1"
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
        let rows = sqlx::query(
            "SELECT thread_id, owner, metadata::text AS metadata, status, created_at_ms, updated_at_ms
             FROM threads
             WHERE owner = $1 AND metadata @> $2::jsonb
               AND ($3::text IS NULL OR status = $3)
               AND ($4::text[] IS NULL OR thread_id = ANY($4))
             ORDER BY updated_at_ms DESC, thread_id
             LIMIT $5 OFFSET $6",
        )
        .bind(owner)
        .bind(Value::Object(q.metadata.clone()).to_string())
        .bind(q.status.as_deref())
        .bind(q.ids.as_deref())
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
        let row = sqlx::query(
            "UPDATE threads SET metadata = metadata || $3::jsonb, updated_at_ms = $4
             WHERE thread_id = $1 AND owner = $2
             RETURNING thread_id, owner, metadata::text AS metadata, status, created_at_ms, updated_at_ms",
        )
        .bind(thread_id)
        .bind(owner)
        .bind(json_without_nul(&patch.to_string()).as_ref())
        .bind(now_ms())
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(thread_from_row).transpose()
    }

    async fn delete_thread(&self, owner: &str, thread_id: &str) -> Result<bool, StoreError> {
        let deleted = sqlx::query(
            "WITH e AS (DELETE FROM run_events WHERE thread_id = $1 AND EXISTS
                        (SELECT 1 FROM threads WHERE thread_id = $1 AND owner = $2)),
                  r AS (DELETE FROM runs WHERE thread_id = $1 AND owner = $2)
             DELETE FROM threads WHERE thread_id = $1 AND owner = $2",
        )
        .bind(thread_id)
        .bind(owner)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(deleted > 0)
    }

    async fn set_thread_status(&self, thread_id: &str, status: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE threads SET status = $2, updated_at_ms = $3 WHERE thread_id = $1")
            .bind(thread_id)
            .bind(status)
            .bind(now_ms())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn create_run(&self, new: NewRun) -> Result<CreatedRun, StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("SELECT 1 FROM threads WHERE thread_id = $1 FOR UPDATE")
            .bind(&new.thread_id)
            .execute(&mut *tx)
            .await?;
        if let Some(key) = &new.idempotency_key {
            let existing = sqlx::query(concat!(
                "SELECT ",
                run_columns!(),
                " FROM runs WHERE owner = $1 AND idempotency_key = $2"
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
            " FROM runs WHERE thread_id = $1 AND status IN ('pending', 'running') ORDER BY run_id"
        ))
        .bind(&new.thread_id)
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(run_from_row)
        .collect::<Result<_, _>>()?;
        let now = now_ms();
        let mut cancelled = Vec::new();
        for (run, action) in decide(&new.thread_id, &active, new.multitask_strategy)? {
            if run.status == RunState::Pending && action == CancelAction::Rollback {
                sqlx::query("DELETE FROM runs WHERE run_id = $1")
                    .bind(&run.run_id)
                    .execute(&mut *tx)
                    .await?;
                continue;
            }
            let row = sqlx::query(concat!(
                "UPDATE runs SET cancel_action = $2, cancel_reason = 'superseded', updated_at_ms = $3,
                     status = CASE WHEN status = 'pending' THEN 'cancelled' ELSE status END
                 WHERE run_id = $1 RETURNING ",
                run_columns!()
            ))
            .bind(&run.run_id)
            .bind(action_str(action))
            .bind(now)
            .fetch_one(&mut *tx)
            .await?;
            cancelled.push(run_from_row(&row)?);
        }
        let row = sqlx::query(concat!(
            "INSERT INTO runs (run_id, thread_id, owner, assistant_id, graph_id, status, kwargs, metadata,
                 multitask_strategy, idempotency_key, created_at_ms, updated_at_ms)
             VALUES ($1, $2, $3, $4, $5, 'pending', $6::jsonb, $7::jsonb, $8, $9, $10, $10)
             RETURNING ",
            run_columns!()
        ))
        .bind(&new.run_id)
        .bind(&new.thread_id)
        .bind(&new.owner)
        .bind(&new.assistant_id)
        .bind(&new.graph_id)
        .bind(json_without_nul(&new.kwargs.to_string()).as_ref())
        .bind(json_without_nul(&new.metadata.to_string()).as_ref())
        .bind(new.multitask_strategy.as_str())
        .bind(new.idempotency_key.as_deref())
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        sqlx::query(
            "WITH n AS (SELECT pg_notify('palgraph_runs', $1))
             UPDATE threads SET status = 'busy', updated_at_ms = $2,
                 metadata = metadata || jsonb_build_object('graph_id', $3::text, 'assistant_id', $4::text)
             FROM n WHERE thread_id = $1",
        )
        .bind(&new.thread_id)
        .bind(now)
        .bind(&new.graph_id)
        .bind(&new.assistant_id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(CreatedRun {
            run: run_from_row(&row)?,
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
            " FROM runs WHERE run_id = $1"
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
            " FROM runs WHERE thread_id = $1 ORDER BY run_id DESC LIMIT $2 OFFSET $3"
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
            " FROM runs WHERE thread_id = $1 AND status IN ('pending', 'running') ORDER BY run_id"
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
        let row = sqlx::query(concat!(
            "UPDATE runs SET status = 'running', worker_id = $1, lease_until_ms = $2,
                 attempt = attempt + 1, updated_at_ms = $3
             WHERE run_id = (
                 SELECT r.run_id FROM runs r
                 WHERE r.status IN ('pending', 'running')
                   AND (r.status = 'pending' OR r.lease_until_ms < $3)
                   AND ($4::text IS NULL OR r.run_id = $4)
                   AND NOT EXISTS (SELECT 1 FROM runs o
                                   WHERE o.thread_id = r.thread_id AND o.status IN ('pending', 'running')
                                     AND o.run_id < r.run_id)
                 ORDER BY r.run_id
                 LIMIT 1
                 FOR UPDATE SKIP LOCKED)
             RETURNING ",
            run_columns!()
        ))
        .bind(worker)
        .bind(now + lease_ms)
        .bind(now)
        .bind(only)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(run_from_row).transpose()
    }

    async fn heartbeat(
        &self,
        worker: &str,
        run_ids: &[String],
        lease_ms: i64,
    ) -> Result<Vec<Run>, StoreError> {
        if run_ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows = sqlx::query(concat!(
            "UPDATE runs SET lease_until_ms = $3
             WHERE worker_id = $1 AND run_id = ANY($2) AND status = 'running'
             RETURNING ",
            run_columns!()
        ))
        .bind(worker)
        .bind(run_ids)
        .bind(now_ms() + lease_ms)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .iter()
            .map(run_from_row)
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .filter(|r| r.cancel_action.is_some())
            .collect())
    }

    async fn finish_run(
        &self,
        run_id: &str,
        worker: &str,
        status: RunState,
        error: Option<&str>,
    ) -> Result<bool, StoreError> {
        // The run's end and its thread's status change together, so a client that sees the
        // run finished can start the next one at once.
        let n = sqlx::query(
            "WITH r AS (
                UPDATE runs SET status = $3, error = $4, updated_at_ms = $5, lease_until_ms = NULL
                WHERE run_id = $1 AND worker_id = $2 AND status = 'running'
                RETURNING thread_id
             )
             UPDATE threads SET updated_at_ms = $5,
                 status = CASE WHEN EXISTS (SELECT 1 FROM runs o WHERE o.thread_id = threads.thread_id
                                            AND o.status IN ('pending', 'running') AND o.run_id <> $1)
                               THEN 'busy' ELSE $6 END
             WHERE thread_id = (SELECT thread_id FROM r)",
        )
        .bind(run_id)
        .bind(worker)
        .bind(status.as_str())
        .bind(error)
        .bind(now_ms())
        .bind(super::thread_status_after(status))
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(n == 1)
    }

    async fn release_run(&self, run_id: &str, worker: &str) -> Result<(), StoreError> {
        sqlx::query(
            "WITH n AS (SELECT pg_notify('palgraph_runs', $1))
             UPDATE runs SET status = 'pending', worker_id = NULL, lease_until_ms = NULL, updated_at_ms = $3
             FROM n WHERE run_id = $1 AND worker_id = $2 AND status = 'running'",
        )
        .bind(run_id)
        .bind(worker)
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
        let row = sqlx::query(concat!(
            "WITH n AS (SELECT pg_notify('palgraph_cancel', $1))
             UPDATE runs SET cancel_action = COALESCE(cancel_action, $2),
                 cancel_reason = COALESCE(cancel_reason, $3), updated_at_ms = $4,
                 status = CASE WHEN status = 'pending' THEN 'cancelled' ELSE status END
             FROM n WHERE run_id = $1 AND status IN ('pending', 'running')
             RETURNING ",
            run_columns!()
        ))
        .bind(run_id)
        .bind(action_str(action))
        .bind(reason)
        .bind(now_ms())
        .fetch_optional(&self.pool)
        .await?;
        match row {
            Some(r) => Ok(Some(run_from_row(&r)?)),
            None => self.get_run_any(run_id).await,
        }
    }

    async fn delete_run(&self, run_id: &str) -> Result<(), StoreError> {
        sqlx::query("WITH e AS (DELETE FROM run_events WHERE run_id = $1) DELETE FROM runs WHERE run_id = $1")
            .bind(run_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn append_events(&self, rows: &[EventRow]) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        let batch: Vec<Value> = rows
            .iter()
            .map(|r| serde_json::json!({"run_id": r.run_id, "seq": r.seq, "thread_id": r.thread_id, "event": r.event}))
            .collect();
        let text = Value::Array(batch).to_string();
        // One statement: events are a replay log, not the source of truth (checkpoints
        // are), so their commit does not wait for fsync; other replicas' watchers are told
        // which runs have new events (NOTIFY is delivered at commit).
        sqlx::query(
            "WITH cfg AS (SELECT set_config('synchronous_commit', 'off', true)),
                  ins AS (
                    INSERT INTO run_events (run_id, seq, thread_id, event)
                    SELECT e.run_id, e.seq, e.thread_id, e.event
                    FROM jsonb_to_recordset($1::jsonb) AS e(run_id text, seq bigint, thread_id text, event jsonb)
                    ON CONFLICT DO NOTHING
                    RETURNING run_id)
             SELECT pg_notify('palgraph_events', r.run_id)
             FROM cfg, (SELECT DISTINCT run_id FROM ins) r",
        )
        .bind(json_without_nul(&text).as_ref())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn events_after(
        &self,
        run_id: &str,
        after_seq: i64,
    ) -> Result<Vec<EventRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT seq, thread_id, event::text AS event FROM run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq",
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
                })
            })
            .collect()
    }
}
