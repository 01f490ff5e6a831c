-- A document's text moves to a table of its own, `document_texts`, and `documents` keeps
-- what a chat turn reads of a library (id, owner, title, size in bytes, creation time), so
-- a library is listed without reading a text (not even a compressed text's header).
CREATE TABLE document_texts (
    id      TEXT COLLATE "C" PRIMARY KEY REFERENCES documents (id) ON DELETE CASCADE,
    content TEXT NOT NULL
);
DO $$
BEGIN
    ALTER TABLE document_texts ALTER COLUMN content SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'this Postgres has no lz4: texts stay compressed with pglz';
END
$$;
INSERT INTO document_texts (id, content) SELECT id, content FROM documents;
ALTER TABLE documents ADD COLUMN size BIGINT NOT NULL DEFAULT 0;
-- The old texts are released with their rows' old versions (an UPDATE writes new ones).
UPDATE documents SET size = octet_length(content), content = '';
ALTER TABLE documents DROP COLUMN content;
ALTER TABLE documents ALTER COLUMN size DROP DEFAULT;
