-- PalAssist's documents, each owned by one user (a user never sees another's).
CREATE TABLE documents (
    id            TEXT COLLATE "C" PRIMARY KEY,
    owner         TEXT COLLATE "C" NOT NULL,
    title         TEXT NOT NULL,
    content       TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL
);
CREATE INDEX documents_owner_idx ON documents (owner, created_at_ms);
