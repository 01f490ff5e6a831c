//! The `doc_resolver` node: which of the user's documents is the request about?
//!
//! 1. **Mentions.** The TipTap JSON's mention nodes (nested ones too) and the tagged ids
//!    name documents outright; a tagged or mentioned document set names every document it
//!    holds (an unknown, someone else's or an empty set adds a notice). When the rest of the message names nothing else (a *pure
//!    mention* message), that is the answer, with no LLM call.
//! 2. **Registry.** Otherwise one LLM call gets the message and the conversation's registry
//!    of discussed documents; it returns the registry documents the message refers to
//!    ("that regulation", "it") and the names of any others. When a registry title
//!    appears in the message the call is the cheap one; otherwise it also sees the last 5
//!    messages, to tell what a pronoun means.
//! 3. **Similarity.** Those names, and titles written out in the message, are matched
//!    against all the user's documents with strsim (>= 0.85).
//!
//! Then: a name that fits several documents equally, or a registry guess of medium
//! confidence (0.5 to 0.8), raises a `doc_choice` prompt (the candidates and "all"); a
//! name that fits nothing, with nothing else found, raises a `text_input` prompt. A prompt
//! is answered with a candidate's id, "all", or typed text (matched again by title); a
//! cancel (null) ends the turn politely with no action. When the request names nothing at
//! all, inquire and audit fall back to retrieval: the user's documents whose content best
//! matches the request.
//!
//! Sets `resolved_doc_ids`, `inference_source`, `inference_confidence`, `unresolved_names`
//! and `suggested_doc_ids`. The node reports its status line itself, once, when it is done
//! ([`STATUS`] with `docs_found: [{id, title}]`; empty when the turn ended at a prompt): the
//! graph declares it with `reports_status`, so the line is not also streamed at the start.

use std::collections::VecDeque;
use std::sync::Arc;

use palgraph::{NodeContext, NodeError};
use serde_json::json;

use crate::conversation::{mentions, recent_lines, request_text};
use crate::deps::{user_id, PalAssistDeps};
use crate::documents::Document;
use crate::durable::{library, llm_call};
use crate::llm::{DocRequest, DocResolution, Reply, Usage};
use crate::passages::rank_documents;
use crate::prompt::{Asker, Prompt, ALL, CANCELLED_RESPONSE};
use crate::references::{self, Reference};
use crate::state::{Action, AgentState, AgentStateUpdate, DocRef, InferenceSource};
use crate::text::{asks_for_library, terms, topic_terms};
use crate::tiptap::MentionKind;
use crate::title_match::{
    match_answer, match_name, name_score, title_has_word, titles_in_text, Scored, TextWords,
    SIMILARITY,
};
use crate::validate_inputs::instruction;
use crate::versions::replacements;

/// The node's status line.
pub const STATUS: &str = "Finding documents...";

/// A registry guess at least this sure is taken.
pub const RESOLVED: f64 = 0.8;
/// A registry guess at least this sure (and below [`RESOLVED`]) is asked about.
pub const ASK: f64 = 0.5;
/// Retrieval keeps documents whose best passage covers at least this share of the request.
const RETRIEVAL_MIN: f64 = 0.3;
/// At most this many documents come from retrieval.
const RETRIEVAL_MAX: usize = 3;
/// How many prompts one turn's resolution may ask.
const MAX_PROMPTS: usize = 4;
/// How many earlier messages the LLM sees when no registry title is named.
const HISTORY: usize = 5;

mod sets;

/// Several documents one reference could mean.
struct Ambiguity {
    /// What the message said.
    name: String,
    candidates: Vec<DocRef>,
}

/// What the node has found so far.
#[derive(Default)]
pub(crate) struct Found {
    docs: Vec<DocRef>,
    sources: Vec<InferenceSource>,
    confidence: Option<f64>,
    suggested: Vec<String>,
}

impl Found {
    pub(crate) fn add(&mut self, doc: &DocRef, confidence: f64, source: InferenceSource) {
        if !self.docs.iter().any(|d| d.id == doc.id) {
            self.docs.push(doc.clone());
        }
        self.sources.push(source);
        self.confidence = Some(self.confidence.map_or(confidence, |c| c.min(confidence)));
    }

