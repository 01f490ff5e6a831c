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
