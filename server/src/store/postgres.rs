//! The server's tables in Postgres. Run creation locks the thread row (`FOR UPDATE`) so a
//! second run and a cancel cannot race; workers claim runs with `FOR UPDATE SKIP LOCKED`.

use async_trait::async_trait;
use palgraph::db::json_without_nul;
use serde_json::Value;
use sqlx::postgres::PgRow;
use sqlx::{PgPool, Row};

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::{
    decide, now_ms, CancelAction, Claim, CreatedRun, EventRow, Finish, IfExists, MultitaskStrategy,
    NewRun, Renewed, Run, RunState, Store, StoreError, Thread, ThreadQuery,
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
        "run_id, thread_id, thread_seq, owner, assistant_id, graph_id, status, kwargs::text AS kwargs, \
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

/// The prefix of the `application_name` of every connection a server process opens: the
/// process's worker id follows, so other processes can tell it is alive.
pub const APPLICATION_PREFIX: &str = "palgraph:";

/// Cancels an active run inside a transaction that holds its thread's lock: a pending run
/// ends at once with its terminal event (a rollback deletes it); a running one is flagged
/// for its worker. Returns the run as it is afterwards (`None` if it was not active).
async fn cancel_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    run_id: &str,
    action: CancelAction,
    reason: &str,
    now: i64,
) -> Result<Option<Run>, StoreError> {
    let row = sqlx::query(concat!(
        "UPDATE runs SET cancel_action = COALESCE(cancel_action, $2),
             cancel_reason = COALESCE(cancel_reason, $3), updated_at_ms = $4,
             status = CASE WHEN status = 'pending' THEN 'cancelled' ELSE status END
         WHERE run_id = $1 AND status IN ('pending', 'running')
         RETURNING ",
        run_columns!()
    ))
    .bind(run_id)
    .bind(action_str(action))
    .bind(reason)
    .bind(now)
    .fetch_optional(&mut **tx)
    .await?;
    let Some(run) = row.as_ref().map(run_from_row).transpose()? else {
        return Ok(None);
    };
    if run.status == RunState::Cancelled {
        // It never started: it ends here, with its terminal event, or goes entirely.
        let rollback = run.cancel_action == Some(CancelAction::Rollback);
        sqlx::query(
            "WITH ev AS (INSERT INTO run_events (run_id, seq, thread_id, event)
                         SELECT $1, 1, $2, $3::jsonb WHERE NOT $4 ON CONFLICT DO NOTHING),
                  gone AS (DELETE FROM runs WHERE $4 AND run_id = $1),
                  n AS (SELECT pg_notify('palgraph_events', $1))
             UPDATE threads SET status = CASE WHEN EXISTS (SELECT 1 FROM runs o
                     WHERE o.thread_id = $2 AND o.status IN ('pending', 'running') AND o.run_id <> $1)
                 THEN 'busy' ELSE 'idle' END
             FROM n WHERE thread_id = $2",
        )
        .bind(run_id)
        .bind(&run.thread_id)
        .bind(super::cancelled_event(run.cancel_reason.as_deref().unwrap_or(reason)).to_string())
        .bind(rollback)
        .execute(&mut **tx)
        .await?;
    } else {
        sqlx::query("SELECT pg_notify('palgraph_cancel', $1)")
            .bind(run_id)
            .execute(&mut **tx)
            .await?;
    }
    Ok(Some(run))
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
        let mut tx = self.pool.begin().await?;
        let mine: Option<i32> = sqlx::query_scalar(
            "SELECT 1 FROM threads WHERE thread_id = $1 AND owner = $2 FOR UPDATE",
        )
        .bind(thread_id)
        .bind(owner)
        .fetch_optional(&mut *tx)
        .await?;
        if mine.is_none() {
            tx.rollback().await?;
            return Ok(false);
        }
        sqlx::query(
            "WITH e AS (DELETE FROM run_events WHERE thread_id = $1),
                  r AS (DELETE FROM runs WHERE thread_id = $1)
             DELETE FROM threads WHERE thread_id = $1",
        )
        .bind(thread_id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn create_run(&self, new: NewRun) -> Result<CreatedRun, StoreError> {
        let mut tx = self.pool.begin().await?;
        // The thread first, always: one lock order for everything that touches a thread
        // and its runs.
        let run_seq: Option<i64> =
            sqlx::query_scalar("SELECT run_seq FROM threads WHERE thread_id = $1 FOR UPDATE")
                .bind(&new.thread_id)
                .fetch_optional(&mut *tx)
                .await?;
        let Some(run_seq) = run_seq else {
            return Err(StoreError::NotFound(format!("thread `{}`", new.thread_id)));
        };
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
            " FROM runs WHERE thread_id = $1 AND status IN ('pending', 'running') ORDER BY thread_seq"
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
            cancelled.push(cancel_in(&mut tx, &run.run_id, action, "superseded", now).await?);
        }
        let row = sqlx::query(concat!(
            "INSERT INTO runs (run_id, thread_id, thread_seq, owner, assistant_id, graph_id, status,
                 kwargs, metadata, multitask_strategy, idempotency_key, created_at_ms, updated_at_ms)
             VALUES ($1, $2, $11, $3, $4, $5, 'pending', $6::jsonb, $7::jsonb, $8, $9, $10, $10)
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
        .bind(run_seq + 1)
        .fetch_one(&mut *tx)
        .await?;
        sqlx::query(
            "WITH n AS (SELECT pg_notify('palgraph_runs', $1))
             UPDATE threads SET status = 'busy', updated_at_ms = $2, run_seq = run_seq + 1,
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
            cancelled: cancelled.into_iter().flatten().collect(),
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
            " FROM runs WHERE thread_id = $1 ORDER BY thread_seq DESC LIMIT $2 OFFSET $3"
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
            " FROM runs WHERE thread_id = $1 AND status IN ('pending', 'running') ORDER BY thread_seq"
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
                                     AND o.thread_seq < r.thread_seq)
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
        held: &[(String, i64)],
        lease_ms: i64,
    ) -> Result<Vec<Renewed>, StoreError> {
        if held.is_empty() {
            return Ok(Vec::new());
        }
        let (ids, attempts): (Vec<&str>, Vec<i64>) =
            held.iter().map(|(r, a)| (r.as_str(), *a)).unzip();
        let rows = sqlx::query(
            "UPDATE runs r SET lease_until_ms = $4
             FROM unnest($2::text[], $3::bigint[]) AS h(run_id, attempt)
             WHERE r.run_id = h.run_id AND r.attempt = h.attempt
               AND r.worker_id = $1 AND r.status = 'running'
             RETURNING r.run_id, r.cancel_action, r.cancel_reason",
        )
        .bind(worker)
        .bind(&ids)
        .bind(&attempts)
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
        let mut tx = self.pool.begin().await?;
        // The thread's lock, then the run's: the order every writer of runs takes.
        let thread_id: Option<String> = sqlx::query_scalar(
            "WITH t AS (SELECT thread_id FROM threads
                        WHERE thread_id = (SELECT thread_id FROM runs WHERE run_id = $1)
                        FOR UPDATE)
             SELECT r.thread_id FROM runs r JOIN t ON t.thread_id = r.thread_id
             WHERE r.run_id = $1 AND r.worker_id = $2 AND r.attempt = $3 AND r.status = 'running'
             FOR UPDATE OF r",
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
        let (seq, event) = &finish.terminal;
        sqlx::query(
            "WITH ev AS (INSERT INTO run_events (run_id, seq, thread_id, event)
                         SELECT $1, $2, $3, $4::jsonb WHERE NOT $5
                         ON CONFLICT DO NOTHING),
                  gone_ev AS (DELETE FROM run_events WHERE $5 AND run_id = $1),
                  upd AS (UPDATE runs SET status = $6, error = $7, updated_at_ms = $8,
                              lease_until_ms = NULL
                          WHERE run_id = $1 AND NOT $5),
                  gone AS (DELETE FROM runs WHERE run_id = $1 AND $5),
                  n AS (SELECT pg_notify('palgraph_events', $1))
             UPDATE threads SET updated_at_ms = $8,
                 status = CASE WHEN EXISTS (SELECT 1 FROM runs o WHERE o.thread_id = $3
                                            AND o.status IN ('pending', 'running') AND o.run_id <> $1)
                               THEN 'busy' ELSE $9 END
             FROM n WHERE thread_id = $3",
        )
        .bind(claim.run_id)
        .bind(seq)
        .bind(&thread_id)
        .bind(json_without_nul(&event.to_string()).as_ref())
        .bind(finish.delete)
        .bind(finish.status.as_str())
        .bind(finish.error.as_deref().map(|e| e.replace('\0', "")))
        .bind(now_ms())
        .bind(super::thread_status_after(finish.status))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn release_run(&self, claim: Claim<'_>) -> Result<(), StoreError> {
        sqlx::query(
            "WITH n AS (SELECT pg_notify('palgraph_runs', $1))
             UPDATE runs SET status = 'pending', worker_id = NULL, lease_until_ms = NULL, updated_at_ms = $4
             FROM n WHERE run_id = $1 AND worker_id = $2 AND attempt = $3 AND status = 'running'",
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
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "SELECT 1 FROM threads WHERE thread_id = (SELECT thread_id FROM runs WHERE run_id = $1)
             FOR UPDATE",
        )
        .bind(run_id)
        .execute(&mut *tx)
        .await?;
        let cancelled = cancel_in(&mut tx, run_id, action, reason, now_ms()).await?;
        let run = match cancelled {
            Some(r) => Some(r),
            None => {
                let row = sqlx::query(concat!(
                    "SELECT ",
                    run_columns!(),
                    " FROM runs WHERE run_id = $1"
                ))
                .bind(run_id)
                .fetch_optional(&mut *tx)
                .await?;
                row.as_ref().map(run_from_row).transpose()?
            }
        };
        tx.commit().await?;
        Ok(run)
    }

    async fn delete_run(&self, run_id: &str) -> Result<(), StoreError> {
        sqlx::query("WITH e AS (DELETE FROM run_events WHERE run_id = $1) DELETE FROM runs WHERE run_id = $1")
            .bind(run_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn sweep_orphans(
        &self,
        worker: &str,
        gone: &mut HashMap<String, Instant>,
        debounce: Duration,
    ) -> Result<u64, StoreError> {
        // Workers holding runs with no session on the database: their process died (its
        // connections closed with it). Each process's connections carry its worker id as
        // their application_name.
        let absent: Vec<String> = sqlx::query_scalar(
            "SELECT DISTINCT r.worker_id FROM runs r
             WHERE r.status = 'running' AND r.worker_id IS NOT NULL AND r.worker_id <> $1
               AND r.lease_until_ms > 0
               AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a
                               WHERE a.application_name = $2 || r.worker_id)",
        )
        .bind(worker)
        .bind(APPLICATION_PREFIX)
        .fetch_all(&self.pool)
        .await?;
        let now = Instant::now();
        gone.retain(|w, _| absent.contains(w));
        let mut dead = Vec::new();
        for w in absent {
            let since = *gone.entry(w.clone()).or_insert(now);
            if now.duration_since(since) >= debounce {
                dead.push(w);
            }
        }
        if dead.is_empty() {
            return Ok(0);
        }
        let n = sqlx::query(
            "WITH n AS (SELECT pg_notify('palgraph_runs', 'orphans'))
             UPDATE runs SET lease_until_ms = 0 FROM n
             WHERE status = 'running' AND worker_id = ANY($1)",
        )
        .bind(&dead)
        .execute(&self.pool)
        .await?
        .rows_affected();
        for w in &dead {
            gone.remove(w);
        }
        Ok(n)
    }

    async fn append_events(&self, rows: &[EventRow]) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        let batch: Vec<Value> = rows
            .iter()
            .map(|r| serde_json::json!({"run_id": r.run_id, "seq": r.seq, "thread_id": r.thread_id, "event": r.event, "attempt": r.attempt}))
            .collect();
        let text = Value::Array(batch).to_string();
        // One statement: events are a replay log, not the source of truth (checkpoints
        // are), so their commit does not wait for fsync; other replicas' watchers are told
        // which runs have new events (NOTIFY is delivered at commit). A row is stored only
        // while its claim holds the run.
        sqlx::query(
            "WITH cfg AS (SELECT set_config('synchronous_commit', 'off', true)),
                  ins AS (
                    INSERT INTO run_events (run_id, seq, thread_id, event)
                    SELECT e.run_id, e.seq, e.thread_id, e.event
                    FROM jsonb_to_recordset($1::jsonb)
                         AS e(run_id text, seq bigint, thread_id text, event jsonb, attempt bigint)
                    JOIN runs r ON r.run_id = e.run_id AND r.attempt = e.attempt
                               AND r.status = 'running'
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
                    attempt: 0,
                })
            })
            .collect()
    }
}
