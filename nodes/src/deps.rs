//! What PalAssist's nodes need from outside: an LLM and a document store
//! ([`PalAssistDeps`]), and the calling user, read from the run's context.

use std::sync::Arc;

use palgraph::{NodeContext, NodeError};

use crate::analysis::Analysis;
use crate::documents::{DocumentError, DocumentStore};
use crate::library::Entry;
use crate::llm::Llm;
use crate::run_library::RunLibraries;
use crate::state::DocRef;

/// PalAssist's dependencies.
#[derive(Clone)]
pub struct PalAssistDeps {
    /// The LLM (see [`crate::llm::from_env`]).
    pub llm: Arc<dyn Llm>,
    /// The document store.
    pub docs: Arc<dyn DocumentStore>,
    /// The library as each recent run saw it (see [`crate::run_library`]).
    libraries: Arc<RunLibraries>,
}

impl PalAssistDeps {
    /// Dependencies from an LLM and a store.
    pub fn new(llm: Arc<dyn Llm>, docs: Arc<dyn DocumentStore>) -> Self {
        PalAssistDeps {
            llm,
            docs,
            libraries: Arc::default(),
        }
    }

    /// The owner's documents (id and title), read once per run.
    pub(crate) async fn titles(
        &self,
        ctx: &NodeContext,
        owner: &str,
    ) -> Result<Arc<Vec<DocRef>>, NodeError> {
        self.libraries
            .titles(self.docs.as_ref(), ctx.run_id(), owner)
            .await
            .map_err(store_error)
    }

    /// The owner's documents (without their texts: see [`crate::library`]), read once
    /// per run.
    pub(crate) async fn documents(
        &self,
        ctx: &NodeContext,
        owner: &str,
    ) -> Result<Arc<Vec<Entry>>, NodeError> {
        self.libraries
            .documents(self.docs.as_ref(), ctx.run_id(), owner)
            .await
            .map_err(store_error)
    }

    /// The whole analyses of the owner's documents `entries`, which the turn quotes, in
    /// order (a document deleted meanwhile left out).
    pub(crate) async fn analyses(
        &self,
        owner: &str,
        entries: &[&Entry],
    ) -> Result<Vec<Arc<Analysis>>, NodeError> {
        crate::library::analyses(self.docs.as_ref(), owner, entries)
            .await
            .map_err(store_error)
    }
}

impl std::fmt::Debug for PalAssistDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PalAssistDeps")
            .field("llm", &self.llm.describe())
            .finish_non_exhaustive()
    }
}

/// The key of the calling user in the run's context (`RunConfig::context`).
pub const USER_ID: &str = "user_id";

/// The calling user: `ctx.context()["user_id"]`, a non-empty string.
///
/// # Errors
/// A fatal error naming the missing key: every PalAssist run must say whose documents it
/// may read.
pub fn user_id(ctx: &NodeContext) -> Result<String, NodeError> {
    ctx.context()
        .get(USER_ID)
        .and_then(serde_json::Value::as_str)
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(str::to_string)
        .ok_or_else(|| {
            NodeError::fatal(
                "PalAssist needs the calling user: run it with RunConfig::context(\"user_id\", <user id>)",
            )
        })
}

/// The node error for a document-store failure: the database being unreachable for now
/// stops the run without failing it (whoever runs it continues once the database is back);
/// other storage errors may be retried by the node's policy.
pub(crate) fn store_error(e: DocumentError) -> NodeError {
    let kind = match &e {
        DocumentError::Storage(s) if palgraph::db::is_transient(s) => {
            palgraph::ErrorKind::Unavailable
        }
        DocumentError::Storage(_) => palgraph::ErrorKind::Retryable,
        _ => palgraph::ErrorKind::Fatal,
    };
    NodeError::from_error(kind, e)
}
