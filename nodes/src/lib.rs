//! # PalAssist's nodes
//!
//! PalAssist is palgraph's document assistant for compliance work. A user writes a message
//! (plain text, TipTap JSON with @mentions of documents, maybe an explicit action and a
//! web-search flag); the graph works out what to do and on which documents, asks the user
//! when it is unsure (PalAssist prompts, raised with `interrupt`), and answers from the
//! documents with citations.
//!
//! ```text
//! START -> intent_resolver -> doc_resolver -> validate_inputs -> summarize | inquire
//!                                                               | compare | audit
//!                                          -> format_response -> END
//! ```
//! (a turn cancelled at a prompt goes straight to `format_response`). The graph itself is
//! built in `palgraph_graphs::palassist`; this crate holds its parts:
//!
//! - [`AgentState`], [`ChatTurn`] and [`turn_input`]: the state and a turn's input;
//! - the nodes: [`intent_resolver`](intent_resolver::intent_resolver),
//!   [`doc_resolver`](doc_resolver::doc_resolver),
//!   [`validate_inputs`](validate_inputs::validate_inputs), the [`actions`], and
//!   [`format_response`](format_response::format_response); each takes
//!   [`PalAssistDeps`] and reads the calling user from `ctx.context()["user_id"]`;
//! - [`prompt`]: the prompts' payloads and answers;
//! - [`confidence`]: confidence levels (`high`, `medium`, `low`) and their thresholds;
//! - [`llm`]: the LLM (async-openai, or the offline resolver);
//! - [`documents`]: the per-user document store and the sample documents;
//! - [`tiptap`], [`temporal`]: mention walking and the temporal keyword scan.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use palgraph_nodes::{documents::{MemoryDocumentStore, seed_samples}, llm, PalAssistDeps};
//!
//! let docs = Arc::new(MemoryDocumentStore::new());
//! seed_samples(docs.as_ref(), "alice").await?;
//! let deps = PalAssistDeps::new(llm::from_env()?, docs);
//! // palgraph_graphs::palassist::graph(deps)? builds the graph.
//! # let _ = deps; Ok(()) }
//! ```

pub mod actions;
mod analysis;
mod attachments;
mod citations;
pub mod confidence;
mod conversation;
pub mod deps;
pub mod doc_resolver;
mod docmodel;
pub mod documents;
mod durable;
pub mod embeddings;
mod extractive;
pub mod format_response;
pub mod intent_resolver;
pub mod kept_libraries;
mod library;
pub mod llm;
pub mod memory;
mod passages;
pub mod prompt;
mod question;
mod references;
mod retrieval;
pub mod run_library;
pub mod state;
pub mod temporal;
mod text;
pub mod tiptap;
mod title_match;
pub mod validate_inputs;
mod version_words;
mod versions;
mod vocabulary;

pub use analysis::analyses_made;
pub use confidence::Confidence;
pub use deps::{user_id, PalAssistDeps, USER_ID};
pub use documents::{
    seed_samples, Document, DocumentError, DocumentSet, DocumentSetStore, DocumentStore,
    MemoryDocumentStore, PostgresDocumentStore, SqlDocumentStore, SqliteDocumentStore,
};
pub use llm::Llm;
pub use passages::Passage;
pub use prompt::{Prompt, PromptKind, PromptOption};
pub use state::{
    turn_input, Action, AgentState, AgentStateUpdate, AnswerKind, AnsweredBy, ChatTurn, Citation,
    DocRef, InferenceSource,
};
pub use versions::{Edition, Replacement};
