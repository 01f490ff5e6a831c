--
-- PostgreSQL database dump
--


-- Dumped from database version 15.20 (Debian 15.20-0+deb12u1)
-- Dumped by pg_dump version 15.20 (Debian 15.20-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: palgraph_release; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA palgraph_release;


--
-- Name: palgraph_create_runs(jsonb); Type: FUNCTION; Schema: palgraph_release; Owner: -
--

CREATE FUNCTION palgraph_release.palgraph_create_runs(batch jsonb) RETURNS TABLE(o_idx integer, o_outcome integer, o_seq bigint)
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: palgraph_documents_changed(); Type: FUNCTION; Schema: palgraph_release; Owner: -
--

CREATE FUNCTION palgraph_release.palgraph_documents_changed() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM pg_notify('palgraph_documents', '');
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM pg_notify('palgraph_documents', OLD.owner);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM pg_notify('palgraph_documents', NEW.owner);
    END IF;
    RETURN NULL;
END
$$;


--
-- Name: palgraph_finish_runs(jsonb); Type: FUNCTION; Schema: palgraph_release; Owner: -
--

CREATE FUNCTION palgraph_release.palgraph_finish_runs(batch jsonb) RETURNS TABLE(o_idx integer, o_done boolean)
    LANGUAGE plpgsql
    AS $$
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


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: checkpoint_fences; Type: TABLE; Schema: palgraph_release; Owner: -
--

CREATE TABLE palgraph_release.checkpoint_fences (
    key text NOT NULL COLLATE pg_catalog."C",
    epoch bigint NOT NULL
);


--
-- Name: checkpoint_writes; Type: TABLE; Schema: palgraph_release; Owner: -
--

CREATE TABLE palgraph_release.checkpoint_writes (
    thread_id text NOT NULL COLLATE pg_catalog."C",
    checkpoint_id text NOT NULL COLLATE pg_catalog."C",
    task_id text NOT NULL COLLATE pg_catalog."C",
    channel text NOT NULL COLLATE pg_catalog."C",
    idx bigint NOT NULL,
    value jsonb NOT NULL
);
ALTER TABLE ONLY palgraph_release.checkpoint_writes ALTER COLUMN value SET COMPRESSION lz4;


--
-- Name: checkpoints; Type: TABLE; Schema: palgraph_release; Owner: -
--

CREATE TABLE palgraph_release.checkpoints (
    thread_id text NOT NULL COLLATE pg_catalog."C",
    checkpoint_id text NOT NULL COLLATE pg_catalog."C",
    seq bigint NOT NULL,
    parent_id text COLLATE pg_catalog."C",
    created_at_ms bigint NOT NULL,
    metadata_jsonb jsonb,
    versions_jsonb jsonb,
    plan_jsonb jsonb,
    vals jsonb NOT NULL,
    hidden boolean DEFAULT false NOT NULL,
    metadata text,
    versions text,
    plan text
);
ALTER TABLE ONLY palgraph_release.checkpoints ALTER COLUMN metadata_jsonb SET COMPRESSION lz4;
ALTER TABLE ONLY palgraph_release.checkpoints ALTER COLUMN versions_jsonb SET COMPRESSION lz4;
ALTER TABLE ONLY palgraph_release.checkpoints ALTER COLUMN plan_jsonb SET COMPRESSION lz4;
ALTER TABLE ONLY palgraph_release.checkpoints ALTER COLUMN vals SET COMPRESSION lz4;
ALTER TABLE ONLY palgraph_release.checkpoints ALTER COLUMN metadata SET COMPRESSION lz4;
ALTER TABLE ONLY palgraph_release.checkpoints ALTER COLUMN versions SET COMPRESSION lz4;
ALTER TABLE ONLY palgraph_release.checkpoints ALTER COLUMN plan SET COMPRESSION lz4;


--
-- Name: crons; Type: TABLE; Schema: palgraph_release; Owner: -
--

CREATE TABLE palgraph_release.crons (
    cron_id text NOT NULL,
    owner text NOT NULL,
    assistant_id text NOT NULL,
    thread_id text,
    schedule text NOT NULL,
    timezone text,
    end_time_ms bigint,
    enabled bigint DEFAULT 1 NOT NULL,
    on_run_completed text,
    payload text NOT NULL,
    metadata text NOT NULL,
    next_run_at_ms bigint,
    claimed_tick_ms bigint,
    claim_until_ms bigint,
    created_at_ms bigint NOT NULL,
    updated_at_ms bigint NOT NULL
);


--
-- Name: document_set_members; Type: TABLE; Schema: palgraph_release; Owner: -
--

CREATE TABLE palgraph_release.document_set_members (
    set_id text NOT NULL COLLATE pg_catalog."C",
    document_id text NOT NULL COLLATE pg_catalog."C",
    added_at_ms bigint NOT NULL
);


--
-- Name: document_sets; Type: TABLE; Schema: palgraph_release; Owner: -
--

CREATE TABLE palgraph_release.document_sets (
    id text NOT NULL COLLATE pg_catalog."C",
    owner text NOT NULL COLLATE pg_catalog."C",
    name text NOT NULL,
    created_at_ms bigint NOT NULL,
    updated_at_ms bigint NOT NULL
);


--
-- Name: document_texts; Type: TABLE; Schema: palgraph_release; Owner: -
--

CREATE TABLE palgraph_release.document_texts (
    id text NOT NULL COLLATE pg_catalog."C",
    content text NOT NULL
);
ALTER TABLE ONLY palgraph_release.document_texts ALTER COLUMN content SET COMPRESSION lz4;


--
-- Name: documents; Type: TABLE; Schema: palgraph_release; Owner: -
--

CREATE TABLE palgraph_release.documents (
    id text NOT NULL COLLATE pg_catalog."C",
    owner text NOT NULL COLLATE pg_catalog."C",
    title text NOT NULL,
    created_at_ms bigint NOT NULL,
    size bigint NOT NULL
);


--
-- Name: node_cache; Type: TABLE; Schema: palgraph_release; Owner: -
--

CREATE TABLE palgraph_release.node_cache (
    namespace text NOT NULL COLLATE pg_catalog."C",
    key text NOT NULL COLLATE pg_catalog."C",
    value text NOT NULL,
    expires_at_ms bigint
);
ALTER TABLE ONLY palgraph_release.node_cache ALTER COLUMN value SET COMPRESSION lz4;


--
-- Name: palgraph_migrations; Type: TABLE; Schema: palgraph_release; Owner: -
--

CREATE TABLE palgraph_release.palgraph_migrations (
    scope text NOT NULL,
    version bigint NOT NULL,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: run_events; Type: TABLE; Schema: palgraph_release; Owner: -
--

CREATE TABLE palgraph_release.run_events (
    run_id text NOT NULL COLLATE pg_catalog."C",
    seq bigint NOT NULL,
    event jsonb,
    packed bytea
);


--
-- Name: runs; Type: TABLE; Schema: palgraph_release; Owner: -
--

CREATE TABLE palgraph_release.runs (
    run_id text NOT NULL COLLATE pg_catalog."C",
    thread_id text NOT NULL COLLATE pg_catalog."C",
    owner text NOT NULL COLLATE pg_catalog."C",
    assistant_id text NOT NULL,
    graph_id text NOT NULL,
    status text NOT NULL,
    kwargs jsonb NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    multitask_strategy text NOT NULL,
    idempotency_key text,
    cancel_action text,
    cancel_reason text,
    worker_id text,
    lease_until_ms bigint,
    attempt bigint DEFAULT 0 NOT NULL,
    error text,
    created_at_ms bigint NOT NULL,
    updated_at_ms bigint NOT NULL,
    thread_seq bigint DEFAULT 0 NOT NULL,
    trace_context text
)
WITH (autovacuum_vacuum_scale_factor='0.02', autovacuum_vacuum_threshold='1000');


--
-- Name: store_items; Type: TABLE; Schema: palgraph_release; Owner: -
--

CREATE TABLE palgraph_release.store_items (
    namespace text NOT NULL COLLATE pg_catalog."C",
    key text NOT NULL COLLATE pg_catalog."C",
    value jsonb NOT NULL,
    created_at_ms bigint NOT NULL,
    updated_at_ms bigint NOT NULL,
    ttl_ms bigint,
    expires_at_ms bigint,
    search_text tsvector NOT NULL,
    embedding real[],
    embedding_norm double precision
);
ALTER TABLE ONLY palgraph_release.store_items ALTER COLUMN value SET COMPRESSION lz4;


--
-- Name: threads; Type: TABLE; Schema: palgraph_release; Owner: -
--

CREATE TABLE palgraph_release.threads (
    thread_id text NOT NULL COLLATE pg_catalog."C",
    owner text NOT NULL COLLATE pg_catalog."C",
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    status text DEFAULT 'idle'::text NOT NULL,
    created_at_ms bigint NOT NULL,
    updated_at_ms bigint NOT NULL,
    run_seq bigint DEFAULT 0 NOT NULL,
    ttl_ms bigint,
    ttl_strategy text,
    ttl_swept_at_ms bigint
)
WITH (autovacuum_vacuum_scale_factor='0.02', autovacuum_vacuum_threshold='1000');


--
-- Data for Name: checkpoint_fences; Type: TABLE DATA; Schema: palgraph_release; Owner: -
--

INSERT INTO palgraph_release.checkpoint_fences VALUES ('0193a9c4-0000-7000-8000-00000000000a', 1048577);
INSERT INTO palgraph_release.checkpoint_fences VALUES ('0193a9c4-0000-7000-8000-00000000000b', 1048577);


--
-- Data for Name: checkpoint_writes; Type: TABLE DATA; Schema: palgraph_release; Owner: -
--

INSERT INTO palgraph_release.checkpoint_writes VALUES ('0193a9c4-0000-7000-8000-00000000000a', '01a251a0-66c7-7165-866f-4f9eaa659575', 'c265aaa4-4f0f-4dc3-b948-f7581100f913', '__step__:write', 0, '"Draft 1 about \"Write about otters\"."');
INSERT INTO palgraph_release.checkpoint_writes VALUES ('0193a9c4-0000-7000-8000-00000000000a', '01a251a0-66d4-73b3-9d7a-f266d6e4155f', 'c452df4a-c0e0-4228-a754-ac901d2214ac', '__interrupt__', 0, '{"id": "1c9ed82da38849b3b9879f26ac5695ee", "value": {"draft": "Draft 1 about \"Write about otters\".", "question": "Publish this draft?"}, "response_schema": {"type": "object", "title": "Decision", "$schema": "https://json-schema.org/draft/2020-12/schema", "required": ["approve"], "properties": {"note": {"type": ["string", "null"], "default": null, "description": "What to change (when not approved)."}, "approve": {"type": "boolean", "description": "Publish it?"}}, "description": "What the reviewer answers (its JSON Schema is the interrupt''s `response_schema`)."}}');


--
-- Data for Name: checkpoints; Type: TABLE DATA; Schema: palgraph_release; Owner: -
--

INSERT INTO palgraph_release.checkpoints VALUES ('0193a9c4-0000-7000-8000-00000000000a', '01a251a0-66c7-7165-866f-4f9eaa659575', 1, NULL, 1796665796295, NULL, NULL, NULL, '{"messages": [null, true, [[{"id": "f12ca580-bce4-4ca7-a1ef-f52282d29300", "type": "human", "content": "Write about otters"}]]]}', false, '{"run_id":"01a251a0-66ba-7274-87dd-130608eae0fd","source":"input","step":-1,"turn":1}', '{"messages":"01a251a0-66c7-7165-866f-4f9eaa659575"}', '{"tasks":[{"node":"draft","id":"c265aaa4-4f0f-4dc3-b948-f7581100f913"}],"counters":{"messages":{"since":95,"snapshot":0}}}');
INSERT INTO palgraph_release.checkpoints VALUES ('0193a9c4-0000-7000-8000-00000000000a', '01a251a0-66d4-73b3-9d7a-f266d6e4155f', 2, '01a251a0-66c7-7165-866f-4f9eaa659575', 1796665796308, NULL, NULL, NULL, '{"draft": [null, false, "Draft 1 about \"Write about otters\"."], "revisions": [null, false, 1]}', false, '{"run_id":"01a251a0-66ba-7274-87dd-130608eae0fd","source":"loop","step":0,"tasks":[{"duration_ms":6.044,"node":"draft","started_at_ms":1796665796301}],"turn":1}', '{"draft":"01a251a0-66d4-73b3-9d7a-f266d6e4155f","messages":"01a251a0-66c7-7165-866f-4f9eaa659575","revisions":"01a251a0-66d4-73b3-9d7a-f266d6e4155f"}', '{"tasks":[{"node":"review","id":"c452df4a-c0e0-4228-a754-ac901d2214ac"}],"counters":{"messages":{"since":95,"snapshot":0}}}');
INSERT INTO palgraph_release.checkpoints VALUES ('0193a9c4-0000-7000-8000-00000000000b', '01a251a0-66e1-768a-982b-215338d77517', 1, NULL, 1796665796321, NULL, NULL, NULL, '{"messages": [null, true, [[{"id": "53a29e10-c286-49b0-969c-a516039ecf05", "type": "human", "content": "What is the retention period for customer records?"}]]]}', false, '{"run_id":"01a251a0-66e0-7385-bb6b-2ddf710946d6","source":"input","step":-1,"turn":1}', '{"messages":"01a251a0-66e1-768a-982b-215338d77517"}', '{"tasks":[{"node":"intent_resolver","id":"12c81ac9-51f0-4a64-b30b-7b03bd7e1edd"}],"counters":{"messages":{"since":127,"snapshot":0}}}');
INSERT INTO palgraph_release.checkpoints VALUES ('0193a9c4-0000-7000-8000-00000000000b', '01a251a0-66e1-768a-982b-2154f41b1d79', 2, '01a251a0-66e1-768a-982b-215338d77517', 1796665796321, NULL, NULL, NULL, '{"action": [null, false, "inquire"], "enable_web_search": [null, false, false], "intent_confidence": [null, false, 0.8], "multi_action_detected": [null, false, false]}', false, '{"run_id":"01a251a0-66e0-7385-bb6b-2ddf710946d6","source":"loop","step":0,"tasks":[{"duration_ms":0.066,"llm_calls":[{"duration_ms":0.0,"model":"offline"}],"node":"intent_resolver","started_at_ms":1796665796321}],"turn":1}', '{"action":"01a251a0-66e1-768a-982b-2154f41b1d79","enable_web_search":"01a251a0-66e1-768a-982b-2154f41b1d79","intent_confidence":"01a251a0-66e1-768a-982b-2154f41b1d79","messages":"01a251a0-66e1-768a-982b-215338d77517","multi_action_detected":"01a251a0-66e1-768a-982b-2154f41b1d79"}', '{"tasks":[{"node":"doc_resolver","id":"8efeb331-1602-47d0-a86a-fd7626597596"}],"counters":{"messages":{"since":127,"snapshot":0}}}');
INSERT INTO palgraph_release.checkpoints VALUES ('0193a9c4-0000-7000-8000-00000000000b', '01a251a0-66e7-72e2-b79c-041a6a37021b', 3, '01a251a0-66e1-768a-982b-2154f41b1d79', 1796665796327, NULL, NULL, NULL, '{"inference_source": [null, false, "retrieval"], "resolved_doc_ids": [null, false, ["01a251a0-66b1-7004-acbd-f59132c1fe4a", "01a251a0-66ad-775b-a1bf-0f6508633b3d"]], "unresolved_names": [null, false, []], "suggested_doc_ids": [null, false, []], "inference_confidence": [null, false, 0.507300475492932]}', false, '{"run_id":"01a251a0-66e0-7385-bb6b-2ddf710946d6","source":"loop","step":1,"tasks":[{"duration_ms":5.204,"llm_calls":[{"duration_ms":0.0,"model":"offline"}],"node":"doc_resolver","started_at_ms":1796665796322}],"turn":1}', '{"action":"01a251a0-66e1-768a-982b-2154f41b1d79","enable_web_search":"01a251a0-66e1-768a-982b-2154f41b1d79","inference_confidence":"01a251a0-66e7-72e2-b79c-041a6a37021b","inference_source":"01a251a0-66e7-72e2-b79c-041a6a37021b","intent_confidence":"01a251a0-66e1-768a-982b-2154f41b1d79","messages":"01a251a0-66e1-768a-982b-215338d77517","multi_action_detected":"01a251a0-66e1-768a-982b-2154f41b1d79","resolved_doc_ids":"01a251a0-66e7-72e2-b79c-041a6a37021b","suggested_doc_ids":"01a251a0-66e7-72e2-b79c-041a6a37021b","unresolved_names":"01a251a0-66e7-72e2-b79c-041a6a37021b"}', '{"tasks":[{"node":"validate_inputs","id":"c4d8f851-48ba-4e78-93cc-0f27477a8dcb"}],"counters":{"messages":{"since":127,"snapshot":0}}}');
INSERT INTO palgraph_release.checkpoints VALUES ('0193a9c4-0000-7000-8000-00000000000b', '01a251a0-66e8-743e-85db-4d8dfb5206fc', 4, '01a251a0-66e7-72e2-b79c-041a6a37021b', 1796665796328, NULL, NULL, NULL, '{"audit_text": [null, false, null], "web_search_query": [null, false, null], "enable_web_search": [null, false, false]}', false, '{"run_id":"01a251a0-66e0-7385-bb6b-2ddf710946d6","source":"loop","step":2,"tasks":[{"duration_ms":0.038,"node":"validate_inputs","started_at_ms":1796665796328}],"turn":1}', '{"action":"01a251a0-66e1-768a-982b-2154f41b1d79","audit_text":"01a251a0-66e8-743e-85db-4d8dfb5206fc","enable_web_search":"01a251a0-66e8-743e-85db-4d8dfb5206fc","inference_confidence":"01a251a0-66e7-72e2-b79c-041a6a37021b","inference_source":"01a251a0-66e7-72e2-b79c-041a6a37021b","intent_confidence":"01a251a0-66e1-768a-982b-2154f41b1d79","messages":"01a251a0-66e1-768a-982b-215338d77517","multi_action_detected":"01a251a0-66e1-768a-982b-2154f41b1d79","resolved_doc_ids":"01a251a0-66e7-72e2-b79c-041a6a37021b","suggested_doc_ids":"01a251a0-66e7-72e2-b79c-041a6a37021b","unresolved_names":"01a251a0-66e7-72e2-b79c-041a6a37021b","web_search_query":"01a251a0-66e8-743e-85db-4d8dfb5206fc"}', '{"tasks":[{"node":"inquire","id":"5edc575a-1f47-4498-8d01-d520bb19e860"}],"counters":{"messages":{"since":127,"snapshot":0}}}');
INSERT INTO palgraph_release.checkpoints VALUES ('0193a9c4-0000-7000-8000-00000000000b', '01a251a0-66e8-743e-85db-4d8eebf686d4', 5, '01a251a0-66e8-743e-85db-4d8dfb5206fc', 1796665796329, NULL, NULL, NULL, '{"messages": ["01a251a0-66e1-768a-982b-215338d77517", true, [[{"id": "5edc575a-1f47-4498-8d01-d520bb19e860:answer", "type": "ai", "content": "**Data Retention Policy 2024** (v4.0, in force) says:\n\n- Deletion: Records that have reached the end of their retention period must be deleted or anonymised within 30 days. [1]\n- Retention periods: Customer account records must be retained for 7 years after the account is closed. [2]\n- Retention periods: Recorded telephone calls with customers must be retained for 5 years. [3]\n\nThe previous version, **Data Retention Policy 2023** (v3.1, superseded by Data Retention Policy 2024), said: Customer account records must be retained for 5 years after the account is closed. [9]\nThe previous version, **Data Retention Policy 2023** (v3.1, superseded by Data Retention Policy 2024), said: Recorded telephone calls with customers must be retained for 12 months. [10]", "metadata": {"action": "inquire", "doc_ids": ["01a251a0-66b1-7004-acbd-f59132c1fe4a", "01a251a0-66ad-775b-a1bf-0f6508633b3d"], "citations": [{"quote": "Records that have reached the end of their retention period must be deleted or anonymised within 30 days.", "title": "Data Retention Policy 2024", "doc_id": "01a251a0-66b1-7004-acbd-f59132c1fe4a", "marker": 1}, {"quote": "Customer account records must be retained for 7 years after the account is closed.", "title": "Data Retention Policy 2024", "doc_id": "01a251a0-66b1-7004-acbd-f59132c1fe4a", "marker": 2}, {"quote": "Recorded telephone calls with customers must be retained for 5 years.", "title": "Data Retention Policy 2024", "doc_id": "01a251a0-66b1-7004-acbd-f59132c1fe4a", "marker": 3}, {"quote": "Customer account records must be retained for 5 years after the account is closed.", "title": "Data Retention Policy 2023", "doc_id": "01a251a0-66b0-7744-a7ea-f25bfd29c2fa", "marker": 9}, {"quote": "Recorded telephone calls with customers must be retained for 12 months.", "title": "Data Retention Policy 2023", "doc_id": "01a251a0-66b0-7744-a7ea-f25bfd29c2fa", "marker": 10}], "answered_by": {"kind": "offline", "model": null}, "finished_reason": "stop", "confidence_score": 0.728, "inference_confidence": "medium", "retrieval_confidence": "high"}}]]], "response": [null, false, "**Data Retention Policy 2024** (v4.0, in force) says:\n\n- Deletion: Records that have reached the end of their retention period must be deleted or anonymised within 30 days. [1]\n- Retention periods: Customer account records must be retained for 7 years after the account is closed. [2]\n- Retention periods: Recorded telephone calls with customers must be retained for 5 years. [3]\n\nThe previous version, **Data Retention Policy 2023** (v3.1, superseded by Data Retention Policy 2024), said: Customer account records must be retained for 5 years after the account is closed. [9]\nThe previous version, **Data Retention Policy 2023** (v3.1, superseded by Data Retention Policy 2024), said: Recorded telephone calls with customers must be retained for 12 months. [10]"], "citations": [null, false, [{"quote": "Records that have reached the end of their retention period must be deleted or anonymised within 30 days.", "title": "Data Retention Policy 2024", "doc_id": "01a251a0-66b1-7004-acbd-f59132c1fe4a", "marker": 1}, {"quote": "Customer account records must be retained for 7 years after the account is closed.", "title": "Data Retention Policy 2024", "doc_id": "01a251a0-66b1-7004-acbd-f59132c1fe4a", "marker": 2}, {"quote": "Recorded telephone calls with customers must be retained for 5 years.", "title": "Data Retention Policy 2024", "doc_id": "01a251a0-66b1-7004-acbd-f59132c1fe4a", "marker": 3}, {"quote": "Customer account records must be retained for 5 years after the account is closed.", "title": "Data Retention Policy 2023", "doc_id": "01a251a0-66b0-7744-a7ea-f25bfd29c2fa", "marker": 9}, {"quote": "Recorded telephone calls with customers must be retained for 12 months.", "title": "Data Retention Policy 2023", "doc_id": "01a251a0-66b0-7744-a7ea-f25bfd29c2fa", "marker": 10}]], "answered_by": [null, false, {"kind": "offline", "model": null}], "retrieval_confidence": [null, false, 0.7279650468777601]}', false, '{"run_id":"01a251a0-66e0-7385-bb6b-2ddf710946d6","source":"loop","step":3,"tasks":[{"duration_ms":0.591,"llm_calls":[{"duration_ms":0.0,"model":"offline"}],"node":"inquire","started_at_ms":1796665796328}],"turn":1}', '{"action":"01a251a0-66e1-768a-982b-2154f41b1d79","answered_by":"01a251a0-66e8-743e-85db-4d8eebf686d4","audit_text":"01a251a0-66e8-743e-85db-4d8dfb5206fc","citations":"01a251a0-66e8-743e-85db-4d8eebf686d4","enable_web_search":"01a251a0-66e8-743e-85db-4d8dfb5206fc","inference_confidence":"01a251a0-66e7-72e2-b79c-041a6a37021b","inference_source":"01a251a0-66e7-72e2-b79c-041a6a37021b","intent_confidence":"01a251a0-66e1-768a-982b-2154f41b1d79","messages":"01a251a0-66e8-743e-85db-4d8eebf686d4","multi_action_detected":"01a251a0-66e1-768a-982b-2154f41b1d79","resolved_doc_ids":"01a251a0-66e7-72e2-b79c-041a6a37021b","response":"01a251a0-66e8-743e-85db-4d8eebf686d4","retrieval_confidence":"01a251a0-66e8-743e-85db-4d8eebf686d4","suggested_doc_ids":"01a251a0-66e7-72e2-b79c-041a6a37021b","unresolved_names":"01a251a0-66e7-72e2-b79c-041a6a37021b","web_search_query":"01a251a0-66e8-743e-85db-4d8dfb5206fc"}', '{"tasks":[{"node":"format_response","id":"8db2d903-81b9-4322-b5cd-6da8b4242c43"}],"counters":{"messages":{"since":2226,"snapshot":0}}}');
INSERT INTO palgraph_release.checkpoints VALUES ('0193a9c4-0000-7000-8000-00000000000b', '01a251a0-66e9-75f0-94e1-0f2e3e9a954c', 6, '01a251a0-66e8-743e-85db-4d8eebf686d4', 1796665796329, NULL, NULL, NULL, '{"conversation_docs": [null, false, {"Data Retention Policy 2024": "01a251a0-66b1-7004-acbd-f59132c1fe4a", "Anti-Money Laundering (AML) and Know Your Customer (KYC) Policy": "01a251a0-66ad-775b-a1bf-0f6508633b3d"}]}', false, '{"run_id":"01a251a0-66e0-7385-bb6b-2ddf710946d6","source":"loop","step":4,"tasks":[{"duration_ms":0.013,"node":"format_response","started_at_ms":1796665796329}],"turn":1}', '{"action":"01a251a0-66e1-768a-982b-2154f41b1d79","answered_by":"01a251a0-66e8-743e-85db-4d8eebf686d4","audit_text":"01a251a0-66e8-743e-85db-4d8dfb5206fc","citations":"01a251a0-66e8-743e-85db-4d8eebf686d4","conversation_docs":"01a251a0-66e9-75f0-94e1-0f2e3e9a954c","enable_web_search":"01a251a0-66e8-743e-85db-4d8dfb5206fc","inference_confidence":"01a251a0-66e7-72e2-b79c-041a6a37021b","inference_source":"01a251a0-66e7-72e2-b79c-041a6a37021b","intent_confidence":"01a251a0-66e1-768a-982b-2154f41b1d79","messages":"01a251a0-66e8-743e-85db-4d8eebf686d4","multi_action_detected":"01a251a0-66e1-768a-982b-2154f41b1d79","resolved_doc_ids":"01a251a0-66e7-72e2-b79c-041a6a37021b","response":"01a251a0-66e8-743e-85db-4d8eebf686d4","retrieval_confidence":"01a251a0-66e8-743e-85db-4d8eebf686d4","suggested_doc_ids":"01a251a0-66e7-72e2-b79c-041a6a37021b","unresolved_names":"01a251a0-66e7-72e2-b79c-041a6a37021b","web_search_query":"01a251a0-66e8-743e-85db-4d8dfb5206fc"}', '{"tasks":[],"counters":{"messages":{"since":2226,"snapshot":0}}}');


--
-- Data for Name: crons; Type: TABLE DATA; Schema: palgraph_release; Owner: -
--



--
-- Data for Name: document_set_members; Type: TABLE DATA; Schema: palgraph_release; Owner: -
--



--
-- Data for Name: document_sets; Type: TABLE DATA; Schema: palgraph_release; Owner: -
--



--
-- Data for Name: document_texts; Type: TABLE DATA; Schema: palgraph_release; Owner: -
--

INSERT INTO palgraph_release.document_texts VALUES ('01a251a0-66aa-70e0-a90f-b84e4e6f7a8d', 'This excerpt summarises the own funds provisions of the Capital Requirements Regulation as they apply to credit institutions and investment firms supervised in the Union. It is a working summary for the compliance team and is not a substitute for the legal text.

## Article 92 — Own funds requirements

Institutions shall at all times satisfy a Common Equity Tier 1 (CET1) capital ratio of 4.5%.

Institutions shall at all times satisfy a Tier 1 capital ratio of 6%.

Institutions shall at all times satisfy a total capital ratio of 8%.

Capital ratios are calculated as the relevant capital expressed as a percentage of the total risk exposure amount. The total risk exposure amount covers credit risk, market risk, operational risk and credit valuation adjustment risk.

## Article 92a — Leverage ratio

Institutions shall at all times satisfy a leverage ratio of 3%. The leverage ratio is Tier 1 capital divided by the total exposure measure, expressed as a percentage.

Global systemically important institutions shall hold an additional leverage ratio buffer equal to 50% of their G-SII buffer rate.

## Capital buffers

In addition to the own funds requirements, institutions shall maintain a capital conservation buffer of 2.5% of the total risk exposure amount, made up of CET1 capital.

A countercyclical capital buffer set by the designated national authority applies on top of the conservation buffer; its rate ranges between 0% and 2.5% and may be set higher in exceptional circumstances.

An institution that does not meet its combined buffer requirement shall not make distributions beyond the maximum distributable amount and shall submit a capital conservation plan to its competent authority within five working days.

## Article 430 — Reporting

Institutions shall report their own funds requirements, leverage ratio and large exposures to their competent authority at least quarterly, using the implementing technical standards templates.

Any breach of the own funds requirements shall be notified to the competent authority without delay.');
INSERT INTO palgraph_release.document_texts VALUES ('01a251a0-66ad-775b-a1bf-0f6508633b3d', 'Owner: Head of Financial Crime Compliance. Applies to all employees, branches and subsidiaries of the group.

## Purpose

This policy sets the minimum standards the group applies to prevent its products and services from being used for money laundering or terrorist financing.

## Customer due diligence

Before establishing a business relationship, staff must identify the customer and verify the identity using reliable, independent documents, data or information.

For legal entities, staff must identify every beneficial owner holding more than 25% of the shares or voting rights and verify their identity.

Customer risk must be rated as low, medium or high at onboarding and reviewed at least every three years for low-risk customers, every two years for medium-risk customers and every year for high-risk customers.

## Enhanced due diligence

Enhanced due diligence must be applied to politically exposed persons (PEPs), their family members and close associates, and to customers established in high-risk third countries.

A business relationship with a PEP requires senior management approval, and the source of wealth and source of funds must be established before onboarding.

## Sanctions screening

All customers and payments must be screened against the applicable sanctions lists. Customers must be screened at onboarding and whenever the lists are updated.

## Monitoring and reporting

Transactions must be monitored for unusual patterns. Suspicious activity must be reported to the Money Laundering Reporting Officer (MLRO) immediately, and the MLRO must file a suspicious activity report with the financial intelligence unit without delay.

Staff must not tell the customer, or any third party, that a report has been or may be filed (tipping off).

## Record keeping

Customer due diligence records and transaction records must be retained for at least five years after the end of the business relationship or the date of an occasional transaction.

## Training

All relevant staff must complete AML training at onboarding and annually thereafter.');
INSERT INTO palgraph_release.document_texts VALUES ('01a251a0-66b0-7744-a7ea-f25bfd29c2fa', 'Version 3.1, approved by the Data Governance Committee in March 2023.

## Scope

This policy applies to all records, in paper or electronic form, created or received by the company in the course of its business, including records held by service providers on its behalf.

## Retention periods

Customer account records must be retained for 5 years after the account is closed.

Transaction records must be retained for 5 years after the transaction date.

Employee personnel files must be retained for 6 years after employment ends.

Email correspondence should be retained for 2 years unless it forms part of a customer or transaction record.

Recorded telephone calls with customers must be retained for 12 months.

## Deletion

Records that have reached the end of their retention period should be deleted or anonymised within 90 days.

Deletion may be postponed where a business unit considers the records still useful.

## Legal hold

Records subject to litigation, investigation or regulatory inquiry must not be deleted until Legal lifts the hold.

## Responsibilities

Each business unit head is responsible for applying this policy to the records of their unit.');
INSERT INTO palgraph_release.document_texts VALUES ('01a251a0-66b1-7004-acbd-f59132c1fe4a', 'Version 4.0, approved by the Data Governance Committee in February 2024. Replaces the Data Retention Policy 2023.

## Scope

This policy applies to all records, in paper or electronic form, created or received by the company in the course of its business, including records held by service providers on its behalf, and to data held in cloud collaboration tools.

## Retention periods

Customer account records must be retained for 7 years after the account is closed.

Transaction records must be retained for 7 years after the transaction date.

Employee personnel files must be retained for 6 years after employment ends.

Email correspondence must be retained for 3 years unless it forms part of a customer or transaction record.

Recorded telephone calls with customers must be retained for 5 years.

Chat messages in collaboration tools must be retained for 3 years.

## Deletion

Records that have reached the end of their retention period must be deleted or anonymised within 30 days.

Deletion may only be postponed with the written approval of the Data Protection Officer.

## Legal hold

Records subject to litigation, investigation or regulatory inquiry must not be deleted until Legal lifts the hold.

## Responsibilities

Each business unit head is responsible for applying this policy to the records of their unit. The Data Protection Officer reviews compliance every year.');
INSERT INTO palgraph_release.document_texts VALUES ('01a251a0-66b2-7175-9ddc-a52ad3847f7a', 'Applies to all security incidents affecting the company''s systems, data or service providers.

## Reporting an incident

Any employee who suspects a security incident must report it to the Security Operations Centre within 1 hour of becoming aware of it.

## Classification

The incident manager classifies each incident as low, medium, high or critical within 4 hours of the report.

## Personal data breaches

Where an incident involves personal data, the Data Protection Officer must be informed immediately.

A personal data breach that is likely to result in a risk to individuals must be notified to the supervisory authority within 72 hours of becoming aware of it.

Where the breach is likely to result in a high risk to individuals, the affected individuals must also be informed without undue delay.

## Containment and recovery

Critical incidents must be contained within 24 hours. Systems are restored from clean backups once the root cause is removed.

## Review

A post-incident review must be completed within 10 working days of closing a high or critical incident, and lessons learned must be recorded in the incident register.');


--
-- Data for Name: documents; Type: TABLE DATA; Schema: palgraph_release; Owner: -
--

INSERT INTO palgraph_release.documents VALUES ('01a251a0-66aa-70e0-a90f-b84e4e6f7a8d', 'local', 'Capital Requirements Regulation (CRR) — Excerpt', 1796665796266, 2066);
INSERT INTO palgraph_release.documents VALUES ('01a251a0-66ad-775b-a1bf-0f6508633b3d', 'local', 'Anti-Money Laundering (AML) and Know Your Customer (KYC) Policy', 1796665796269, 2068);
INSERT INTO palgraph_release.documents VALUES ('01a251a0-66b0-7744-a7ea-f25bfd29c2fa', 'local', 'Data Retention Policy 2023', 1796665796272, 1170);
INSERT INTO palgraph_release.documents VALUES ('01a251a0-66b1-7004-acbd-f59132c1fe4a', 'local', 'Data Retention Policy 2024', 1796665796273, 1387);
INSERT INTO palgraph_release.documents VALUES ('01a251a0-66b2-7175-9ddc-a52ad3847f7a', 'local', 'Information Security Incident Response Procedure', 1796665796274, 1144);


--
-- Data for Name: node_cache; Type: TABLE DATA; Schema: palgraph_release; Owner: -
--



--
-- Data for Name: palgraph_migrations; Type: TABLE DATA; Schema: palgraph_release; Owner: -
--

INSERT INTO palgraph_release.palgraph_migrations VALUES ('engine', 1, 'checkpoints', 'b903c19b23f115e2b7c2ac10594a731531a77de4697d9b43f44ab190871cab86', '2026-12-07 17:49:56.207747+00');
INSERT INTO palgraph_release.palgraph_migrations VALUES ('engine', 2, 'fences', 'd31d2e6af4010f86019b0052331ac2be7cfb41e92e7734d394d0ead69063a44a', '2026-12-07 17:49:56.207747+00');
INSERT INTO palgraph_release.palgraph_migrations VALUES ('engine', 3, 'node_cache', 'e670bdea7b537e79dc77e1aa44c9ba4adedbf89298d4969a18fe0786b69858b5', '2026-12-07 17:49:56.207747+00');
INSERT INTO palgraph_release.palgraph_migrations VALUES ('engine', 4, 'store', 'db477fbae8e83d4165b5290b5a8fe45c43170d95bfbcf6bb53cd88cab8453ac7', '2026-12-07 17:49:56.207747+00');
INSERT INTO palgraph_release.palgraph_migrations VALUES ('engine', 5, 'lz4', 'a008c3d1cb4daf174d1539160f068ddd3353610ad4ad42226acbe8cf5fc141c7', '2026-12-07 17:49:56.207747+00');
INSERT INTO palgraph_release.palgraph_migrations VALUES ('engine', 6, 'text_records', '608f0cfec8dd0327b816789361f8a58bd1f26ed314c999a19427e01cf3efbd3d', '2026-12-07 17:49:56.207747+00');
INSERT INTO palgraph_release.palgraph_migrations VALUES ('server', 1, 'runs', '35fdb5da871fda2c404ff12a713764d23f114f5ae4dfc64c791b0dae86000fda', '2026-12-07 17:49:56.228283+00');
INSERT INTO palgraph_release.palgraph_migrations VALUES ('server', 2, 'run_order', 'f812b453f648a056439c6151a628f6ebdd9a099cdef4bfbe263182effc071ed7', '2026-12-07 17:49:56.228283+00');
INSERT INTO palgraph_release.palgraph_migrations VALUES ('server', 3, 'crons', 'e07a02ecf152fdc590f5f2bf191474fe4352441836b94fd5792954ed3712fe76', '2026-12-07 17:49:56.228283+00');
INSERT INTO palgraph_release.palgraph_migrations VALUES ('server', 4, 'trace_context', '78227ddec04ccb3b9dbbb5b00a76d411b99df4625c0bfb39ecb077c8ae5ded39', '2026-12-07 17:49:56.228283+00');
INSERT INTO palgraph_release.palgraph_migrations VALUES ('server', 5, 'run_batches', 'bb70f9d7c01ce91b8ea7315d726c426b36a841f7ab77237161cab67a3d96a834', '2026-12-07 17:49:56.228283+00');
INSERT INTO palgraph_release.palgraph_migrations VALUES ('server', 6, 'leaner_rows', 'b1c1d6ad662e3e5999b68cc7a3dbab2b211031d3e0ba2fedc64486feaa68c5bb', '2026-12-07 17:49:56.228283+00');
INSERT INTO palgraph_release.palgraph_migrations VALUES ('server', 7, 'packed_events', '5a36395fcaa115cda17a15dfd63f916ac6a0f1ba1f770ad1e82eb88cdeece6aa', '2026-12-07 17:49:56.228283+00');
INSERT INTO palgraph_release.palgraph_migrations VALUES ('server', 8, 'checked_threads', '8082fb783cfe1fc4a89006a7651847f69722040a8d47eaac379a57f974454e66', '2026-12-07 17:49:56.228283+00');
INSERT INTO palgraph_release.palgraph_migrations VALUES ('server', 9, 'byte_order_locks', '19a008c7772738d6ca79cdddd59b2984fba1ee24acac22c5f544a68689a0071c', '2026-12-07 17:49:56.228283+00');
INSERT INTO palgraph_release.palgraph_migrations VALUES ('server', 10, 'thread_ttl', '77a01ddfdba4c9827495d6cf8390c23da949adeb39daf47ca8e9fe4b94cafbb8', '2026-12-07 17:49:56.228283+00');
INSERT INTO palgraph_release.palgraph_migrations VALUES ('documents', 1, 'documents', 'b82ace573b1cb9d609e378deb4ddd1b8c71e55a81e61a06a3325c464cff0d663', '2026-12-07 17:49:56.25146+00');
INSERT INTO palgraph_release.palgraph_migrations VALUES ('documents', 2, 'document_sets', '21cb3459259e7aad9ee155115251c76a5ad4c08a8eb6126f2742d83f1025b0e9', '2026-12-07 17:49:56.25146+00');
INSERT INTO palgraph_release.palgraph_migrations VALUES ('documents', 3, 'documents_lz4', 'cc189abd763fa71411fa5374941384973aadded4d035f836a8bccf338b5504fa', '2026-12-07 17:49:56.25146+00');
INSERT INTO palgraph_release.palgraph_migrations VALUES ('documents', 4, 'document_changes', 'b7ce782d17ad6fdbc3a0aecd06806dafeb0c6a6d02a04b03656d169e4e20f75b', '2026-12-07 17:49:56.25146+00');
INSERT INTO palgraph_release.palgraph_migrations VALUES ('documents', 5, 'document_texts', '9c8269965b16e9d8af64daf31e48a1d9e077f0a718aef3af5ff2024b58148060', '2026-12-07 17:49:56.25146+00');


--
-- Data for Name: run_events; Type: TABLE DATA; Schema: palgraph_release; Owner: -
--

INSERT INTO palgraph_release.run_events VALUES ('01a251a0-66ba-7274-87dd-130608eae0fd', 4, NULL, '\x0128b52ffd6031025d0f00165f5e26108d3a07a6c5d1c2fc379c41478bb785d3c797ca2929d16e2bfd77bca68a984910000000050255005400540071217fcd3bdca7719caa6124b8cb033976891ce7591866e0b28f5539d013c191c254a1504c647cfc31ef8c46b218a66922c8612dd123510b0356cf6231d6b33cbb0b351cf8f7b696567f978f3cc925d5faeff491488b099d8a45cedab0584c35ebbe0ef0caf47de00bd605ae726695e974aea6fc63a64b7025e3df9921a901c16d3896e488248a41494f1431b672a28a25d87c7a155f894caf9d699472cbf80ab69449b36c1d9d960b722fe8268669727a63da5abd5d2e637352d944ff9da0a3bb6ac4280d815f995e3936e56cd2ecef8a01060657036a7409cee020a1c0d58e02ae528ea8721d65c757bbde0bf2e972c6ce228595174eb3300ee32c0292ed154bb6ed04aec6ab2b6b1057a894bb2777a4902bb8d626b5ae718f4fd7b0a57cc1a16eff6d6fc80dd47c8d901f58c7fe9344a6574ca306c1f46fdb24fffb4446daf591caf5944ef21521e078122b20101c632cec01a21420a2f4e2d51c48a02d49d55a2e3cd7c0c850165861d039fc00fcbbc8045c0a3d51305d6b3904079fa8706fdd2c0c59cd7c0a84d9696fad8f029e5d20c718e74ee02bc0be01b7350561cf9805ec1c0ebb5afa500ce124739b55f3871c25112082050d1af028');
INSERT INTO palgraph_release.run_events VALUES ('01a251a0-66e0-7385-bb6b-2ddf710946d6', 15, NULL, '\x0128b52ffd6078052d1900f6739623106ff306148f7699e8bd3f8fb867943c5a82653e030f7c1cad68d95eb22202000014048c0090008800cfb6127ed3a87b8d89cdaa93ca051953569b49b2986cd1c9c65223559b2c1c8d542f841b086da1f4be0f8128aef55a03fd3cd0554da584890a13139728b5593259e4625581cbb1a4adf6defce6178a2b83c1f0886ba3c666f91024c554aaf5db2b753e369535d99b0b26122ed6b4b8182adb425d7b8a07ebcf10fbfebe36a97493433dd2cdd04e2ae5e47004b1aec6eab21606c2a5c0a62d199548ebc7a4d2670b4d5cab1f9af8dc90945369d2ba4845818a6bd8a2f4316b511e2e3917b85a5c9aa542baa1c8b510bf65b58fa4b8785ca40002870300cf0fc15b43049e21ece015f81e78bdd20310120600f2d70b49048ffee28465f71da86fbe972c2c260d5bcd6c72cda828ab4a7591a063ce236a1face017db5f70b965416aa40fcee18cfa1a3fd4b5cdbf1be93acb8f5cf1fad7cafd39fbbe10a65436f4c2a3399ca123599d3dbfd6d9b6c2eb6b0b892ebed233f6fad57ffad610c42bb6f923d9b36db0d7fbfecef6fa0e959ffd29a4e35b3adb75cd98fe8237fef9025ff7e13e347424b5073ccdb8f16b5d3106a40070010101810a7d65e3621b3934cbd7bff05462c9f24c9b93b98f8b547fff1381601a89288c8c64fe7d7bc82cd64465310fb1afc51109fa0e4d16ea61901454e941eaa0837391355995c6b99c7b7031b32deb31a6ba595f5f1cd9129271f35860a2628b2a2e4f2dd129c535874a0fd69c7d31c45d7b30b15aa95d05408fe6ebfc1148bb6a8cf75c5d6c757e0ad710b6149f23fe0ec3e3399c11a9ebe791d4ff6227f2cf0748a8d1985208198142a29112994026140f40422220094f071260b62c8831668c128c092a666666f26c71b11a56855db5051e99f0ab76c50d11d42441cae2255d2a574c958465c2164bf0b430e45a73ff54de89eaee0019d00267441396d6fca1769878368e37e830163ca5e6f48c9ac7902a60c6e22ec209893e4922ead08034767b0d8826fd162b617b5651773f684c949592b4462b489d1ce830440dfe29eafb457eb203949d3429c048bf37260f67ed1e5d0da8d62bcb7dfb310ae97926cc865b3e4a924a60261a');


--
-- Data for Name: runs; Type: TABLE DATA; Schema: palgraph_release; Owner: -
--

INSERT INTO palgraph_release.runs VALUES ('01a251a0-66ba-7274-87dd-130608eae0fd', '0193a9c4-0000-7000-8000-00000000000a', 'local', '1693519d-b4f7-5c8a-8cde-5db5cc31165a', 'approval', 'interrupted', '{"input": {"turn": {"messages": [{"type": "human", "content": "Write about otters"}]}}, "context": {"user_id": "local"}}', '{}', 'reject', NULL, NULL, NULL, 'worker-3a955e2618574c88bdb9d8d4d07f24f5', NULL, 1, NULL, 1796665796282, 1796665796309, 1, NULL);
INSERT INTO palgraph_release.runs VALUES ('01a251a0-66e0-7385-bb6b-2ddf710946d6', '0193a9c4-0000-7000-8000-00000000000b', 'local', '62cf9c4e-4f31-5b8a-8848-e5b0801064e0', 'palassist', 'success', '{"input": {"turn": {"messages": [{"type": "human", "content": "What is the retention period for customer records?"}]}}, "context": {"user_id": "local"}}', '{}', 'reject', NULL, NULL, NULL, 'worker-3a955e2618574c88bdb9d8d4d07f24f5', NULL, 1, NULL, 1796665796320, 1796665796330, 1, NULL);


--
-- Data for Name: store_items; Type: TABLE DATA; Schema: palgraph_release; Owner: -
--

INSERT INTO palgraph_release.store_items VALUES ('localnotes', 'kept', '{"text": "written before"}', 1796665796332, 1796665796332, NULL, NULL, '''written'':1', NULL, NULL);


--
-- Data for Name: threads; Type: TABLE DATA; Schema: palgraph_release; Owner: -
--

INSERT INTO palgraph_release.threads VALUES ('0193a9c4-0000-7000-8000-00000000000a', 'local', '{"graph_id": "approval", "assistant_id": "1693519d-b4f7-5c8a-8cde-5db5cc31165a"}', 'interrupted', 1796665796282, 1796665796309, 1, NULL, NULL, NULL);
INSERT INTO palgraph_release.threads VALUES ('0193a9c4-0000-7000-8000-00000000000b', 'local', '{"graph_id": "palassist", "assistant_id": "62cf9c4e-4f31-5b8a-8848-e5b0801064e0"}', 'idle', 1796665796320, 1796665796330, 1, NULL, NULL, NULL);


--
-- Name: checkpoint_fences checkpoint_fences_pkey; Type: CONSTRAINT; Schema: palgraph_release; Owner: -
--

ALTER TABLE ONLY palgraph_release.checkpoint_fences
    ADD CONSTRAINT checkpoint_fences_pkey PRIMARY KEY (key);


--
-- Name: checkpoint_writes checkpoint_writes_pkey; Type: CONSTRAINT; Schema: palgraph_release; Owner: -
--

ALTER TABLE ONLY palgraph_release.checkpoint_writes
    ADD CONSTRAINT checkpoint_writes_pkey PRIMARY KEY (thread_id, checkpoint_id, task_id, channel, idx);


--
-- Name: checkpoints checkpoints_pkey; Type: CONSTRAINT; Schema: palgraph_release; Owner: -
--

ALTER TABLE ONLY palgraph_release.checkpoints
    ADD CONSTRAINT checkpoints_pkey PRIMARY KEY (thread_id, checkpoint_id);


--
-- Name: checkpoints checkpoints_thread_id_seq_key; Type: CONSTRAINT; Schema: palgraph_release; Owner: -
--

ALTER TABLE ONLY palgraph_release.checkpoints
    ADD CONSTRAINT checkpoints_thread_id_seq_key UNIQUE (thread_id, seq);


--
-- Name: crons crons_pkey; Type: CONSTRAINT; Schema: palgraph_release; Owner: -
--

ALTER TABLE ONLY palgraph_release.crons
    ADD CONSTRAINT crons_pkey PRIMARY KEY (cron_id);


--
-- Name: document_set_members document_set_members_pkey; Type: CONSTRAINT; Schema: palgraph_release; Owner: -
--

ALTER TABLE ONLY palgraph_release.document_set_members
    ADD CONSTRAINT document_set_members_pkey PRIMARY KEY (set_id, document_id);


--
-- Name: document_sets document_sets_owner_name_key; Type: CONSTRAINT; Schema: palgraph_release; Owner: -
--

ALTER TABLE ONLY palgraph_release.document_sets
    ADD CONSTRAINT document_sets_owner_name_key UNIQUE (owner, name);


--
-- Name: document_sets document_sets_pkey; Type: CONSTRAINT; Schema: palgraph_release; Owner: -
--

ALTER TABLE ONLY palgraph_release.document_sets
    ADD CONSTRAINT document_sets_pkey PRIMARY KEY (id);


--
-- Name: document_texts document_texts_pkey; Type: CONSTRAINT; Schema: palgraph_release; Owner: -
--

ALTER TABLE ONLY palgraph_release.document_texts
    ADD CONSTRAINT document_texts_pkey PRIMARY KEY (id);


--
-- Name: documents documents_pkey; Type: CONSTRAINT; Schema: palgraph_release; Owner: -
--

ALTER TABLE ONLY palgraph_release.documents
    ADD CONSTRAINT documents_pkey PRIMARY KEY (id);


--
-- Name: node_cache node_cache_pkey; Type: CONSTRAINT; Schema: palgraph_release; Owner: -
--

ALTER TABLE ONLY palgraph_release.node_cache
    ADD CONSTRAINT node_cache_pkey PRIMARY KEY (namespace, key);


--
-- Name: palgraph_migrations palgraph_migrations_pkey; Type: CONSTRAINT; Schema: palgraph_release; Owner: -
--

ALTER TABLE ONLY palgraph_release.palgraph_migrations
    ADD CONSTRAINT palgraph_migrations_pkey PRIMARY KEY (scope, version);


--
-- Name: run_events run_events_pkey; Type: CONSTRAINT; Schema: palgraph_release; Owner: -
--

ALTER TABLE ONLY palgraph_release.run_events
    ADD CONSTRAINT run_events_pkey PRIMARY KEY (run_id, seq);


--
-- Name: runs runs_pkey; Type: CONSTRAINT; Schema: palgraph_release; Owner: -
--

ALTER TABLE ONLY palgraph_release.runs
    ADD CONSTRAINT runs_pkey PRIMARY KEY (run_id);


--
-- Name: store_items store_items_pkey; Type: CONSTRAINT; Schema: palgraph_release; Owner: -
--

ALTER TABLE ONLY palgraph_release.store_items
    ADD CONSTRAINT store_items_pkey PRIMARY KEY (namespace, key);


--
-- Name: threads threads_pkey; Type: CONSTRAINT; Schema: palgraph_release; Owner: -
--

ALTER TABLE ONLY palgraph_release.threads
    ADD CONSTRAINT threads_pkey PRIMARY KEY (thread_id);


--
-- Name: crons_due_idx; Type: INDEX; Schema: palgraph_release; Owner: -
--

CREATE INDEX crons_due_idx ON palgraph_release.crons USING btree (next_run_at_ms) WHERE (enabled = 1);


--
-- Name: crons_owner_idx; Type: INDEX; Schema: palgraph_release; Owner: -
--

CREATE INDEX crons_owner_idx ON palgraph_release.crons USING btree (owner, created_at_ms);


--
-- Name: document_set_members_document_idx; Type: INDEX; Schema: palgraph_release; Owner: -
--

CREATE INDEX document_set_members_document_idx ON palgraph_release.document_set_members USING btree (document_id);


--
-- Name: documents_owner_idx; Type: INDEX; Schema: palgraph_release; Owner: -
--

CREATE INDEX documents_owner_idx ON palgraph_release.documents USING btree (owner, created_at_ms);


--
-- Name: runs_active_idx; Type: INDEX; Schema: palgraph_release; Owner: -
--

CREATE INDEX runs_active_idx ON palgraph_release.runs USING btree (run_id) WHERE (status = ANY (ARRAY['pending'::text, 'running'::text]));


--
-- Name: runs_idempotency_idx; Type: INDEX; Schema: palgraph_release; Owner: -
--

CREATE UNIQUE INDEX runs_idempotency_idx ON palgraph_release.runs USING btree (owner, idempotency_key) WHERE (idempotency_key IS NOT NULL);


--
-- Name: runs_thread_idx; Type: INDEX; Schema: palgraph_release; Owner: -
--

CREATE INDEX runs_thread_idx ON palgraph_release.runs USING btree (thread_id, thread_seq);


--
-- Name: store_items_expiry; Type: INDEX; Schema: palgraph_release; Owner: -
--

CREATE INDEX store_items_expiry ON palgraph_release.store_items USING btree (expires_at_ms) WHERE (expires_at_ms IS NOT NULL);


--
-- Name: store_items_search_text; Type: INDEX; Schema: palgraph_release; Owner: -
--

CREATE INDEX store_items_search_text ON palgraph_release.store_items USING gin (search_text);


--
-- Name: threads_expiry_idx; Type: INDEX; Schema: palgraph_release; Owner: -
--

CREATE INDEX threads_expiry_idx ON palgraph_release.threads USING btree (((updated_at_ms + ttl_ms))) WHERE (ttl_ms IS NOT NULL);


--
-- Name: threads_owner_idx; Type: INDEX; Schema: palgraph_release; Owner: -
--

CREATE INDEX threads_owner_idx ON palgraph_release.threads USING btree (owner, updated_at_ms DESC);


--
-- Name: documents documents_changed; Type: TRIGGER; Schema: palgraph_release; Owner: -
--

CREATE TRIGGER documents_changed AFTER INSERT OR DELETE OR UPDATE ON palgraph_release.documents FOR EACH ROW EXECUTE FUNCTION palgraph_release.palgraph_documents_changed();


--
-- Name: documents documents_truncated; Type: TRIGGER; Schema: palgraph_release; Owner: -
--

CREATE TRIGGER documents_truncated AFTER TRUNCATE ON palgraph_release.documents FOR EACH STATEMENT EXECUTE FUNCTION palgraph_release.palgraph_documents_changed();


--
-- Name: document_set_members document_set_members_document_id_fkey; Type: FK CONSTRAINT; Schema: palgraph_release; Owner: -
--

ALTER TABLE ONLY palgraph_release.document_set_members
    ADD CONSTRAINT document_set_members_document_id_fkey FOREIGN KEY (document_id) REFERENCES palgraph_release.documents(id) ON DELETE CASCADE;


--
-- Name: document_set_members document_set_members_set_id_fkey; Type: FK CONSTRAINT; Schema: palgraph_release; Owner: -
--

ALTER TABLE ONLY palgraph_release.document_set_members
    ADD CONSTRAINT document_set_members_set_id_fkey FOREIGN KEY (set_id) REFERENCES palgraph_release.document_sets(id) ON DELETE CASCADE;


--
-- Name: document_texts document_texts_id_fkey; Type: FK CONSTRAINT; Schema: palgraph_release; Owner: -
--

ALTER TABLE ONLY palgraph_release.document_texts
    ADD CONSTRAINT document_texts_id_fkey FOREIGN KEY (id) REFERENCES palgraph_release.documents(id) ON DELETE CASCADE;


--
-- PostgreSQL database dump complete
--


