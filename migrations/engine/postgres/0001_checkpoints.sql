-- Checkpoints. One row per checkpoint holds its record and the values of the fields it
-- wrote, so saving a checkpoint is one insert (one index probe per unique key) and one
-- commit. A field's value at a checkpoint is found through `versions` (field -> the id of
-- the checkpoint that last wrote it); `vals` holds, per field written, [prev, is_delta,
-- value]: a full value, or a delta applied on top of the version `prev`.
--
-- `seq` orders a thread's writes; the head is the row with the highest seq, and the unique
-- (thread_id, seq) key is the compare-and-set two racing writers meet at. `hidden` rows were
-- pruned from history but still hold values the delta chains of kept checkpoints need.
-- Ids are compared byte-wise (COLLATE "C") so UUIDv7 ids sort by creation time.

CREATE TABLE checkpoints (
    thread_id     TEXT COLLATE "C" NOT NULL,
    checkpoint_id TEXT COLLATE "C" NOT NULL,
    seq           BIGINT NOT NULL,
    parent_id     TEXT COLLATE "C",
    created_at_ms BIGINT NOT NULL,
    metadata      JSONB NOT NULL,
    versions      JSONB NOT NULL,
    plan          JSONB NOT NULL,
    vals          JSONB NOT NULL,
    hidden        BOOLEAN NOT NULL DEFAULT false,
    PRIMARY KEY (thread_id, checkpoint_id),
    UNIQUE (thread_id, seq)
);

-- Pending writes of tasks (results of finished siblings, interrupts, resumes, durable
-- step results, errors), per checkpoint.
CREATE TABLE checkpoint_writes (
    thread_id     TEXT COLLATE "C" NOT NULL,
    checkpoint_id TEXT COLLATE "C" NOT NULL,
    task_id       TEXT COLLATE "C" NOT NULL,
    channel       TEXT COLLATE "C" NOT NULL,
    idx           BIGINT NOT NULL,
    value         JSONB NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_id, task_id, channel, idx)
);
