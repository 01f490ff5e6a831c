//! The store's dialect on Postgres. Writers of a thread and its runs lock the thread's row
//! first (`FOR UPDATE`), so a second run, a cancel and a run's end cannot race; workers claim
//! runs with `FOR UPDATE SKIP LOCKED`; other replicas hear of new runs, events and cancels
//! through LISTEN/NOTIFY. The hot writes are single statements, and runs are created and
//! ended in batches across requests (one call and one commit for many runs).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use palgraph::db::json_without_nul;
use serde_json::Value;
use sqlx::{PgConnection, PgPool, Postgres};
use tokio::sync::mpsc::UnboundedReceiver;

use super::dialect::Dialect;
use super::run_batches::RunBatches;
use super::{thread_status_after, EventRow, Finish, Notification, StoreError};

/// The prefix of the `application_name` of every connection a server process opens: the
/// process's worker id follows, so other processes can tell it is alive.
pub const APPLICATION_PREFIX: &str = "palgraph:";

#[async_trait]
impl Dialect for Postgres {
    const BEGIN_WRITE: &'static str = "BEGIN";
    const FOR_UPDATE: &'static str = " FOR UPDATE";
    const SKIP_LOCKED: &'static str = " FOR UPDATE SKIP LOCKED";
    const BYTE_ORDER: &'static str = r#" COLLATE "C""#;
    const REFUSES_NUL: bool = true;
    const WITH_GRAPH: &'static str =
        "metadata || jsonb_build_object('graph_id', $3::text, 'assistant_id', $4::text)";
    const THREAD_MATCHES: &'static str = "t.metadata @> $2
        AND ($4 IS NULL OR t.thread_id IN (SELECT jsonb_array_elements_text($4)))";
    const HELD: &'static str =
        "(SELECT e->>0 AS id, (e->>1)::bigint AS att FROM jsonb_array_elements($2) AS e) AS h";

    fn rows_affected(result: &Self::QueryResult) -> u64 {
        result.rows_affected()
    }

    fn notify(channel: &str, payload: &str) -> Option<String> {
        Some(format!("pg_notify('{channel}', {payload})"))
    }

    fn run_batches(pool: &PgPool) -> Option<RunBatches> {
        Some(RunBatches::spawn(pool))
    }

    async fn end_run(
        conn: &mut PgConnection,
        run_id: &str,
        thread_id: &str,
        finish: &Finish,
        now: i64,
    ) -> Result<(), StoreError> {
        // One statement: this is every run's last write.
        let (seq, event) = &finish.terminal;
        sqlx::query(
            "WITH ev AS (INSERT INTO run_events (run_id, seq, packed)
                         SELECT $1, $2, $4 WHERE NOT $5
                         ON CONFLICT DO NOTHING),
                  gone_ev AS (DELETE FROM run_events WHERE $5 AND run_id = $1),
                  upd AS (UPDATE runs SET status = $6, error = $7, updated_at_ms = $8,
                              lease_until_ms = NULL
                          WHERE run_id = $1 AND NOT $5),
                  gone AS (DELETE FROM runs WHERE run_id = $1 AND $5),
                  n AS (SELECT pg_notify('palgraph_events', $1),
                               -- A run queued behind this one can be claimed now.
                               CASE WHEN EXISTS (SELECT 1 FROM runs o WHERE o.thread_id = $3
                                                 AND o.status = 'pending' AND o.run_id <> $1)
                                    THEN pg_notify('palgraph_runs', $3) END)
             UPDATE threads SET updated_at_ms = $8,
                 status = CASE WHEN EXISTS (SELECT 1 FROM runs o WHERE o.thread_id = $3
                                            AND o.status IN ('pending', 'running') AND o.run_id <> $1)
                               THEN 'busy' ELSE $9 END
             FROM n WHERE thread_id = $3",
        )
        .bind(run_id)
        .bind(seq)
        .bind(thread_id)
        .bind(super::packed::pack(event))
        .bind(finish.delete)
        .bind(finish.status)
        .bind(finish.error.as_deref().map(|e| e.replace('\0', "")))
        .bind(now)
        .bind(thread_status_after(finish.status))
        .execute(conn)
        .await?;
        Ok(())
    }

    async fn append_events(pool: &PgPool, rows: &[EventRow]) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        let batch: Vec<Value> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "run_id": r.run_id,
                    "seq": r.seq,
                    "packed": super::packed::pack_base64(&r.event),
                    "attempt": r.attempt,
                })
            })
            .collect();
        let text = Value::Array(batch).to_string();
        // One statement: events are a replay log, not the source of truth (checkpoints
        // are), so their commit does not wait for fsync; other replicas' watchers are told
        // which runs have new events (NOTIFY is delivered at commit). A row is stored only
        // while its claim holds the run.
        sqlx::query(
            "WITH cfg AS (SELECT set_config('synchronous_commit', 'off', true)),
                  ins AS (
                    INSERT INTO run_events (run_id, seq, packed)
                    SELECT e.run_id, e.seq, decode(e.packed, 'base64')
                    FROM jsonb_to_recordset($1::jsonb)
                         AS e(run_id text, seq bigint, packed text, attempt bigint)
                    JOIN runs r ON r.run_id = e.run_id AND r.attempt = e.attempt
                               AND r.status = 'running'
                    ON CONFLICT DO NOTHING
                    RETURNING run_id)
             SELECT pg_notify('palgraph_events', r.run_id)
             FROM cfg, (SELECT DISTINCT run_id FROM ins) r",
        )
        .bind(json_without_nul(&text).as_ref())
        .execute(pool)
        .await?;
        Ok(())
    }

    async fn notifications(pool: &PgPool) -> Option<UnboundedReceiver<Notification>> {
        super::pg_listen::notifications(pool).await
    }

    async fn sweep_orphans(
        pool: &PgPool,
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
        .fetch_all(pool)
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
        .execute(pool)
        .await?
        .rows_affected();
        for w in &dead {
            gone.remove(w);
        }
        Ok(n)
    }
}
