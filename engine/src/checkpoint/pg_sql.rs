//! The Postgres checkpointer's read and write statements (the group commits' own batch
//! statements live with them: `pg_group_commit`, `pg_writes_batch`, `pg_fence_batch`).

pub(super) const HEAD: &str = r#"
SELECT checkpoint_id FROM checkpoints WHERE thread_id = $1 ORDER BY seq DESC LIMIT 1
"#;

/// Pending writes; a fenced call (`$4` key, `$5` epoch) writes only while its fence holds
/// (see [`super::pg_group_commit`]'s `PUT` for the `FOR SHARE`).
pub(super) const PUT_WRITES: &str = r#"
INSERT INTO checkpoint_writes (thread_id, checkpoint_id, task_id, channel, idx, value)
SELECT $1, $2, w.task_id, w.channel, w.idx, COALESCE(w.value, 'null'::jsonb)
FROM jsonb_to_recordset($3::jsonb) AS w(task_id text, channel text, idx bigint, value jsonb)
WHERE $4::text IS NULL OR EXISTS (SELECT 1 FROM checkpoint_fences f
                                  WHERE f.key = $4::text AND f.epoch = $5 FOR SHARE)
ON CONFLICT (thread_id, checkpoint_id, task_id, channel, idx)
DO UPDATE SET value = EXCLUDED.value WHERE checkpoint_writes.channel = '__error__'
"#;

/// [`PUT_WRITES_AT_HEAD`] up to its `ok` condition's end, and the rest of it.
macro_rules! writes_at_head {
    ($($last:expr)?) => {
        concat!(
            r#"
WITH ok AS (
    SELECT 1 WHERE (SELECT h.checkpoint_id FROM checkpoints h WHERE h.thread_id = $1
                    ORDER BY h.seq DESC LIMIT 1) = $2
      AND (SELECT count(*) FROM checkpoint_writes w
           WHERE w.thread_id = $1 AND w.checkpoint_id = $2) = $6
      AND ($4::text IS NULL OR EXISTS (SELECT 1 FROM checkpoint_fences f
                                       WHERE f.key = $4::text AND f.epoch = $5 FOR SHARE))
"#,
            $($last,)?
            r#"), ins AS (
    INSERT INTO checkpoint_writes (thread_id, checkpoint_id, task_id, channel, idx, value)
    SELECT $1, $2, w.task_id, w.channel, w.idx, COALESCE(w.value, 'null'::jsonb)
    FROM ok, jsonb_to_recordset($3::jsonb) AS w(task_id text, channel text, idx bigint, value jsonb)
    ON CONFLICT (thread_id, checkpoint_id, task_id, channel, idx)
    DO UPDATE SET value = EXCLUDED.value WHERE checkpoint_writes.channel = '__error__'
)
SELECT EXISTS (SELECT 1 FROM ok)
"#
        )
    };
}

/// [`PUT_WRITES`] only while `$2` is the head with `$6` writes; returns whether it was.
pub(super) const PUT_WRITES_AT_HEAD: &str = writes_at_head!();

/// [`PUT_WRITES_AT_HEAD`] committed without waiting for the disk
/// ([`super::Flush::WithNext`]; see `pg_group_commit`'s `unflushed!`).
pub(super) const PUT_WRITES_AT_HEAD_UNFLUSHED: &str =
    writes_at_head!(super::pg_group_commit::unflushed!());

/// Puts the thread's earlier writes on disk ([`super::Checkpointer::flush`]): a key-share
/// lock of its head row gives the statement a transaction id and a WAL record, so its commit
/// waits for the flush of the WAL up to it (and so of every commit before it). Other writers
/// are not held up: the lock conflicts only with deleting the row or changing its key.
pub(super) const FLUSH: &str = r#"
SELECT 1 FROM checkpoints WHERE thread_id = $1 ORDER BY seq DESC LIMIT 1 FOR KEY SHARE
"#;

pub(super) const FENCE_EPOCH: &str = "SELECT epoch FROM checkpoint_fences WHERE key = $1";

