//! The `inquire` node: the passages of the resolved documents that best match the
//! question (weighted term coverage), best first; a passage of a document replaced by
//! another one in play ranks below the newer version's. A question about the user's
//! library ("Which documents do I have?") gets each document's opening passage.

use std::collections::HashSet;
use std::sync::Arc;

use palgraph::{NodeContext, NodeError};

use super::{run, Inputs, Prepared};
use crate::analysis::analysis;
use crate::deps::PalAssistDeps;
use crate::documents::Document;
use crate::passages::{best, number, Passage};
use crate::references::{self, Reference};
use crate::state::DocRef;
use crate::state::{Action, AgentState, AgentStateUpdate};
use crate::text::{asks_for_library, terms, topic_terms};
use crate::title_match::match_name;
use crate::versions::newer_among;

/// At most this many passages answer a question.
const PASSAGES: usize = 8;
/// A replaced document's passages count for this share of their match.
const REPLACED: f64 = 0.5;

/// The question's topic terms, without the words that name one of the documents when
/// others remain ("under the data retention policy 2023, how long are calls kept?" asks
/// about calls; "what is the data retention period?" asks about retention). Empty for a
/// question about the documents themselves ("Is it still in force?").
pub(crate) fn query_terms(question: &str, docs: &[Document]) -> Vec<String> {
    let query = topic_terms(question);
    let titles: Vec<DocRef> = docs.iter().map(Document::doc_ref).collect();
    let mut naming: HashSet<String> = HashSet::new();
    for r in references::find(question) {
        if let Reference::Named { name, .. } = r {
            if !match_name(&name, &titles).is_empty() {
                naming.extend(terms(&name));
            }
        }
    }
    let topical: Vec<String> = query
        .iter()
        .filter(|t| !naming.contains(*t))
        .cloned()
        .collect();
    if topical.is_empty() {
        query
    } else {
        topical
    }
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
    let docs = input.docs;
    let query = query_terms(input.question, docs);
    let mut passages = best(docs, &query, 0.0, PASSAGES);
    if passages.is_empty() {
        // Nothing matches: give the documents' opening passages, unranked.
        passages = docs
            .iter()
            .flat_map(|d| {
                analysis(d)
                    .passages
                    .iter()
                    .take(PASSAGES)
                    .cloned()
                    .collect::<Vec<_>>()
            })
            .take(PASSAGES)
            .collect();
        number(&mut passages);
    }
    let retrieval_confidence = passages.iter().map(|p| p.score).fold(0.0, f64::max);
    let in_play: Vec<_> = docs.iter().map(Document::doc_ref).collect();
    for p in &mut passages {
        if newer_among(input.versions, &p.doc_id, &in_play).is_some() {
            p.score *= REPLACED;
        }
    }
    passages.sort_by(|a, b| b.score.total_cmp(&a.score));
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
