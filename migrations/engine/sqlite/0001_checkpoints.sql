-- Checkpoints. One row per checkpoint holds its record and the values of the fields it
-- wrote (`vals`: field -> [prev, is_delta, value]); `seq` orders a thread's writes and its
-- uniqueness is the compare-and-set racing writers meet at; `hidden` rows were pruned from
-- history but still hold values kept checkpoints need. JSON is stored as text.

CREATE TABLE checkpoints (
    thread_id     TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    parent_id     TEXT,
    created_at_ms INTEGER NOT NULL,
    metadata      TEXT NOT NULL,
    versions      TEXT NOT NULL,
    plan          TEXT NOT NULL,
    vals          TEXT NOT NULL,
    hidden        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (thread_id, checkpoint_id),
    UNIQUE (thread_id, seq)
) WITHOUT ROWID;

CREATE TABLE checkpoint_writes (
    thread_id     TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    task_id       TEXT NOT NULL,
    channel       TEXT NOT NULL,
    idx           INTEGER NOT NULL,
    value         TEXT NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_id, task_id, channel, idx)
) WITHOUT ROWID;
