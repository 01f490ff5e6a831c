-- Scheduled runs (crons). `next_run_at_ms` is the tick due next (NULL: none, the schedule
-- ended); a replica's scheduler takes a due tick by compare-and-set on `claimed_tick_ms`
-- under a lease (`claim_until_ms`), creates its run with the idempotency key
-- `cron:{cron_id}:{tick}` and then advances `next_run_at_ms`: a replica killed while it holds
-- a tick leaves it to another once the lease runs out, and the key keeps it one run.
CREATE TABLE crons (
    cron_id          TEXT NOT NULL PRIMARY KEY,
    owner            TEXT NOT NULL,
    assistant_id     TEXT NOT NULL,
    thread_id        TEXT,
    schedule         TEXT NOT NULL,
    timezone         TEXT,
    end_time_ms      BIGINT,
    enabled          BIGINT NOT NULL DEFAULT 1,
    on_run_completed TEXT,
    payload          TEXT NOT NULL,
    metadata         TEXT NOT NULL,
    next_run_at_ms   BIGINT,
    claimed_tick_ms  BIGINT,
    claim_until_ms   BIGINT,
    created_at_ms    BIGINT NOT NULL,
    updated_at_ms    BIGINT NOT NULL
);
CREATE INDEX crons_owner_idx ON crons (owner, created_at_ms);
CREATE INDEX crons_due_idx ON crons (next_run_at_ms) WHERE enabled = 1;
