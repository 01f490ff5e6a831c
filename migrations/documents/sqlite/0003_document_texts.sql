-- A document's text moves to a table of its own, `document_texts`, and `documents` keeps
-- what a chat turn reads of a library (id, owner, title, size in bytes, creation time).
-- A row of `documents` held its text before `created_at_ms`: reading any column after the
-- text walked every overflow page of it, so listing a library read every text in it.
CREATE TABLE document_texts (
    id      TEXT PRIMARY KEY,
    content TEXT NOT NULL
);
INSERT INTO document_texts (id, content) SELECT id, content FROM documents;
ALTER TABLE documents ADD COLUMN size INTEGER NOT NULL DEFAULT 0;
UPDATE documents SET size = length(CAST(content AS BLOB));
ALTER TABLE documents DROP COLUMN content;
