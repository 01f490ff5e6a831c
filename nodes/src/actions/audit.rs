//! The `audit` node: the requirement passages the audited text is checked against. Short
//! documents are given whole (every requirement can be weighed against every clause);
//! longer ones give, for each clause of the audited text, the passages that best match it
//! (a replaced document's below its newer version's).

use std::sync::Arc;

use palgraph::{NodeContext, NodeError};

use super::{run, Inputs, Prepared};
use crate::analysis::analysis;
use crate::deps::PalAssistDeps;
use crate::extractive::audit_match;
use crate::passages::{number, Passage};
use crate::state::{Action, AgentState, AgentStateUpdate};

/// Documents with at most this many passages in all are given whole.
const WHOLE: usize = 60;
/// Passages per clause.
const PER_CLAUSE: usize = 3;
/// A passage must cover this share of a clause's meaning to be given.
const MIN_SCORE: f64 = 0.2;

fn prepare(input: &Inputs<'_>) -> Prepared {
    let text = input.state.audit_text.as_deref().unwrap_or(input.question);
    let all: Vec<Passage> = input
        .docs
        .iter()
        .flat_map(|d| analysis(d).passages.clone())
        .collect();
    let documents: Vec<_> = input.docs.iter().map(|d| d.doc_ref()).collect();
    let mut chosen: Vec<Passage> = Vec::new();
    let mut best_scores = Vec::new();
    for clause in audit_match::statements(text) {
        let ranked = audit_match::ranked_for(&clause, &all, input.versions, &documents);
        best_scores.push(ranked.first().map(|p| p.score).unwrap_or(0.0));
        for p in ranked
            .into_iter()
            .take(PER_CLAUSE)
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
    if all.len() <= WHOLE {
        chosen = all;
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
