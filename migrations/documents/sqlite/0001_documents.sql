-- PalAssist's documents, each owned by one user (a user never sees another's).
CREATE TABLE documents (
    id            TEXT PRIMARY KEY,
    owner         TEXT NOT NULL,
    title         TEXT NOT NULL,
    content       TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX documents_owner_idx ON documents (owner, created_at_ms);
