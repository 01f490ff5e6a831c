-- Document sets: named folders of a user's documents (a set and its documents have one
-- owner). Deleting a document or a set removes its memberships.
CREATE TABLE document_sets (
    id            TEXT COLLATE "C" PRIMARY KEY,
    owner         TEXT COLLATE "C" NOT NULL,
    name          TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    updated_at_ms BIGINT NOT NULL,
    UNIQUE (owner, name)
);
CREATE TABLE document_set_members (
    set_id      TEXT COLLATE "C" NOT NULL REFERENCES document_sets (id) ON DELETE CASCADE,
    document_id TEXT COLLATE "C" NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    added_at_ms BIGINT NOT NULL,
    PRIMARY KEY (set_id, document_id)
);
CREATE INDEX document_set_members_document_idx ON document_set_members (document_id);
