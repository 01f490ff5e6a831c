//! The palgraph server: graphs served over HTTP + SSE, with durable background runs, on
//! SQLite (embedded default) or Postgres (any number of replicas).
//!
//! - [`Server::builder`]: register graphs (and their chat adapters, routes and start-up
//!   work) and serve them: the chat contract, the LangGraph Agent Server API, the page and
//!   the OpenAPI document come with every graph;
//! - [`config`]: the settings, from flags, the environment or code; [`auth`]: who may call
//!   (JWTs, API keys, a trusted header), checked when the server starts;
//! - [`contract`]: the chat contract's requests and events, and [`ChatAdapter`], which maps
//!   a graph's state onto them;
//! - [`Extension`]: what a graph brings besides itself (start-up work on the database,
//!   routes of its own), written with what the crate root exports for handlers:
//!   [`AppState`] (the router's state, opaque), [`User`], [`ApiJson`], [`ApiError`] and
//!   [`iso`];
//! - [`store`]: the server's tables (threads, runs, run events) on both databases, for
//!   tools that read them;
//! - [`prometheus`] and [`metric`]: metrics at `GET /metrics` and their names;
//! - [`telemetry`]: logs, and traces over OTLP, set up in one line of `main`.
//!
//! The rest (the HTTP handlers, background execution with fenced leases, crons, the
//! listener's limits) is the server's own, reached through the builder and the settings.
//!
//! A graph of your own, served with the chat contract and the LangGraph API (settings from
//! the environment: `PALGRAPH_HOST`, `PALGRAPH_PORT`, `DATABASE_URL`, ...; see [`ServeConfig`]):
//!
//! ```no_run
//! use std::sync::Arc;
//! use palgraph::{AddMessages, Message, NodeContext, NodeError, State, StateGraph, END, START};
//! use palgraph_server::Server;
//!
//! #[derive(Clone, Default, Debug, serde::Serialize, serde::Deserialize, State)]
//! struct Chat {
//!     #[state(reducer = AddMessages)]
//!     messages: Vec<Message>,
//! }
//!
//! async fn echo(state: Arc<Chat>, _ctx: NodeContext) -> Result<ChatUpdate, NodeError> {
//!     let said = state.messages.last().map_or("", |m| m.content.as_str());
//!     Ok(ChatUpdate::default().messages(vec![Message::ai(format!("You said: {said}"))]))
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let mut graph = StateGraph::<Chat>::new();
//! graph.add_node("echo", echo);
//! graph.add_edge(START, "echo");
//! graph.add_edge("echo", END);
//! Server::builder()
//!     .chat_graph("echo", "Says back what you said", graph.compile()?)
//!     .serve_from_env()
//!     .await?;
//! # Ok(()) }
//! ```

mod api;
pub mod auth;
pub mod config;
pub mod contract;
mod crons;
mod database;
mod graphs;
mod listen;
pub mod metric;
pub mod prometheus;
mod retry;
mod runs;
mod server;
pub mod store;
pub mod telemetry;

#[cfg(test)]
mod layers;

/// The routing crates an [`Extension`]'s routes are written with, in the versions the
/// server is built with (`palgraph_server::aide::axum::ApiRouter`).
pub use aide;
pub use axum;

pub use api::error::{ApiError, ApiResult};
pub use api::extract::ApiJson;
pub use api::time::iso;
pub use api::web::{WebModule, WebModuleError};
pub use api::AppState;
pub use auth::{User, LOCAL_USER};
pub use config::ServeConfig;
pub use contract::{
    check_prompt_answer, ChatAdapter, HistoryMessage, MessagesChat, PartialAnswer, ResumeValue,
    TurnRequest,
};
pub use database::Database;
pub use graphs::GraphEntry;
pub use server::{
    shutdown_signal, BoxError, Extension, ServeContext, ServeError, Server, ServerBuilder,
};
