-- Run events stored compressed (issue 17: stored bytes per chat turn). A row's content is
-- written to `packed` (a format byte, then zstd-compressed JSON text: see
-- `server/src/store/packed.rs`); rows written before keep theirs in `event` and are read
-- from there. Postgres compresses a value only in rows past about 2 KB, and a chat turn's
-- events are one row of about 1.2 KB of JSON: packed, about 0.7 KB.
-- Dropping NOT NULL and adding a column without a default rewrite nothing.
ALTER TABLE run_events ALTER COLUMN event DROP NOT NULL;
ALTER TABLE run_events ADD COLUMN packed BYTEA;

-- Every run writes its row twice (created, ended) and its thread's row twice (busy, idle):
-- each run leaves two dead row versions and their index entries. Autovacuum, which makes
-- their space reusable, visits a table by default once a fifth of its rows are dead; at
-- millions of runs that is hundreds of thousands of dead versions kept on disk. These two
-- tables are visited after 2% (and at least 1,000 rows) instead.
ALTER TABLE runs SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000);
ALTER TABLE threads SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000);

-- The batch function that ends runs writes the terminal row packed (base64 in the batch).
CREATE OR REPLACE FUNCTION palgraph_finish_runs(batch jsonb)
RETURNS TABLE (o_idx int, o_done boolean)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT s.* FROM (
            SELECT x.*, (SELECT ru.thread_id FROM runs ru WHERE ru.run_id = x.run_id) AS tid
            FROM jsonb_to_recordset(batch) AS x(
                i int, run_id text, worker text, attempt bigint, seq bigint, packed text,
                del boolean, status text, error text, now bigint, thread_status text)
        ) s
        ORDER BY s.tid, s.i
    LOOP
        o_idx := r.i;
        o_done := false;
        IF r.tid IS NOT NULL THEN
            -- The thread's lock, then the run's: the order every writer of runs takes.
            PERFORM 1 FROM threads t WHERE t.thread_id = r.tid FOR UPDATE;
            PERFORM 1 FROM runs ru WHERE ru.run_id = r.run_id AND ru.thread_id = r.tid
                AND ru.worker_id = r.worker AND ru.attempt = r.attempt
                AND ru.status = 'running' FOR UPDATE;
            o_done := FOUND;
        END IF;
        IF o_done THEN
            IF r.del THEN
                DELETE FROM run_events e WHERE e.run_id = r.run_id;
                DELETE FROM runs ru WHERE ru.run_id = r.run_id;
            ELSE
                INSERT INTO run_events (run_id, seq, packed)
                VALUES (r.run_id, r.seq, decode(r.packed, 'base64'))
                ON CONFLICT DO NOTHING;
                UPDATE runs ru SET status = r.status, error = r.error, updated_at_ms = r.now,
                    lease_until_ms = NULL
                WHERE ru.run_id = r.run_id;
            END IF;
            PERFORM pg_notify('palgraph_events', r.run_id);
            -- A run queued behind this one can be claimed now.
            IF EXISTS (SELECT 1 FROM runs o WHERE o.thread_id = r.tid AND o.status = 'pending'
                       AND o.run_id <> r.run_id) THEN
                PERFORM pg_notify('palgraph_runs', r.tid);
            END IF;
            UPDATE threads t SET updated_at_ms = r.now,
                status = CASE WHEN EXISTS (SELECT 1 FROM runs o WHERE o.thread_id = r.tid
                                           AND o.status IN ('pending', 'running')
                                           AND o.run_id <> r.run_id)
                              THEN 'busy' ELSE r.thread_status END
            WHERE t.thread_id = r.tid;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;
