//! Group commit for the Postgres checkpointer.
//!
//! When several runs save checkpoints at the same moment, one writer task inserts all the
//! puts that have queued up with a single statement: one round trip and one WAL flush make
//! every one of them durable. Each put still resolves only once its own row is committed
//! (or refused), so nothing a run does after its last checkpoint is stored or reported
//! before that checkpoint is on disk (see `run::landing`):
//! durability is exactly that of one transaction per checkpoint.
//!
//! A put that finds no other put in flight does not queue: it inserts its row directly, so
//! a lone run pays no task hop. If a batch statement fails as a whole (one bad row, say),
//! its rows are retried one by one so that only the bad row's put fails.
//!
//! Every row carries its thread's expected head. The batch statement checks every row
//! against the heads committed before it, and the `(thread_id, seq)` unique key settles two
//! rows of one batch that claim the same place: the batch fails on the key and its rows are
//! retried one by one, where exactly one of the two is inserted and the other is refused
//! (its writer gets a conflict), just as with separate transactions. Neither statement says
//! `ON CONFLICT DO NOTHING`, which would make every insert a speculative one (see [`put_statement`])
//! to spare only that rare race a retry.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use sqlx::postgres::PgArguments;
use sqlx::{Arguments, PgPool};
use tokio::sync::{mpsc, oneshot, Semaphore};
use tracing::Instrument;

use super::sql::without_nul;
use super::{CheckpointError, Flush};
use crate::db::reuse::Reused;

/// One checkpoint's insert (`$1` to `$9`) and its head check (`$10`): `next`, the thread's
/// head must be `$10` at seq `$3 - 1`; `first`, the thread must have no checkpoint yet
/// (`$10` is NULL). The fence's part of the statement follows (see [`put_statement`]).
macro_rules! single_insert {
    (next) => {
        concat!(
            single_insert!(insert),
            r#"COALESCE((SELECT c.checkpoint_id = $10::text AND c.seq = $3 - 1 FROM checkpoints c
                WHERE c.thread_id = $1 ORDER BY c.seq DESC LIMIT 1), false)
"#
        )
    };
    (first) => {
        concat!(
            single_insert!(insert),
"$10::text IS NULL AND NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id = $1)\n"
        )
    };
    (insert) => {
        r#"
INSERT INTO checkpoints
    (thread_id, checkpoint_id, seq, parent_id, created_at_ms, metadata, versions, plan, vals)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb
WHERE "#
    };
}

/// The fence check of a fenced put (`$11` key, `$12` epoch).
macro_rules! fenced {
    () => {
        r#"AND EXISTS (SELECT 1 FROM checkpoint_fences f WHERE f.key = $11::text AND f.epoch = $12
                FOR SHARE)
"#
    };
}

/// The fence part of a put without a fence: its arguments are NULL, and no subquery is set up.
macro_rules! unfenced {
    () => {
        "AND $11::text IS NULL AND $12::int8 IS NULL\n"
    };
}

/// The last condition of a statement whose commit need not wait for the disk
/// ([`super::Flush::WithNext`]): `synchronous_commit` off for the statement's own
/// transaction only. Postgres writes WAL in order, so the commit is on disk with the next
/// flushed commit of any session; it is visible to every reader at once. A statement that
/// wrote nothing has nothing to flush; a claim's fence raised for a refused row is flushed
/// with the claim's next write, as its row would have been.
macro_rules! unflushed {
    () => {
        "AND set_config('synchronous_commit', 'off', true) = 'off'\n"
    };
}
pub(super) use unflushed;

/// The claim check of a claiming put.
macro_rules! claimed {
    () => {
        "AND (SELECT epoch FROM claimed) = $12\n"
    };
}

