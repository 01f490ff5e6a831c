-- Checkpoints: append-only records, field versions stored once, pending writes.
-- Ids are text compared byte-wise (COLLATE "C") so UUIDv7 ids sort by creation time.

CREATE TABLE checkpoint_heads (
    thread_id     TEXT COLLATE "C" PRIMARY KEY,
    checkpoint_id TEXT COLLATE "C" NOT NULL
);

CREATE TABLE checkpoints (
    thread_id     TEXT COLLATE "C" NOT NULL,
    checkpoint_id TEXT COLLATE "C" NOT NULL,
    parent_id     TEXT COLLATE "C",
    created_at_ms BIGINT NOT NULL,
    metadata      JSONB NOT NULL,
    versions      JSONB NOT NULL,
    plan          JSONB NOT NULL,
    run_id        TEXT GENERATED ALWAYS AS (metadata ->> 'run_id') STORED,
    PRIMARY KEY (thread_id, checkpoint_id)
);
CREATE INDEX checkpoints_run_idx ON checkpoints (thread_id, run_id);

-- One row per field version: a full value, or a delta on top of `prev`.
CREATE TABLE checkpoint_blobs (
    thread_id TEXT COLLATE "C" NOT NULL,
    field     TEXT COLLATE "C" NOT NULL,
    version   TEXT COLLATE "C" NOT NULL,
    prev      TEXT COLLATE "C",
    delta     BOOLEAN NOT NULL,
    value     JSONB NOT NULL,
    PRIMARY KEY (thread_id, field, version)
);

CREATE TABLE checkpoint_writes (
    thread_id     TEXT COLLATE "C" NOT NULL,
    checkpoint_id TEXT COLLATE "C" NOT NULL,
    task_id       TEXT COLLATE "C" NOT NULL,
    channel       TEXT COLLATE "C" NOT NULL,
    idx           BIGINT NOT NULL,
    value         JSONB NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_id, task_id, channel, idx)
);
