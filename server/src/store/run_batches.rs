//! Postgres: new threads, and runs created and ended, by group commit.
//!
//! Concurrent requests' new runs, and concurrent workers' ends of runs, are written by one
//! call of `palgraph_create_runs` / `palgraph_finish_runs` (migration 5) each: one round
//! trip and one commit for the whole batch, instead of a transaction of four to seven round
//! trips per run. The functions do per run exactly what [`super::sql::SqlStore`]'s
//! transactions do, in thread order. Only a run on a thread with nothing active is created
//! this way: one on a busy thread (where the multitask strategy decides) or whose
//! idempotency key names an existing run is created the long way, as is any run whose batch
//! failed as a whole.
//!
//! Concurrent requests' new threads are inserted by one statement per batch
//! ([`INSERT_THREADS`]); a thread whose id is taken is answered the long way, as is every
//! thread of a batch that failed as a whole.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use palgraph::db::batch::Batcher;
use palgraph::db::reuse::Reused;
use serde_json::{json, Value};
use sqlx::types::Json;
use sqlx::PgPool;

use super::rows::json;
use super::{
    now_ms, thread_status_after, Claim, Finish, NewRun, Run, RunState, StoreError, Thread,
};

/// The most runs one call writes.
const MAX_BATCH: usize = 64;
/// Batches in flight at once: one. The runs that arrive while a batch is written gather into
/// the next, so under load every commit carries more of them. A second batch in flight
/// would be sent out with whatever had queued meanwhile, often a single run, and spend a
/// statement and a commit on it: with one in flight Postgres does less work per turn and
/// serves more turns at the same CPU.
const IN_FLIGHT: usize = 1;

/// What the batch made of a new run.
#[derive(Debug)]
pub(crate) enum Created {
    /// Created, with its thread's status `busy`.
    Run(Box<Run>),
    /// No such thread (or, checked, another owner's).
    NoThread,
    /// The thread that was to be new belongs to another owner.
    OthersThread,
    /// The thread checked ([`NewRun::check_thread`]) was last run with another graph.
    OtherGraph,
    /// The thread has an active run, or the idempotency key is taken: nothing was written;
    /// create it the long way.
    Busy,
}

/// A new run as the create batch takes it, and what the caller needs to make its [`Run`].
pub(crate) struct NewInBatch {
    item: Value,
    run: Run,
}

/// Inserts a batch of new threads, in the bytes' order of their ids (as every batch locks
/// threads: two batches never wait on each other's ids in opposite orders), and returns the
/// ones inserted; an id already taken is left as it is.
const INSERT_THREADS: &str = r#"
INSERT INTO threads (thread_id, owner, metadata, status, created_at_ms, updated_at_ms)
SELECT x.thread_id, x.owner, x.metadata, x.status, x.created_at_ms, x.created_at_ms
FROM jsonb_to_recordset($1) AS x(thread_id text, owner text, metadata jsonb, status text,
                                 created_at_ms bigint)
ORDER BY x.thread_id COLLATE "C"
ON CONFLICT (thread_id) DO NOTHING
RETURNING thread_id, owner, metadata, status, created_at_ms, updated_at_ms
"#;

/// The batching tasks of one Postgres store.
pub(crate) struct RunBatches {
    create: Batcher<NewInBatch, Created>,
    finish: Batcher<Value, bool>,
    threads: Batcher<Value, Option<Thread>>,
}

impl RunBatches {
    /// Starts both tasks on the current runtime.
    pub(crate) fn spawn(pool: &PgPool) -> Self {
        // Each task on connections of its own: none pinged on every return to the pool
        // (see `palgraph::db::reuse`).
        let conns = Arc::new(Reused::with_generic_plans(pool.clone(), IN_FLIGHT));
        let create = Batcher::spawn(MAX_BATCH, IN_FLIGHT, move |items: Vec<NewInBatch>| {
            let conns = conns.clone();
            async move { create_batch(&conns, items).await }
        });
        let conns = Arc::new(Reused::with_generic_plans(pool.clone(), IN_FLIGHT));
        let finish = Batcher::spawn(MAX_BATCH, IN_FLIGHT, move |items: Vec<Value>| {
            let conns = conns.clone();
            async move { finish_batch(&conns, items).await }
        });
        let conns = Arc::new(Reused::with_generic_plans(pool.clone(), IN_FLIGHT));
        let threads = Batcher::spawn(MAX_BATCH, IN_FLIGHT, move |items: Vec<Value>| {
            let conns = conns.clone();
            async move { threads_batch(&conns, items).await }
        });
        RunBatches {
            create,
            finish,
            threads,
        }
    }

