//! Group commit of pending writes on Postgres.
//!
//! Tasks of many runs store their writes (a parallel step's results, a durable step's
//! outcome) at the same moments; each call waits for its own rows to be durable. Calls that
//! arrive while earlier ones are being written go together into one statement: one round
//! trip and one commit for all of them, as checkpoints do ([`super::pg_group_commit`]).
//! Each call still resolves only once its rows are committed, and each is checked against
//! its own fence: a fenced call's rows are not written and its caller is told, as alone.
//! A batch that fails as a whole (two calls writing the same key, say) is written call by
//! call.

use serde_json::{json, Value};
use std::sync::Arc;

use sqlx::PgPool;

use crate::db::reuse::Reused;

use crate::db::batch::Batcher;

use super::CheckpointError;

/// The most calls one statement carries.
const MAX_BATCH: usize = 64;
/// Statements in flight at once: one, so that calls arriving meanwhile gather into the next
/// (see [`super::pg_group_commit::BATCHES_IN_FLIGHT`] for what a second one cost).
const IN_FLIGHT: usize = super::pg_group_commit::BATCHES_IN_FLIGHT;

/// Every call's writes whose fence holds (`$1`: `[{i, thread_id, checkpoint_id, writes,
/// fence_key, fence_epoch}]`, `writes` as [`super::sql::writes_json`] makes them); returns
/// the calls whose fence held. A fence is read `FOR SHARE`, as a single call reads it.
const PUT_WRITES_BATCH: &str = r#"
WITH input AS (
    SELECT x.i, x.thread_id COLLATE "C" AS thread_id, x.checkpoint_id COLLATE "C" AS checkpoint_id,
           x.writes, x.fence_key COLLATE "C" AS fence_key, x.fence_epoch
    FROM jsonb_to_recordset($1::jsonb)
         AS x(i int, thread_id text, checkpoint_id text, writes jsonb, fence_key text, fence_epoch bigint)
), ok AS (
    SELECT i.* FROM input i
    WHERE i.fence_key IS NULL OR EXISTS (SELECT 1 FROM checkpoint_fences f
                                         WHERE f.key = i.fence_key AND f.epoch = i.fence_epoch
                                         FOR SHARE)
), ins AS (
    INSERT INTO checkpoint_writes (thread_id, checkpoint_id, task_id, channel, idx, value)
    SELECT ok.thread_id, ok.checkpoint_id, w.task_id, w.channel, w.idx,
           COALESCE(w.value, 'null'::jsonb)
    FROM ok, jsonb_to_recordset(ok.writes)
         AS w(task_id text, channel text, idx bigint, value jsonb)
    ON CONFLICT (thread_id, checkpoint_id, task_id, channel, idx)
    DO UPDATE SET value = EXCLUDED.value WHERE checkpoint_writes.channel = '__error__'
)
SELECT i FROM ok
"#;

/// One call's writes, as the batch statement takes them.
pub(super) struct WritesCall {
    /// Its thread.
    pub(super) thread_id: String,
    /// The checkpoint the writes belong to.
    pub(super) checkpoint_id: String,
    /// The writes, as [`super::sql::writes_json`] renders them.
    pub(super) writes_json: String,
    /// Its fence (key and epoch), if it is fenced.
    pub(super) fence: Option<(String, i64)>,
}

/// The batching task of one checkpointer's pending writes.
#[derive(Clone, Debug)]
pub(super) struct WritesBatch {
    batcher: Batcher<WritesCall, bool>,
}

impl WritesBatch {
    /// Starts the task on the current runtime.
    pub(super) fn start(pool: PgPool) -> Self {
        // Its own connections: no ping on every return to the pool (see `db::reuse`).
        let conns = Arc::new(Reused::with_generic_plans(pool, IN_FLIGHT));
        let batcher = Batcher::spawn(MAX_BATCH, IN_FLIGHT, move |calls: Vec<WritesCall>| {
            let conns = conns.clone();
            async move { write(&conns, calls).await }
        });
        WritesBatch { batcher }
    }

    /// Writes one call's rows with others': whether its fence held (its rows are then
    /// committed), or `None` when its batch failed and it must be written alone.
    pub(super) async fn submit(&self, call: WritesCall) -> Option<bool> {
        self.batcher.submit(call).await
    }
}

