-- palgraph's migrations as its unscoped migrator applied them before each crate owned its own
-- (frozen: the database an upgrade starts from). Each '-- version N name' line starts one;
-- the migrator recorded N and name in palgraph_schema.
-- version 1 checkpoints
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
-- version 2 documents
-- PalAssist's documents, each owned by one user (a user never sees another's).
CREATE TABLE documents (
    id            TEXT COLLATE "C" PRIMARY KEY,
    owner         TEXT COLLATE "C" NOT NULL,
    title         TEXT NOT NULL,
    content       TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL
);
CREATE INDEX documents_owner_idx ON documents (owner, created_at_ms);
-- version 3 runs
-- The server's tables: threads (owned by a user), runs (the work queue: workers claim
-- runs and hold them under a lease), run events (what watchers replay).

CREATE TABLE threads (
    thread_id     TEXT COLLATE "C" PRIMARY KEY,
    owner         TEXT COLLATE "C" NOT NULL,
    metadata      JSONB NOT NULL DEFAULT '{}',
    status        TEXT NOT NULL DEFAULT 'idle',
    created_at_ms BIGINT NOT NULL,
    updated_at_ms BIGINT NOT NULL
);
CREATE INDEX threads_owner_idx ON threads (owner, updated_at_ms DESC);

CREATE TABLE runs (
    run_id             TEXT COLLATE "C" PRIMARY KEY,
    thread_id          TEXT COLLATE "C" NOT NULL,
    owner              TEXT COLLATE "C" NOT NULL,
    assistant_id       TEXT NOT NULL,
    graph_id           TEXT NOT NULL,
    status             TEXT NOT NULL,
    kwargs             JSONB NOT NULL,
    metadata           JSONB NOT NULL DEFAULT '{}',
    multitask_strategy TEXT NOT NULL,
    idempotency_key    TEXT,
    cancel_action      TEXT,
    cancel_reason      TEXT,
    worker_id          TEXT,
    lease_until_ms     BIGINT,
    attempt            BIGINT NOT NULL DEFAULT 0,
    error              TEXT,
    created_at_ms      BIGINT NOT NULL,
    updated_at_ms      BIGINT NOT NULL
);
CREATE INDEX runs_thread_idx ON runs (thread_id, run_id);
CREATE INDEX runs_active_idx ON runs (run_id) WHERE status IN ('pending', 'running');
CREATE UNIQUE INDEX runs_idempotency_idx ON runs (owner, idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE TABLE run_events (
    run_id        TEXT COLLATE "C" NOT NULL,
    seq           BIGINT NOT NULL,
    thread_id     TEXT COLLATE "C" NOT NULL,
    event         JSONB NOT NULL,
    PRIMARY KEY (run_id, seq)
);
-- version 4 fences
-- Fencing tokens for checkpoint writers. A server hands a thread to the worker that holds
-- its run's lease by raising the thread's epoch here (before that worker reads the thread);
-- a fenced write is stored only while its epoch is the one recorded, so a worker that lost
-- its lease cannot write over its successor. Writes without a fence are not checked.
CREATE TABLE checkpoint_fences (
    key   TEXT COLLATE "C" PRIMARY KEY,
    epoch BIGINT NOT NULL
);
-- version 5 run_order
-- Runs of a thread are ordered by a sequence assigned under the thread's lock when they are
-- created (`thread_seq`, from `threads.run_seq`), not by their ids, which are minted before
-- the lock is taken: a worker claims a thread's runs strictly in that order.
ALTER TABLE threads ADD COLUMN run_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN thread_seq BIGINT NOT NULL DEFAULT 0;
UPDATE runs SET thread_seq = o.n
FROM (SELECT run_id, row_number() OVER (PARTITION BY thread_id ORDER BY run_id) AS n FROM runs) o
WHERE o.run_id = runs.run_id;
UPDATE threads SET run_seq = m.n
FROM (SELECT thread_id, max(thread_seq) AS n FROM runs GROUP BY thread_id) m
WHERE m.thread_id = threads.thread_id;
DROP INDEX runs_thread_idx;
CREATE INDEX runs_thread_idx ON runs (thread_id, thread_seq);