/// The upsert of a claiming put's fence.
macro_rules! claim_fence {
    () => {
        r#"
WITH claimed AS (
    INSERT INTO checkpoint_fences (key, epoch) VALUES ($11, $12)
    ON CONFLICT (key) DO UPDATE SET epoch = GREATEST(checkpoint_fences.epoch, EXCLUDED.epoch)
    RETURNING epoch
)"#
    };
}

/// How a put stands to its thread's fence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fencing {
    /// No fence: any writer whose head check holds.
    None,
    /// The fence must be at the put's epoch.
    Held,
    /// The put raises the fence to its epoch first ([`super::Checkpointer::put_claiming`]).
    Claimed,
}

/// The statement that inserts one checkpoint (`$1` to `$12`: the row, its expected head and
/// its fence's key and epoch) unless its thread's head is no longer the expected one: one
/// index probe. The `(thread_id, seq)` key catches a concurrent writer that passed the same
/// check: its unique violation is the refusal ([`insert_one`] answers it as "not
/// inserted").
///
/// A fenced put also needs the fence to be at its epoch; `FOR SHARE` makes a concurrent
/// `advance_fence` wait for this insert, or this insert see the advanced epoch. A claiming
/// put, by a writer not handed its thread yet, first raises the fence to the put's epoch,
/// as [`super::Checkpointer::advance_fence`] does, and the row is inserted only if the fence
/// then holds that epoch. The raise stays when the row is refused for a moved head, and its
/// row lock (taken by the upsert, until commit) orders it against every other writer's
/// `FOR SHARE` check, as a separate advance would.
///
/// One statement per kind of put rather than one whose conditions test its arguments: the
/// executor sets up every subquery in a statement's plan each time it runs it, whether the
/// arguments need it or not. A turn's puts (the first without a head to follow, none with a
/// fence) cost Postgres less this way (`palgraph-bench --only g` replays a turn's puts
/// against the floor of bare commits).
///
/// No `ON CONFLICT DO NOTHING`: it makes every insert a speculative one (each unique index
/// probed before the insert, and a second WAL record to confirm it), for a conflict that
/// only two writers racing on one thread meet; every put would pay for it.
pub(super) fn put_statement(first: bool, fencing: Fencing, flush: Flush) -> &'static str {
    use Fencing::{Claimed, Held};
    use Flush::{Now, WithNext};
    match (first, fencing, flush) {
        (false, Fencing::None, Now) => concat!(single_insert!(next), unfenced!()),
        (false, Fencing::None, WithNext) => {
            concat!(single_insert!(next), unfenced!(), unflushed!())
        }
        (true, Fencing::None, Now) => concat!(single_insert!(first), unfenced!()),
        (true, Fencing::None, WithNext) => {
            concat!(single_insert!(first), unfenced!(), unflushed!())
        }
        (false, Held, Now) => concat!(single_insert!(next), fenced!()),
        (false, Held, WithNext) => concat!(single_insert!(next), fenced!(), unflushed!()),
        (true, Held, Now) => concat!(single_insert!(first), fenced!()),
        (true, Held, WithNext) => concat!(single_insert!(first), fenced!(), unflushed!()),
        (false, Claimed, Now) => concat!(claim_fence!(), single_insert!(next), claimed!()),
        (false, Claimed, WithNext) => {
            concat!(
                claim_fence!(),
                single_insert!(next),
                claimed!(),
                unflushed!()
            )
        }
        (true, Claimed, Now) => concat!(claim_fence!(), single_insert!(first), claimed!()),
        (true, Claimed, WithNext) => {
            concat!(
                claim_fence!(),
                single_insert!(first),
                claimed!(),
                unflushed!()
            )
        }
    }
}

