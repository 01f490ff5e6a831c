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

use std::sync::Arc;

use sqlx::PgPool;

use crate::db::reuse::Reused;

use crate::db::batch::Batcher;

use super::{CheckpointError, PendingWrite};

/// The most calls one statement carries.
const MAX_BATCH: usize = 64;
/// Statements in flight at once: one, so that calls arriving meanwhile gather into the next
/// (see [`super::pg_group_commit::BATCHES_IN_FLIGHT`] for what a second one cost).
const IN_FLIGHT: usize = super::pg_group_commit::BATCHES_IN_FLIGHT;

/// Every call's writes whose fence holds, one array element per write (`$1` the call's
/// index in the batch; `$2`..`$6` the write's thread, checkpoint, task, channel and index;
/// `$7` its JSON as text, cast to `jsonb` once; `$8`, `$9` the call's fence key and epoch,
/// NULL when it has none); returns the call index of every write stored. A fence is read
/// `FOR SHARE`, as a single call reads it.
///
/// A plain insert, where a single call says `ON CONFLICT` (which keeps the first write of a
/// key, or replaces an `__error__` write): `ON CONFLICT` makes every row a speculative
/// insert (its unique index probed first, a confirmation record written after), and a write
/// whose key exists is rare (a task failing again, a durable step recorded again after a
/// crash). Such a write fails its batch on the primary key, and every call of that batch is
/// then written alone, by [`super::pg_sql::PUT_WRITES`], with its own rule.
const PUT_WRITES_BATCH: &str = r#"
WITH input AS (
    SELECT x.i, x.thread_id COLLATE "C" AS thread_id, x.checkpoint_id COLLATE "C" AS checkpoint_id,
           x.task_id, x.channel, x.idx, x.value, x.fence_key COLLATE "C" AS fence_key,
           x.fence_epoch
    FROM unnest($1::int4[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int8[],
                $7::text[], $8::text[], $9::int8[])
        AS x(i, thread_id, checkpoint_id, task_id, channel, idx, value, fence_key, fence_epoch)
), ok AS (
    SELECT i.* FROM input i
    WHERE i.fence_key IS NULL OR EXISTS (SELECT 1 FROM checkpoint_fences f
                                         WHERE f.key = i.fence_key AND f.epoch = i.fence_epoch
                                         FOR SHARE)
), ins AS (
    INSERT INTO checkpoint_writes (thread_id, checkpoint_id, task_id, channel, idx, value)
    SELECT thread_id, checkpoint_id, task_id, channel, idx, value::jsonb FROM ok
)
SELECT i FROM ok
"#;

/// One call's writes, as the batch statement takes them.
pub(super) struct WritesCall {
    /// Its thread.
    pub(super) thread_id: String,
    /// The checkpoint the writes belong to.
    pub(super) checkpoint_id: String,
    /// The writes (shared with the caller, who writes them alone if the batch fails).
    pub(super) writes: Arc<[PendingWrite]>,
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

/// The batch's columns, one element per write.
struct Columns {
    call: Vec<i32>,
    thread: Vec<String>,
    checkpoint: Vec<String>,
    task: Vec<String>,
    channel: Vec<String>,
    idx: Vec<i64>,
    value: Vec<String>,
    fence_key: Vec<Option<String>>,
    fence_epoch: Vec<Option<i64>>,
}

impl Columns {
    fn of(calls: &[WritesCall]) -> Self {
        let rows: usize = calls.iter().map(|c| c.writes.len()).sum();
        let mut cols = Columns {
            call: Vec::with_capacity(rows),
            thread: Vec::with_capacity(rows),
            checkpoint: Vec::with_capacity(rows),
            task: Vec::with_capacity(rows),
            channel: Vec::with_capacity(rows),
            idx: Vec::with_capacity(rows),
            value: Vec::with_capacity(rows),
            fence_key: Vec::with_capacity(rows),
            fence_epoch: Vec::with_capacity(rows),
        };
        for (i, c) in (0_i32..).zip(calls) {
            for w in c.writes.iter() {
                cols.call.push(i);
                cols.thread.push(c.thread_id.clone());
                cols.checkpoint.push(c.checkpoint_id.clone());
                cols.task.push(w.task_id.clone());
                cols.channel.push(w.channel.clone());
                cols.idx.push(w.idx);
                cols.value
                    .push(super::sql::without_nul(w.value.get()).into_owned());
                cols.fence_key
                    .push(c.fence.as_ref().map(|(k, _)| k.clone()));
                cols.fence_epoch.push(c.fence.as_ref().map(|(_, e)| *e));
            }
        }
        cols
    }
}

async fn write(
    conns: &Reused<sqlx::Postgres>,
    calls: Vec<WritesCall>,
) -> Result<Vec<bool>, CheckpointError> {
    let n = calls.len();
    // Each write's JSON is text already: bound as it is, parsed by Postgres once.
    let cols = Columns::of(&calls);
    let mut conn = conns.take().await?;
    let held: Vec<i32> = sqlx::query_scalar(PUT_WRITES_BATCH)
        .bind(&cols.call)
        .bind(&cols.thread)
        .bind(&cols.checkpoint)
        .bind(&cols.task)
        .bind(&cols.channel)
        .bind(&cols.idx)
        .bind(&cols.value)
        .bind(&cols.fence_key)
        .bind(&cols.fence_epoch)
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

    /// A write whose key is stored already, among other calls' writes: its batch fails on the
    /// key and every call is written alone, by the single call's rule (the first write of a
    /// step kept, an `__error__` replaced); no call loses a row or sees an error.
    #[tokio::test]
    async fn a_write_stored_already_sends_its_batch_the_long_way() {
        let schema = PgSchema::create().await;
        let pool = schema.pool(8).await;
        let cp = Arc::new(PostgresCheckpointer::new(pool.clone()));
        let row = |task: &str, channel: &str, value: &str| PendingWrite {
            task_id: task.into(),
            channel: channel.into(),
            idx: 0,
            value: json(format!("\"{value}\"")).unwrap(),
        };
        cp.put_writes(
            "t",
            "c1",
            vec![
                row("memo", "__step__:x", "first"),
                row("err", "__error__", "one"),
            ],
            None,
        )
        .await
        .unwrap();
        let calls: Vec<_> = (0..30)
            .map(|i| {
                let cp = cp.clone();
                tokio::spawn(async move {
                    let writes = match i {
                        10 => vec![row("memo", "__step__:x", "second")],
                        20 => vec![row("err", "__error__", "two")],
                        _ => vec![row(&format!("task{i}"), "__result__", "done")],
                    };
                    cp.put_writes("t", "c1", writes, None).await
                })
            })
            .collect();
        for (i, c) in calls.into_iter().enumerate() {
            c.await.unwrap().unwrap_or_else(|e| panic!("call {i}: {e}"));
        }
        let stored: Vec<(String, serde_json::Value)> = sqlx::query_as(
            "SELECT task_id, value FROM checkpoint_writes WHERE thread_id = 't' ORDER BY task_id",
        )
        .fetch_all(&pool)
        .await
        .unwrap();
        assert_eq!(
            stored.len(),
            30,
            "28 results, the memo and the error: {stored:?}"
        );
        let value = |task: &str| {
            stored
                .iter()
                .find(|(t, _)| t == task)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(
            value("memo"),
            Some(serde_json::json!("first")),
            "a step's first write kept"
        );
        assert_eq!(
            value("err"),
            Some(serde_json::json!("two")),
            "an error replaced"
        );
        assert_eq!(value("task29"), Some(serde_json::json!("done")));
    }
}
