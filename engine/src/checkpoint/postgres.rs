//! The Postgres checkpointer (production; many replicas share one database).
//!
//! Every operation the engine does per step is one statement, so one round trip and one
//! commit: a `put` is a single-row insert (the checkpoint's record and the values of the
//! fields it wrote) guarded by the thread's head: it only inserts when the expected head is
//! still the newest row, and the unique `(thread_id, seq)` key settles a race between two
//! writers that both saw the same head (the loser inserts nothing and gets
//! [`CheckpointError::Conflict`]). A `get` reads the checkpoint, every field's delta chain
//! (a recursive CTE of one index probe per link) and the pending writes in one statement.
//!
//! **Group commit.** Puts from concurrent runs are committed together by one statement
//! (see `pg_group_commit`); each put still returns only once its own row is durable. Pending
//! writes (`pg_writes_batch`) and fence advances (`pg_fence_batch`) are grouped the same way.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use sqlx::{PgPool, Row};

use super::pg_fence_batch::FenceBatch;
use super::pg_group_commit::{GroupCommit, NewRow};
use super::pg_sql::{
    FENCE_EPOCH, FLUSH, GET, GET_WITHOUT_VALUES, HEAD, LINKS, LIST, PUT_WRITES, PUT_WRITES_AT_HEAD,
    PUT_WRITES_AT_HEAD_UNFLUSHED,
};
use super::pg_writes_batch::{WritesBatch, WritesCall};
use super::sql::{self, without_nul, RowLinks};
use super::{
    CheckpointError, CheckpointRecord, Checkpointer, Fence, Flush, ListOptions, LoadedCheckpoint,
    PendingWrite, PruneStats, PruneStrategy, PutCheckpoint,
};
use crate::db::reuse::Reused;

/// Checkpoints in Postgres.
#[derive(Clone, Debug)]
pub struct PostgresCheckpointer {
    pool: PgPool,
    writer: GroupCommit,
    writes: WritesBatch,
    fences: FenceBatch,
    /// Connections for a resume's answers and for flushes (statements a run waits on).
    single: Arc<Reused<sqlx::Postgres>>,
    /// Connections for checkpoint loads and head reads: no ping after each, one generic
    /// plan per statement, and no JIT whatever the pool's settings (see `crate::db::reuse`).
    pub(super) reads: Arc<Reused<sqlx::Postgres>>,
}

/// How many connections [`PostgresCheckpointer`] keeps for its single statements.
const SINGLE_CONNECTIONS: usize = 4;

/// How many connections [`PostgresCheckpointer`] keeps for its reads.
const READ_CONNECTIONS: usize = 8;

