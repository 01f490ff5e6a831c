-- Cached node results (see the Postgres migration of the same number).
CREATE TABLE node_cache (
    namespace     TEXT NOT NULL,
    key           TEXT NOT NULL,
    value         TEXT NOT NULL,
    expires_at_ms INTEGER,
    PRIMARY KEY (namespace, key)
);
