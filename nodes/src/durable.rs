//! Durable calls: every LLM call, and the reads of the user's document list and tagged
//! document sets a node may re-enter with, are steps of the engine, so a node re-entered
//! after a prompt gets the result it saw instead of calling again. A paid model's calls are
//! recorded before they return (`ctx.step`: a crash does not pay for them twice); the
//! offline model's calls and the reads are memo steps (`ctx.memo`), stored only with a
//! prompt: repeating them after a crash costs nothing, and a turn that asks nothing writes
//! none of them. LLM calls also stop when the run is cancelled.

use std::future::Future;
use std::sync::Arc;

use palgraph::{NodeContext, NodeError};
use serde::{de::DeserializeOwned, Serialize};

use crate::deps::{store_error, PalAssistDeps};
use crate::documents::DocumentSet;
use crate::llm::{Llm, LlmError};
use crate::state::DocRef;

/// Runs an LLM call of `llm` as the step `name` (a memo step when `llm` is local).
pub(crate) async fn llm_call<T, F>(
    ctx: &NodeContext,
    llm: &dyn Llm,
    name: &str,
    call: F,
) -> Result<T, NodeError>
where
    T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
    F: Future<Output = Result<T, LlmError>>,
{
    let call = async {
        tokio::select! {
            result = call => result.map_err(LlmError::into_node_error),
            _ = ctx.cancelled() => Err(NodeError::cancelled()),
        }
    };
    llm_step(ctx, llm, name, call).await
}

/// Runs `body`, work of `llm`, as the step `name`: recorded before it returns, or a memo
/// step when `llm` is local.
pub(crate) async fn llm_step<T, F>(
    ctx: &NodeContext,
    llm: &dyn Llm,
    name: &str,
    body: F,
) -> Result<T, NodeError>
where
    T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
    F: Future<Output = Result<T, NodeError>>,
{
    if llm.is_local() {
        ctx.memo(name, body).await
    } else {
        ctx.step(name, body).await
    }
}

/// The user's documents (id and title), read once per node attempt chain and kept (stored
/// with a prompt), so the candidates of a prompt are the same when the node re-enters with
/// the answer. Shared with the run's snapshot of the library: a turn that asks nothing
/// neither copies nor serializes it.
pub(crate) async fn library(
    deps: &PalAssistDeps,
    ctx: &NodeContext,
    owner: &str,
) -> Result<Arc<Vec<DocRef>>, NodeError> {
    ctx.memo("list_documents", deps.titles(ctx, owner)).await
}

/// The document sets of `ids` (each the owner's set, or `None`), read once per node attempt
/// chain and kept like [`library`].
pub(crate) async fn document_sets(
    deps: &PalAssistDeps,
    ctx: &NodeContext,
    owner: &str,
    ids: &[String],
) -> Result<Vec<Option<DocumentSet>>, NodeError> {
    ctx.memo("read_document_sets", async {
        let mut sets = Vec::with_capacity(ids.len());
        for id in ids {
            sets.push(deps.docs.set(owner, id).await.map_err(store_error)?);
        }
        Ok::<_, NodeError>(sets)
    })
    .await
}
