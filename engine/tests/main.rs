//! The engine's integration tests, one module per concern, in one binary (it links once):
//! the conformance suite on the memory and SQLite checkpointers and on every store,
//! durability modes, migrations, storage faults, dynamic reads and node status, through the
//! public API only. The suite on Postgres is a binary of its own (`postgres.rs`): in one
//! process with the others, its subgraph crash case has been seen to wait without end.

mod compile;
mod durability_modes;
mod dyn_reads;
mod memory;
mod migrations;
mod node_status;
mod sqlite;
mod storage_faults;
mod store;
