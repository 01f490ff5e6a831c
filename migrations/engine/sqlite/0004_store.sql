-- The long-term store (see the Postgres migration of the same number). `id` links an item
-- to its row in the FTS5 index (`store_items_fts`, rowid = id), which holds the words of its
-- value; `embedding` is its vector (little-endian f32s) when the store embeds.
CREATE TABLE store_items (
    id            INTEGER PRIMARY KEY,
    namespace     TEXT NOT NULL,
    key           TEXT NOT NULL,
    value         TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    ttl_ms        INTEGER,
    expires_at_ms INTEGER,
    embedding     BLOB,
    UNIQUE (namespace, key)
);
CREATE INDEX store_items_expiry ON store_items (expires_at_ms) WHERE expires_at_ms IS NOT NULL;
CREATE VIRTUAL TABLE store_items_fts USING fts5 (body, tokenize = 'porter unicode61');
