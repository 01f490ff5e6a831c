//! The SQLite checkpointer: palgraph's embedded default (a file; nothing to install).
//!
//! Writes run in `BEGIN IMMEDIATE` transactions (one writer at a time; readers never wait
//! in WAL mode); the head's compare-and-set happens inside the same transaction as the
//! inserts, so a put is all or nothing and a racing writer gets
//! [`CheckpointError::Conflict`].

use async_trait::async_trait;
use sqlx::{Row, SqlitePool};

use super::sql::{self, ChainRow};
use super::{
    json, CheckpointError, CheckpointRecord, Checkpointer, ListOptions, LoadedCheckpoint,
    PendingWrite, PruneStats, PruneStrategy, PutCheckpoint,
};

/// Checkpoints in a SQLite file.
#[derive(Clone, Debug)]
pub struct SqliteCheckpointer {
    pool: SqlitePool,
}

impl SqliteCheckpointer {
    /// Uses a pool whose database is migrated (see [`crate::db::open_sqlite`]).
    pub fn new(pool: SqlitePool) -> Self {
        SqliteCheckpointer { pool }
    }

    /// Opens (creating) the file and migrates it.
    ///
    /// # Errors
    /// When the file cannot be opened or its schema is ahead of this binary.
    pub async fn open(path: &std::path::Path) -> Result<Self, CheckpointError> {
        Ok(Self::new(crate::db::open_sqlite(path).await?))
    }

    /// The pool.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }
}

const CHAIN: &str = r#"
WITH RECURSIVE chain(field, version, prev, delta, value, depth) AS (
    SELECT b.field, b.version, b.prev, b.delta, b.value, 0
    FROM json_each(?2) v
    JOIN checkpoint_blobs b ON b.thread_id = ?1 AND b.field = v.key AND b.version = v.value
  UNION ALL
    SELECT b.field, b.version, b.prev, b.delta, b.value, ch.depth + 1
    FROM chain ch
    JOIN checkpoint_blobs b ON b.thread_id = ?1 AND b.field = ch.field AND b.version = ch.prev
    WHERE ch.delta
)
SELECT field, version, prev, delta, value, depth FROM chain
"#;

const LIST: &str = r#"
SELECT checkpoint_id, parent_id, created_at_ms, metadata, versions, plan
FROM checkpoints c
WHERE c.thread_id = ?1
  AND (?2 IS NULL OR c.checkpoint_id < ?2)
  AND (?3 IS NULL OR NOT EXISTS (
        SELECT 1 FROM json_each(?3) f
        WHERE json_extract(c.metadata, '$."' || f.key || '"') IS NOT f.value))
ORDER BY c.checkpoint_id DESC
LIMIT ?4
"#;

const GC: &str = r#"
WITH RECURSIVE live(field, version) AS (
    SELECT v.key, v.value
    FROM checkpoints c, json_each(c.versions) v
    WHERE c.thread_id = ?1
  UNION
    SELECT l.field, b.prev
    FROM live l
    JOIN checkpoint_blobs b ON b.thread_id = ?1 AND b.field = l.field AND b.version = l.version
    WHERE b.prev IS NOT NULL
)
DELETE FROM checkpoint_blobs
WHERE thread_id = ?1
  AND NOT EXISTS (SELECT 1 FROM live l WHERE l.field = checkpoint_blobs.field AND l.version = checkpoint_blobs.version)
"#;

type Tx<'a> = sqlx::Transaction<'a, sqlx::Sqlite>;

fn record_from_row(
    thread_id: &str,
    row: &sqlx::sqlite::SqliteRow,
) -> Result<CheckpointRecord, CheckpointError> {
    sql::record(
        thread_id,
        row.try_get("checkpoint_id")?,
        row.try_get("parent_id")?,
        row.try_get("created_at_ms")?,
        row.try_get::<&str, _>("metadata")?,
        row.try_get::<&str, _>("versions")?,
        row.try_get("plan")?,
    )
}

async fn head_in(tx: &mut Tx<'_>, thread_id: &str) -> Result<Option<String>, CheckpointError> {
    Ok(
        sqlx::query_scalar("SELECT checkpoint_id FROM checkpoint_heads WHERE thread_id = ?1")
            .bind(thread_id)
            .fetch_optional(&mut **tx)
            .await?,
    )
}

async fn remove(
    tx: &mut Tx<'_>,
    thread_id: &str,
    doomed: &[String],
) -> Result<PruneStats, CheckpointError> {
    let mut stats = PruneStats::default();
    for id in doomed {
        stats.writes += sqlx::query(
            "DELETE FROM checkpoint_writes WHERE thread_id = ?1 AND checkpoint_id = ?2",
        )
        .bind(thread_id)
        .bind(id)
        .execute(&mut **tx)
        .await?
        .rows_affected();
        stats.checkpoints +=
            sqlx::query("DELETE FROM checkpoints WHERE thread_id = ?1 AND checkpoint_id = ?2")
                .bind(thread_id)
                .bind(id)
                .execute(&mut **tx)
                .await?
                .rows_affected();
    }
    stats.blobs = sqlx::query(GC)
        .bind(thread_id)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    let newest: Option<String> =
        sqlx::query_scalar("SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = ?1")
            .bind(thread_id)
            .fetch_one(&mut **tx)
            .await?;
    match newest {
        Some(id) => {
            sqlx::query("UPDATE checkpoint_heads SET checkpoint_id = ?2 WHERE thread_id = ?1")
                .bind(thread_id)
                .bind(id)
                .execute(&mut **tx)
                .await?;
        }
        None => {
            sqlx::query("DELETE FROM checkpoint_heads WHERE thread_id = ?1")
                .bind(thread_id)
                .execute(&mut **tx)
                .await?;
        }
    }
    Ok(stats)
}

