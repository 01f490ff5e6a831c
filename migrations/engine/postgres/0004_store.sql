-- The long-term store: JSON items under a namespace (its labels joined by U+001F, so the
-- namespaces under a prefix are one range of the "C"-collated primary key) and a key.
-- `ttl_ms` / `expires_at_ms` (ms since the epoch; NULL: never) end an item, reads refresh
-- it; `search_text` holds the words of its value for full-text search; `embedding` (and its
-- norm) its vector when the store embeds, ranked by cosine similarity in SQL.
CREATE TABLE store_items (
    namespace      TEXT COLLATE "C" NOT NULL,
    key            TEXT COLLATE "C" NOT NULL,
    value          JSONB NOT NULL,
    created_at_ms  BIGINT NOT NULL,
    updated_at_ms  BIGINT NOT NULL,
    ttl_ms         BIGINT,
    expires_at_ms  BIGINT,
    search_text    TSVECTOR NOT NULL,
    embedding      REAL[],
    embedding_norm DOUBLE PRECISION,
    PRIMARY KEY (namespace, key)
);
CREATE INDEX store_items_search_text ON store_items USING gin (search_text);
CREATE INDEX store_items_expiry ON store_items (expires_at_ms) WHERE expires_at_ms IS NOT NULL;
