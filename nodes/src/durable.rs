//! Durable calls: every LLM call, and the reads of the user's document list and tagged
//! document sets a node may re-enter with, goes through the engine's `ctx.step`, so a node re-entered after a prompt
//! (or a crash) gets the recorded result instead of calling again. LLM calls also stop when
//! the run is cancelled.

use std::future::Future;

use palgraph::{NodeContext, NodeError};
use serde::{de::DeserializeOwned, Serialize};

use crate::deps::{store_error, PalAssistDeps};
use crate::documents::DocumentSet;
use crate::llm::LlmError;
use crate::state::DocRef;

/// Runs an LLM call as the durable step `name`.
pub(crate) async fn llm_call<T, F>(ctx: &NodeContext, name: &str, call: F) -> Result<T, NodeError>
where
    T: Serialize + DeserializeOwned,
    F: Future<Output = Result<T, LlmError>>,
{
    ctx.step(name, async {
        tokio::select! {
            result = call => result.map_err(LlmError::into_node_error),
            _ = ctx.cancelled() => Err(NodeError::cancelled()),
        }
    })
    .await
}

/// The user's documents (id and title), read once per node attempt chain and recorded, so
/// the candidates of a prompt are the same when the node re-enters with the answer.
pub(crate) async fn library(
    deps: &PalAssistDeps,
    ctx: &NodeContext,
    owner: &str,
) -> Result<Vec<DocRef>, NodeError> {
    ctx.step("list_documents", async {
        deps.docs.titles(owner).await.map_err(store_error)
    })
    .await
}

/// The document sets of `ids` (each the owner's set, or `None`), read once per node attempt
/// chain and recorded like [`library`].
pub(crate) async fn document_sets(
    deps: &PalAssistDeps,
    ctx: &NodeContext,
    owner: &str,
    ids: &[String],
) -> Result<Vec<Option<DocumentSet>>, NodeError> {
    ctx.step("read_document_sets", async {
        let mut sets = Vec::with_capacity(ids.len());
        for id in ids {
            sets.push(deps.docs.set(owner, id).await.map_err(store_error)?);
        }
        Ok::<_, NodeError>(sets)
    })
    .await
}
