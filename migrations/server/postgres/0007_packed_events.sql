-- Run events stored compressed (fewer stored bytes per chat turn). A row's content is
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

-- The batch function that ends runs writes the terminal row packed (base64 in the batch),
-- and makes fewer statements per run: the claim is checked by the write that ends the run
-- (it was a locking read, then the write), and one read of the thread's other active runs
-- answers both whether to wake a claim loop and whether the thread stays busy (two before).
CREATE OR REPLACE FUNCTION palgraph_finish_runs(batch jsonb)
RETURNS TABLE (o_idx int, o_done boolean)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    others_pending boolean;
    others_active boolean;
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
            -- The run ends only while this claim holds it.
            IF r.del THEN
                DELETE FROM runs ru WHERE ru.run_id = r.run_id AND ru.thread_id = r.tid
                    AND ru.worker_id = r.worker AND ru.attempt = r.attempt
                    AND ru.status = 'running';
                o_done := FOUND;
                IF o_done THEN
                    DELETE FROM run_events e WHERE e.run_id = r.run_id;
                END IF;
            ELSE
                UPDATE runs ru SET status = r.status, error = r.error, updated_at_ms = r.now,
                    lease_until_ms = NULL
                WHERE ru.run_id = r.run_id AND ru.thread_id = r.tid
                    AND ru.worker_id = r.worker AND ru.attempt = r.attempt
                    AND ru.status = 'running';
                o_done := FOUND;
                IF o_done THEN
                    INSERT INTO run_events (run_id, seq, packed)
                    VALUES (r.run_id, r.seq, decode(r.packed, 'base64'))
                    ON CONFLICT DO NOTHING;
                END IF;
            END IF;
        END IF;
        IF o_done THEN
            PERFORM pg_notify('palgraph_events', r.run_id);
            SELECT COALESCE(bool_or(o.status = 'pending'), false), count(*) > 0
              INTO others_pending, others_active
              FROM runs o WHERE o.thread_id = r.tid AND o.status IN ('pending', 'running')
                            AND o.run_id <> r.run_id;
            -- A run queued behind this one can be claimed now.
            IF others_pending THEN
                PERFORM pg_notify('palgraph_runs', r.tid);
            END IF;
            UPDATE threads t SET updated_at_ms = r.now,
                status = CASE WHEN others_active THEN 'busy' ELSE r.thread_status END
            WHERE t.thread_id = r.tid;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;
