//! What a failed run leaves on its thread. A run that fails after streaming part of an
//! answer keeps it: its turn's messages and the partial answer, marked
//! `interrupted: true, interrupted_reason: "failed"` with the run and the client's turn,
//! are written on the state the turn started from (the engine's
//! [`palgraph::CompiledGraph::settle_failed_turn`]), so history and a reconnect show them
//! and the next turn follows them. The graph's chat adapter says what is kept
//! ([`crate::ChatAdapter::failed_turn`]); a graph without one keeps nothing, and neither
//! does a run that streamed nothing: the next turn starts from the state before it.

use palgraph::checkpoint::Fence;
use palgraph::RunError;
use serde_json::{json, Map, Value};

use super::sink::Streamed;
use crate::contract::PartialAnswer;
use crate::graphs::GraphEntry;
use crate::store::Run;

/// The contract's metadata of an answer a failed run stopped writing.
pub(crate) fn failed_metadata(
    run: &Run,
    client_turn_id: Option<&str>,
    error: &str,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("interrupted".into(), true.into());
    m.insert("interrupted_reason".into(), "failed".into());
    m.insert("stream_run_id".into(), run.run_id.clone().into());
    m.insert(
        "client_turn_id".into(),
        client_turn_id.map_or(Value::Null, |c| c.into()),
    );
    m.insert("finished_reason".into(), "error".into());
    m.insert("error".into(), error.into());
    m
}

/// Settles `run`'s failed turn with the answer it had streamed; whether anything was
/// written.
pub(crate) async fn settle(
    entry: &GraphEntry,
    run: &Run,
    fence: &Fence,
    streamed: &Streamed,
    client_turn_id: Option<&str>,
    error: &str,
) -> Result<bool, RunError> {
    let Some(adapter) = &entry.chat else {
        return Ok(false);
    };
    let Some(failed) = entry.graph.state(&run.thread_id, None).await? else {
        return Ok(false);
    };
    if failed.metadata.get("run_id").and_then(Value::as_str) != Some(run.run_id.as_str()) {
        return Ok(false);
    }
    let base = match failed.metadata.get("turn_base").and_then(Value::as_str) {
        Some(b) => entry
            .graph
            .state(&run.thread_id, Some(b))
            .await?
            .map_or_else(|| json!({}), |s| s.values),
        None => json!({}),
    };
    let answer = PartialAnswer {
        message_id: streamed.message_id.clone(),
        text: streamed.text.clone(),
        metadata: failed_metadata(run, client_turn_id, error),
    };
    let Some(update) = adapter.failed_turn(&failed.values, &base, &answer) else {
        return Ok(false);
    };
    Ok(entry
        .graph
        .settle_failed_turn(&run.thread_id, &run.run_id, update, Some(fence))
        .await?
        .is_some())
}
