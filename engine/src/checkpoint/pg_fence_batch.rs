//! Group commit of fence advances on Postgres.
//!
//! Every claim of a run starts by handing its thread to itself
//! ([`Checkpointer::advance_fence`](super::Checkpointer::advance_fence)): one upsert and one
//! commit per run, which concurrent runs would otherwise pay one by one. Advances that
//! arrive while earlier ones are being written go together into one statement, as
//! checkpoints and pending writes do ([`super::pg_group_commit`], [`super::pg_writes_batch`]).
//! Each caller still gets, once the batch is committed, the epoch its key holds: the higher
//! of the stored one and every epoch asked for that key. Two advances of one key in one
//! batch resolve as if the lower had been written first (both are told the higher epoch). A
//! batch that fails as a whole (a deadlock with another batch, say) is written call by call.

use std::collections::HashMap;

use serde_json::json;
use std::sync::Arc;

use sqlx::PgPool;

use crate::db::reuse::Reused;

use crate::db::batch::Batcher;

use super::CheckpointError;

/// The most advances one statement carries.
const MAX_BATCH: usize = 64;
/// Statements in flight at once: one, so that calls arriving meanwhile gather into the next
/// (see [`super::pg_group_commit::BATCHES_IN_FLIGHT`] for what a second one cost).
const IN_FLIGHT: usize = super::pg_group_commit::BATCHES_IN_FLIGHT;

/// Raises every key of `$1` (`[{key, epoch}]`) to its highest epoch of the batch unless its
/// stored epoch is higher; returns every key's epoch. Keys are locked in one order, so two
/// batches in flight cannot wait on each other in a cycle.
const ADVANCE_BATCH: &str = r#"
INSERT INTO checkpoint_fences (key, epoch)
SELECT x.key COLLATE "C", max(x.epoch)
FROM jsonb_to_recordset($1::jsonb) AS x(key text, epoch bigint)
GROUP BY 1
ORDER BY 1
ON CONFLICT (key) DO UPDATE SET epoch = GREATEST(checkpoint_fences.epoch, EXCLUDED.epoch)
RETURNING key, epoch
"#;

/// The batching task of one checkpointer's fence advances.
#[derive(Clone, Debug)]
pub(super) struct FenceBatch {
    batcher: Batcher<(String, i64), i64>,
}

impl FenceBatch {
    /// Starts the task on the current runtime.
    pub(super) fn start(pool: PgPool) -> Self {
        // Its own connections: no ping on every return to the pool (see `db::reuse`).
        let conns = Arc::new(Reused::with_generic_plans(pool, IN_FLIGHT));
        let batcher = Batcher::spawn(MAX_BATCH, IN_FLIGHT, move |calls: Vec<(String, i64)>| {
            let conns = conns.clone();
            async move { advance(&conns, calls).await }
        });
        FenceBatch { batcher }
    }

    /// Advances `key` to `epoch` with other callers' advances: the epoch the key holds once
    /// committed, or `None` when the key cannot go in a batch (a NUL) or its batch failed
    /// (advance it alone).
    pub(super) async fn submit(&self, key: &str, epoch: i64) -> Option<i64> {
        if key.contains('\0') {
            return None;
        }
        self.batcher.submit((key.to_string(), epoch)).await
    }
}

async fn advance(
    conns: &Reused<sqlx::Postgres>,
    calls: Vec<(String, i64)>,
) -> Result<Vec<i64>, CheckpointError> {
    let batch = serde_json::Value::Array(
        calls
            .iter()
            .map(|(key, epoch)| json!({"key": key, "epoch": epoch}))
            .collect(),
    );
    let mut conn = conns.take().await?;
    let rows: Vec<(String, i64)> = sqlx::query_as(ADVANCE_BATCH)
        .bind(sqlx::types::Json(batch))
        .fetch_all(&mut *conn)
        .await?;
    conn.keep();
    metrics::histogram!(super::timing::BATCH_SIZE, "kind" => "fences").record(calls.len() as f64);
    let held: HashMap<String, i64> = rows.into_iter().collect();
    calls
        .iter()
        .map(|(key, _)| {
            held.get(key).copied().ok_or_else(|| {
                CheckpointError::Decode(format!("the fence batch left out key `{key}`"))
            })
        })
        .collect()
}

#[cfg(all(test, feature = "testkit"))]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::Arc;

    use crate::checkpoint::Checkpointer;
    use crate::testkit::backends::PgSchema;

    use super::super::postgres::PostgresCheckpointer;

    /// Many advances at once, some of one key: fewer statements than calls, and each caller
    /// told what its key holds afterwards, never less than it asked for, never more than the
    /// highest epoch asked for that key.
    #[tokio::test]
    async fn concurrent_advances_share_statements_and_each_gets_its_keys_epoch() {
        let schema = PgSchema::create().await;
        let pool = schema.pool(8).await;
        let cp = Arc::new(PostgresCheckpointer::new(pool.clone()));
        assert_eq!(cp.advance_fence("t-old", 50).await.unwrap(), 50);
        let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
        let seen = recorder.handle();
        // One thread runs this test and the batching task: they record here.
        let local = metrics::set_default_local_recorder(&recorder);
        let mut calls = Vec::new();
        for i in 0..60i64 {
            let cp = cp.clone();
            // Ten keys, six advances each with epochs 1..=6; key t-old is already at 50.
            let key = if i % 10 == 0 {
                "t-old".to_string()
            } else {
                format!("t{}", i % 10)
            };
            let epoch = i / 10 + 1;
            calls.push(tokio::spawn(async move {
                (
                    key.clone(),
                    epoch,
                    cp.advance_fence(&key, epoch).await.unwrap(),
                )
            }));
        }
        for call in calls {
            let (key, asked, got) = call.await.unwrap();
            if key == "t-old" {
                assert_eq!(got, 50, "a lower epoch does not lower the fence");
            } else {
                assert!(got >= asked && got <= 6, "{key}: asked {asked}, got {got}");
            }
        }
        drop(local);
        let seen = seen.render();
        let count = crate::testkit::fixtures::rendered_metric(
            &seen,
            "palgraph_group_commit_batch_size_count{kind=\"fences\"}",
        )
        .unwrap_or_else(|| panic!("no fence batches in {seen}"));
        assert!(count < 60.0, "60 advances took {count} statements: {seen}");
        let stored: Vec<(String, i64)> =
            sqlx::query_as("SELECT key, epoch FROM checkpoint_fences ORDER BY key")
                .fetch_all(&pool)
                .await
                .unwrap();
        assert_eq!(stored.len(), 10);
        for (key, epoch) in stored {
            assert_eq!(epoch, if key == "t-old" { 50 } else { 6 }, "{key}");
        }
        // A key with a NUL goes alone and gets the database's refusal, not a batch failure.
        assert!(cp.advance_fence("a\0b", 1).await.is_err());
        assert_eq!(cp.advance_fence("t1", 7).await.unwrap(), 7);
    }
}
