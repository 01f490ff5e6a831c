-- A checkpoint's record (metadata, versions, plan) is stored as text, as on SQLite. As
-- jsonb, Postgres parsed all three into its binary form on every put and printed them back
-- to text on every read, for columns no statement looks into on the way: as text, a turn's
-- puts and the turn as a whole cost Postgres less (`palgraph-bench --only g` measures them
-- against a floor of bare commits; benchmarks/text-records.md). The two statements that
-- do look into one parse it as they run: history filtered by metadata, and the run ids of
-- a thread's checkpoints. `vals` stays jsonb: loading a checkpoint follows its values'
-- delta chains inside Postgres.
--
-- Nothing is rewritten: the jsonb columns are renamed (`*_jsonb`) and keep the values of the
-- rows written before this migration; the new text columns take their names, and a row has
-- one or the other. Readers take whichever is set. No CHECK constraint says so: Postgres
-- prepares a table's CHECK expressions for every insert, and one here took back most of
-- what the text columns saved a put.
ALTER TABLE checkpoints RENAME COLUMN metadata TO metadata_jsonb;
ALTER TABLE checkpoints RENAME COLUMN versions TO versions_jsonb;
ALTER TABLE checkpoints RENAME COLUMN plan TO plan_jsonb;
ALTER TABLE checkpoints
    ALTER COLUMN metadata_jsonb DROP NOT NULL,
    ALTER COLUMN versions_jsonb DROP NOT NULL,
    ALTER COLUMN plan_jsonb DROP NOT NULL,
    ADD COLUMN metadata TEXT,
    ADD COLUMN versions TEXT,
    ADD COLUMN plan TEXT;
DO $$
BEGIN
    ALTER TABLE checkpoints
        ALTER COLUMN metadata SET COMPRESSION lz4,
        ALTER COLUMN versions SET COMPRESSION lz4,
        ALTER COLUMN plan SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'this Postgres has no lz4: values stay compressed with pglz';
END
$$;