impl SqliteCheckpointer {
    /// Reads a checkpoint, its pending writes and (with `values`) its field chains in one
    /// read transaction, so they are a consistent snapshot.
    async fn load(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
        values: bool,
    ) -> Result<Option<LoadedCheckpoint>, CheckpointError> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query(
            "SELECT checkpoint_id, parent_id, created_at_ms, metadata, versions, plan
             FROM checkpoints
             WHERE thread_id = ?1 AND checkpoint_id = COALESCE(?2,
                 (SELECT checkpoint_id FROM checkpoint_heads WHERE thread_id = ?1))",
        )
        .bind(thread_id)
        .bind(checkpoint_id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let record = record_from_row(thread_id, &row)?;
        let mut fields = Vec::new();
        if values {
            let versions_text: &str = row.try_get("versions")?;
            let chain_rows = sqlx::query(CHAIN)
                .bind(thread_id)
                .bind(versions_text)
                .fetch_all(&mut *tx)
                .await?;
            let mut rows = Vec::with_capacity(chain_rows.len());
            for r in chain_rows {
                rows.push(ChainRow {
                    field: r.try_get("field")?,
                    version: r.try_get("version")?,
                    prev: r.try_get("prev")?,
                    delta: r.try_get("delta")?,
                    depth: r.try_get("depth")?,
                    value: json(r.try_get("value")?)?,
                });
            }
            fields = sql::assemble(thread_id, &record.versions, rows)?;
        }
        let write_rows = sqlx::query(
            "SELECT task_id, channel, idx, value FROM checkpoint_writes
             WHERE thread_id = ?1 AND checkpoint_id = ?2 ORDER BY task_id, channel, idx",
        )
        .bind(thread_id)
        .bind(&record.checkpoint_id)
        .fetch_all(&mut *tx)
        .await?;
        let mut writes = Vec::with_capacity(write_rows.len());
        for r in write_rows {
            writes.push(PendingWrite {
                task_id: r.try_get("task_id")?,
                channel: r.try_get("channel")?,
                idx: r.try_get("idx")?,
                value: json(r.try_get("value")?)?,
            });
        }
        tx.commit().await?;
        Ok(Some(LoadedCheckpoint {
            record,
            fields,
            writes,
        }))
    }
}