    /// Inserts the new thread `t` in a batch: the thread as stored, `Some(None)` when its id
    /// is taken, or `None` when it must be created the long way (a text holds a NUL, or its
    /// batch failed).
    pub(crate) async fn create_thread(&self, t: &Thread) -> Option<Option<Thread>> {
        if [&t.thread_id, &t.owner, &t.status]
            .iter()
            .any(|s| s.contains('\0'))
        {
            return None;
        }
        let item = json!({
            "thread_id": t.thread_id,
            "owner": t.owner,
            "metadata": serde_json::to_value(json::<sqlx::Postgres>(&t.metadata).0).ok()?,
            "status": t.status,
            "created_at_ms": t.created_at_ms,
        });
        self.threads.submit(item).await
    }

    /// Creates `new` in a batch: `None` when it must be created the long way (an id holds a
    /// NUL, or its batch failed).
    pub(crate) async fn create(&self, new: &NewRun) -> Option<Created> {
        self.create.submit(new_in_batch(new)?).await
    }

    /// Ends a claimed run in a batch: whether the claim still held it, or `None` when its
    /// batch failed and it must be ended the long way.
    pub(crate) async fn finish(&self, claim: Claim<'_>, finish: &Finish) -> Option<bool> {
        if claim.run_id.contains('\0') || claim.worker.contains('\0') {
            return None;
        }
        self.finish.submit(end_item(claim, finish)).await
    }
}

/// `new` as an item of `palgraph_create_runs`'s batch, with the run it makes: `None` when it
/// must be created the long way (an id holds a NUL).
pub(super) fn new_in_batch(new: &NewRun) -> Option<NewInBatch> {
    if [&new.run_id, &new.thread_id, &new.owner, &new.assistant_id]
        .iter()
        .any(|s| s.contains('\0'))
        || new
            .idempotency_key
            .as_ref()
            .is_some_and(|k| k.contains('\0'))
    {
        return None;
    }
    let now = now_ms();
    let claim = new.claim.as_ref();
    let stored = |v: &Value| serde_json::to_value(json::<sqlx::Postgres>(v).0).ok();
    let run = Run {
        run_id: new.run_id.clone(),
        thread_id: new.thread_id.clone(),
        thread_seq: 0,
        owner: new.owner.clone(),
        assistant_id: new.assistant_id.clone(),
        graph_id: new.graph_id.clone(),
        status: if claim.is_some() {
            RunState::Running
        } else {
            RunState::Pending
        },
        kwargs: stored(&new.kwargs)?,
        metadata: stored(&new.metadata)?,
        multitask_strategy: new.multitask_strategy,
        idempotency_key: new.idempotency_key.clone(),
        cancel_action: None,
        cancel_reason: None,
        worker_id: claim.map(|c| c.worker.clone()),
        lease_until_ms: claim.map(|c| now + c.lease_ms),
        attempt: i64::from(claim.is_some()),
        error: None,
        created_at_ms: now,
        updated_at_ms: now,
        trace_context: new.trace_context.clone(),
    };
    let t = new.new_thread.as_ref();
    let item = json!({
        "run_id": run.run_id,
        "thread_id": run.thread_id,
        "owner": run.owner,
        "assistant_id": run.assistant_id,
        "graph_id": run.graph_id,
        "kwargs": run.kwargs,
        "metadata": run.metadata,
        "strategy": run.multitask_strategy.as_str(),
        "now": now,
        "worker": run.worker_id,
        "lease_until": run.lease_until_ms,
        "trace_context": run.trace_context,
        "idempotency_key": run.idempotency_key,
        "new_thread": t.is_some(),
        "thread_metadata": t.and_then(|t| stored(&t.metadata)),
        "thread_status": t.map(|t| t.status.as_str()),
        "thread_created": t.map(|t| t.created_at_ms),
        "check_thread": new.check_thread,
    });
    Some(NewInBatch { item, run })
}

/// A run's end as an item of `palgraph_finish_runs`'s batch.
pub(super) fn end_item(claim: Claim<'_>, finish: &Finish) -> Value {
    let (seq, event) = &finish.terminal;
    json!({
        "run_id": claim.run_id,
        "worker": claim.worker,
        "attempt": claim.attempt,
        "seq": seq,
        "packed": super::packed::pack_base64(event),
        "del": finish.delete,
        "status": finish.status.as_str(),
        "error": finish.error.as_deref().map(|e| e.replace('\0', "")),
        "now": now_ms(),
        "thread_status": thread_status_after(finish.status),
    })
}

/// The batch's items numbered (`i`), as one JSON array for the functions' `jsonb` argument.
fn numbered(items: impl IntoIterator<Item = Value>) -> Json<Value> {
    Json(Value::Array(
        items
            .into_iter()
            .enumerate()
            .map(|(i, mut item)| {
                item["i"] = json!(i);
                item
            })
            .collect(),
    ))
}

