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
