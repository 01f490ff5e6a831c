//! The `inquire` node: the passages of the resolved documents that best match the
//! question (weighted term coverage), best first.

use std::sync::Arc;

use palgraph::{NodeContext, NodeError};

use super::{run, Prepared};
use crate::deps::PalAssistDeps;
use crate::documents::Document;
use crate::passages::{best, number, split};
use crate::state::{Action, AgentState, AgentStateUpdate};
use crate::text::{terms, topic_terms};

/// At most this many passages answer a question.
const PASSAGES: usize = 8;

fn prepare(docs: &[Document], _state: &AgentState, question: &str) -> Prepared {
    let mut query = topic_terms(question);
    if query.is_empty() {
        query = terms(question);
    }
    let mut passages = best(docs, &query, 0.0, PASSAGES);
    if passages.is_empty() {
        // Nothing matches: give the documents' opening passages, unranked.
        passages = docs.iter().flat_map(split).take(PASSAGES).collect();
        number(&mut passages);
    }
    let retrieval_confidence = passages.iter().map(|p| p.score).fold(0.0, f64::max);
    Prepared {
        passages,
        retrieval_confidence,
    }
}

/// The `inquire` node.
///
/// # Errors
/// No calling user in the run's context; an LLM or storage failure.
pub async fn inquire(
    deps: Arc<PalAssistDeps>,
    state: Arc<AgentState>,
    ctx: NodeContext,
) -> Result<AgentStateUpdate, NodeError> {
    run(Action::Inquire, &deps, &state, &ctx, prepare).await
}