/// The functions' answers (`o_idx`, answer) in item order: exactly one per item.
fn in_order<T>(n: usize, rows: impl IntoIterator<Item = (i32, T)>) -> Result<Vec<T>, StoreError> {
    let mut out: Vec<Option<T>> = std::iter::repeat_with(|| None).take(n).collect();
    for (i, answer) in rows {
        let slot = usize::try_from(i)
            .ok()
            .and_then(|i| out.get_mut(i))
            .filter(|slot| slot.is_none())
            .ok_or_else(|| StoreError::Decode(format!("batch index {i}")))?;
        *slot = Some(answer);
    }
    out.into_iter()
        .map(|o| o.ok_or_else(|| StoreError::Decode("a run left out of its batch".into())))
        .collect()
}

async fn create_batch(
    conns: &Reused<sqlx::Postgres>,
    items: Vec<NewInBatch>,
) -> Result<Vec<Created>, StoreError> {
    let n = items.len();
    let mut conn = conns.take().await?;
    let created = create_in(&mut conn, items).await?;
    conn.keep();
    metrics::histogram!(crate::metric::BATCH_SIZE, "kind" => "run_creates").record(n as f64);
    Ok(created)
}

/// Creates a batch of runs ([`new_in_batch`]) in one call: for each, in batch order, what
/// became of it.
pub(super) async fn create_in(
    conn: &mut sqlx::PgConnection,
    items: Vec<NewInBatch>,
) -> Result<Vec<Created>, StoreError> {
    let n = items.len();
    let (batch, runs): (Vec<Value>, Vec<Run>) = items.into_iter().map(|x| (x.item, x.run)).unzip();
    let rows: Vec<(i32, i32, Option<i64>)> =
        sqlx::query_as("SELECT o_idx, o_outcome, o_seq FROM palgraph_create_runs($1)")
            .bind(numbered(batch))
            .fetch_all(conn)
            .await?;
    let outcomes = in_order(n, rows.into_iter().map(|(i, o, seq)| (i, (o, seq))))?;
    outcomes
        .into_iter()
        .zip(runs)
        .map(|(outcome, mut run)| {
            Ok(match outcome {
                (0, Some(seq)) => {
                    run.thread_seq = seq;
                    Created::Run(Box::new(run))
                }
                (1, _) => Created::NoThread,
                (2, _) => Created::OthersThread,
                (3 | 4, _) => Created::Busy,
                (5, _) => Created::OtherGraph,
                other => return Err(StoreError::Decode(format!("create outcome {other:?}"))),
            })
        })
        .collect()
}

async fn finish_batch(
    conns: &Reused<sqlx::Postgres>,
    items: Vec<Value>,
) -> Result<Vec<bool>, StoreError> {
    let n = items.len();
    let mut conn = conns.take().await?;
    let done = end_batch(&mut conn, items).await?;
    conn.keep();
    metrics::histogram!(crate::metric::BATCH_SIZE, "kind" => "run_ends").record(n as f64);
    Ok(done)
}

/// Ends a batch of runs ([`end_item`]s) in one call: for each, in batch order, whether its
/// claim still held it.
pub(super) async fn end_batch(
    conn: &mut sqlx::PgConnection,
    items: Vec<Value>,
) -> Result<Vec<bool>, StoreError> {
    let n = items.len();
    let rows: Vec<(i32, bool)> =
        sqlx::query_as("SELECT o_idx, o_done FROM palgraph_finish_runs($1)")
            .bind(numbered(items))
            .fetch_all(conn)
            .await?;
    in_order(n, rows)
}

async fn threads_batch(
    conns: &Reused<sqlx::Postgres>,
    items: Vec<Value>,
) -> Result<Vec<Option<Thread>>, StoreError> {
    let n = items.len();
    // One row per id: a repeated id in the batch is answered "taken" (its caller then finds
    // the thread the first one inserted, or the one that was there before).
    let mut seen = HashSet::with_capacity(n);
    let first: Vec<bool> = items
        .iter()
        .map(|item| seen.insert(item["thread_id"].as_str().unwrap_or_default().to_owned()))
        .collect();
    let batch: Vec<&Value> = items
        .iter()
        .zip(&first)
        .filter(|(_, f)| **f)
        .map(|(i, _)| i)
        .collect();
    let mut conn = conns.take().await?;
    let rows: Vec<Thread> = sqlx::query_as(INSERT_THREADS)
        .bind(Json(&batch))
        .fetch_all(&mut *conn)
        .await?;
    conn.keep();
    metrics::histogram!(crate::metric::BATCH_SIZE, "kind" => "threads").record(n as f64);
    let mut inserted: HashMap<String, Thread> =
        rows.into_iter().map(|t| (t.thread_id.clone(), t)).collect();
    Ok(items
        .iter()
        .zip(first)
        .map(|(item, first)| {
            first
                .then(|| inserted.remove(item["thread_id"].as_str().unwrap_or_default()))
                .flatten()
        })
        .collect())
}