/// A checkpoint row's record as text: rows written before migration 6 (`text_records`) hold
/// it in the jsonb columns. `metadata_jsonb` is its metadata as jsonb, for the statements
/// that look into it.
macro_rules! record {
    (metadata) => {
        "COALESCE(metadata, metadata_jsonb::text)"
    };
    (metadata_jsonb) => {
        "COALESCE(metadata_jsonb, metadata::jsonb)"
    };
    (versions) => {
        "COALESCE(versions, versions_jsonb::text)"
    };
    (plan) => {
        "COALESCE(plan, plan_jsonb::text)"
    };
    (all) => {
        concat!(
            record!(metadata),
            " AS metadata, ",
            record!(versions),
            " AS versions, ",
            record!(plan),
            " AS plan"
        )
    };
}

/// The checkpoint asked for ($2), or the head; hidden (pruned) rows are not checkpoints.
macro_rules! the_checkpoint {
    () => {
        concat!(
            r#"
    SELECT checkpoint_id, seq, parent_id, created_at_ms, "#,
            record!(all),
            r#"
    FROM checkpoints
    WHERE thread_id = $1 AND NOT hidden
      AND checkpoint_id = COALESCE($2::text,
            (SELECT h.checkpoint_id FROM checkpoints h WHERE h.thread_id = $1 ORDER BY h.seq DESC LIMIT 1))
"#
        )
    };
}

macro_rules! its_writes {
    () => {
        r#"
       COALESCE((SELECT json_agg(json_build_array(w.task_id, w.channel, w.idx, w.value)
                                 ORDER BY w.task_id, w.channel, w.idx)
                 FROM checkpoint_writes w
                 WHERE w.thread_id = $1 AND w.checkpoint_id = c.checkpoint_id), '[]')::text AS writes
"#
    };
}

pub(super) const GET: &str = concat!(
    "WITH RECURSIVE c AS (",
    the_checkpoint!(),
    r#"), chain AS (
    SELECT v.key COLLATE "C" AS field, v.value COLLATE "C" AS version, x.blob, 0 AS depth
    FROM c CROSS JOIN LATERAL json_each_text(c.versions::json) v
    LEFT JOIN LATERAL (
        SELECT k.vals -> v.key AS blob FROM checkpoints k
        WHERE k.thread_id = $1 AND k.checkpoint_id = v.value COLLATE "C" LIMIT 1) x ON true
  UNION ALL
    -- One index probe per link: a LATERAL lookup keeps the plan independent of statistics.
    SELECT ch.field, (ch.blob ->> 0) COLLATE "C", x.blob, ch.depth + 1
    FROM chain ch
    LEFT JOIN LATERAL (
        SELECT k.vals -> ch.field AS blob FROM checkpoints k
        WHERE k.thread_id = $1 AND k.checkpoint_id = (ch.blob ->> 0) COLLATE "C" LIMIT 1) x ON true
    WHERE (ch.blob ->> 1)::boolean AND ch.blob ->> 0 IS NOT NULL
)
SELECT c.checkpoint_id, c.seq, c.parent_id, c.created_at_ms,
       c.metadata, c.versions, c.plan,
       COALESCE((SELECT json_agg(json_build_array(ch.field, ch.version, ch.depth, ch.blob))
                 FROM chain ch), '[]')::text AS blobs,"#,
    its_writes!(),
    "FROM c"
);

pub(super) const GET_WITHOUT_VALUES: &str = concat!(
    "WITH c AS (",
    the_checkpoint!(),
    r#")
SELECT c.checkpoint_id, c.seq, c.parent_id, c.created_at_ms,
       c.metadata, c.versions, c.plan,"#,
    its_writes!(),
    "FROM c"
);

pub(super) const LIST: &str = concat!(
    r#"
SELECT checkpoint_id, seq, parent_id, created_at_ms, "#,
    record!(all),
    r#"
FROM checkpoints
WHERE thread_id = $1 AND NOT hidden
  AND ($2::text IS NULL OR checkpoint_id < $2::text)
  AND ($3::jsonb IS NULL OR "#,
    record!(metadata_jsonb),
    r#" @> $3::jsonb)
ORDER BY checkpoint_id DESC
LIMIT $4
"#
);

pub(super) const LINKS: &str = concat!(
    r#"
SELECT checkpoint_id, seq, created_at_ms, hidden, "#,
    record!(versions),
    " AS versions, ",
    record!(metadata_jsonb),
    r#" ->> 'run_id' AS run_id,
       COALESCE((SELECT jsonb_object_agg(e.key, e.value -> 0) FROM jsonb_each(vals) e), '{}')::text AS prevs
FROM checkpoints
WHERE thread_id = $1
FOR UPDATE
"#
);
