-- Fencing tokens for checkpoint writers. A server hands a thread to the worker that holds
-- its run's lease by raising the thread's epoch here (before that worker reads the thread);
-- a fenced write is stored only while its epoch is the one recorded, so a worker that lost
-- its lease cannot write over its successor. Writes without a fence are not checked.
CREATE TABLE checkpoint_fences (
    key   TEXT COLLATE "C" PRIMARY KEY,
    epoch BIGINT NOT NULL
);
