-- A thread's time to live (`ttl` on `POST /threads` and `PATCH /threads/{id}`): a thread
-- whose last change (`updated_at_ms`: its creation, a run's start or end, a metadata or
-- state change) is older than `ttl_ms` and that has no active run is deleted
-- (`ttl_strategy` 'delete') or pruned to its latest checkpoint ('keep_latest', then
-- `ttl_swept_at_ms` records the sweep until the thread changes again). Only threads with a
-- time to live are in the index, so the rows and updates of every other thread cost what
-- they did.
ALTER TABLE threads ADD COLUMN ttl_ms INTEGER;
ALTER TABLE threads ADD COLUMN ttl_strategy TEXT;
ALTER TABLE threads ADD COLUMN ttl_swept_at_ms INTEGER;
CREATE INDEX threads_expiry_idx ON threads ((updated_at_ms + ttl_ms)) WHERE ttl_ms IS NOT NULL;
