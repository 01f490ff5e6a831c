-- Run events stored compressed (fewer stored bytes per chat turn): a row's content is
-- written to `packed` (a format byte, then zstd-compressed JSON text: see
-- `server/src/store/packed.rs`); rows written before keep theirs in `event`, which may now
-- be NULL. SQLite cannot drop a NOT NULL in
-- place: the table is rebuilt, as its documentation describes.
CREATE TABLE run_events_packed (
    run_id  TEXT NOT NULL,
    seq     INTEGER NOT NULL,
    event   TEXT,
    packed  BLOB,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
INSERT INTO run_events_packed (run_id, seq, event) SELECT run_id, seq, event FROM run_events;
DROP TABLE run_events;
ALTER TABLE run_events_packed RENAME TO run_events;
