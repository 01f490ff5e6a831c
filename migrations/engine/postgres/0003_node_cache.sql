-- Cached node results: a node with a cache policy stores its update here under a key made
-- from its input (namespace: the node's name), and a later task with the same key takes it
-- instead of running. `expires_at_ms` (ms since the epoch; NULL: never) ends an entry.
CREATE TABLE node_cache (
    namespace     TEXT COLLATE "C" NOT NULL,
    key           TEXT COLLATE "C" NOT NULL,
    value         TEXT NOT NULL,
    expires_at_ms BIGINT,
    PRIMARY KEY (namespace, key)
);