/// The rows of a batch, given column by column as arrays (`$1` to `$12` in [`put_statement`]'s
/// order, `$13` whether the row claims its fence): the `input` of [`PUT_BATCH`] and
/// [`PUT_BATCH_CLAIMING`].
macro_rules! batch_input {
    () => {
        r#"
WITH input AS (
    SELECT x.thread_id COLLATE "C" AS thread_id, x.checkpoint_id COLLATE "C" AS checkpoint_id,
           x.seq, x.parent_id COLLATE "C" AS parent_id, x.created_at_ms, x.metadata, x.versions,
           x.plan, x.vals, x.expected COLLATE "C" AS expected,
           x.fence_key COLLATE "C" AS fence_key, x.fence_epoch, x.claim
    FROM unnest($1::text[], $2::text[], $3::int8[], $4::text[], $5::int8[], $6::text[],
                $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::int8[],
                $13::bool[])
        AS x(thread_id, checkpoint_id, seq, parent_id, created_at_ms, metadata, versions, plan,
             vals, expected, fence_key, fence_epoch, claim)
)"#
    };
}

/// A batch row's head check (see [`PUT_BATCH`] for why not `NOT EXISTS`).
macro_rules! batch_head_check {
    () => {
        r#"
    WHERE CASE WHEN i.expected IS NULL
        THEN (SELECT c.seq FROM checkpoints c WHERE c.thread_id = i.thread_id LIMIT 1) IS NULL
        ELSE COALESCE((SELECT c.checkpoint_id = i.expected AND c.seq = i.seq - 1
                       FROM checkpoints c WHERE c.thread_id = i.thread_id
                       ORDER BY c.seq DESC LIMIT 1), false)
    END"#
    };
}

/// A batch row's fence check against the stored fences.
macro_rules! batch_fence_locked {
    () => {
        r#"EXISTS (SELECT 1 FROM checkpoint_fences f
                     WHERE f.key = i.fence_key AND f.epoch = i.fence_epoch FOR SHARE)"#
    };
}

/// The insert of a batch's `ok` rows.
macro_rules! batch_insert {
    () => {
        r#"
INSERT INTO checkpoints
    (thread_id, checkpoint_id, seq, parent_id, created_at_ms, metadata, versions, plan, vals)
SELECT thread_id, checkpoint_id, seq, parent_id, created_at_ms, metadata, versions, plan,
       vals::jsonb
FROM ok
RETURNING thread_id, checkpoint_id
"#
    };
}

/// [`put_statement`]'s insert for many rows at once; returns the rows inserted.
///
/// The JSON columns come as text arrays: the record's columns are text, stored as they come,
/// and each row's values are cast to `jsonb` once. They came as one JSON array of row
/// objects (`jsonb_to_recordset`), which Postgres parsed whole, then printed every `jsonb`
/// column back to text and parsed it again: about 3% of its CPU per chat turn of PalAssist
/// (whose state after the answer is a 6.5 KB value).
///
/// A first checkpoint's check reads the thread's head with a `LIMIT 1` subquery, where
/// [`put_statement`] says `NOT EXISTS`: per input row, `NOT EXISTS` may be planned as a hashed
/// subplan, a sequential scan of the whole table per batch, and this statement's plan is
/// made once per connection (generic), often while the table is still small, where that
/// plan is the cheaper. On a database that then grew, every batch read the whole table: at
/// 32 chats on a fresh database, about 60% of the statement's buffer reads within 20 s.
/// A scalar subquery is never hashed: it stays an index probe per row.
pub(super) const PUT_BATCH: &str = concat!(
    batch_input!(),
    "\n, ok AS (\n    SELECT i.* FROM input i",
    batch_head_check!(),
    "\n    AND (i.fence_key IS NULL OR ",
    batch_fence_locked!(),
    ")\n)",
    batch_insert!()
);

