-- Fencing tokens for checkpoint writers (see the Postgres migration of the same number).
CREATE TABLE checkpoint_fences (
    key   TEXT PRIMARY KEY,
    epoch INTEGER NOT NULL
);
