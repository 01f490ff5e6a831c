//! The `audit` node: for each sentence of the audited text, the requirement passages that
//! best match it.

use std::sync::Arc;

use palgraph::{NodeContext, NodeError};

use super::{run, Inputs, Prepared};
use crate::deps::PalAssistDeps;
use crate::passages::{number, rank, split, Passage};
use crate::state::{Action, AgentState, AgentStateUpdate};
use crate::text::{sentences, terms};

/// Passages per sentence.
const PER_SENTENCE: usize = 2;
/// A passage must cover this share of a sentence's meaning to be given.
const MIN_SCORE: f64 = 0.2;

fn prepare(input: &Inputs<'_>) -> Prepared {
    let docs = input.docs;
    let text = input.state.audit_text.as_deref().unwrap_or(input.question);
    let all: Vec<Passage> = docs.iter().flat_map(split).collect();
    let mut chosen: Vec<Passage> = Vec::new();
    let mut best_scores = Vec::new();
    for sentence in sentences(text) {
        let mut ranked = all.clone();
        rank(&mut ranked, &terms(&sentence));
        ranked.sort_by(|a, b| b.score.total_cmp(&a.score));
        best_scores.push(ranked.first().map(|p| p.score).unwrap_or(0.0));
        for p in ranked
            .into_iter()
            .take(PER_SENTENCE)
            .filter(|p| p.score >= MIN_SCORE)
        {
            if !chosen
                .iter()
                .any(|c| c.doc_id == p.doc_id && c.text == p.text)
            {
                chosen.push(p);
            }
        }
    }
    number(&mut chosen);
    let retrieval_confidence = if best_scores.is_empty() {
        0.0
    } else {
        best_scores.iter().sum::<f64>() / best_scores.len() as f64
    };
    Prepared {
        passages: chosen,
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