    fn has(&self, id: &str) -> bool {
        self.docs.iter().any(|d| d.id == id)
    }

    fn suggest(&mut self, docs: &[DocRef]) {
        for d in docs {
            if !self.suggested.contains(&d.id) {
                self.suggested.push(d.id.clone());
            }
        }
    }

    /// The source that says most about how the set was found: the first one that is not a
    /// plain mention.
    fn source(&self) -> Option<InferenceSource> {
        self.sources
            .iter()
            .copied()
            .find(|s| *s != InferenceSource::Explicit)
            .or_else(|| self.sources.first().copied())
    }
}

/// Whether a name is plural ("the data retention policies"): it then means every document
/// it fits.
fn names_several(name: &str) -> bool {
    name.split_whitespace()
        .last()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .is_some_and(|w| w.len() > 3 && crate::text::singular(&w) != w)
}

/// Whether every reference in the rest of a message is covered by the mentioned documents.
fn only_refers_to(refs: &[Reference], docs: &[DocRef]) -> bool {
    refs.iter().all(|r| match r {
        Reference::Named { name, strong: true } => docs
            .iter()
            .any(|d| name_score(name, &d.title) >= SIMILARITY),
        Reference::Kind { noun, .. } => docs.iter().any(|d| title_has_word(&d.title, noun)),
        Reference::Named { strong: false, .. }
        | Reference::Pronoun { .. }
        | Reference::Version { .. } => true,
    })
}

