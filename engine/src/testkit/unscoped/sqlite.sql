-- palgraph's migrations as its unscoped migrator applied them before each crate owned its own
-- (frozen: the database an upgrade starts from). Each '-- version N name' line starts one;
-- the migrator recorded N and name in palgraph_schema.
-- version 1 checkpoints
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
-- version 2 documents
-- PalAssist's documents, each owned by one user (a user never sees another's).
CREATE TABLE documents (
    id            TEXT PRIMARY KEY,
    owner         TEXT NOT NULL,
    title         TEXT NOT NULL,
    content       TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX documents_owner_idx ON documents (owner, created_at_ms);
-- version 3 runs
-- The server's tables: threads (owned by a user), runs (the work queue: workers claim
-- runs and hold them under a lease), run events (what watchers replay).

CREATE TABLE threads (
    thread_id     TEXT PRIMARY KEY,
    owner         TEXT NOT NULL,
    metadata      TEXT NOT NULL DEFAULT '{}',
    status        TEXT NOT NULL DEFAULT 'idle',
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX threads_owner_idx ON threads (owner, updated_at_ms DESC);

CREATE TABLE runs (
    run_id             TEXT PRIMARY KEY,
    thread_id          TEXT NOT NULL,
    owner              TEXT NOT NULL,
    assistant_id       TEXT NOT NULL,
    graph_id           TEXT NOT NULL,
    status             TEXT NOT NULL,
    kwargs             TEXT NOT NULL,
    metadata           TEXT NOT NULL DEFAULT '{}',
    multitask_strategy TEXT NOT NULL,
    idempotency_key    TEXT,
    cancel_action      TEXT,
    cancel_reason      TEXT,
    worker_id          TEXT,
    lease_until_ms     INTEGER,
    attempt            INTEGER NOT NULL DEFAULT 0,
    error              TEXT,
    created_at_ms      INTEGER NOT NULL,
    updated_at_ms      INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX runs_thread_idx ON runs (thread_id, run_id);
CREATE INDEX runs_status_idx ON runs (status, run_id);
CREATE UNIQUE INDEX runs_idempotency_idx ON runs (owner, idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE TABLE run_events (
    run_id    TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    thread_id TEXT NOT NULL,
    event     TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
-- version 4 fences
-- Fencing tokens for checkpoint writers (see the Postgres migration of the same number).
CREATE TABLE checkpoint_fences (
    key   TEXT PRIMARY KEY,
    epoch INTEGER NOT NULL
);
-- version 5 run_order
-- Runs of a thread are ordered by a sequence assigned under the thread's lock (see the
-- Postgres migration of the same number).
ALTER TABLE threads ADD COLUMN run_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN thread_seq INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET thread_seq = (
    SELECT count(*) FROM runs o WHERE o.thread_id = runs.thread_id AND o.run_id <= runs.run_id);
UPDATE threads SET run_seq = COALESCE(
    (SELECT max(thread_seq) FROM runs r WHERE r.thread_id = threads.thread_id), 0);
DROP INDEX runs_thread_idx;
CREATE INDEX runs_thread_idx ON runs (thread_id, thread_seq);
