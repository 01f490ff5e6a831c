-- Less written per run:
-- * run events no longer store their thread's id: a run's events are read by its id, and
--   the thread is its run's (`run_events.thread_id` is dropped);
-- * a run on a new thread writes the thread once, busy with the run, instead of inserting
--   it idle and updating it in the same transaction (one dead row version and its index
--   entries fewer per new conversation).
-- The two batch functions of migration 5 are replaced with these versions.

ALTER TABLE run_events DROP COLUMN thread_id;

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
            thread_metadata jsonb, thread_status text, thread_created bigint)
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
            -- NULL when there is no such thread (its run_seq is never NULL).
            SELECT CASE WHEN r.new_thread AND t.owner <> r.owner THEN -1 ELSE t.run_seq END
              INTO seq FROM threads t WHERE t.thread_id = r.thread_id FOR UPDATE;
        END IF;
        IF seq IS NULL THEN
            o_outcome := 1;
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
                i int, run_id text, worker text, attempt bigint, seq bigint, event jsonb,
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
                INSERT INTO run_events (run_id, seq, event)
                VALUES (r.run_id, r.seq, r.event)
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
