//! palgraph end to end, in one test binary: each module starts the real `palgraph` binary
//! (or serves a graph of its own in process) on a free port, on a fresh SQLite file or a
//! fresh Postgres schema, and talks to it as its users do: over HTTP and SSE, with the
//! official LangGraph SDKs, in a browser, with its own Postgres cluster to restart. One
//! binary links once; `cargo test --test e2e <module>::` runs one module's tests.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;
#[path = "../nodes/tests/fake_embeddings/mod.rs"]
mod fake_embeddings;
#[path = "../nodes/tests/fake_openai/mod.rs"]
mod fake_openai;

mod api_edges;
mod auth_settings;
mod bounded_history;
mod browser;
mod chat;
mod chat_contract;
mod chat_lifecycle;
mod crash_flush;
mod crons;
mod document_sets;
mod durability;
mod fanout;
mod fault_shapes;
mod hardening;
mod limits;
mod logs;
mod metrics;
mod multitask;
mod openapi;
mod outages;
mod own_graph;
mod run_events;
mod runs_api;
mod sdk_js;
mod sdk_python;
mod store_api;
mod thread_ttl;
mod traces;
mod upgrade;
