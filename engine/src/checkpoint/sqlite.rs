//! The SQLite checkpointer: palgraph's embedded default (a file; nothing to install).
//!
//! Same layout as Postgres: one row per checkpoint with the values it wrote. Writes run in
//! `BEGIN IMMEDIATE` transactions (one writer at a time; readers never wait in WAL mode),
//! and the head check happens inside the same transaction as the insert, so a put is all
//! or nothing and a racing writer gets [`CheckpointError::Conflict`].

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use sqlx::{Connection, Row, SqlitePool};

use super::sql::{self, RowLinks};
use super::sqlite_sql::{
    ADVANCE_FENCE, CHAIN, COPY_THREAD, DELETE_CHECKPOINT, DELETE_THREAD, DELETE_WRITES_OF,
    FENCE_EPOCH, FLUSH, HEAD, HEAD_SEQ, HIDE, LINKS, LIST, PUT, PUT_WRITE, PUT_WRITES,
    THE_CHECKPOINT, WRITES,
};
use super::sqlite_unsynced::{Level, Unsynced};
use super::{
    json, CheckpointError, CheckpointRecord, Checkpointer, Fence, Flush, ListOptions,
    LoadedCheckpoint, PendingWrite, PruneStats, PruneStrategy, PutCheckpoint,
};
use crate::db::writers::write_turn;

/// Checkpoints in a SQLite file.
#[derive(Clone, Debug)]
pub struct SqliteCheckpointer {
    pool: SqlitePool,
    /// The pool's `synchronous` level, for unflushed writes.
    level: Arc<Level>,
}

