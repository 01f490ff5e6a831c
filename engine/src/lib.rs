//! # palgraph: a durable graph engine for LLM agents
//!
//! A graph is a set of async nodes over a typed state. The engine runs it step by step in
//! the Pregel manner: the nodes due in a step run concurrently, their updates are folded into
//! the state by each field's reducer in a fixed order, and a checkpoint is written after every
//! step. A node can suspend the graph with `ctx.interrupt(payload)?`; a later
//! [`RunInput::Resume`] re-enters that node from its top, where `interrupt` now returns the
//! resume value. Side effects go through `ctx.step(..)`, which records its result so a
//! re-entry never repeats it. Every run streams its events.
//!
//! ## How a graph runs
//!
//! 1. **Input.** A new turn ([`RunInput::Turn`]) loads the thread's latest checkpoint, resets
//!    the transient fields, applies the input update, plans the entry nodes and writes an
//!    `input` checkpoint. A resume records the resume values against the checkpoint the graph
//!    stopped at. An input that cannot apply (a resume with nothing pending, an unknown
//!    interrupt id or `goto` node, ...) is refused before anything is written;
//!    [`CompiledGraph::check_input`] applies the same rules without running, so a server
//!    refuses a bad input before it accepts a run.
//! 2. **Steps.** The due tasks run (in parallel when there are several). A finished task's
//!    result is recorded as a *pending write* at once when it shares its step, so a crash or
//!    an interrupt in a sibling never re-runs it. When every task is done, the updates are
//!    applied in task order, the next tasks are planned from edges, routers, joins and
//!    `Command::goto`, and a `loop` checkpoint is written. Only then is each node reported
//!    finished.
//!    A router or a node's [`Command`] may return [`send::Send`]s: one task each, with its
//!    own input, in the same step (map-reduce). A node built with `defer()` waits until
//!    nothing else is due.
//! 3. **End.** The run ends when nothing is due ([`RunStatus::Completed`]), when a task waits
//!    at an interrupt or the run reaches a breakpoint (`interrupt_before` /
//!    `interrupt_after`, see [`run::breakpoint`]) ([`RunStatus::Interrupted`]), when it is
//!    cancelled ([`RunStatus::Cancelled`]), or with a [`RunError`].
//!
//! ## Example
//!
//! ```
//! use std::sync::Arc;
//! use palgraph::*;
//!
//! #[derive(Clone, Default, Debug, serde::Serialize, serde::Deserialize, State)]
//! struct Chat {
//!     #[state(reducer = AddMessages)]
//!     messages: Vec<Message>,
//!     #[state(transient)]
//!     approved: Option<bool>,
//! }
//!
//! async fn ask(state: Arc<Chat>, ctx: NodeContext) -> Result<ChatUpdate, NodeError> {
//!     // Suspends the first time; returns the resume value the second.
//!     let ok: bool = ctx.interrupt(serde_json::json!({"question": "Send it?"}))?;
//!     let answer = ctx.step("compose", async { Ok::<_, NodeError>(format!("sent: {ok}")) }).await?;
//!     Ok(ChatUpdate::default().approved(Some(ok)).messages(vec![Message::ai(answer)]))
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let mut g = StateGraph::<Chat>::new();
//! g.add_node("ask", ask).status("Asking...");
//! g.add_edge(START, "ask");
//! g.add_edge("ask", END);
//! let graph = g.compile()?;
//!
//! let turn = ChatUpdate::default().messages(vec![Message::human("hello")]);
//! let first = graph.invoke(RunConfig::new("t1"), RunInput::Turn(turn)).await?;
//! assert_eq!(first.interrupts().len(), 1);
//!
//! let done = graph.invoke(RunConfig::new("t1"), RunInput::Resume(Resume::value(true))).await?;
//! assert_eq!(done.status, RunStatus::Completed);
//! assert_eq!(done.state.messages.last().unwrap().content, "sent: true");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! ## Layout
//!
//! - [`state`], [`reducer`], [`messages`]: typed state, reducers, chat messages;
//! - [`graph`]: the builder, the compiler's checks, Mermaid, subgraphs
//!   ([`graph::subgraph`]);
//! - [`node`], [`context`]: what a node is and what it can do;
//! - [`run`]: inputs, outcomes, errors and the Pregel loop (`run::{input, admission,
//!   cursor, plan, step, task, executor, update}`), breakpoints ([`run::breakpoint`]);
//! - [`send`]: map-reduce with `Send`;
//! - [`entrypoint`]: the functional API (a workflow as one async function);
//! - [`interrupt`], [`cancel`], [`stream`]: interrupts, cancellation, events;
//! - [`history`]: state at a checkpoint, history, `update_state`, forks;
//! - [`observe`]: what each task did (timing, attempts, LLM calls), recorded in checkpoint
//!   metadata, and the hook LLM clients report their calls to;
//! - [`checkpoint`]: the storage trait and its backends;
//! - [`store`]: the long-term store (memory shared across threads) and its backends;
//! - `db`: opening SQLite and Postgres pools, and the migrations each crate declares for its
//!   tables (`db::migrate`).

#![warn(missing_docs)]

extern crate self as palgraph;

pub mod cancel;
pub mod checkpoint;
pub mod context;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub mod db;
pub mod dynamic;
pub mod entrypoint;
pub mod graph;
pub mod history;
pub mod interrupt;
pub mod messages;
pub mod metric;
pub mod node;
pub mod node_cache;
pub mod observe;
pub mod reducer;
pub mod run;
pub mod schema;
pub mod send;
pub mod state;
mod steps;
pub mod store;
pub mod stream;
#[cfg(feature = "testkit")]
pub mod testkit;

pub use cancel::{CancelReason, Cancellation};
pub use checkpoint::{Checkpointer, ListOptions, MemoryCheckpointer, PruneStrategy};
pub use context::NodeContext;
pub use graph::parent::ParentCommand;
pub use graph::{
    CompiledGraph, GraphError, StateGraph, Targets, DEFAULT_MAX_CONCURRENCY,
    DEFAULT_MAX_SENDS_PER_STEP, END, START,
};
pub use history::{StateSnapshot, TaskState};
pub use interrupt::{InterruptInfo, Resume};
pub use messages::{blocks_text, AddMessages, Message, MessageKind};
pub use node::{Command, ErrorKind, NodeError, RetryPolicy};
pub use node_cache::CachePolicy;
pub use palgraph_macros::State;
pub use reducer::{Append, MergeMap, Overwrite, ReduceError, Reducer};
pub use run::{
    Breakpoint, BreakpointWhen, Durability, NodeSet, RunConfig, RunError, RunInput, RunOutcome,
    RunStatus, RunStream,
};
pub use state::{FieldInfo, FieldSet, Lifetime, State, StateError, StateUpdate};
pub use stream::{Event, EventSink, RunEvent, StreamMode, StreamModes};

#[doc(hidden)]
pub mod __private {
    pub use serde;
    pub use serde_json;

    pub use crate::schema as schema_probe;

    /// Deserializes a present field (even `null`) as `Some`, so `{"x": null}` in an update
    /// sets an `Option` field to `None` instead of leaving it alone.
    pub fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
    where
        D: serde::Deserializer<'de>,
        T: serde::Deserialize<'de>,
    {
        T::deserialize(d).map(Some)
    }
}

/// The crate README's example, compiled and run as a doc test so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
