//! The SQL of the SQLite checkpointer ([`super::sqlite`]); `sqlite_plans_tests` holds its
//! queries to index probes on a big database.

pub(super) const HEAD: &str =
    "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ?1 ORDER BY seq DESC LIMIT 1";

pub(super) const THE_CHECKPOINT: &str = r#"
SELECT checkpoint_id, seq, parent_id, created_at_ms, metadata, versions, plan
FROM checkpoints
WHERE thread_id = ?1 AND NOT hidden
  AND checkpoint_id = COALESCE(?2,
        (SELECT h.checkpoint_id FROM checkpoints h WHERE h.thread_id = ?1 ORDER BY h.seq DESC LIMIT 1))
"#;

pub(super) const CHAIN: &str = r#"
WITH RECURSIVE chain(field, version, blob, depth) AS (
    SELECT v.key, v.value,
           (SELECT json_extract(k.vals, '$."' || v.key || '"') FROM checkpoints k
            WHERE k.thread_id = ?1 AND k.checkpoint_id = v.value),
           0
    FROM json_each(?2) v
  UNION ALL
    SELECT ch.field, json_extract(ch.blob, '$[0]'),
           (SELECT json_extract(k.vals, '$."' || ch.field || '"') FROM checkpoints k
            WHERE k.thread_id = ?1 AND k.checkpoint_id = json_extract(ch.blob, '$[0]')),
           ch.depth + 1
    FROM chain ch
    WHERE json_extract(ch.blob, '$[1]') AND json_extract(ch.blob, '$[0]') IS NOT NULL
)
SELECT field, version, blob, depth FROM chain
"#;

pub(super) const LIST: &str = r#"
SELECT checkpoint_id, seq, parent_id, created_at_ms, metadata, versions, plan
FROM checkpoints c
WHERE c.thread_id = ?1 AND NOT c.hidden
  AND (?2 IS NULL OR c.checkpoint_id < ?2)
  AND (?3 IS NULL OR NOT EXISTS (
        SELECT 1 FROM json_each(?3) f
        WHERE json_extract(c.metadata, '$."' || f.key || '"') IS NOT f.value))
ORDER BY c.checkpoint_id DESC
LIMIT ?4
"#;

pub(super) const LINKS: &str = r#"
SELECT checkpoint_id, seq, created_at_ms, hidden, versions,
       json_extract(metadata, '$.run_id') AS run_id,
       (SELECT json_group_object(e.key, json_extract(e.value, '$[0]')) FROM json_each(vals) e) AS prevs
FROM checkpoints
WHERE thread_id = ?1
"#;

/// The thread's head with its seq (inside a write transaction).
pub(super) const HEAD_SEQ: &str =
    "SELECT checkpoint_id, seq FROM checkpoints WHERE thread_id = ?1 ORDER BY seq DESC LIMIT 1";

/// A fence's current epoch.
pub(super) const FENCE_EPOCH: &str = "SELECT epoch FROM checkpoint_fences WHERE key = ?1";

/// A checkpoint's pending writes.
pub(super) const WRITES: &str = "SELECT task_id, channel, idx, value FROM checkpoint_writes
             WHERE thread_id = ?1 AND checkpoint_id = ?2 ORDER BY task_id, channel, idx";

/// A put's insert (the head was checked in the same transaction).
pub(super) const PUT: &str = "INSERT INTO checkpoints
                     (thread_id, checkpoint_id, seq, parent_id, created_at_ms, metadata, versions, plan, vals)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT DO NOTHING";

/// One pending write (the first write of a key wins, except on `__error__`).
pub(super) const PUT_WRITE: &str = "INSERT INTO checkpoint_writes (thread_id, checkpoint_id, task_id, channel, idx, value)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (thread_id, checkpoint_id, task_id, channel, idx)
                 DO UPDATE SET value = excluded.value WHERE checkpoint_writes.channel = '__error__'";

