//! The engine's integration tests, one module per concern, in one binary (it links once):
//! the conformance suite on each checkpointer and store, durability modes, migrations,
//! storage faults, dynamic reads and node status, through the public API only.

mod compile;
mod durability_modes;
mod dyn_reads;
mod memory;
mod migrations;
mod node_status;
mod postgres;
mod sqlite;
mod storage_faults;
mod store;
