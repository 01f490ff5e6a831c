-- The W3C `traceparent` of the span a run was created under (the request's, or a cron
-- tick's), NULL when traces were not exported: the worker that executes the run, on any
-- replica and after any takeover, makes its run span a child of it, so a run is one trace.
ALTER TABLE runs ADD COLUMN trace_context TEXT;
