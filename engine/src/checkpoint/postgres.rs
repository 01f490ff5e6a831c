//! The Postgres checkpointer (production; many replicas share one database).
//!
//! Every operation the engine does per step is one statement, so one round trip and one
//! commit: a `put` moves the thread's head with a compare-and-set and inserts the checkpoint
//! and its field versions in a single statement of data-modifying CTEs (if the head moved,
//! nothing is inserted and the caller gets [`CheckpointError::Conflict`]); a `get` reads the
//! checkpoint, every field's delta chain (a recursive CTE) and the pending writes at once.

use async_trait::async_trait;
use sqlx::{PgPool, Row};

use super::sql::{self, without_nul, ChainRow};
use super::{
    CheckpointError, CheckpointRecord, Checkpointer, ListOptions, LoadedCheckpoint, PendingWrite,
    PruneStats, PruneStrategy, PutCheckpoint,
};

/// Checkpoints in Postgres.
#[derive(Clone, Debug)]
pub struct PostgresCheckpointer {
    pool: PgPool,
}

impl PostgresCheckpointer {
    /// Uses a pool whose database is migrated (see [`crate::db::open_postgres`]).
    pub fn new(pool: PgPool) -> Self {
        PostgresCheckpointer { pool }
    }

    /// Connects and migrates.
    ///
    /// # Errors
    /// When the database cannot be reached or its schema is ahead of this binary.
    pub async fn connect(url: &str) -> Result<Self, CheckpointError> {
        Ok(Self::new(crate::db::open_postgres(url, 16).await?))
    }

