//! Graphs authored as Rust modules.
//!
//! - [`approval`]: a human-approval graph (draft, ask a person, publish or revise);
//! - [`essay`]: a workflow written as one function (the functional API, `entrypoint`);
//! - [`fanout`]: a parallel fan-out / fan-in graph (three reviewers, one summary);
//! - [`jokes`]: map-reduce with `Send` (LangGraph's joke generator);
//! - [`streaming`]: a node that streams its answer word by word and honours cancellation;
//! - [`supervisor`]: a supervisor with two sub-agent subgraphs (one asks a person);
//! - [`palassist`]: PalAssist, the compliance document assistant (its nodes live in
//!   `palgraph_nodes`), with what serves it: its chat adapter and its document routes;
//! - [`chat`]: how the example graphs speak the chat contract;
//! - [`eval`]: PalAssist's evaluation set, its runner and its scores (`palassist-eval`).
//!
//! Each module exposes its state type and a `graph()` builder; read them as the shortest
//! complete examples of the engine's API.

pub mod approval;
pub mod chat;
pub mod essay;
pub mod eval;
pub mod fanout;
pub mod jokes;
pub mod palassist;
pub mod streaming;
pub mod supervisor;
