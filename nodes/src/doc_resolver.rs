//! The `doc_resolver` node: which of the user's documents is the request about?
//!
//! 1. **Mentions.** The TipTap JSON's mention nodes (nested ones too) and the tagged ids
//!    name documents outright; a tagged or mentioned document set names every document it
//!    holds (an unknown, someone else's or an empty set adds a notice). When the rest of the
//!    message names nothing else (a *pure mention* message), that is the answer, with no
//!    LLM call.
//! 2. **Registry.** Otherwise one LLM call gets the message and the conversation's registry
//!    of discussed documents; it returns the registry documents the message refers to
//!    ("that regulation", "it", "the newer one") and the names of any others. When a
//!    registry title appears in the message the call is the cheap one; otherwise it also
//!    sees the last 5 messages, to tell what a pronoun means.
//! 3. **Names.** Those names, and titles written out in the message, are matched against
//!    all the user's documents with strsim (>= 0.85), their version words left out
//!    (`names`). The versions of one document are one answer: the request gets the
//!    version it names ("v1.3", "the 2022 edition"), the one before the version in force
//!    ("the old policy"), else the one in force. A name that fits documents of several
//!    families equally is ambiguous; a name that fits nothing is not taken for a document
//!    when the request can be answered from the library's content.
//! 4. **Follow-ups.** A short message that names nothing ("and for New York?", "was that
//!    different before?") is about the documents of the answer before it.
//! 5. **Retrieval.** When the request names nothing, questions and audits go to the
//!    documents whose sentences answer best, among the versions in force (`retrieve`).
//!
//! Then: an ambiguous name, two documents of different families that answer equally, or a
//! registry guess of medium confidence (0.5 to 0.8), raise a `doc_choice` prompt (the
//! candidates and "all"); a summary or a comparison whose named document fits nothing
//! raises a `text_input` prompt. A prompt is answered with a candidate's id, "all", or
//! typed text (matched again by title); a cancel (null) ends the turn politely with no
//! action.
//!
//! Sets `resolved_doc_ids`, `inference_source`, `inference_confidence`, `unresolved_names`
//! and `suggested_doc_ids`. The node reports its status line itself, once, when it is done
//! ([`STATUS`] with `docs_found: [{id, title}]`; empty when the turn ended at a prompt): the
//! graph declares it with `reports_status`, so the line is not also streamed at the start.

use std::collections::VecDeque;
use std::sync::Arc;

use palgraph::{NodeContext, NodeError};
use serde_json::json;

use crate::conversation::{
    mentions, previous_answer_docs, previous_request, recent_lines, request_text,
};
use crate::deps::{user_id, PalAssistDeps};
use crate::durable::{library, llm_call};
use crate::llm::{DocRequest, DocResolution, Reply, Usage};
use crate::prompt::{Asker, Prompt, ALL, CANCELLED_RESPONSE};
use crate::question::{self, versions_asked};
use crate::references::{self, Reference};
use crate::state::{Action, AgentState, AgentStateUpdate, DocRef, InferenceSource};
use crate::text::{asks_for_library, tokens};
use crate::tiptap::MentionKind;
use crate::title_match::{
    name_score, title_has_word, titles_in_text, Scored, TextWords, SIMILARITY,
};
use crate::validate_inputs::instruction;
use crate::versions::versions_of;

/// The node's status line.
pub const STATUS: &str = "Finding documents...";

/// A registry guess at least this sure is taken.
pub const RESOLVED: f64 = 0.8;
/// A registry guess at least this sure (and below [`RESOLVED`]) is asked about.
pub const ASK: f64 = 0.5;
/// How many prompts one turn's resolution may ask.
const MAX_PROMPTS: usize = 4;
/// How many earlier messages the LLM sees when no registry title is named.
const HISTORY: usize = 5;

mod names;
mod prompts;
mod request_words;
mod retrieve;
mod sets;

use prompts::{read_typed, titles, Ambiguity};
use request_words::{
    at_the_time, goes_on, is_quoted, means_several, names_several, only_refers_to, points_back,
};