impl SqliteCheckpointer {
    /// Uses a pool whose database is migrated (see [`crate::db::open_sqlite`]).
    pub fn new(pool: SqlitePool) -> Self {
        SqliteCheckpointer {
            pool,
            level: Arc::default(),
        }
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

type Tx<'a> = sqlx::Transaction<'a, sqlx::Sqlite>;

fn record_from_row(
    thread_id: &str,
    row: &sqlx::sqlite::SqliteRow,
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

fn to_json(v: &impl serde::Serialize) -> Result<String, CheckpointError> {
    serde_json::to_string(v).map_err(|e| CheckpointError::Decode(e.to_string()))
}

async fn head_in(
    tx: &mut Tx<'_>,
    thread_id: &str,
) -> Result<Option<(String, i64)>, CheckpointError> {
    Ok(sqlx::query_as(HEAD_SEQ)
        .bind(thread_id)
        .fetch_optional(&mut **tx)
        .await?)
}

/// Refuses a fenced write whose epoch is not the thread's current one (inside the write's
/// `BEGIN IMMEDIATE` transaction: no other writer runs until it commits).
async fn check_fence(tx: &mut Tx<'_>, fence: Option<&Fence>) -> Result<(), CheckpointError> {
    let Some(f) = fence else {
        return Ok(());
    };
    let current: i64 = sqlx::query_scalar(FENCE_EPOCH)
        .bind(&f.key)
        .fetch_optional(&mut **tx)
        .await?
        .unwrap_or(0);
    f.check(current)
}

/// Raises `f`'s key to its epoch (unless higher already), in the transaction `tx`.
async fn raise_fence(tx: &mut Tx<'_>, f: &Fence) -> Result<(), CheckpointError> {
    let current: i64 = sqlx::query_scalar(ADVANCE_FENCE)
        .bind(&f.key)
        .bind(f.epoch)
        .fetch_one(&mut **tx)
        .await?;
    f.check(current)
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
        let row = sqlx::query(THE_CHECKPOINT)
            .bind(thread_id)
            .bind(checkpoint_id)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(row) = row else {
            tx.rollback().await?;
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
            let mut links = Vec::with_capacity(chain_rows.len());
            for r in chain_rows {
                let blob: Option<String> = r.try_get("blob")?;
                let blob: Option<sql::StoredVal> = match blob {
                    Some(text) => Some(serde_json::from_str(&text).map_err(|e| {
                        CheckpointError::Decode(format!(
                            "field value in {}: {e}",
                            record.checkpoint_id
                        ))
                    })?),
                    None => None,
                };
                links.push((
                    r.try_get("field")?,
                    r.try_get("version")?,
                    r.try_get("depth")?,
                    blob,
                ));
            }
            let rows = sql::chain_rows(thread_id, links)?;
            fields = sql::assemble(thread_id, &record.versions, rows)?;
        }
        let write_rows = sqlx::query(WRITES)
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

    /// Removes checkpoints from history (see `sql::plan_removal`); `pick` chooses them.
    async fn remove(
        &self,
        thread_id: &str,
        pick: impl Fn(&[sql::RowFacts]) -> HashSet<String>,
    ) -> Result<PruneStats, CheckpointError> {
        let _turn = write_turn(&self.pool).await;
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
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
            let prevs_text: Option<String> = r.try_get("prevs")?;
            let prevs: BTreeMap<String, Option<String>> =
                serde_json::from_str(prevs_text.as_deref().unwrap_or("{}"))
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
        for id in &doomed {
            stats.writes += sqlx::query(DELETE_WRITES_OF)
                .bind(thread_id)
                .bind(id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
        }
        for id in &removal.delete {
            sqlx::query(DELETE_CHECKPOINT)
                .bind(thread_id)
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        for (id, keep) in &removal.hide {
            sqlx::query(HIDE)
                .bind(thread_id)
                .bind(id)
                .bind(to_json(keep)?)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(stats)
    }
}

impl SqliteCheckpointer {
    /// Stores `put` in one write transaction; with `claims`, the transaction first raises
    /// the put's fence to its epoch (kept when the checkpoint is refused for a moved head).
    /// A put that may wait for the next write ([`Flush::WithNext`]) commits without syncing
    /// the WAL (see `sqlite_unsynced`).
    async fn store(&self, put: &PutCheckpoint, claims: bool) -> Result<(), CheckpointError> {
        let _timer =
            super::timing::Timer::start(super::timing::Backend::Sqlite, super::timing::Op::Put);
        let _turn = write_turn(&self.pool).await;
        if put.flush == Flush::WithNext {
            let mut unsynced = Unsynced::take(&self.pool, &self.level).await?;
            let begin = unsynced.begin();
            let stored = store_on(unsynced.conn(), put, claims, begin).await;
            unsynced.give_back().await;
            return stored;
        }
        // Boxed: the pool's acquire is kilobytes of state that every future awaiting this
        // one would otherwise carry and copy (see `db::reuse`).
        let mut conn = Box::pin(self.pool.acquire()).await?;
        store_on(&mut conn, put, claims, "BEGIN IMMEDIATE").await
    }
}

/// [`SqliteCheckpointer::store`] on `conn`: one write transaction, begun by `begin`.
async fn store_on(
    conn: &mut sqlx::SqliteConnection,
    put: &PutCheckpoint,
    claims: bool,
    begin: &'static str,
) -> Result<(), CheckpointError> {
    let r = &put.record;
    let metadata = to_json(&r.metadata)?;
    let versions = sql::versions_json(&r.versions);
    let vals = sql::vals_json(&put.blobs)?;
    let mut tx = conn.begin_with(begin).await?;
    let fenced = match put.fence.as_ref() {
        Some(f) if claims => raise_fence(&mut tx, f).await,
        fence => check_fence(&mut tx, fence).await,
    };
    if let Err(e) = fenced {
        tx.rollback().await?;
        return Err(e);
    }
    let head = head_in(&mut tx, &r.thread_id).await?;
    let head_ok = match (&head, &put.expected_head) {
        (None, None) => r.seq == 1,
        (Some((id, seq)), Some(expected)) => id == expected && *seq + 1 == r.seq,
        _ => false,
    };
    let inserted = if head_ok {
        sqlx::query(PUT)
            .bind(&r.thread_id)
            .bind(&r.checkpoint_id)
            .bind(r.seq)
            .bind(r.parent_id.as_deref())
            .bind(r.created_at_ms)
            .bind(metadata)
            .bind(versions)
            .bind(r.plan.get())
            .bind(vals)
            .execute(&mut *tx)
            .await?
            .rows_affected()
    } else {
        0
    };
    if inserted == 0 {
        if claims {
            // The thread is the claim's even so.
            tx.commit().await?;
        } else {
            tx.rollback().await?;
        }
        return Err(CheckpointError::Conflict {
            thread_id: r.thread_id.clone(),
            expected: put.expected_head.clone(),
            actual: head.map(|h| h.0),
        });
    }
    tx.commit().await?;
    Ok(())
}

#[async_trait]
impl Checkpointer for SqliteCheckpointer {
    async fn put(&self, put: &PutCheckpoint) -> Result<(), CheckpointError> {
        self.store(put, false).await
    }

    /// One write transaction (one sync of the WAL) for the fence's raise and the checkpoint.
    async fn put_claiming(&self, put: &PutCheckpoint) -> Result<(), CheckpointError> {
        let claims = put.fence.is_some();
        self.store(put, claims).await
    }

    /// A write of the thread's head row (its values unchanged) in a transaction of the
    /// pool's own level: its commit syncs the WAL, and so every frame before it.
    async fn flush(&self, thread_id: &str) -> Result<(), CheckpointError> {
        let _turn = write_turn(&self.pool).await;
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        sqlx::query(FLUSH).bind(thread_id).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn put_writes(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
        writes: Vec<PendingWrite>,
        fence: Option<&Fence>,
    ) -> Result<(), CheckpointError> {
        let _timer =
            super::timing::Timer::start(super::timing::Backend::Sqlite, super::timing::Op::Writes);
        if writes.is_empty() {
            return Ok(());
        }
        let _turn = write_turn(&self.pool).await;

        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        if let Err(e) = check_fence(&mut tx, fence).await {
            tx.rollback().await?;
            return Err(e);
        }
        if let [w] = writes.as_slice() {
            sqlx::query(PUT_WRITE)
                .bind(thread_id)
                .bind(checkpoint_id)
                .bind(&w.task_id)
                .bind(&w.channel)
                .bind(w.idx)
                .bind(w.value.get())
                .execute(&mut *tx)
                .await?;
        } else {
            let rows = serde_json::Value::Array(
                writes
                    .iter()
                    .map(|w| serde_json::json!([w.task_id, w.channel, w.idx, w.value.get()]))
                    .collect(),
            )
            .to_string();
            sqlx::query(PUT_WRITES)
                .bind(thread_id)
                .bind(checkpoint_id)
                .bind(rows)
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
        let _timer =
            super::timing::Timer::start(super::timing::Backend::Sqlite, super::timing::Op::Load);
        self.load(thread_id, checkpoint_id, true).await
    }

    async fn get_without_values(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<LoadedCheckpoint>, CheckpointError> {
        let _timer = super::timing::Timer::start(
            super::timing::Backend::Sqlite,
            super::timing::Op::LoadMetadata,
        );
        self.load(thread_id, checkpoint_id, false).await
    }

    async fn head(&self, thread_id: &str) -> Result<Option<String>, CheckpointError> {
        Ok(sqlx::query_scalar(HEAD)
            .bind(thread_id)
            .fetch_optional(&self.pool)
            .await?)
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
            .bind(filter)
            .bind(options.limit.map(|l| l as i64).unwrap_or(-1))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(|r| record_from_row(thread_id, r)).collect()
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<(), CheckpointError> {
        let _turn = write_turn(&self.pool).await;
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        for stmt in DELETE_THREAD {
            sqlx::query(stmt)
                .bind(thread_id)
                .bind(format!("{thread_id}|"))
                .bind(format!("{thread_id}}}"))
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query("DELETE FROM checkpoint_fences WHERE key = ?1")
            .bind(thread_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn cache_get(
        &self,
        namespace: &str,
        key: &str,
        now_ms: i64,
    ) -> Result<Option<super::Json>, CheckpointError> {
        let value: Option<String> = sqlx::query_scalar(
            "SELECT value FROM node_cache WHERE namespace = ?1 AND key = ?2
               AND (expires_at_ms IS NULL OR expires_at_ms > ?3)",
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
        sqlx::query("DELETE FROM node_cache WHERE namespace = ?1 AND expires_at_ms <= ?2")
            .bind(namespace)
            .bind(now_ms)
            .execute(&self.pool)
            .await?;
        sqlx::query(
            "INSERT INTO node_cache (namespace, key, value, expires_at_ms) VALUES (?1, ?2, ?3, ?4)
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
        Ok(sqlx::query_scalar(ADVANCE_FENCE)
            .bind(key)
            .bind(epoch)
            .fetch_one(&self.pool)
            .await?)
    }

    async fn copy_thread(&self, from: &str, to: &str) -> Result<(), CheckpointError> {
        let _turn = write_turn(&self.pool).await;
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        if let Some((existing, _)) = head_in(&mut tx, to).await? {
            tx.rollback().await?;
            return Err(CheckpointError::Conflict {
                thread_id: to.to_string(),
                expected: None,
                actual: Some(existing),
            });
        }
        for stmt in COPY_THREAD {
            sqlx::query(stmt)
                .bind(from)
                .bind(to)
                .bind(format!("{from}|"))
                .bind(format!("{from}}}"))
                .execute(&mut *tx)
                .await?;
        }
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