fn titles(docs: &[DocRef]) -> String {
    docs.iter()
        .map(|d| format!("\"{}\"", d.title))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The `doc_resolver` node.
///
/// # Errors
/// No calling user in the run's context; an LLM or storage failure.
pub async fn doc_resolver(
    deps: Arc<PalAssistDeps>,
    state: Arc<AgentState>,
    ctx: NodeContext,
) -> Result<AgentStateUpdate, NodeError> {
    let owner = user_id(&ctx)?;
    let library = library(&deps, &ctx, &owner).await?;
    let action = state.action.unwrap_or(Action::Inquire);
    let mut found = Found::default();
    let mut notices = Vec::new();
    let mut unresolved: Vec<String> = Vec::new();
    let mut usage = Usage::default();

    // Stage 1: mentions and tagged ids, documents then sets.
    let mut labels = Vec::new();
    let mut tagged: Vec<(String, Option<String>)> = Vec::new();
    let mut tagged_sets: Vec<(String, Option<String>)> = Vec::new();
    for m in mentions(&state) {
        match m.kind {
            MentionKind::Document => tagged.push((m.id, m.label)),
            MentionKind::Set => tagged_sets.push((m.id, m.label)),
        }
    }
    tagged.extend(state.explicit_doc_ids.iter().map(|id| (id.clone(), None)));
    tagged_sets.extend(state.tagged_set_ids.iter().map(|id| (id.clone(), None)));
    let mut seen = std::collections::HashSet::new();
    tagged.retain(|(id, _)| seen.insert(id.clone()));
    for (id, label) in tagged {
        match library.iter().find(|d| d.id == id) {
            Some(d) => {
                labels.push(d.title.clone());
                found.add(d, 1.0, InferenceSource::Explicit);
            }
            None => {
                let name = label.unwrap_or(id);
                notices.push(format!(
                    "\"{name}\" is not among your documents, so I left it out."
                ));
                unresolved.push(name);
            }
        }
    }
    sets::resolve(
        &deps,
        &ctx,
        &owner,
        tagged_sets,
        &mut sets::Resolution {
            found: &mut found,
            labels: &mut labels,
            notices: &mut notices,
            unresolved: &mut unresolved,
        },
    )
    .await?;
    let text = request_text(&state, &labels);
    // Documents are named in the request, not in a text pasted to be audited.
    let named_in = if action == Action::Audit {
        instruction(&text)
    } else {
        text.clone()
    };
    let refs = references::find(&named_in);

    let mut ambiguous: VecDeque<Ambiguity> = VecDeque::new();
    let mut unknown: Vec<String> = Vec::new();
    let pure_mention = !found.docs.is_empty() && only_refers_to(&refs, &found.docs);
    if !pure_mention {
        // Stage 2: the registry, through the LLM.
        let registry: Vec<DocRef> = state
            .registry()
            .into_iter()
            .filter(|d| library.iter().any(|l| l.id == d.id))
            .collect();
        let words = TextWords::of(&named_in);
        let names_registry = registry
            .iter()
            .any(|d| words.title_score(&d.title) >= SIMILARITY);
        let history = if names_registry {
            Vec::new()
        } else {
            recent_lines(&state, HISTORY)
        };
        let reply: Reply<DocResolution> = llm_call(
            &ctx,
            deps.llm.as_ref(),
            "resolve_documents",
            deps.llm.resolve_documents(&DocRequest {
                message: named_in.clone(),
                registry: registry.clone(),
                history,
            }),
        )
        .await?;
        usage.add(&reply.usage);
        let guess: Vec<DocRef> = registry
            .iter()
            .filter(|d| reply.value.doc_ids.contains(&d.id))
            .cloned()
            .collect();
        if !guess.is_empty() {
            if reply.value.confidence >= RESOLVED {
                for d in &guess {
                    found.add(d, reply.value.confidence, InferenceSource::Registry);
                }
            } else if reply.value.confidence >= ASK {
                ambiguous.push_back(Ambiguity {
                    name: String::new(),
                    candidates: guess,
                });
            }
        }

        // Stage 3: names and written-out titles against all the user's documents.
        for s in titles_in_text(&named_in, &library) {
            found.add(&s.doc, s.score, InferenceSource::Fuzzy);
        }
        for name in reply.value.unresolved_names {
            let matches: Vec<Scored> = match_name(&name, &library);
            match matches.as_slice() {
                [] => unknown.push(name),
                [one] => found.add(&one.doc, one.score, InferenceSource::Fuzzy),
                many if names_several(&name) => {
                    for s in many {
                        found.add(&s.doc, s.score, InferenceSource::Fuzzy);
                    }
                }
                many => ambiguous.push_back(Ambiguity {
                    name,
                    candidates: many.iter().map(|s| s.doc.clone()).collect(),
                }),
            }
        }
    }

    // Prompts.
    let mut asker = Asker::new(&ctx);
    loop {
        if asker.asked() >= MAX_PROMPTS {
            break;
        }
        if let Some(group) = ambiguous.pop_front() {
            if group.candidates.iter().any(|d| found.has(&d.id)) {
                continue;
            }
            found.suggest(&group.candidates);
            let message = if group.name.is_empty() {
                "Which of these documents do you mean?".to_string()
            } else {
                format!(
                    "\"{}\" could be several of your documents. Which one do you mean?",
                    group.name
                )
            };
            match asker.ask(&Prompt::doc_choice(message, &group.candidates))? {
                None => return Ok(cancelled(&ctx, &found, usage, asker)),
                Some(answer) if answer.eq_ignore_ascii_case(ALL) => {
                    for d in &group.candidates {
                        found.add(d, 1.0, InferenceSource::UserChoice);
                    }
                }
                Some(answer) => match group.candidates.iter().find(|d| d.id == answer) {
                    Some(d) => found.add(d, 1.0, InferenceSource::UserChoice),
                    None => read_typed(&answer, &library, &mut found, &mut ambiguous, &mut unknown),
                },
            }
            continue;
        }
        if found.docs.is_empty() {
            if let Some(name) = unknown.first().cloned() {
                let near: Vec<DocRef> = library
                    .iter()
                    .filter(|d| name_score(&name, &d.title) >= 0.3)
                    .cloned()
                    .collect();
                found.suggest(&near);
                let offer = if library.is_empty() {
                    "You have no documents yet.".to_string()
                } else {
                    format!("Your documents: {}.", titles(&library))
                };
                let message = format!(
                    "I couldn't find \"{name}\" among your documents. Which document do you mean? {offer}"
                );
                match asker.ask(&Prompt::text_input(message))? {
                    None => return Ok(cancelled(&ctx, &found, usage, asker)),
                    Some(answer) => {
                        unknown.clear();
                        read_typed(&answer, &library, &mut found, &mut ambiguous, &mut unknown);
                    }
                }
                continue;
            }
        }
        break;
    }
    for name in &unknown {
        if !found.docs.is_empty() {
            notices.push(format!(
                "I couldn't find \"{name}\" among your documents, so I left it out."
            ));
        }
        unresolved.push(name.clone());
    }
    if found.docs.is_empty() && !unknown.is_empty() {
        // The prompts ran out without finding anything.
        return Ok(cancelled(&ctx, &found, usage, asker)
            .response(format!(
                "I still couldn't find \"{}\" among your documents. Mention it with @, or check its title on the documents page.",
                unknown[0]
            ))
            .unresolved_names(unresolved));
    }

    // Nothing named at all: retrieval, for the actions that work from a request's content;
    // a question about the library itself is about every document.
    if found.docs.is_empty() && matches!(action, Action::Inquire | Action::Audit) {
        if action == Action::Inquire && asks_for_library(&text) {
            for d in &library {
                found.add(d, 1.0, InferenceSource::Retrieval);
            }
        } else {
            let docs = deps.documents(&ctx, &owner).await?;
            retrieve(&docs, &text, &mut found);
        }
    }

    report(&ctx, &found.docs);
    Ok(AgentStateUpdate::default()
        .resolved_doc_ids(found.docs.iter().map(|d| d.id.clone()).collect())
        .inference_source(found.source())
        .inference_confidence(found.confidence.unwrap_or(0.0))
        .unresolved_names(unresolved)
        .suggested_doc_ids(found.suggested.clone())
        .with_usage(&usage)
        .with_notices(notices)
        .with_messages(asker.into_records()))
}

/// The documents whose content best matches `text`; a newer version of a document found
/// (one that says it replaces it) comes with it, first.
fn retrieve(docs: &[Document], text: &str, found: &mut Found) {
    let mut query = topic_terms(text);
    if query.is_empty() {
        query = terms(text);
    }
    let ranked = rank_documents(docs, &query);
    let best = ranked.first().map(|r| r.1).unwrap_or(0.0);
    let versions = replacements(docs);
    for (doc, score) in ranked
        .iter()
        .filter(|(_, s)| *s >= RETRIEVAL_MIN && *s >= best * 0.5)
        .take(RETRIEVAL_MAX)
    {
        if let Some(r) = versions.iter().find(|r| r.older.id == doc.id) {
            found.add(&r.newer, *score, InferenceSource::Retrieval);
        }
        found.add(doc, *score, InferenceSource::Retrieval);
    }
}

/// Reads a typed answer to a document prompt: one match is taken, several are asked
/// about, none is remembered as unknown.
fn read_typed(
    answer: &str,
    library: &[DocRef],
    found: &mut Found,
    ambiguous: &mut VecDeque<Ambiguity>,
    unknown: &mut Vec<String>,
) {
    let groups = match_answer(answer, library);
    if groups.is_empty() {
        unknown.push(answer.to_string());
    }
    for group in groups {
        match group.as_slice() {
            [one] => found.add(&one.doc, 1.0, InferenceSource::UserChoice),
            many => ambiguous.push_front(Ambiguity {
                name: answer.to_string(),
                candidates: many.iter().map(|s| s.doc.clone()).collect(),
            }),
        }
    }
}

/// Reports the node's status line with the documents found.
fn report(ctx: &NodeContext, docs: &[DocRef]) {
    let docs_found: Vec<serde_json::Value> = docs
        .iter()
        .map(|d| json!({"id": d.id, "title": d.title}))
        .collect();
    ctx.status(STATUS, json!({ "docs_found": docs_found }));
}

/// The update of a turn ended at a prompt (its status line found nothing to work on).
fn cancelled(ctx: &NodeContext, found: &Found, usage: Usage, asker: Asker<'_>) -> AgentStateUpdate {
    report(ctx, &[]);
    AgentStateUpdate::default()
        .cancelled_turn(CANCELLED_RESPONSE)
        .suggested_doc_ids(found.suggested.clone())
        .with_usage(&usage)
        .with_messages(asker.into_records())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plural_names_mean_several_documents() {
        assert!(names_several("the data retention policies"));
        assert!(names_several("both regulations"));
        assert!(!names_several("the data retention policy"));
        assert!(!names_several("the gap analysis"));
    }
}
