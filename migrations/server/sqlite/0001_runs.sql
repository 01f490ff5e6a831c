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