impl PostgresCheckpointer {
    /// Uses a pool whose database is migrated (see [`crate::db::open_postgres`]).
    /// Must be called inside a tokio runtime (it starts the group-commit writer).
    pub fn new(pool: PgPool) -> Self {
        PostgresCheckpointer {
            writer: GroupCommit::start(pool.clone()),
            writes: WritesBatch::start(pool.clone()),
            fences: FenceBatch::start(pool.clone()),
            single: Arc::new(Reused::with_generic_plans(pool.clone(), SINGLE_CONNECTIONS)),
            reads: Arc::new(Reused::with_generic_plans(pool.clone(), READ_CONNECTIONS)),
            pool,
        }
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

fn record_from_row(
    thread_id: &str,
    row: &sqlx::postgres::PgRow,
) -> Result<CheckpointRecord, CheckpointError> {
    sql::record(
        thread_id,
        row.try_get("checkpoint_id")?,
        row.try_get("seq")?,
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

fn to_json(v: &impl serde::Serialize) -> Result<String, CheckpointError> {
    serde_json::to_string(v).map_err(|e| CheckpointError::Decode(e.to_string()))
}

impl PostgresCheckpointer {
    /// Removes checkpoints from history in one transaction (see `sql::plan_removal`);
    /// `pick` chooses them from the thread's rows (id, seq, created_at_ms, run_id).
    async fn remove(
        &self,
        thread_id: &str,
        pick: impl Fn(&[sql::RowFacts]) -> HashSet<String>,
    ) -> Result<PruneStats, CheckpointError> {
        let mut tx = self.pool.begin().await?;
        let rows = sqlx::query(LINKS)
            .bind(thread_id)
            .fetch_all(&mut *tx)
            .await?;
        let mut links = Vec::with_capacity(rows.len());
        let mut facts = Vec::with_capacity(rows.len());
        for r in &rows {
            let id: String = r.try_get("checkpoint_id")?;
            let hidden: bool = r.try_get("hidden")?;
            let versions: BTreeMap<String, String> =
                serde_json::from_str(r.try_get::<&str, _>("versions")?)
                    .map_err(|e| CheckpointError::Decode(e.to_string()))?;
            let prevs: BTreeMap<String, Option<String>> =
                serde_json::from_str(r.try_get::<&str, _>("prevs")?)
                    .map_err(|e| CheckpointError::Decode(e.to_string()))?;
            facts.push((
                id.clone(),
                r.try_get("seq")?,
                r.try_get("created_at_ms")?,
                r.try_get("run_id")?,
                hidden,
            ));
            links.push(RowLinks {
                checkpoint_id: id,
                hidden,
                versions,
                prevs,
            });
        }
        let doomed = pick(&facts);
        let removal = sql::plan_removal(&links, &doomed);
        let mut stats = PruneStats {
            checkpoints: doomed.len() as u64,
            blobs: removal.dropped_values,
            writes: 0,
        };
        let doomed: Vec<String> = doomed.into_iter().collect();
        stats.writes = sqlx::query(
            "DELETE FROM checkpoint_writes WHERE thread_id = $1 AND checkpoint_id = ANY($2)",
        )
        .bind(thread_id)
        .bind(&doomed)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        sqlx::query("DELETE FROM checkpoints WHERE thread_id = $1 AND checkpoint_id = ANY($2)")
            .bind(thread_id)
            .bind(&removal.delete)
            .execute(&mut *tx)
            .await?;
        for (id, keep) in &removal.hide {
            sqlx::query(
                "UPDATE checkpoints SET hidden = true,
                     vals = COALESCE((SELECT jsonb_object_agg(e.key, e.value) FROM jsonb_each(vals) e
                                      WHERE e.key = ANY($3)), '{}')
                 WHERE thread_id = $1 AND checkpoint_id = $2",
            )
            .bind(thread_id)
            .bind(id)
            .bind(keep)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(stats)
    }

    /// The epoch `key`'s fence stands at (0: never advanced).
    async fn fence_epoch(&self, key: &str) -> Result<i64, CheckpointError> {
        Ok(sqlx::query_scalar(FENCE_EPOCH)
            .bind(key)
            .fetch_optional(&self.pool)
            .await?
            .unwrap_or(0))
    }

    /// Why a fenced write was not stored, if its fence is the reason.
    async fn fenced(&self, fence: Option<&Fence>) -> Result<(), CheckpointError> {
        match fence {
            Some(f) => f.check(self.fence_epoch(&f.key).await?),
            None => Ok(()),
        }
    }

    /// Why `put` was refused: its fence was superseded, else its head moved. A put that
    /// `claimed` its fence is fenced only by a higher epoch (its own advance may have been
    /// undone with a failed statement).
    async fn refusal(&self, put: &PutCheckpoint, claimed: bool) -> CheckpointError {
        let fenced = match put.fence.as_ref() {
            // A claim's own raise may have been undone with its failed statement.
            Some(f) if claimed => self
                .fence_epoch(&f.key)
                .await
                .and_then(|current| f.check(current.max(f.epoch))),
            fence => self.fenced(fence).await,
        };
        if let Err(e) = fenced {
            return e;
        }
        let actual = sqlx::query_scalar(HEAD)
            .bind(&put.record.thread_id)
            .fetch_optional(&self.pool)
            .await
            .ok()
            .flatten();
        CheckpointError::Conflict {
            thread_id: put.record.thread_id.clone(),
            expected: put.expected_head.clone(),
            actual,
        }
    }

    /// Stores `put`, raising its fence first when it `claims` it.
    async fn store(&self, put: &PutCheckpoint, claims: bool) -> Result<(), CheckpointError> {
        let _timer =
            super::timing::Timer::start(super::timing::Backend::Postgres, super::timing::Op::Put);
        let r = &put.record;
        let row = NewRow {
            thread_id: r.thread_id.clone(),
            checkpoint_id: r.checkpoint_id.clone(),
            seq: r.seq,
            parent_id: r.parent_id.clone(),
            created_at_ms: r.created_at_ms,
            metadata: to_json(&r.metadata)?,
            versions: sql::versions_json(&r.versions),
            plan: r.plan.get().to_string(),
            vals: sql::vals_json(&put.blobs)?,
            expected: put.expected_head.clone(),
            fence: put.fence.as_ref().map(|f| (f.key.clone(), f.epoch)),
            claim: claims,
            flush: put.flush,
        };
        if self.writer.put(row).await? {
            Ok(())
        } else {
            Err(self.refusal(put, claims).await)
        }
    }
}

#[async_trait]
impl Checkpointer for PostgresCheckpointer {
    async fn put(&self, put: &PutCheckpoint) -> Result<(), CheckpointError> {
        self.store(put, false).await
    }

    /// One statement: the fence's upsert and the checkpoint's insert commit together, in
    /// the same batch as other runs' checkpoints (the group commit).
    async fn put_claiming(&self, put: &PutCheckpoint) -> Result<(), CheckpointError> {
        let claims = put.fence.is_some();
        self.store(put, claims).await
    }

    async fn put_writes(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
        writes: Vec<PendingWrite>,
        fence: Option<&Fence>,
    ) -> Result<(), CheckpointError> {
        let _timer = super::timing::Timer::start(
            super::timing::Backend::Postgres,
            super::timing::Op::Writes,
        );
        if writes.is_empty() {
            return Ok(());
        }
        // With other tasks' writes in one commit, unless that batch failed as a whole.
        let writes: Arc<[PendingWrite]> = writes.into();
        let call = WritesCall {
            thread_id: thread_id.to_string(),
            checkpoint_id: checkpoint_id.to_string(),
            writes: writes.clone(),
            fence: fence.map(|f| (f.key.clone(), f.epoch)),
        };
        let json = match self.writes.submit(call).await {
            Some(true) => return Ok(()),
            Some(false) => return self.fenced(fence).await,
            None => sql::writes_json(&writes)?,
        };
        let stored = sqlx::query(PUT_WRITES)
            .bind(thread_id)
            .bind(checkpoint_id)
            .bind(without_nul(&json).as_ref())
            .bind(fence.map(|f| f.key.as_str()))
            .bind(fence.map(|f| f.epoch))
            .execute(&self.pool)
            .await?
            .rows_affected();
        if stored == 0 {
            // Every write existed already, or the fence refused them.
            self.fenced(fence).await?;
        }
        Ok(())
    }

    async fn put_writes_at_head(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
        expected_writes: usize,
        writes: Vec<PendingWrite>,
        fence: Option<&Fence>,
        flush: Flush,
    ) -> Result<bool, CheckpointError> {
        let _timer = super::timing::Timer::start(
            super::timing::Backend::Postgres,
            super::timing::Op::Writes,
        );
        let json = sql::writes_json(&writes)?;
        let sql = match flush {
            Flush::Now => PUT_WRITES_AT_HEAD,
            Flush::WithNext => PUT_WRITES_AT_HEAD_UNFLUSHED,
        };
        let mut conn = self.single.take().await?;
        let at_head: bool = sqlx::query_scalar(sql)
            .bind(thread_id)
            .bind(checkpoint_id)
            .bind(without_nul(&json).as_ref())
            .bind(fence.map(|f| f.key.as_str()))
            .bind(fence.map(|f| f.epoch))
            .bind(i64::try_from(expected_writes).unwrap_or(i64::MAX))
            .fetch_one(&mut *conn)
            .await?;
        conn.keep();
        if !at_head {
            self.fenced(fence).await?;
        }
        Ok(at_head)
    }

    async fn flush(&self, thread_id: &str) -> Result<(), CheckpointError> {
        let mut conn = self.single.take().await?;
        sqlx::query(FLUSH)
            .bind(thread_id)
            .execute(&mut *conn)
            .await?;
        conn.keep();
        Ok(())
    }

    async fn cache_get(
        &self,
        namespace: &str,
        key: &str,
        now_ms: i64,
    ) -> Result<Option<super::Json>, CheckpointError> {
        let value: Option<String> = sqlx::query_scalar(
            "SELECT value FROM node_cache WHERE namespace = $1 AND key = $2
               AND (expires_at_ms IS NULL OR expires_at_ms > $3)",
        )
        .bind(namespace)
        .bind(key)
        .bind(now_ms)
        .fetch_optional(&self.pool)
        .await?;
        value.map(super::json).transpose()
    }

    async fn cache_put(
        &self,
        namespace: &str,
        key: &str,
        value: super::Json,
        expires_at_ms: Option<i64>,
        now_ms: i64,
    ) -> Result<(), CheckpointError> {
        sqlx::query("DELETE FROM node_cache WHERE namespace = $1 AND expires_at_ms <= $2")
            .bind(namespace)
            .bind(now_ms)
            .execute(&self.pool)
            .await?;
        sqlx::query(
            "INSERT INTO node_cache (namespace, key, value, expires_at_ms) VALUES ($1, $2, $3, $4)
             ON CONFLICT (namespace, key) DO UPDATE
             SET value = excluded.value, expires_at_ms = excluded.expires_at_ms",
        )
        .bind(namespace)
        .bind(key)
        .bind(value.get())
        .bind(expires_at_ms)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn advance_fence(&self, key: &str, epoch: i64) -> Result<i64, CheckpointError> {
        // With other runs' advances in one commit, unless that batch failed as a whole.
        if let Some(held) = self.fences.submit(key, epoch).await {
            return Ok(held);
        }
        Ok(sqlx::query_scalar(
            "INSERT INTO checkpoint_fences (key, epoch) VALUES ($1, $2)
             ON CONFLICT (key) DO UPDATE SET epoch = GREATEST(checkpoint_fences.epoch, EXCLUDED.epoch)
             RETURNING epoch",
        )
        .bind(key)
        .bind(epoch)
        .fetch_one(&self.pool)
        .await?)
    }

    async fn get(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<LoadedCheckpoint>, CheckpointError> {
        let _timer =
            super::timing::Timer::start(super::timing::Backend::Postgres, super::timing::Op::Load);
        let mut conn = self.reads.take().await?;
        let row = sqlx::query(GET)
            .bind(thread_id)
            .bind(checkpoint_id)
            .fetch_optional(&mut *conn)
            .await?;
        conn.keep();
        let Some(row) = row else {
            return Ok(None);
        };
        let record = record_from_row(thread_id, &row)?;
        let writes = writes_from_row(&record, &row)?;
        type Link = (String, String, i64, Option<sql::StoredVal>);
        let links: Vec<Link> =
            serde_json::from_str(row.try_get::<&str, _>("blobs")?).map_err(|e| {
                CheckpointError::Decode(format!("field values of {}: {e}", record.checkpoint_id))
            })?;
        let rows = sql::chain_rows(thread_id, links)?;
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
        let _timer = super::timing::Timer::start(
            super::timing::Backend::Postgres,
            super::timing::Op::LoadMetadata,
        );
        let mut conn = self.reads.take().await?;
        let row = sqlx::query(GET_WITHOUT_VALUES)
            .bind(thread_id)
            .bind(checkpoint_id)
            .fetch_optional(&mut *conn)
            .await?;
        conn.keep();
        let Some(row) = row else {
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
        let mut conn = self.reads.take().await?;
        let head = sqlx::query_scalar(HEAD)
            .bind(thread_id)
            .fetch_optional(&mut *conn)
            .await?;
        conn.keep();
        Ok(head)
    }

    async fn list(
        &self,
        thread_id: &str,
        options: &ListOptions,
    ) -> Result<Vec<CheckpointRecord>, CheckpointError> {
        let filter = options.filter.as_ref().map(to_json).transpose()?;
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
        // Its subgraphs' namespaces are the threads `{thread}|...`: with the "C" collation
        // they sort between `{thread}|` and `{thread}}` (`}` follows `|`), an index range.
        sqlx::query(
            "WITH w AS (DELETE FROM checkpoint_writes
                          WHERE thread_id = $1 OR (thread_id >= $2 AND thread_id < $3)),
                  f AS (DELETE FROM checkpoint_fences WHERE key = $1)
             DELETE FROM checkpoints WHERE thread_id = $1 OR (thread_id >= $2 AND thread_id < $3)",
        )
        .bind(thread_id)
        .bind(format!("{thread_id}|"))
        .bind(format!("{thread_id}}}"))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn copy_thread(&self, from: &str, to: &str) -> Result<(), CheckpointError> {
        let mut tx = self.pool.begin().await?;
        let existing: Option<String> = sqlx::query_scalar(HEAD)
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
        // The thread and its subgraphs' namespaces (`{from}|...`, an index range), renamed.
        sqlx::query(
            "WITH w AS (
                INSERT INTO checkpoint_writes (thread_id, checkpoint_id, task_id, channel, idx, value)
                SELECT $2 || substr(thread_id, length($1) + 1), checkpoint_id, task_id, channel, idx, value
                FROM checkpoint_writes WHERE thread_id = $1 OR (thread_id >= $3 AND thread_id < $4)
             )
             INSERT INTO checkpoints
                 (thread_id, checkpoint_id, seq, parent_id, created_at_ms, metadata, versions, plan, vals,
                  hidden, metadata_jsonb, versions_jsonb, plan_jsonb)
             SELECT $2 || substr(thread_id, length($1) + 1), checkpoint_id, seq, parent_id, created_at_ms,
                    metadata, versions, plan, vals, hidden, metadata_jsonb, versions_jsonb, plan_jsonb
             FROM checkpoints WHERE thread_id = $1 OR (thread_id >= $3 AND thread_id < $4)",
        )
        .bind(from)
        .bind(to)
        .bind(format!("{from}|"))
        .bind(format!("{from}}}"))
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
        self.remove(thread_id, |rows| {
            rows.iter()
                .filter(|r| !r.4 && r.3.as_ref().is_some_and(|id| run_ids.contains(id)))
                .map(|r| r.0.clone())
                .collect()
        })
        .await
    }

    async fn prune(
        &self,
        thread_id: &str,
        strategy: PruneStrategy,
    ) -> Result<PruneStats, CheckpointError> {
        self.remove(thread_id, |rows| sql::pick_for_prune(rows, strategy))
            .await
    }
}
