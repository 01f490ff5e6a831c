-- Checkpoints: append-only records, field versions stored once, pending writes.
-- JSON is stored as text; ids are text (UUIDv7 ids sort by creation time).

CREATE TABLE checkpoint_heads (
    thread_id     TEXT PRIMARY KEY,
    checkpoint_id TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE checkpoints (
    thread_id     TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    parent_id     TEXT,
    created_at_ms INTEGER NOT NULL,
    metadata      TEXT NOT NULL,
    versions      TEXT NOT NULL,
    plan          TEXT NOT NULL,
    run_id        TEXT GENERATED ALWAYS AS (json_extract(metadata, '$.run_id')) VIRTUAL,
    PRIMARY KEY (thread_id, checkpoint_id)
) WITHOUT ROWID;
CREATE INDEX checkpoints_run_idx ON checkpoints (thread_id, run_id);

CREATE TABLE checkpoint_blobs (
    thread_id TEXT NOT NULL,
    field     TEXT NOT NULL,
    version   TEXT NOT NULL,
    prev      TEXT,
    delta     INTEGER NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY (thread_id, field, version)
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