/// [`PUT_BATCH`] with rows that claim their fence ([`Fencing::Claimed`]): the fences claimed
/// are raised first, in key order (so two batches cannot wait on each other in a cycle),
/// each to the highest epoch claimed for it. A row whose fence a row of the batch raised
/// is checked against the raised epoch: `FOR SHARE` would not see it (the statement
/// modified the row itself) and would leave the row out, right or wrong.
pub(super) const PUT_BATCH_CLAIMING: &str = concat!(
    batch_input!(),
    r#"
, claimed AS (
    INSERT INTO checkpoint_fences (key, epoch)
    SELECT fence_key, max(fence_epoch) FROM input WHERE claim AND fence_key IS NOT NULL
    GROUP BY 1 ORDER BY 1
    ON CONFLICT (key) DO UPDATE SET epoch = GREATEST(checkpoint_fences.epoch, EXCLUDED.epoch)
    RETURNING key COLLATE "C" AS key, epoch
)"#,
    "\n, ok AS (\n    SELECT i.* FROM input i",
    batch_head_check!(),
    "\n    AND (i.fence_key IS NULL OR COALESCE(\n        (SELECT c.epoch = i.fence_epoch FROM claimed c WHERE c.key = i.fence_key),\n        ",
    batch_fence_locked!(),
    "))\n)",
    batch_insert!()
);

/// The most checkpoints one batch statement carries.
const MAX_BATCH: usize = 128;

/// How many batches may be committing at once: one. The puts that arrive while a batch
/// commits gather into the next one, so under load every commit carries more rows. With two
/// in flight, the writer sends out whatever had queued meanwhile, often a row or two: under
/// the server's load benchmark at 32 concurrent chats one in flight costs Postgres less CPU
/// per turn and carries more turns a second than two.
/// A lone put never waits for it: it takes the direct path (see the module docs).
/// The other group commits ([`super::pg_writes_batch`], [`super::pg_fence_batch`], the
/// server's run rows) keep one in flight for the same reason.
pub(super) const BATCHES_IN_FLIGHT: usize = 1;

/// One checkpoint to insert, its JSON columns already encoded.
#[derive(Debug)]
pub(crate) struct NewRow {
    pub thread_id: String,
    pub checkpoint_id: String,
    pub seq: i64,
    pub parent_id: Option<String>,
    pub created_at_ms: i64,
    /// JSON object.
    pub metadata: String,
    /// JSON object.
    pub versions: String,
    /// JSON value.
    pub plan: String,
    /// JSON object.
    pub vals: String,
    /// The head this checkpoint must follow; `None` for a thread's first checkpoint.
    pub expected: Option<String>,
    /// The writer's fence (key, epoch), if any.
    pub fence: Option<(String, i64)>,
    /// Whether the row raises its fence to its epoch first ([`Fencing::Claimed`]).
    pub claim: bool,
    /// When its commit must be on disk. A row that goes in a batch is flushed with it.
    pub flush: Flush,
}

/// Inserts one checkpoint with the prepared single-row statement; true when inserted.
pub(super) async fn insert_one(
    conns: &Reused<sqlx::Postgres>,
    r: &NewRow,
) -> Result<bool, CheckpointError> {
    let fencing = match (&r.fence, r.claim) {
        (None, _) => Fencing::None,
        (Some(_), false) => Fencing::Held,
        (Some(_), true) => Fencing::Claimed,
    };
    let sql = put_statement(r.expected.is_none(), fencing, r.flush);
    let (metadata, plan, vals) = (
        without_nul(&r.metadata),
        without_nul(&r.plan),
        without_nul(&r.vals),
    );
    // The arguments' buffer sized once, for the JSON columns (most of the bytes) and room
    // for the ids: bound one by one, it grew and was copied several times a checkpoint.
    let mut args = PgArguments::default();
    args.reserve(
        12,
        metadata.len() + r.versions.len() + plan.len() + vals.len() + 512,
    );
    add(&mut args, &r.thread_id)?;
    add(&mut args, &r.checkpoint_id)?;
    add(&mut args, r.seq)?;
    add(&mut args, r.parent_id.as_deref())?;
    add(&mut args, r.created_at_ms)?;
    add(&mut args, metadata.as_ref())?;
    add(&mut args, &r.versions)?;
    add(&mut args, plan.as_ref())?;
    add(&mut args, vals.as_ref())?;
    add(&mut args, r.expected.as_deref())?;
    add(&mut args, r.fence.as_ref().map(|f| f.0.as_str()))?;
    add(&mut args, r.fence.as_ref().map(|f| f.1))?;
    let mut conn = conns.take().await?;
    let result = sqlx::query_with(sql, args).execute(&mut *conn).await;
    let inserted = match result {
        Ok(done) => done.rows_affected() == 1,
        // Another writer took the place first (the thread's next seq, or the id): refused,
        // on a connection still good for the next statement (autocommit: nothing is open).
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => false,
        Err(e) => return Err(e.into()),
    };
    conn.keep();
    Ok(inserted)
}

