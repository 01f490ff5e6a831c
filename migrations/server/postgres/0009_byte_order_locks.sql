-- Every batch locks threads in the bytes' order of their ids, so that concurrent batches
-- never wait on each other in a cycle. The batch that creates runs sorts its threads
-- `COLLATE "C"`; the batch that ends runs (migration 7), the batch that inserts threads and
-- a worker's lease renewal sorted them by the database's collation. In a database whose
-- collation is not byte order (`en_US.UTF-8`, the default of many hosted Postgres
-- services), two ids can sort one way for one batch and the other way for another (`B1`
-- before `a1` in bytes, after it in English), and a create batch and an end batch holding
-- two such threads each could deadlock: Postgres then aborts one of them after
-- `deadlock_timeout` (a second) and its runs are written one by one. Ids in the UUID form
-- sort alike in both orders. This is migration 7's function with its one order in bytes.
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
        ORDER BY s.tid COLLATE "C", s.i
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
