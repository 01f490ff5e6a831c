//! The `audit` node: every clause of the documents the practice is checked against (the
//! version in force unless the user named another), in document order, up to
//! `MAX_PASSAGES`; the answer checks each fact of the practice against the rules it
//! touches. The retrieval confidence is how well the practice's facts match the
//! documents' sentences.

use std::sync::Arc;

use palgraph::{NodeContext, NodeError};

use super::{run, Inputs, Prepared};
use crate::deps::PalAssistDeps;
use crate::passages::{number, Passage};
use crate::question::Question;
use crate::retrieval::{self, digest::Digest};
use crate::state::{Action, AgentState, AgentStateUpdate};

/// At most this many passages are given.
const MAX_PASSAGES: usize = 200;

fn prepare(input: &Inputs<'_>) -> Prepared {
    let text = input.state.audit_text.as_deref().unwrap_or(input.question);
    let analyses = input.docs;
    let digests: Vec<Arc<Digest>> = analyses.iter().map(|a| Arc::clone(&a.digest)).collect();
    let mut passages: Vec<Passage> = analyses
        .iter()
        .flat_map(|a| a.passages.iter().cloned())
        .take(MAX_PASSAGES)
        .collect();
    number(&mut passages);
    let scores: Vec<f64> = crate::docmodel::facts::read(text)
        .iter()
        .map(|f| {
            let q = Question {
                topic: f.terms.clone(),
                ..Question::default()
            };
            retrieval::rank(&digests, &q)
                .first()
                .map_or(0.0, |h| h.score)
        })
        .collect();
    let retrieval_confidence = if scores.is_empty() {
        0.0
    } else {
        scores.iter().sum::<f64>() / scores.len() as f64
    };
    Prepared {
        passages,
        retrieval_confidence,
    }
}

/// The `audit` node.
///
/// # Errors
/// No calling user in the run's context; an LLM or storage failure.
pub async fn audit(
    deps: Arc<PalAssistDeps>,
    state: Arc<AgentState>,
    ctx: NodeContext,
) -> Result<AgentStateUpdate, NodeError> {
    run(Action::Audit, &deps, &state, &ctx, prepare).await
}