/// Adds `value` to `args`.
fn add<'t, T>(args: &mut PgArguments, value: T) -> Result<(), CheckpointError>
where
    T: sqlx::Encode<'t, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    args.add(value).map_err(sqlx::Error::Encode)?;
    Ok(())
}

/// One column of [`PUT_BATCH`]: `f` of every row.
fn column<'a, T>(rows: &[&'a NewRow], f: impl Fn(&'a NewRow) -> T) -> Vec<T> {
    rows.iter().map(|r| f(r)).collect()
}

/// Inserts several checkpoints with one statement; the (thread, checkpoint) ids inserted.
pub(super) async fn insert_many(
    conns: &Reused<sqlx::Postgres>,
    rows: &[&NewRow],
) -> Result<HashSet<(String, String)>, CheckpointError> {
    let json = |f: fn(&NewRow) -> &str| column(rows, |r| without_nul(f(r)));
    let claims = column(rows, |r| r.claim && r.fence.is_some());
    let sql = if claims.contains(&true) {
        PUT_BATCH_CLAIMING
    } else {
        PUT_BATCH
    };
    let mut conn = conns.take().await?;
    let ids: Vec<(String, String)> = sqlx::query_as(sql)
        .bind(column(rows, |r| r.thread_id.as_str()))
        .bind(column(rows, |r| r.checkpoint_id.as_str()))
        .bind(column(rows, |r| r.seq))
        .bind(column(rows, |r| r.parent_id.as_deref()))
        .bind(column(rows, |r| r.created_at_ms))
        .bind(json(|r| &r.metadata))
        .bind(json(|r| &r.versions))
        .bind(json(|r| &r.plan))
        .bind(json(|r| &r.vals))
        .bind(column(rows, |r| r.expected.as_deref()))
        .bind(column(rows, |r| r.fence.as_ref().map(|f| f.0.as_str())))
        .bind(column(rows, |r| r.fence.as_ref().map(|f| f.1)))
        .bind(claims)
        .fetch_all(&mut *conn)
        .await?;
    conn.keep();
    Ok(ids.into_iter().collect())
}

struct Job {
    row: NewRow,
    reply: oneshot::Sender<Result<bool, CheckpointError>>,
    /// The span of the put waiting for it (the batch's span links to it).
    span: tracing::Span,
}

/// Handle on the group-commit writer; cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct GroupCommit {
    queue: mpsc::UnboundedSender<Job>,
    conns: Arc<Reused<sqlx::Postgres>>,
    /// Puts started and not yet resolved.
    inflight: Arc<AtomicUsize>,
}

