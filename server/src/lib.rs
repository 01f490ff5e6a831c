//! The palgraph server: threads and runs over HTTP + SSE, the PalAssist chat contract, and
//! the LangGraph Agent Server shapes, on SQLite (embedded default) or Postgres.
//!
//! - [`store`]: the server's tables (threads, runs, run events) on both databases;
//! - [`runs`]: background execution: the run queue, workers with leases, live fan-out;
//! - [`api`]: the HTTP handlers;
//! - [`graphs`]: the graphs served and their assistants;
//! - [`app`]: wiring it together.

pub mod api;
pub mod app;
pub mod fault;
pub mod graphs;
pub mod listen;
mod retry;
pub mod runs;
pub mod store;