/// Insertion of several pending writes in one statement (`?3`: a JSON array of `[task_id,
/// channel, idx, value]`, each value its JSON text as a string), in order, under the same
/// rule as [`PUT_WRITE`]. One statement, not one per write: a fan-out's gathered results
/// cost one step of the connection's worker thread. (`WHERE true` lets the upsert follow a
/// `SELECT`.)
pub(super) const PUT_WRITES: &str = "INSERT INTO checkpoint_writes (thread_id, checkpoint_id, task_id, channel, idx, value)
                 SELECT ?1, ?2, w.value ->> 0, w.value ->> 1, w.value ->> 2, w.value ->> 3
                 FROM json_each(?3) AS w WHERE true
                 ON CONFLICT (thread_id, checkpoint_id, task_id, channel, idx)
                 DO UPDATE SET value = excluded.value WHERE checkpoint_writes.channel = '__error__'";

/// Removal of one checkpoint's pending writes (prune).
pub(super) const DELETE_WRITES_OF: &str =
    "DELETE FROM checkpoint_writes WHERE thread_id = ?1 AND checkpoint_id = ?2";

/// Removal of one checkpoint (prune).
pub(super) const DELETE_CHECKPOINT: &str =
    "DELETE FROM checkpoints WHERE thread_id = ?1 AND checkpoint_id = ?2";

/// Hiding a pruned checkpoint whose values kept checkpoints still need.
pub(super) const HIDE: &str = "UPDATE checkpoints SET hidden = 1,
                     vals = COALESCE((SELECT json_group_object(e.key, json(e.value)) FROM json_each(vals) e
                                      WHERE e.key IN (SELECT value FROM json_each(?3))), '{}')
                 WHERE thread_id = ?1 AND checkpoint_id = ?2";

/// Deleting a thread and its subgraphs' namespaces (the threads `{thread}|...`, which sort
/// (binary collation) between `{thread}|` and `{thread}}`: an index range).
pub(super) const DELETE_THREAD: [&str; 2] = [
    "DELETE FROM checkpoint_writes WHERE thread_id = ?1 OR (thread_id >= ?2 AND thread_id < ?3)",
    "DELETE FROM checkpoints WHERE thread_id = ?1 OR (thread_id >= ?2 AND thread_id < ?3)",
];

/// Copying a thread and its subgraphs' namespaces (`{from}|...`, an index range), renamed.
pub(super) const COPY_THREAD: [&str; 2] = [
    "INSERT INTO checkpoints
                 (thread_id, checkpoint_id, seq, parent_id, created_at_ms, metadata, versions, plan, vals, hidden)
             SELECT ?2 || substr(thread_id, length(?1) + 1), checkpoint_id, seq, parent_id, created_at_ms,
                    metadata, versions, plan, vals, hidden
             FROM checkpoints WHERE thread_id = ?1 OR (thread_id >= ?3 AND thread_id < ?4)",
    "INSERT INTO checkpoint_writes (thread_id, checkpoint_id, task_id, channel, idx, value)
             SELECT ?2 || substr(thread_id, length(?1) + 1), checkpoint_id, task_id, channel, idx, value
             FROM checkpoint_writes WHERE thread_id = ?1 OR (thread_id >= ?3 AND thread_id < ?4)",
];

/// Raises a fence (`?1` key, `?2` epoch) unless it is higher; returns its epoch.
pub(super) const ADVANCE_FENCE: &str = "INSERT INTO checkpoint_fences (key, epoch) VALUES (?1, ?2)
     ON CONFLICT (key) DO UPDATE SET epoch = max(epoch, excluded.epoch)
     RETURNING epoch";

/// Rewrites the thread's head row as it is ([`super::Checkpointer::flush`]): a write, so the
/// transaction's commit syncs the WAL.
pub(super) const FLUSH: &str = "UPDATE checkpoints SET hidden = hidden
WHERE thread_id = ?1 AND seq = (SELECT max(seq) FROM checkpoints WHERE thread_id = ?1)";
