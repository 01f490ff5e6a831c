-- Run events no longer store their thread's id: a run's events are read by its id, and
-- the thread is its run's (less written per run).
ALTER TABLE run_events DROP COLUMN thread_id;