/// A follow-up that names no document has at most this many words.
const FOLLOW_UP_WORDS: usize = 10;

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
    let asks = versions_asked(&named_in);
    let documents = deps.documents(&ctx, &owner).await?;
    let versions = versions_of(&documents);

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
        // The registry documents it refers to, in the version the request asks for ("the
        // newer one", "the 2024 edition").
        let mut guess: Vec<DocRef> = Vec::new();
        // Only a standing word moves a pronoun to another version ("the newer one"); a
        // version the message names belongs to the title it writes out.
        let standing: Vec<question::VersionAsk> = asks
            .iter()
            .filter(|a| {
                matches!(
                    a,
                    question::VersionAsk::Current | question::VersionAsk::Previous
                )
            })
            .cloned()
            .collect();
        for d in registry
            .iter()
            .filter(|d| reply.value.doc_ids.contains(&d.id))
        {
            let picked = if standing.is_empty() {
                vec![d.clone()]
            } else {
                names::editions(&d.id, &versions, &standing, false)
            };
            for p in picked {
                if !guess.iter().any(|g| g.id == p.id) {
                    guess.push(p);
                }
            }
        }
        // "The newer version", "the older one" of the documents the conversation is about:
        // one family's version, whatever the model made of the words.
        let one_family = !standing.is_empty()
            && guess.len() == 1
            && reply.value.doc_ids.iter().all(|id| {
                registry
                    .iter()
                    .filter(|d| d.id == *id)
                    .all(|d| versions.same_family(&d.id, &guess[0].id))
            });
        if !guess.is_empty() {
            if reply.value.confidence >= RESOLVED || (one_family && reply.value.confidence >= ASK) {
                for d in &guess {
                    found.add(d, reply.value.confidence, InferenceSource::Registry);
                }
            } else if reply.value.confidence >= ASK {
                ambiguous.push_back(Ambiguity::discussed(guess));
            }
        }

        // Stage 3: titles written out, and names, against all the user's documents, a
        // family at a time.
        let written = titles_in_text(&named_in, &library);
        let mut by_family: Vec<Vec<Scored>> = Vec::new();
        for w in written {
            match by_family
                .iter_mut()
                .find(|g| versions.same_family(&g[0].doc.id, &w.doc.id))
            {
                Some(g) => g.push(w),
                None => by_family.push(vec![w]),
            }
        }
        for group in by_family {
            // Versions of one title all fit it: the request means several of them when it
            // says so ("both versions", "the sanctions procedures").
            let several = group.len() > 1 && means_several(&refs, &named_in, &group[0].doc.title);
            if let names::Fit::Found(docs) = names::fit(&group, &versions, &asks, several) {
                for (d, score) in docs {
                    found.add(&d, score, InferenceSource::Fuzzy);
                }
            }
        }
        let needs_documents = matches!(action, Action::Summarize | Action::Compare);
        for name in reply.value.unresolved_names {
            let several = names_several(&name);
            match names::resolve(&name, &library, &versions, &asks, several) {
                names::Fit::Found(docs) => {
                    for (d, score) in docs {
                        found.add(&d, score, InferenceSource::Fuzzy);
                    }
                }
                names::Fit::Ambiguous(candidates) => {
                    // "our record keeping policy for client communications and orders": the
                    // words around the name tell which of its documents is meant.
                    match told_apart(&named_in, &candidates) {
                        Some(d) => found.add(&d, 1.0, InferenceSource::Fuzzy),
                        None => ambiguous.push_back(Ambiguity::named(&name, candidates)),
                    }
                }
                names::Fit::Unknown if needs_documents || is_quoted(&named_in, &name) => {
                    unknown.push(name)
                }
                // A question or an audit is answered from the library's content: a name
                // that fits no title is not taken for a document.
                names::Fit::Unknown => unresolved.push(name),
            }
        }
    }

    // A kind with no name ("the policy", "that procedure") that no discussed document
    // fits: the user's documents of that kind, a family at a time; several of them are
    // narrowed by what the request asks, or asked about.
    if !pure_mention {
        for r in &refs {
            let Reference::Kind { noun, plural } = r else {
                continue;
            };
            if found.docs.iter().any(|d| title_has_word(&d.title, noun)) {
                continue;
            }
            let matches: Vec<Scored> = library
                .iter()
                .filter(|d| title_has_word(&d.title, noun))
                .map(|d| Scored {
                    doc: d.clone(),
                    score: SIMILARITY,
                })
                .collect();
            match names::fit(&matches, &versions, &asks, *plural) {
                names::Fit::Found(docs) => {
                    for (d, score) in docs {
                        found.add(&d, score, InferenceSource::Fuzzy);
                    }
                }
                names::Fit::Ambiguous(candidates) => {
                    let q = question::read(&text);
                    // Which of the kind the request's words are about ("how often is the
                    // insider list reviewed under the current policy, and was it different
                    // before?"): any action whose request says more than the kind.
                    let answers = !q.topic.is_empty();
                    let narrowed = if answers {
                        let docs: Vec<crate::library::Entry> = documents
                            .iter()
                            .filter(|d| candidates.iter().any(|c| c.id == d.id))
                            .cloned()
                            .collect();
                        match retrieve::retrieve(&docs, &versions, &q, &asks) {
                            retrieve::Retrieved::Docs(docs) => docs,
                            _ => Vec::new(),
                        }
                    } else {
                        Vec::new()
                    };
                    // "Our policy" is said of any rule document: when none of that kind
                    // answers, the one of the library that does is the one meant.
                    let narrowed = if narrowed.is_empty() && answers {
                        let r = if action == Action::Audit {
                            retrieve::by_facts(&documents, &versions, &text, &asks)
                        } else {
                            retrieve::retrieve(&documents, &versions, &q, &asks)
                        };
                        match r {
                            retrieve::Retrieved::Docs(docs) => docs,
                            _ => Vec::new(),
                        }
                    } else {
                        narrowed
                    };
                    if narrowed.is_empty() {
                        ambiguous.push_back(Ambiguity::named(&format!("the {noun}"), candidates));
                    }
                    for (d, score) in narrowed {
                        found.add(&d, score, InferenceSource::Retrieval);
                    }
                }
                names::Fit::Unknown => {}
            }
        }
    }

    // Stage 4: a short follow-up that names nothing is about the answer before it.
    // A request that points back at a document ("under that one", "in the same policy")
    // is about the answer's documents however long it is.
    let points_back = points_back(&text);
    let follow_up = tokens(&text).len() <= FOLLOW_UP_WORDS || points_back;
    if found.docs.is_empty()
        && ambiguous.is_empty()
        && unknown.is_empty()
        && follow_up
        && !asks_for_library(&text)
    {
        let before = previous_answer_docs(&state);
        let q = question::read(&text);
        if !before.is_empty()
            && (q.topic.len() <= 2 || !asks.is_empty() || points_back || goes_on(&text))
        {
            // "And under the older one?": the version of the answer's first document that
            // has versions, unless several are asked for ("the older versions", "both").
            let several = names_several(&text)
                || tokens(&text)
                    .iter()
                    .any(|w| matches!(w.as_str(), "both" | "them" | "all" | "ones" | "each"));
            // "Did that change?" after such an answer: that document's versions.
            let between_versions = !asks.is_empty() || action == Action::Compare;
            let before: Vec<String> = if !between_versions || several {
                before
            } else {
                let versioned = before
                    .iter()
                    .find(|id| versions.family(id).len() > 1)
                    .cloned();
                versioned.map_or(before, |id| vec![id])
            };
            for id in before {
                let Some(d) = library.iter().find(|d| d.id == id) else {
                    continue;
                };
                let picked = if asks.is_empty() {
                    vec![d.clone()]
                } else {
                    names::editions(&d.id, &versions, &asks, false)
                };
                for p in picked {
                    found.add(&p, 0.85, InferenceSource::Registry);
                }
            }
        }
    }

    // Stage 5: nothing named at all: retrieval, for the actions that answer from the
    // library's content; a question about the library itself is about every document.
    if found.docs.is_empty() && ambiguous.is_empty() && unknown.is_empty() {
        if action == Action::Inquire && asks_for_library(&text) {
            for d in library.iter() {
                found.add(d, 1.0, InferenceSource::Retrieval);
            }
        } else if matches!(action, Action::Inquire | Action::Audit) {
            let q = question::read_in_context(
                &text,
                previous_request(&state).as_deref(),
                &Default::default(),
            );
            let retrieved = match retrieve::retrieve(&documents, &versions, &q, &asks) {
                // A practice to audit speaks of its rules fact by fact.
                retrieve::Retrieved::Nothing if action == Action::Audit => {
                    retrieve::by_facts(&documents, &versions, &text, &asks)
                }
                r => r,
            };
            match retrieved {
                retrieve::Retrieved::Docs(docs) => {
                    for (d, score) in docs {
                        found.add(&d, score, InferenceSource::Retrieval);
                    }
                }
                retrieve::Retrieved::Ambiguous(candidates) if action == Action::Inquire => {
                    ambiguous.push_back(Ambiguity::answering(candidates));
                }
                retrieve::Retrieved::Ambiguous(candidates) => {
                    for d in candidates {
                        found.add(&d, retrieve::RETRIEVAL_MIN, InferenceSource::Retrieval);
                    }
                }
                retrieve::Retrieved::Nothing => {}
            }
        } else if action == Action::Compare {
            // "Did the new version change how often we re-check our custodians?": the
            // family whose text answers it, its version in force and the one before.
            let q = question::read(&text);
            if let retrieve::Retrieved::Docs(docs) =
                retrieve::retrieve(&documents, &versions, &q, &asks)
            {
                let pair = docs.first().and_then(|(d, _)| {
                    let current = versions.in_force(&d.id)?;
                    let before = versions.previous(&current.id)?;
                    Some([before, current])
                });
                for d in pair.into_iter().flatten() {
                    found.add(&d, retrieve::RETRIEVAL_MIN, InferenceSource::Retrieval);
                }
            }
        }
    }

    // "Against the policy in force at the time": for a practice it dates ("a misdirected
    // email in November 2024"), the version that was in force then.
    if let Some(date) = at_the_time(&text) {
        let dated: Vec<DocRef> = found
            .docs
            .iter()
            .map(|d| {
                versions
                    .in_force_on(&d.id, date)
                    .unwrap_or_else(|| d.clone())
            })
            .collect();
        found.docs = dated;
        found.docs.dedup_by(|a, b| a.id == b.id);
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
            match asker.ask(&Prompt::doc_choice(
                group.question.clone(),
                &group.candidates,
            ))? {
                None => return Ok(cancelled(&ctx, &found, usage, asker)),
                Some(answer) if answer.eq_ignore_ascii_case(ALL) => {
                    for d in &group.candidates {
                        found.add(d, 1.0, InferenceSource::UserChoice);
                    }
                }
                Some(answer) => match group.candidates.iter().find(|d| d.id == answer) {
                    Some(d) => found.add(d, 1.0, InferenceSource::UserChoice),
                    None => read_typed(
                        &answer,
                        &library,
                        &versions,
                        &mut found,
                        &mut ambiguous,
                        &mut unknown,
                    ),
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
                        read_typed(
                            &answer,
                            &library,
                            &versions,
                            &mut found,
                            &mut ambiguous,
                            &mut unknown,
                        );
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

/// The one candidate whose title says more of the request's words than any other's, when
/// its title's words are all in the request: the request's other words settle a name
/// several titles share.
fn told_apart(request: &str, candidates: &[DocRef]) -> Option<DocRef> {
    let said: std::collections::HashSet<String> = crate::text::terms(request).into_iter().collect();
    let mut scored: Vec<(usize, bool, &DocRef)> = candidates
        .iter()
        .map(|d| {
            let title: std::collections::HashSet<String> = crate::text::terms(&d.title)
                .into_iter()
                .filter(|t| {
                    t.chars().any(char::is_alphabetic) && !crate::version_words::is_version_word(t)
                })
                .collect();
            let n = title.iter().filter(|t| said.contains(*t)).count();
            (n, n == title.len() && n > 0, d)
        })
        .collect();
    scored.sort_by_key(|s| std::cmp::Reverse(s.0));
    match scored.as_slice() {
        [(best, true, d), (next, _, _), ..] if best > next => Some((*d).clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_around_a_shared_name_tell_its_document_apart() {
        let d = |id: &str, title: &str| DocRef {
            id: id.into(),
            title: title.into(),
        };
        let candidates = [
            d(
                "a",
                "Call Recording and Client Communications Record-Keeping Policy v3.0",
            ),
            d(
                "b",
                "Client Communications and Order Record Keeping Policy v2.1",
            ),
        ];
        let chosen = told_apart(
            "Please check this against our record keeping policy for client communications and orders.",
            &candidates,
        );
        assert_eq!(chosen.map(|c| c.id), Some("b".to_string()));
        assert!(told_apart("Check this against our record keeping policy.", &candidates).is_none());
    }
}
