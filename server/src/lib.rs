//! The palgraph server: graphs served over HTTP + SSE, with durable background runs, on
//! SQLite (embedded default) or Postgres (any number of replicas).
//!
//! - [`Server::builder`]: register graphs (and their chat adapters, routes and start-up
//!   work) and serve them: the chat contract, the LangGraph Agent Server API, the page and
//!   the OpenAPI document come with every graph;
//! - [`config`]: the settings, from flags, the environment or code;
//! - [`store`]: the server's tables (threads, runs, run events) on both databases;
//! - [`runs`]: background execution: the run queue, workers with fenced leases, live
//!   fan-out;
//! - [`api`]: the HTTP handlers; [`listen`]: accepting connections with limits.

pub mod api;
pub mod config;
pub mod database;
pub mod graphs;
pub mod listen;
mod retry;
pub mod runs;
pub mod server;
pub mod store;

pub use api::auth::{User, LOCAL_USER};
pub use api::chat::{ChatAdapter, MessagesChat, PartialAnswer, TurnRequest};
pub use api::error::{ApiError, ApiResult};
pub use api::AppState;
pub use config::ServeConfig;
pub use database::Database;
pub use graphs::GraphEntry;
pub use server::{
    shutdown_signal, BoxError, Extension, ServeContext, ServeError, Server, ServerBuilder,
};
