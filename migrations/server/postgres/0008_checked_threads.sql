-- A run's thread checked where the run is created (fewer statements per turn).
-- A run on an existing thread was admitted after a read of the thread (its owner, the
-- graph its metadata names), then created by this function, which reads and locks the same
-- row: two round trips where one does. An item with `check_thread` has the function check
-- the owner (outcome 1, as for a missing thread) and the graph (outcome 5: the thread was
-- last run with another graph; the server then decides the long way whether it may change).
-- `palgraph_create_runs` of migration 6 is replaced with this version; items without
-- `check_thread` are created as before.

CREATE OR REPLACE FUNCTION palgraph_create_runs(batch jsonb)
RETURNS TABLE (o_idx int, o_outcome int, o_seq bigint)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    seq bigint;
    fresh boolean;
BEGIN
    FOR r IN
        SELECT x.* FROM jsonb_to_recordset(batch) AS x(
            i int, run_id text, thread_id text, owner text, assistant_id text, graph_id text,
            kwargs jsonb, metadata jsonb, strategy text, now bigint, worker text,
            lease_until bigint, trace_context text, idempotency_key text, new_thread boolean,
            thread_metadata jsonb, thread_status text, thread_created bigint,
            check_thread boolean)
        ORDER BY x.thread_id COLLATE "C", x.i
    LOOP
        o_idx := r.i;
        o_seq := NULL;
        -- A new thread is written once, busy with its first run, unless its id is taken (the
        -- checks below then see who owns it) or the run's idempotency key is (written idle as
        -- before, the checks below answer).
        fresh := false;
        IF r.new_thread THEN
            IF r.idempotency_key IS NULL
               OR NOT EXISTS (SELECT 1 FROM runs o WHERE o.owner = r.owner
                              AND o.idempotency_key = r.idempotency_key) THEN
                INSERT INTO threads (thread_id, owner, metadata, status, created_at_ms,
                                     updated_at_ms, run_seq)
                VALUES (r.thread_id, r.owner,
                        r.thread_metadata || jsonb_build_object('graph_id', r.graph_id,
                                                                'assistant_id', r.assistant_id),
                        'busy', r.thread_created, r.now, 1)
                ON CONFLICT (thread_id) DO NOTHING;
                fresh := FOUND;
            ELSE
                INSERT INTO threads (thread_id, owner, metadata, status, created_at_ms,
                                     updated_at_ms)
                VALUES (r.thread_id, r.owner, r.thread_metadata, r.thread_status,
                        r.thread_created, r.thread_created)
                ON CONFLICT (thread_id) DO NOTHING;
            END IF;
        END IF;
        IF fresh THEN
            -- Written just now, with this run counted: nothing to check.
            seq := 0;
        ELSE
            -- NULL when there is no such thread (its run_seq is never NULL); -1 when it is
            -- someone else's, -2 when a checked thread names another graph.
            SELECT CASE WHEN (r.new_thread OR r.check_thread) AND t.owner <> r.owner THEN -1
                        WHEN r.check_thread AND t.metadata ->> 'graph_id' <> r.graph_id THEN -2
                        ELSE t.run_seq END
              INTO seq FROM threads t WHERE t.thread_id = r.thread_id FOR UPDATE;
        END IF;
        IF seq IS NULL OR (seq = -1 AND r.check_thread) THEN
            o_outcome := 1;
        ELSIF seq = -2 THEN
            o_outcome := 5;
        ELSIF seq < 0 THEN
            o_outcome := 2;
        ELSIF NOT fresh AND r.idempotency_key IS NOT NULL
              AND EXISTS (SELECT 1 FROM runs o WHERE o.owner = r.owner
                          AND o.idempotency_key = r.idempotency_key) THEN
            o_outcome := 4;
        ELSIF NOT fresh AND EXISTS (SELECT 1 FROM runs o WHERE o.thread_id = r.thread_id
                                    AND o.status IN ('pending', 'running')) THEN
            o_outcome := 3;
        ELSE
            INSERT INTO runs (run_id, thread_id, thread_seq, owner, assistant_id, graph_id,
                status, kwargs, metadata, multitask_strategy, idempotency_key, created_at_ms,
                updated_at_ms, worker_id, lease_until_ms, attempt, trace_context)
            VALUES (r.run_id, r.thread_id, seq + 1, r.owner, r.assistant_id, r.graph_id,
                CASE WHEN r.worker IS NULL THEN 'pending' ELSE 'running' END,
                r.kwargs, r.metadata, r.strategy, r.idempotency_key, r.now, r.now, r.worker,
                CASE WHEN r.worker IS NULL THEN NULL ELSE r.lease_until END,
                CASE WHEN r.worker IS NULL THEN 0 ELSE 1 END, r.trace_context);
            IF NOT fresh THEN
                UPDATE threads t SET status = 'busy', updated_at_ms = r.now,
                    run_seq = t.run_seq + 1,
                    metadata = t.metadata || jsonb_build_object('graph_id', r.graph_id,
                                                                'assistant_id', r.assistant_id)
                WHERE t.thread_id = r.thread_id;
            END IF;
            -- A run claimed at creation wakes the thread's watchers, not the claim loops.
            PERFORM pg_notify(CASE WHEN r.worker IS NULL THEN 'palgraph_runs'
                                   ELSE 'palgraph_started' END, r.thread_id);
            o_outcome := 0;
            o_seq := seq + 1;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;
