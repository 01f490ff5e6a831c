//! The store's dialect on SQLite (the embedded default). SQLite has one writer at a time:
//! writes that must be atomic run in `BEGIN IMMEDIATE` transactions (or are one statement,
//! which takes the writer lock before it reads), and that lock is the only one needed. One
//! process owns the database, so there is nobody to notify.

use async_trait::async_trait;
use sqlx::{Sqlite, SqliteConnection, SqlitePool};

use super::dialect::Dialect;
use super::{thread_status_after, EventRow, Finish, StoreError};

#[async_trait]
impl Dialect for Sqlite {
    const BEGIN_WRITE: &'static str = "BEGIN IMMEDIATE";
    const FOR_UPDATE: &'static str = "";
    const SKIP_LOCKED: &'static str = "";
    // SQLite compares text by its bytes unless told otherwise (and has no "C" collation).
    const BYTE_ORDER: &'static str = "";
    const REFUSES_NUL: bool = false;
    const WITH_GRAPH: &'static str = "json_set(metadata, '$.graph_id', $3, '$.assistant_id', $4)";
    const THREAD_MATCHES: &'static str = "NOT EXISTS (SELECT 1 FROM json_each($2) f
            WHERE json_extract(t.metadata, '$.\"' || f.key || '\"') IS NOT f.value)
        AND ($4 IS NULL OR t.thread_id IN (SELECT value FROM json_each($4)))";
    const HELD: &'static str = "(SELECT json_extract(value, '$[0]') AS id,
            json_extract(value, '$[1]') AS att FROM json_each($2)) AS h";

    fn rows_affected(result: &Self::QueryResult) -> u64 {
        result.rows_affected()
    }

    fn notify(_channel: &str, _payload: &str) -> Option<String> {
        None
    }

    async fn write_turn(pool: &SqlitePool) -> Option<palgraph::db::writers::WriteTurn> {
        Some(palgraph::db::writers::write_turn(pool).await)
    }

    async fn end_run(
        conn: &mut SqliteConnection,
        run_id: &str,
        thread_id: &str,
        finish: &Finish,
        now: i64,
    ) -> Result<(), StoreError> {
        if finish.delete {
            for delete in [
                "DELETE FROM run_events WHERE run_id = $1",
                "DELETE FROM runs WHERE run_id = $1",
            ] {
                sqlx::query(delete).bind(run_id).execute(&mut *conn).await?;
            }
        } else {
            let (seq, event) = &finish.terminal;
            sqlx::query(
                "INSERT INTO run_events (run_id, seq, packed) VALUES ($1, $2, $3)
                 ON CONFLICT DO NOTHING",
            )
            .bind(run_id)
            .bind(seq)
            .bind(super::packed::pack(event))
            .execute(&mut *conn)
            .await?;
            sqlx::query(
                "UPDATE runs SET status = $2, error = $3, updated_at_ms = $4, lease_until_ms = NULL
                 WHERE run_id = $1",
            )
            .bind(run_id)
            .bind(finish.status)
            .bind(finish.error.as_deref())
            .bind(now)
            .execute(&mut *conn)
            .await?;
        }
        sqlx::query(
            "UPDATE threads SET updated_at_ms = $2,
                 status = CASE WHEN EXISTS (SELECT 1 FROM runs o WHERE o.thread_id = $1
                                            AND o.status IN ('pending', 'running'))
                               THEN 'busy' ELSE $3 END
             WHERE thread_id = $1",
        )
        .bind(thread_id)
        .bind(now)
        .bind(thread_status_after(finish.status))
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    async fn append_events(pool: &SqlitePool, rows: &[EventRow]) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        let _turn = Self::write_turn(pool).await;
        let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
        for r in rows {
            // Stored only while its claim holds the run.
            sqlx::query(
                "INSERT INTO run_events (run_id, seq, packed)
                 SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM runs
                     WHERE run_id = $1 AND attempt = $4 AND status = 'running')
                 ON CONFLICT DO NOTHING",
            )
            .bind(&r.run_id)
            .bind(r.seq)
            .bind(super::packed::pack(&r.event))
            .bind(r.attempt)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn recover_orphans(pool: &SqlitePool) -> Result<u64, StoreError> {
        // One process owns an embedded database: a run still `running` at start was left
        // by a process that died, and is claimable at once (not after its lease runs out).
        let _turn = Self::write_turn(pool).await;
        Ok(
            sqlx::query("UPDATE runs SET lease_until_ms = 0 WHERE status = 'running'")
                .execute(pool)
                .await?
                .rows_affected(),
        )
    }
}
