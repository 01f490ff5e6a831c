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
