//! The `compare` node: every passage of each resolved document, in document order, so
//! they can be set side by side.

use std::sync::Arc;

use palgraph::{NodeContext, NodeError};

use super::{run, Inputs, Prepared};
use crate::deps::PalAssistDeps;
use crate::passages::number;
use crate::state::{Action, AgentState, AgentStateUpdate};

/// At most this many passages of one document are compared.
const PER_DOC: usize = 80;

fn prepare(input: &Inputs<'_>) -> Prepared {
    let docs = input.docs;
    let mut passages = Vec::new();
    for d in docs {
        passages.extend(d.passages.iter().take(PER_DOC).cloned());
    }
    number(&mut passages);
    let retrieval_confidence = if docs.len() >= 2 { 1.0 } else { 0.0 };
    Prepared {
        passages,
        retrieval_confidence,
    }
}

/// The `compare` node.
///
/// # Errors
/// No calling user in the run's context; an LLM or storage failure.
pub async fn compare(
    deps: Arc<PalAssistDeps>,
    state: Arc<AgentState>,
    ctx: NodeContext,
) -> Result<AgentStateUpdate, NodeError> {
    run(Action::Compare, &deps, &state, &ctx, prepare).await
}
