-- Document sets: named folders of a user's documents (a set and its documents have one
-- owner). Deleting a document or a set removes its memberships (the store does it: the
-- pool does not enforce foreign keys).
CREATE TABLE document_sets (
    id            TEXT PRIMARY KEY,
    owner         TEXT NOT NULL,
    name          TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    UNIQUE (owner, name)
) WITHOUT ROWID;
CREATE TABLE document_set_members (
    set_id      TEXT NOT NULL REFERENCES document_sets (id) ON DELETE CASCADE,
    document_id TEXT NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    added_at_ms INTEGER NOT NULL,
    PRIMARY KEY (set_id, document_id)
) WITHOUT ROWID;
CREATE INDEX document_set_members_document_idx ON document_set_members (document_id);