/// Counts a put as in flight until dropped.
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl GroupCommit {
    /// Starts the writer task on the current tokio runtime.
    pub(crate) fn start(pool: PgPool) -> Self {
        let (queue, jobs) = mpsc::unbounded_channel::<Job>();
        let conns = Arc::new(Reused::with_generic_plans(pool, BATCHES_IN_FLIGHT + 1));
        tokio::spawn(write_batches(conns.clone(), jobs));
        GroupCommit {
            queue,
            conns,
            inflight: Arc::default(),
        }
    }

    /// Inserts a checkpoint row; resolves once it is committed (`true`) or refused because
    /// its thread's head moved or its fence was superseded (`false`).
    pub(crate) async fn put(&self, row: NewRow) -> Result<bool, CheckpointError> {
        if self
            .inflight
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            let _guard = InFlight(&self.inflight);
            super::timing::batch(1);
            return insert_one(&self.conns, &row).await;
        }
        self.inflight.fetch_add(1, Ordering::AcqRel);
        let _guard = InFlight(&self.inflight);
        let (reply, done) = oneshot::channel();
        let stopped = || CheckpointError::Backend("the checkpoint writer stopped".into());
        let span = tracing::Span::current();
        self.queue
            .send(Job { row, reply, span })
            .map_err(|_| stopped())?;
        done.await.map_err(|_| stopped())?
    }
}

/// The writer: takes whatever has queued (up to [`MAX_BATCH`]) and commits it together,
/// with up to [`BATCHES_IN_FLIGHT`] batches committing at once. While every slot is busy,
/// puts queue up into a bigger next batch.
async fn write_batches(conns: Arc<Reused<sqlx::Postgres>>, mut jobs: mpsc::UnboundedReceiver<Job>) {
    let slots = Arc::new(Semaphore::new(BATCHES_IN_FLIGHT));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let Some(first) = jobs.recv().await else {
            return;
        };
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let conns = conns.clone();
        // The batch is a child of its first put's span, linked to every other one's.
        let span = tracing::info_span!(parent: batch[0].span.id(), "checkpoint.batch", rows = batch.len() as i64);
        for job in &batch[1..] {
            span.follows_from(job.span.id());
        }
        tokio::spawn(
            async move {
                commit_batch(&conns, batch).await;
                drop(slot);
            }
            .instrument(span),
        );
    }
}

/// Commits one batch and answers each of its puts.
async fn commit_batch(conns: &Reused<sqlx::Postgres>, mut batch: Vec<Job>) {
    super::timing::batch(batch.len());
    if batch.len() > 1 {
        let rows: Vec<&NewRow> = batch.iter().map(|j| &j.row).collect();
        match insert_many(conns, &rows).await {
            Ok(inserted) => {
                for job in batch.drain(..) {
                    let key = (job.row.thread_id.clone(), job.row.checkpoint_id.clone());
                    let _ = job.reply.send(Ok(inserted.contains(&key)));
                }
                return;
            }
            Err(e) => {
                tracing::debug!(error = %e, rows = batch.len(), "batch insert failed; retrying row by row");
            }
        }
    }
    for job in batch.drain(..) {
        let result = insert_one(conns, &job.row).await;
        let _ = job.reply.send(result);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Taking a connection and a single put are small futures: [`Reused::take`] boxes its
    /// rare connect and ping. Before, they were 8.8 KB and 17.8 KB, and 72 KB at the
    /// checkpointer's put, copied whole through the futures that await them on every
    /// checkpoint.
    #[tokio::test]
    async fn taking_a_connection_and_a_single_put_are_small_futures() {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .connect_lazy("postgres://nobody@127.0.0.1:1/none")
            .unwrap();
        let conns = Reused::new(pool, 1);
        let take = conns.take();
        let size = std::mem::size_of_val(&take);
        println!("take: {size} bytes");
        assert!(size <= 1024, "take() is {size} bytes");
        drop(take);
        let row = NewRow {
            thread_id: "t".into(),
            checkpoint_id: "c".into(),
            seq: 1,
            parent_id: None,
            created_at_ms: 0,
            metadata: "{}".into(),
            versions: "{}".into(),
            plan: "{}".into(),
            vals: "{}".into(),
            expected: None,
            fence: None,
            claim: false,
            flush: Flush::Now,
        };
        let put = insert_one(&conns, &row);
        let size = std::mem::size_of_val(&put);
        println!("insert_one: {size} bytes");
        assert!(size <= 4096, "insert_one() is {size} bytes");
    }
}