    /// The pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

const PUT: &str = r#"
WITH upd AS (
    UPDATE checkpoint_heads SET checkpoint_id = $2
    WHERE thread_id = $1 AND checkpoint_id = $3::text
    RETURNING 1
), ins AS (
    INSERT INTO checkpoint_heads (thread_id, checkpoint_id)
    SELECT $1, $2 WHERE $3::text IS NULL
    ON CONFLICT (thread_id) DO NOTHING
    RETURNING 1
), ok AS (
    SELECT 1 FROM upd UNION ALL SELECT 1 FROM ins
), cp AS (
    INSERT INTO checkpoints (thread_id, checkpoint_id, parent_id, created_at_ms, metadata, versions, plan)
    SELECT $1, $2, $4, $5, $6::jsonb, $7::jsonb, $8::jsonb WHERE EXISTS (SELECT 1 FROM ok)
    RETURNING 1
), bl AS (
    INSERT INTO checkpoint_blobs (thread_id, field, version, prev, delta, value)
    SELECT $1, b.field, b.version, b.prev, b.delta, COALESCE(b.value, 'null'::jsonb)
    FROM jsonb_to_recordset($9::jsonb) AS b(field text, version text, prev text, delta boolean, value jsonb)
    WHERE EXISTS (SELECT 1 FROM ok)
    ON CONFLICT DO NOTHING
)
SELECT (SELECT count(*) FROM ok) AS ok,
       (SELECT h.checkpoint_id FROM checkpoint_heads h WHERE h.thread_id = $1) AS actual
"#;

const PUT_WRITES: &str = r#"
INSERT INTO checkpoint_writes (thread_id, checkpoint_id, task_id, channel, idx, value)
SELECT $1, $2, w.task_id, w.channel, w.idx, COALESCE(w.value, 'null'::jsonb)
FROM jsonb_to_recordset($3::jsonb) AS w(task_id text, channel text, idx bigint, value jsonb)
ON CONFLICT (thread_id, checkpoint_id, task_id, channel, idx)
DO UPDATE SET value = EXCLUDED.value WHERE checkpoint_writes.channel = '__error__'
"#;

const GET: &str = r#"
WITH RECURSIVE c AS (
    SELECT checkpoint_id, parent_id, created_at_ms, metadata, versions, plan
    FROM checkpoints
    WHERE thread_id = $1
      AND checkpoint_id = COALESCE($2::text,
            (SELECT h.checkpoint_id FROM checkpoint_heads h WHERE h.thread_id = $1))
), chain AS (
    SELECT n.field, n.version, n.prev, n.delta, n.value, 0 AS depth
    FROM c CROSS JOIN LATERAL jsonb_each_text(c.versions) v
    CROSS JOIN LATERAL (
        SELECT b.field, b.version, b.prev, b.delta, b.value FROM checkpoint_blobs b
        WHERE b.thread_id = $1 AND b.field = v.key COLLATE "C" AND b.version = v.value COLLATE "C"
        LIMIT 1) n
  UNION ALL
    -- One index probe per link: a LATERAL lookup keeps the plan independent of statistics.
    SELECT n.field, n.version, n.prev, n.delta, n.value, ch.depth + 1
    FROM chain ch
    CROSS JOIN LATERAL (
        SELECT b.field, b.version, b.prev, b.delta, b.value FROM checkpoint_blobs b
        WHERE b.thread_id = $1 AND b.field = ch.field AND b.version = ch.prev
        LIMIT 1) n
    WHERE ch.delta
)
SELECT c.checkpoint_id, c.parent_id, c.created_at_ms,
       c.metadata::text AS metadata, c.versions::text AS versions, c.plan::text AS plan,
       COALESCE((SELECT json_agg(json_build_array(ch.field, ch.version, ch.prev, ch.delta, ch.depth, ch.value))
                 FROM chain ch), '[]')::text AS blobs,
       COALESCE((SELECT json_agg(json_build_array(w.task_id, w.channel, w.idx, w.value)
                                 ORDER BY w.task_id, w.channel, w.idx)
                 FROM checkpoint_writes w
                 WHERE w.thread_id = $1 AND w.checkpoint_id = c.checkpoint_id), '[]')::text AS writes
FROM c
"#;

const GET_WITHOUT_VALUES: &str = r#"
SELECT c.checkpoint_id, c.parent_id, c.created_at_ms,
       c.metadata::text AS metadata, c.versions::text AS versions, c.plan::text AS plan,
       COALESCE((SELECT json_agg(json_build_array(w.task_id, w.channel, w.idx, w.value)
                                 ORDER BY w.task_id, w.channel, w.idx)
                 FROM checkpoint_writes w
                 WHERE w.thread_id = $1 AND w.checkpoint_id = c.checkpoint_id), '[]')::text AS writes
FROM checkpoints c
WHERE c.thread_id = $1
  AND c.checkpoint_id = COALESCE($2::text,
        (SELECT h.checkpoint_id FROM checkpoint_heads h WHERE h.thread_id = $1))
"#;

const LIST: &str = r#"
SELECT checkpoint_id, parent_id, created_at_ms, metadata::text AS metadata,
       versions::text AS versions, plan::text AS plan
FROM checkpoints
WHERE thread_id = $1
  AND ($2::text IS NULL OR checkpoint_id < $2::text)
  AND ($3::jsonb IS NULL OR metadata @> $3::jsonb)
ORDER BY checkpoint_id DESC
LIMIT $4
"#;

const GC: &str = r#"
WITH RECURSIVE live(field, version) AS (
    SELECT v.key COLLATE "C", v.value COLLATE "C"
    FROM checkpoints c CROSS JOIN LATERAL jsonb_each_text(c.versions) v
    WHERE c.thread_id = $1
  UNION
    SELECT l.field, n.prev
    FROM live l
    CROSS JOIN LATERAL (
        SELECT b.prev FROM checkpoint_blobs b
        WHERE b.thread_id = $1 AND b.field = l.field AND b.version = l.version
        LIMIT 1) n
    WHERE n.prev IS NOT NULL
)
DELETE FROM checkpoint_blobs b
WHERE b.thread_id = $1
  AND NOT EXISTS (SELECT 1 FROM live l WHERE l.field = b.field AND l.version = b.version)
"#;

const RESET_HEAD: &str = r#"
WITH newest AS (
    SELECT max(checkpoint_id) AS id FROM checkpoints WHERE thread_id = $1
), del AS (
    DELETE FROM checkpoint_heads WHERE thread_id = $1 AND (SELECT id FROM newest) IS NULL
)
UPDATE checkpoint_heads SET checkpoint_id = (SELECT id FROM newest)
WHERE thread_id = $1 AND (SELECT id FROM newest) IS NOT NULL
"#;

type Tx<'a> = sqlx::Transaction<'a, sqlx::Postgres>;

/// Deletes the given checkpoints' rows (checkpoints and their writes), collects blobs no
/// remaining checkpoint needs, and points the head at the newest checkpoint left.
async fn remove_where(
    tx: &mut Tx<'_>,
    thread_id: &str,
    condition_sql: &'static str,
    bind: impl FnOnce(
        sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
    ) -> sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
) -> Result<PruneStats, CheckpointError> {
    let doomed: Vec<String> = {
        let q = sqlx::query(condition_sql).bind(thread_id);
        bind(q)
            .fetch_all(&mut **tx)
            .await?
            .into_iter()
            .map(|r| r.try_get::<String, _>(0))
            .collect::<Result<_, _>>()?
    };
    let mut stats = PruneStats::default();
    if !doomed.is_empty() {
        stats.writes = sqlx::query(
            "DELETE FROM checkpoint_writes WHERE thread_id = $1 AND checkpoint_id = ANY($2)",
        )
        .bind(thread_id)
        .bind(&doomed)
        .execute(&mut **tx)
        .await?
        .rows_affected();
        stats.checkpoints =
            sqlx::query("DELETE FROM checkpoints WHERE thread_id = $1 AND checkpoint_id = ANY($2)")
                .bind(thread_id)
                .bind(&doomed)
                .execute(&mut **tx)
                .await?
                .rows_affected();
    }
    stats.blobs = sqlx::query(GC)
        .bind(thread_id)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    sqlx::query(RESET_HEAD)
        .bind(thread_id)
        .execute(&mut **tx)
        .await?;
    Ok(stats)
}

fn record_from_row(
    thread_id: &str,
    row: &sqlx::postgres::PgRow,
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

fn writes_from_row(
    record: &CheckpointRecord,
    row: &sqlx::postgres::PgRow,
) -> Result<Vec<PendingWrite>, CheckpointError> {
    type WriteTuple = (String, String, i64, Box<serde_json::value::RawValue>);
    let writes: Vec<WriteTuple> =
        serde_json::from_str(row.try_get::<&str, _>("writes")?).map_err(|e| {
            CheckpointError::Decode(format!("pending writes of {}: {e}", record.checkpoint_id))
        })?;
    Ok(writes
        .into_iter()
        .map(|(task_id, channel, idx, value)| PendingWrite {
            task_id,
            channel,
            idx,
            value,
        })
        .collect())
}

#[async_trait]
impl Checkpointer for PostgresCheckpointer {
    async fn put(&self, put: PutCheckpoint) -> Result<(), CheckpointError> {
        let r = &put.record;
        let metadata = serde_json::to_string(&r.metadata)
            .map_err(|e| CheckpointError::Decode(e.to_string()))?;
        let versions = serde_json::to_string(&r.versions)
            .map_err(|e| CheckpointError::Decode(e.to_string()))?;
        let blobs = sql::blobs_json(&put.blobs)?;
        let row = sqlx::query(PUT)
            .bind(&r.thread_id)
            .bind(&r.checkpoint_id)
            .bind(put.expected_head.as_deref())
            .bind(r.parent_id.as_deref())
            .bind(r.created_at_ms)
            .bind(without_nul(&metadata).as_ref())
            .bind(versions)
            .bind(without_nul(r.plan.get()).as_ref())
            .bind(without_nul(&blobs).as_ref())
            .fetch_one(&self.pool)
            .await?;
        let ok: i64 = row.try_get("ok")?;
        if ok == 1 {
            Ok(())
        } else {
            Err(CheckpointError::Conflict {
                thread_id: r.thread_id.clone(),
                expected: put.expected_head,
                actual: row.try_get("actual")?,
            })
        }
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
        let json = sql::writes_json(&writes)?;
        sqlx::query(PUT_WRITES)
            .bind(thread_id)
            .bind(checkpoint_id)
            .bind(without_nul(&json).as_ref())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn get(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<LoadedCheckpoint>, CheckpointError> {
        let Some(row) = sqlx::query(GET)
            .bind(thread_id)
            .bind(checkpoint_id)
            .fetch_optional(&self.pool)
            .await?
        else {
            return Ok(None);
        };
        let record = record_from_row(thread_id, &row)?;
        let writes = writes_from_row(&record, &row)?;
        type BlobTuple = (
            String,
            String,
            Option<String>,
            bool,
            i64,
            Box<serde_json::value::RawValue>,
        );
        let blobs: Vec<BlobTuple> = serde_json::from_str(row.try_get::<&str, _>("blobs")?)
            .map_err(|e| {
                CheckpointError::Decode(format!("field values of {}: {e}", record.checkpoint_id))
            })?;
        let rows = blobs
            .into_iter()
            .map(|(field, version, prev, delta, depth, value)| ChainRow {
                field,
                version,
                prev,
                delta,
                depth,
                value,
            })
            .collect();
        let fields = sql::assemble(thread_id, &record.versions, rows)?;
        Ok(Some(LoadedCheckpoint {
            record,
            fields,
            writes,
        }))
    }

    async fn get_without_values(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<LoadedCheckpoint>, CheckpointError> {
        let Some(row) = sqlx::query(GET_WITHOUT_VALUES)
            .bind(thread_id)
            .bind(checkpoint_id)
            .fetch_optional(&self.pool)
            .await?
        else {
            return Ok(None);
        };
        let record = record_from_row(thread_id, &row)?;
        let writes = writes_from_row(&record, &row)?;
        Ok(Some(LoadedCheckpoint {
            record,
            fields: Vec::new(),
            writes,
        }))
    }

    async fn head(&self, thread_id: &str) -> Result<Option<String>, CheckpointError> {
        Ok(
            sqlx::query_scalar("SELECT checkpoint_id FROM checkpoint_heads WHERE thread_id = $1")
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
            .bind(filter.as_deref().map(without_nul).as_deref())
            .bind(options.limit.map(|l| l as i64))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(|r| record_from_row(thread_id, r)).collect()
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<(), CheckpointError> {
        sqlx::query(
            "WITH a AS (DELETE FROM checkpoint_writes WHERE thread_id = $1),
                  b AS (DELETE FROM checkpoint_blobs WHERE thread_id = $1),
                  c AS (DELETE FROM checkpoints WHERE thread_id = $1)
             DELETE FROM checkpoint_heads WHERE thread_id = $1",
        )
        .bind(thread_id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn copy_thread(&self, from: &str, to: &str) -> Result<(), CheckpointError> {
        let mut tx = self.pool.begin().await?;
        let inserted = sqlx::query(
            "INSERT INTO checkpoint_heads (thread_id, checkpoint_id)
             SELECT $2, checkpoint_id FROM checkpoint_heads WHERE thread_id = $1
             ON CONFLICT (thread_id) DO NOTHING",
        )
        .bind(from)
        .bind(to)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if inserted == 0 {
            let existing: Option<String> = sqlx::query_scalar(
                "SELECT checkpoint_id FROM checkpoint_heads WHERE thread_id = $1",
            )
            .bind(to)
            .fetch_optional(&mut *tx)
            .await?;
            if existing.is_some() {
                tx.rollback().await?;
                return Err(CheckpointError::Conflict {
                    thread_id: to.to_string(),
                    expected: None,
                    actual: existing,
                });
            }
            tx.rollback().await?;
            return Ok(());
        }
        sqlx::query(
            "WITH a AS (
                INSERT INTO checkpoints (thread_id, checkpoint_id, parent_id, created_at_ms, metadata, versions, plan)
                SELECT $2, checkpoint_id, parent_id, created_at_ms, metadata, versions, plan
                FROM checkpoints WHERE thread_id = $1
             ), b AS (
                INSERT INTO checkpoint_blobs (thread_id, field, version, prev, delta, value)
                SELECT $2, field, version, prev, delta, value FROM checkpoint_blobs WHERE thread_id = $1
             )
             INSERT INTO checkpoint_writes (thread_id, checkpoint_id, task_id, channel, idx, value)
             SELECT $2, checkpoint_id, task_id, channel, idx, value FROM checkpoint_writes WHERE thread_id = $1",
        )
        .bind(from)
        .bind(to)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn delete_for_runs(
        &self,
        thread_id: &str,
        run_ids: &[String],
    ) -> Result<PruneStats, CheckpointError> {
        let mut tx = self.pool.begin().await?;
        let stats = remove_where(
            &mut tx,
            thread_id,
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = $1 AND run_id = ANY($2) FOR UPDATE",
            |q| q.bind(run_ids),
        )
        .await?;
        tx.commit().await?;
        Ok(stats)
    }

    async fn prune(
        &self,
        thread_id: &str,
        strategy: PruneStrategy,
    ) -> Result<PruneStats, CheckpointError> {
        let mut tx = self.pool.begin().await?;
        // Lock the head so a concurrent put cannot slip a checkpoint in between.
        sqlx::query("SELECT 1 FROM checkpoint_heads WHERE thread_id = $1 FOR UPDATE")
            .bind(thread_id)
            .execute(&mut *tx)
            .await?;
        let stats = match strategy {
            PruneStrategy::DeleteAll => {
                remove_where(
                    &mut tx,
                    thread_id,
                    "SELECT checkpoint_id FROM checkpoints WHERE thread_id = $1",
                    |q| q,
                )
                .await?
            }
            PruneStrategy::KeepLatest => {
                remove_where(
                    &mut tx,
                    thread_id,
                    "SELECT checkpoint_id FROM checkpoints c WHERE c.thread_id = $1
                     AND c.checkpoint_id <> COALESCE((SELECT h.checkpoint_id FROM checkpoint_heads h WHERE h.thread_id = $1), '')",
                    |q| q,
                )
                .await?
            }
            PruneStrategy::KeepNewerThan(cutoff) => {
                remove_where(
                    &mut tx,
                    thread_id,
                    "SELECT checkpoint_id FROM checkpoints c WHERE c.thread_id = $1 AND c.created_at_ms < $2
                     AND c.checkpoint_id <> COALESCE((SELECT h.checkpoint_id FROM checkpoint_heads h WHERE h.thread_id = $1), '')",
                    |q| q.bind(cutoff),
                )
                .await?
            }
        };
        tx.commit().await?;
        Ok(stats)
    }
}
