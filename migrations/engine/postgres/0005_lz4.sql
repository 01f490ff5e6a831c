-- Values past about 2 KB are compressed by Postgres when their row is written (TOAST), with
-- pglz unless a column says otherwise. A chat turn of PalAssist writes one such checkpoint
-- value (its state after the answer: several KB of JSON), and compressing it is a visible
-- share of Postgres' CPU per turn under load; lz4 compresses it in about half pglz's time
-- to a few percent more bytes, and decompresses faster on every load. Only values written
-- after this migration are compressed with lz4 (nothing is rewritten); older ones are read
-- as they are. A Postgres built without lz4 keeps pglz.
DO $$
BEGIN
    ALTER TABLE checkpoints
        ALTER COLUMN vals SET COMPRESSION lz4,
        ALTER COLUMN versions SET COMPRESSION lz4,
        ALTER COLUMN plan SET COMPRESSION lz4,
        ALTER COLUMN metadata SET COMPRESSION lz4;
    ALTER TABLE checkpoint_writes ALTER COLUMN value SET COMPRESSION lz4;
    ALTER TABLE node_cache ALTER COLUMN value SET COMPRESSION lz4;
    ALTER TABLE store_items ALTER COLUMN value SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'this Postgres has no lz4: values stay compressed with pglz';
END
$$;