async fn write(
    conns: &Reused<sqlx::Postgres>,
    calls: Vec<WritesCall>,
) -> Result<Vec<bool>, CheckpointError> {
    let n = calls.len();
    // The writes are JSON text already: the batch is written around them, not re-parsed.
    let mut text = String::from("[");
    for (i, c) in calls.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        let (key, epoch) = match &c.fence {
            Some((k, e)) => (Value::String(k.clone()), json!(e)),
            None => (Value::Null, Value::Null),
        };
        text.push_str(&format!(
            r#"{{"i":{i},"thread_id":{},"checkpoint_id":{},"fence_key":{key},"fence_epoch":{epoch},"writes":{}}}"#,
            Value::String(c.thread_id.clone()),
            Value::String(c.checkpoint_id.clone()),
            c.writes_json
        ));
    }
    text.push(']');
    let mut conn = conns.take().await?;
    let held: Vec<i32> = sqlx::query_scalar(PUT_WRITES_BATCH)
        .bind(super::sql::without_nul(&text).as_ref())
        .fetch_all(&mut *conn)
        .await?;
    conn.keep();
    super::timing::writes_batch(n);
    let mut out = vec![false; n];
    for i in held {
        if let Some(slot) = usize::try_from(i).ok().and_then(|i| out.get_mut(i)) {
            *slot = true;
        }
    }
    Ok(out)
}

#[cfg(all(test, feature = "testkit"))]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::Arc;

    use crate::checkpoint::{json, CheckpointError, Checkpointer, Fence, PendingWrite};
    use crate::testkit::backends::PgSchema;

    use super::super::postgres::PostgresCheckpointer;

    fn write(task: &str) -> Vec<PendingWrite> {
        vec![PendingWrite {
            task_id: task.into(),
            channel: "__result__".into(),
            idx: 0,
            value: json(format!("{{\"by\": \"{task}\", \"nul\": \"a\\u0000b\"}}")).unwrap(),
        }]
    }

    /// Many tasks' writes at once: fewer statements than calls, every fenced-in call's rows
    /// stored, and a call whose fence moved on refused with `Fenced` while its batch-mates
    /// are stored.
    #[tokio::test]
    async fn concurrent_writes_share_commits_and_each_keeps_its_fence() {
        let schema = PgSchema::create().await;
        let pool = schema.pool(8).await;
        let cp = Arc::new(PostgresCheckpointer::new(pool.clone()));
        cp.advance_fence("live", 2).await.unwrap();
        cp.advance_fence("moved", 5).await.unwrap();
        let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
        let seen = recorder.handle();
        let results = {
            // One thread runs this test and the batching task: they record here.
            let _local = metrics::set_default_local_recorder(&recorder);
            let calls: Vec<_> = (0..40)
                .map(|i| {
                    let cp = cp.clone();
                    tokio::spawn(async move {
                        let (key, epoch) = if i == 17 { ("moved", 4) } else { ("live", 2) };
                        let fence = Fence::new(key, epoch);
                        let thread = format!("t{}", i % 4);
                        cp.put_writes(&thread, "c1", write(&format!("task{i}")), Some(&fence))
                            .await
                    })
                })
                .collect();
            let mut out = Vec::new();
            for c in calls {
                out.push(c.await.unwrap());
            }
            out
        };
        for (i, r) in results.iter().enumerate() {
            if i == 17 {
                assert!(
                    matches!(r, Err(CheckpointError::Fenced { current: 5, .. })),
                    "{r:?}"
                );
            } else {
                assert!(r.is_ok(), "call {i}: {r:?}");
            }
        }
        let stored: Vec<String> = sqlx::query_scalar(
            "SELECT task_id FROM checkpoint_writes WHERE checkpoint_id = 'c1' ORDER BY task_id",
        )
        .fetch_all(&pool)
        .await
        .unwrap();
        assert_eq!(stored.len(), 39, "{stored:?}");
        assert!(!stored.contains(&"task17".to_string()));
        let seen = seen.render();
        let count = crate::testkit::fixtures::rendered_metric(
            &seen,
            "palgraph_group_commit_batch_size_count{kind=\"checkpoint_writes\"}",
        )
        .unwrap_or_else(|| panic!("no checkpoint_writes batches in {seen}"));
        assert!(count < 40.0, "40 calls took {count} statements: {seen}");
    }
}
