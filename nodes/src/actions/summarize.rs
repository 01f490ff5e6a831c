//! The `summarize` node: the whole of each resolved document (up to a limit per
//! document) is given for the summary.

use std::sync::Arc;

use palgraph::{NodeContext, NodeError};

use super::{run, Inputs, Prepared};
use crate::deps::PalAssistDeps;
use crate::passages::number;
use crate::state::{Action, AgentState, AgentStateUpdate};

/// At most this many passages of one document go into a summary.
const PER_DOC: usize = 60;

fn prepare(input: &Inputs<'_>) -> Prepared {
    let docs = input.docs;
    let mut passages = Vec::new();
    for d in docs {
        passages.extend(d.passages.iter().take(PER_DOC).cloned());
    }
    number(&mut passages);
    let retrieval_confidence = if passages.is_empty() { 0.0 } else { 1.0 };
    Prepared {
        passages,
        retrieval_confidence,
    }
}

/// The `summarize` node.
///
/// # Errors
/// No calling user in the run's context; an LLM or storage failure.
pub async fn summarize(
    deps: Arc<PalAssistDeps>,
    state: Arc<AgentState>,
    ctx: NodeContext,
) -> Result<AgentStateUpdate, NodeError> {
    run(Action::Summarize, &deps, &state, &ctx, prepare).await
}