#[async_trait]
impl Checkpointer for SqliteCheckpointer {
    async fn put(&self, put: PutCheckpoint) -> Result<(), CheckpointError> {
        let r = &put.record;
        let metadata = serde_json::to_string(&r.metadata)
            .map_err(|e| CheckpointError::Decode(e.to_string()))?;
        let versions = serde_json::to_string(&r.versions)
            .map_err(|e| CheckpointError::Decode(e.to_string()))?;
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let actual = head_in(&mut tx, &r.thread_id).await?;
        if actual != put.expected_head {
            tx.rollback().await?;
            return Err(CheckpointError::Conflict {
                thread_id: r.thread_id.clone(),
                expected: put.expected_head,
                actual,
            });
        }
        let inserted = sqlx::query(
            "INSERT INTO checkpoints (thread_id, checkpoint_id, parent_id, created_at_ms, metadata, versions, plan)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING",
        )
        .bind(&r.thread_id)
        .bind(&r.checkpoint_id)
        .bind(r.parent_id.as_deref())
        .bind(r.created_at_ms)
        .bind(metadata)
        .bind(versions)
        .bind(r.plan.get())
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if inserted == 0 {
            tx.rollback().await?;
            return Err(CheckpointError::Conflict {
                thread_id: r.thread_id.clone(),
                expected: put.expected_head,
                actual,
            });
        }
        for b in &put.blobs {
            sqlx::query(
                "INSERT INTO checkpoint_blobs (thread_id, field, version, prev, delta, value)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING",
            )
            .bind(&r.thread_id)
            .bind(&b.field)
            .bind(&b.version)
            .bind(b.prev.as_deref())
            .bind(b.delta)
            .bind(b.value.get())
            .execute(&mut *tx)
            .await?;
        }
        sqlx::query(
            "INSERT INTO checkpoint_heads (thread_id, checkpoint_id) VALUES (?1, ?2)
             ON CONFLICT (thread_id) DO UPDATE SET checkpoint_id = excluded.checkpoint_id",
        )
        .bind(&r.thread_id)
        .bind(&r.checkpoint_id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn put_writes(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
        writes: Vec<PendingWrite>,
    ) -> Result<(), CheckpointError> {
        if writes.is_empty() {
            return Ok(());
        }
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        for w in &writes {
            sqlx::query(
                "INSERT INTO checkpoint_writes (thread_id, checkpoint_id, task_id, channel, idx, value)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (thread_id, checkpoint_id, task_id, channel, idx)
                 DO UPDATE SET value = excluded.value WHERE checkpoint_writes.channel = '__error__'",
            )
            .bind(thread_id)
            .bind(checkpoint_id)
            .bind(&w.task_id)
            .bind(&w.channel)
            .bind(w.idx)
            .bind(w.value.get())
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn get(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<LoadedCheckpoint>, CheckpointError> {
        self.load(thread_id, checkpoint_id, true).await
    }

    async fn get_without_values(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<LoadedCheckpoint>, CheckpointError> {
        self.load(thread_id, checkpoint_id, false).await
    }

    async fn head(&self, thread_id: &str) -> Result<Option<String>, CheckpointError> {
        Ok(
            sqlx::query_scalar("SELECT checkpoint_id FROM checkpoint_heads WHERE thread_id = ?1")
                .bind(thread_id)
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    async fn list(
        &self,
        thread_id: &str,
        options: &ListOptions,
    ) -> Result<Vec<CheckpointRecord>, CheckpointError> {
        let filter = match &options.filter {
            Some(f) => {
                Some(serde_json::to_string(f).map_err(|e| CheckpointError::Decode(e.to_string()))?)
            }
            None => None,
        };
        let rows = sqlx::query(LIST)
            .bind(thread_id)
            .bind(options.before.as_deref())
            .bind(filter)
            .bind(options.limit.map(|l| l as i64).unwrap_or(-1))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(|r| record_from_row(thread_id, r)).collect()
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<(), CheckpointError> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        for table in [
            "DELETE FROM checkpoint_writes WHERE thread_id = ?1",
            "DELETE FROM checkpoint_blobs WHERE thread_id = ?1",
            "DELETE FROM checkpoints WHERE thread_id = ?1",
            "DELETE FROM checkpoint_heads WHERE thread_id = ?1",
        ] {
            sqlx::query(table).bind(thread_id).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn copy_thread(&self, from: &str, to: &str) -> Result<(), CheckpointError> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        if let Some(existing) = head_in(&mut tx, to).await? {
            tx.rollback().await?;
            return Err(CheckpointError::Conflict {
                thread_id: to.to_string(),
                expected: None,
                actual: Some(existing),
            });
        }
        for stmt in [
            "INSERT INTO checkpoints (thread_id, checkpoint_id, parent_id, created_at_ms, metadata, versions, plan)
             SELECT ?2, checkpoint_id, parent_id, created_at_ms, metadata, versions, plan FROM checkpoints WHERE thread_id = ?1",
            "INSERT INTO checkpoint_blobs (thread_id, field, version, prev, delta, value)
             SELECT ?2, field, version, prev, delta, value FROM checkpoint_blobs WHERE thread_id = ?1",
            "INSERT INTO checkpoint_writes (thread_id, checkpoint_id, task_id, channel, idx, value)
             SELECT ?2, checkpoint_id, task_id, channel, idx, value FROM checkpoint_writes WHERE thread_id = ?1",
            "INSERT INTO checkpoint_heads (thread_id, checkpoint_id)
             SELECT ?2, checkpoint_id FROM checkpoint_heads WHERE thread_id = ?1",
        ] {
            sqlx::query(stmt).bind(from).bind(to).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn delete_for_runs(
        &self,
        thread_id: &str,
        run_ids: &[String],
    ) -> Result<PruneStats, CheckpointError> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let runs =
            serde_json::to_string(run_ids).map_err(|e| CheckpointError::Decode(e.to_string()))?;
        let doomed: Vec<String> = sqlx::query_scalar(
            "SELECT checkpoint_id FROM checkpoints
             WHERE thread_id = ?1 AND run_id IN (SELECT value FROM json_each(?2))",
        )
        .bind(thread_id)
        .bind(runs)
        .fetch_all(&mut *tx)
        .await?;
        let stats = remove(&mut tx, thread_id, &doomed).await?;
        tx.commit().await?;
        Ok(stats)
    }

    async fn prune(
        &self,
        thread_id: &str,
        strategy: PruneStrategy,
    ) -> Result<PruneStats, CheckpointError> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let head = head_in(&mut tx, thread_id).await?.unwrap_or_default();
        let all: Vec<(String, i64)> = sqlx::query_as(
            "SELECT checkpoint_id, created_at_ms FROM checkpoints WHERE thread_id = ?1",
        )
        .bind(thread_id)
        .fetch_all(&mut *tx)
        .await?;
        let doomed: Vec<String> = all
            .into_iter()
            .filter(|(id, created)| match strategy {
                PruneStrategy::DeleteAll => true,
                PruneStrategy::KeepLatest => *id != head,
                PruneStrategy::KeepNewerThan(cutoff) => *created < cutoff && *id != head,
            })
            .map(|(id, _)| id)
            .collect();
        let stats = remove(&mut tx, thread_id, &doomed).await?;
        tx.commit().await?;
        Ok(stats)
    }
}
