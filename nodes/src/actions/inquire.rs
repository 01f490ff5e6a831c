//! The `inquire` node: the passages of the resolved documents whose sentences best answer
//! the question (`retrieval`: the question's terms weighted by rarity, the kind of
//! value it asks for), best first; then, for each resolved document that has other versions
//! in the library, the best-matching passages of the version next to it (the one it
//! replaced, or the one that replaced it), so the answer can say what changed. A question
//! about the user's library ("Which documents do I have?") gets each document's opening
//! passage.

use std::sync::Arc;

use palgraph::{NodeContext, NodeError};

use super::{run, Inputs, Prepared};
use crate::analysis::{analysis, Analysis};
use crate::deps::PalAssistDeps;
use crate::passages::{number, Passage};
use crate::question::Question;
use crate::retrieval;
use crate::state::{Action, AgentState, AgentStateUpdate, InferenceSource};
use crate::text::asks_for_library;

/// At most this many passages of the resolved documents answer a question.
const PASSAGES: usize = 8;
/// At most this many passages of another version of one of them.
const OTHER_VERSION: usize = 3;

/// The best clauses of `analyses` for `q`, each once, scored by its best sentence.
fn best_clauses(analyses: &[Arc<Analysis>], q: &Question, limit: usize) -> Vec<Passage> {
    let mut out: Vec<Passage> = Vec::new();
    for hit in retrieval::rank(analyses, q) {
        let p = &analyses[hit.doc].passages[hit.clause];
        if out.iter().any(|c| c.doc_id == p.doc_id && c.text == p.text) {
            continue;
        }
        out.push(Passage {
            score: hit.score,
            ..p.clone()
        });
        if out.len() >= limit {
            break;
        }
    }
    out
}

fn prepare(input: &Inputs<'_>) -> Prepared {
    if asks_for_library(input.question) {
        let mut passages: Vec<Passage> = input
            .docs
            .iter()
            .filter_map(|d| analysis(d).passages.first().cloned())
            .map(|mut p| {
                p.score = 1.0;
                p
            })
            .collect();
        number(&mut passages);
        let retrieval_confidence = if passages.is_empty() { 0.0 } else { 1.0 };
        return Prepared {
            passages,
            retrieval_confidence,
        };
    }
    let q = input.asked();
    let analyses: Vec<Arc<Analysis>> = input.docs.iter().map(analysis).collect();
    let mut passages = best_clauses(&analyses, &q, PASSAGES);
    tracing::trace!(
        topic = ?q.topic,
        expects = ?q.expects,
        context = ?q.context,
        best = ?passages.iter().take(4).map(|p| (p.score, &p.text)).collect::<Vec<_>>(),
        "question read and passages ranked"
    );
    let retrieval_confidence = passages.first().map_or(0.0, |p| p.score);
    if passages.is_empty() {
        // Nothing matches: the documents' openings, unranked, say what they are.
        passages = analyses
            .iter()
            .filter_map(|a| a.passages.first().cloned())
            .collect();
    }
    // The version next to each resolved document, on the same question: the one in force
    // after a superseded one; the one before the version in force, unless the user chose
    // this version (mentioned it, or named a version).
    let chosen = input.state.inference_source == Some(InferenceSource::Explicit)
        || crate::question::versions_asked(input.question)
            .iter()
            .any(|a| {
                matches!(
                    a,
                    crate::question::VersionAsk::Named(_) | crate::question::VersionAsk::Year(_)
                )
            });
    for d in input.docs {
        let e = input.versions.edition(&d.id);
        let next = e.and_then(|e| match (e.superseded_by, e.supersedes) {
            (Some(newer), _) => Some(newer),
            (None, Some(older)) if !chosen => Some(older),
            _ => None,
        });
        let Some(other) = next.filter(|o| !input.docs.iter().any(|x| x.id == o.id)) else {
            continue;
        };
        let Some(doc) = input.library.iter().find(|x| x.id == other.id) else {
            continue;
        };
        passages.extend(best_clauses(&[analysis(doc)], &q, OTHER_VERSION));
    }
    number(&mut passages);
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
