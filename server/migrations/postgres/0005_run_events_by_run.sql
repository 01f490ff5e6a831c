-- A run event's thread is its run's: the column repeated it in every row (and deleting a
-- thread's events by it scanned the table). Events are found by their run, through the
-- primary key.
ALTER TABLE run_events DROP COLUMN thread_id;
