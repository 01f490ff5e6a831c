-- A document's text past about 2 KB is stored compressed, and a chat turn reads its user's
-- whole library when it is small (`library` in `documents/sql.rs`): lz4 decompresses it
-- several times faster than Postgres' default pglz. Only texts written from now on are
-- compressed with lz4; a Postgres built without lz4 keeps pglz.
DO $$
BEGIN
    ALTER TABLE documents ALTER COLUMN content SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'this Postgres has no lz4: texts stay compressed with pglz';
END
$$;
