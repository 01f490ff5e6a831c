//! The `validate_inputs` node: does the action have what it needs?
//!
//! - compare needs at least two documents, summarize at least one: otherwise a
//!   `text_input` prompt says so and asks which (the answer is matched by title, like a
//!   typed answer at the doc resolver's prompts), until there are enough;
//! - audit needs a text to audit besides the mentions (the part after a colon, a quoted
//!   passage, or sentences that are not instructions): otherwise a `text_input` prompt asks
//!   for it, and the answer is the text. With no document resolved, the audit checks the
//!   text against the user's documents that match it best;
//! - compare drops web search, and says so in the answer: a comparison is between the
//!   user's documents.
//!
//! Attachments of the message (image and file content blocks) are not read: a notice in
//! the answer says which.
//!
//! A cancel (null) ends the turn politely with no action. Sets the web query the action
//! uses when web search stays on. Web search is on when the request or the intent resolver
//! turned it on, or the request asks about the present (the temporal keyword scan, which
//! the intent resolver also makes: a request with an explicit action skips that node).

use std::sync::Arc;

use palgraph::{NodeContext, NodeError};

use crate::conversation::request_text;
use crate::deps::{user_id, PalAssistDeps};
use crate::durable::library;
use crate::llm::requested_actions;
use crate::prompt::{Asker, Prompt, CANCELLED_RESPONSE};
use crate::state::{Action, AgentState, AgentStateUpdate, DocRef};
use crate::temporal::{asks_about_present, current_year};
use crate::text::{is_stopword, sentences, terms, tokens};
use crate::title_match::match_answer;

/// How many prompts this node may ask in one turn.
const MAX_PROMPTS: usize = 3;
/// An audit against documents found by content uses at most this many.
const AUDIT_DOCS: usize = 2;
/// ... those within this share of the best.
const AUDIT_NEAR_BEST: f64 = 0.75;

/// The note added to a comparison asked with web search on.
pub const COMPARE_DROPS_WEB: &str =
    "Web search is off for comparisons: a comparison works on your documents only.";

/// The one document in force whose title's words a request says most of, when it says at
/// least two of them and no other document's title as many.
fn described_by_title(
    request: &str,
    all: &std::sync::Arc<Vec<crate::library::Entry>>,
) -> Option<DocRef> {
    let asked: std::collections::HashSet<String> = terms(request).into_iter().collect();
    let versions = crate::versions::versions_of(all);
    let mut scored: Vec<(usize, &crate::library::Entry)> = all
        .iter()
        .filter(|d| !versions.is_superseded(&d.id))
        .map(|d| {
            let title: std::collections::HashSet<String> = terms(&d.title).into_iter().collect();
            (title.iter().filter(|t| asked.contains(*t)).count(), d)
        })
        .collect();
    scored.sort_by_key(|s| std::cmp::Reverse(s.0));
    match scored.as_slice() {
        [(best, d), rest @ ..] if *best >= 2 && rest.first().is_none_or(|(n, _)| n < best) => {
            Some(d.doc_ref())
        }
        _ => None,
    }
}

/// The text an audit message asks to check: what follows a colon, a quoted passage, or
/// the sentences that are not instructions; `None` when that leaves fewer than four
/// meaningful words.
pub(crate) fn audit_text(message: &str) -> Option<String> {
    let enough = |t: &str| terms(t).len() >= 4;
    // A colon that introduces, not one of a time of day ("at 10:15").
    let bytes = message.as_bytes();
    // The colon of the request ("Audit this: ...", "Check this against the policy: ...",
    // "Here is what happened: ..."), not one inside the practice ("attended by four
    // members: the Head of Trading, ..."): the words before it in its sentence ask, or
    // are few.
    let introduces = |i: usize| {
        // Its sentence's start: after a full stop and a space ("version 1.0" goes on).
        let start = [". ", "? ", "! ", "\n"]
            .iter()
            .filter_map(|end| message[..i].rfind(end).map(|at| at + end.len()))
            .max()
            .unwrap_or(0);
        let lead = &message[start..i];
        // Few words open the text only where nothing of the practice was told before
        // ("Please audit this. Here is what happened: ..."), not inside it ("... Kestrel
        // has four shareholders: the file shows ...").
        let told_before = sentences(&message[..start])
            .iter()
            .any(|s| requested_actions(s).is_empty());
        !requested_actions(lead).is_empty() || lead.split_whitespace().count() <= 6 && !told_before
    };
    let colon = message.match_indices(':').map(|(i, _)| i).find(|&i| {
        !(i > 0
            && bytes[i - 1].is_ascii_digit()
            && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
            && introduces(i)
    });
    if let Some(after) = colon.map(|i| &message[i + 1..]) {
        let after = after.trim();
        if enough(after) {
            return Some(after.to_string());
        }
    }
    for quote in ['"', '“'] {
        let close = if quote == '"' { '"' } else { '”' };
        if let Some((_, rest)) = message.split_once(quote) {
            if let Some((inner, _)) = rest.split_once(close) {
                if enough(inner) {
                    return Some(inner.trim().to_string());
                }
            }
        }
    }
    // A long sentence that names an action may tell of the practice ("the team reviewed
    // the file against the checklist"); one that asks is the request, unless it is all
    // there is.
    // "Please audit ...", "Could you check ...", "Audit how we ...": a request however long.
    let asks = |s: &str| {
        let first = tokens(s).into_iter().next().unwrap_or_default();
        matches!(
            first.as_str(),
            "please" | "can" | "could" | "would" | "kindly" | "audit" | "check" | "review"
        ) && !requested_actions(s).is_empty()
    };
    let told = |asking_too: bool| {
        sentences(message)
            .into_iter()
            .filter(|s| {
                requested_actions(s).is_empty()
                    || (tokens(s).len() > 12
                        && (asking_too || !s.trim_end().ends_with('?') && !asks(s)))
            })
            .collect::<Vec<String>>()
            .join(" ")
    };
    let kept = told(false);
    let kept = if enough(&kept) { kept } else { told(true) };
    enough(&kept).then_some(kept)
}

/// The message without the text it asks to audit: what the user asks, not what they
/// pasted. A message that asks for no audit, or has no text to audit, is returned whole.
pub(crate) fn instruction(message: &str) -> String {
    if !requested_actions(message).contains(&Action::Audit) {
        return message.to_string();
    }
    match audit_text(message) {
        Some(pasted) => message.replacen(&pasted, " ", 1),
        None => message.to_string(),
    }
}

/// The web query for a request about `docs`: the first document's short title, then the
/// request's meaningful words.
pub(crate) fn web_query(text: &str, docs: &[DocRef]) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(d) = docs.first() {
        let short = d
            .title
            .split([' ', '\u{a0}'])
            .take_while(|w| !w.starts_with('(') && *w != "—" && *w != "-")
            .collect::<Vec<_>>()
            .join(" ");
        parts.push(short);
    }
    for w in text.split_whitespace() {
        let bare = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '%');
        let lower = bare.to_lowercase();
        if !bare.is_empty() && !is_stopword(&lower) && requested_actions(&lower).is_empty() {
            parts.push(bare.to_string());
        }
    }
    parts.join(" ")
}

/// The question asked when a comparison has fewer than two documents.
pub(crate) fn compare_needs_two(docs: &[DocRef], miss: &str) -> String {
    match docs {
        [] => format!(
            "{miss}Compare needs at least 2 documents. Which documents should I compare?"
        ),
        [one, ..] => format!(
            "{miss}Compare needs at least 2 documents, and I have only \"{}\". Which other document should I compare it with?",
            one.title
        ),
    }
}

fn titles(docs: &[DocRef]) -> String {
    crate::extractive::join_titles(docs)
}

/// The `validate_inputs` node.
///
/// # Errors
/// No calling user in the run's context; a storage failure.
pub async fn validate_inputs(
    deps: Arc<PalAssistDeps>,
    state: Arc<AgentState>,
    ctx: NodeContext,
) -> Result<AgentStateUpdate, NodeError> {
    let owner = user_id(&ctx)?;
    let action = state.action.unwrap_or(Action::Inquire);
    let library = library(&deps, &ctx, &owner).await?;
    let mut docs: Vec<DocRef> = state
        .resolved_doc_ids
        .iter()
        .filter_map(|id| library.iter().find(|d| &d.id == id).cloned())
        .collect();
    let labels: Vec<String> = docs.iter().map(|d| d.title.clone()).collect();
    let text = request_text(&state, &labels);
    let mut notices: Vec<String> = crate::attachments::unread_notice(&state.messages)
        .into_iter()
        .collect();
    // A question about the present ("what is the current base rate?") may need the web; a
    // summary or an audit works on documents ("summarise the current policy": the version
    // in force), whatever year its words name.
    let mut web = state.enable_web_search
        || matches!(action, Action::Inquire | Action::Compare)
            && asks_about_present(&instruction(&text), current_year());
    let mut audited = None;
    let mut asker = Asker::new(&ctx);
    let mut missed: Option<String> = None;

    if action == Action::Compare && web {
        web = false;
        notices.push(COMPARE_DROPS_WEB.to_string());
    }
    // "What changed in the X policy?": a comparison of one document with its other version.
    let mut action = action;
    if action == Action::Compare && docs.len() == 1 {
        let all = deps.documents(&ctx, &owner).await?;
        let versions = crate::versions::versions_of(&all);
        let one = docs[0].clone();
        if let Some(older) = versions.previous(&one.id) {
            docs.insert(0, older);
        } else if let Some(newer) = versions.edition(&one.id).and_then(|e| e.superseded_by) {
            docs.push(newer);
        } else if crate::question::versions_asked(&instruction(&text))
            .contains(&crate::question::VersionAsk::Previous)
        {
            // "Was that different before?" of a document with no other version: there is
            // nothing to compare it with, and nothing to ask; it answers as it stands.
            action = Action::Inquire;
            notices.push(format!(
                "Your documents hold no earlier version of \"{}\", so I can't say whether this was different before.",
                one.title
            ));
        }
    }

    if action == Action::Summarize && docs.is_empty() {
        // "a rundown of our policy on preventing the facilitation of tax evasion": the one
        // document in force whose title the request says most of.
        let all = deps.documents(&ctx, &owner).await?;
        docs.extend(described_by_title(&instruction(&text), &all));
    }
    let needed = match action {
        Action::Compare => 2,
        Action::Summarize => 1,
        Action::Inquire | Action::Audit => 0,
    };
    while docs.len() < needed {
        if asker.asked() >= MAX_PROMPTS {
            return Ok(AgentStateUpdate::default()
                .cancelled_turn(&format!(
                    "I still don't have enough documents to {}. Mention them with @ and try again.",
                    action.as_str()
                ))
                .with_messages(asker.into_records()));
        }
        let miss = missed
            .take()
            .map(|m| format!("I couldn't find \"{m}\" among your documents. "))
            .unwrap_or_default();
        let message = match action {
            Action::Compare => compare_needs_two(&docs, &miss),
            _ => format!("{miss}Which document should I summarize?"),
        };
        let Some(answer) = asker.ask(&Prompt::text_input(message))? else {
            return Ok(AgentStateUpdate::default()
                .cancelled_turn(CANCELLED_RESPONSE)
                .with_messages(asker.into_records()));
        };
        let groups = match_answer(&answer, &library);
        if groups.is_empty() {
            missed = Some(answer);
        }
        for d in groups.into_iter().flatten().map(|s| s.doc) {
            if !docs.iter().any(|x| x.id == d.id) {
                docs.push(d);
            }
        }
    }

    if action == Action::Audit {
        audited = audit_text(&text);
        while audited.is_none() {
            if asker.asked() >= MAX_PROMPTS {
                return Ok(AgentStateUpdate::default()
                    .cancelled_turn("I still have no text to audit. Paste it after a colon, like \"Audit this: ...\".")
                    .with_messages(asker.into_records()));
            }
            let against = if docs.is_empty() {
                "your documents".to_string()
            } else {
                titles(&docs)
            };
            let message = format!("What text should I audit against {against}? Paste it here.");
            match asker.ask(&Prompt::text_input(message))? {
                None => {
                    return Ok(AgentStateUpdate::default()
                        .cancelled_turn(CANCELLED_RESPONSE)
                        .with_messages(asker.into_records()))
                }
                Some(answer) if !sentences(&answer).is_empty() => audited = Some(answer),
                Some(_) => {}
            }
        }
        if docs.is_empty() {
            // Nothing named: the versions in force whose rules the text speaks to most.
            let all = deps.documents(&ctx, &owner).await?;
            let versions = crate::versions::versions_of(&all);
            let current: Vec<&crate::library::Entry> = all
                .iter()
                .filter(|d| !versions.is_superseded(&d.id))
                .collect();
            let q = crate::question::Question {
                topic: audited.as_deref().map(terms).unwrap_or_default(),
                ..Default::default()
            };
            let digests: Vec<std::sync::Arc<crate::retrieval::digest::Digest>> =
                current.iter().map(|d| d.digest.clone()).collect();
            let ranked = crate::retrieval::rank_documents(&digests, &q);
            let best = ranked.first().map_or(0.0, |r| r.1);
            docs = if ranked.is_empty() {
                current
                    .iter()
                    .take(AUDIT_DOCS)
                    .map(|d| d.doc_ref())
                    .collect()
            } else {
                ranked
                    .into_iter()
                    .filter(|(_, s)| *s >= best * AUDIT_NEAR_BEST)
                    .take(AUDIT_DOCS)
                    .map(|(i, _)| current[i].doc_ref())
                    .collect()
            };
        }
    }

    let query = web.then(|| web_query(&text, &docs));
    let mut update = AgentStateUpdate::default();
    if Some(action) != state.action {
        update = update.action(Some(action));
    }
    let mut update = update
        .enable_web_search(web)
        .web_search_query(query)
        .audit_text(audited)
        .with_notices(notices)
        .with_messages(asker.into_records());
    let ids: Vec<String> = docs.iter().map(|d| d.id.clone()).collect();
    if ids != state.resolved_doc_ids {
        update = update.resolved_doc_ids(ids);
    }
    Ok(update)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audit_text_is_after_a_colon_in_quotes_or_not_an_instruction() {
        assert_eq!(
            audit_text("Summarize and audit this: Customer records are kept for three years.")
                .as_deref(),
            Some("Customer records are kept for three years.")
        );
        assert_eq!(
            audit_text("Audit \"We notify breaches within 96 hours of discovery\" please")
                .as_deref(),
            Some("We notify breaches within 96 hours of discovery")
        );
        assert_eq!(
            audit_text("We keep customer records for three years after closure. Audit that.")
                .as_deref(),
            Some("We keep customer records for three years after closure.")
        );
        // A time of day is no colon that introduces the text.
        assert_eq!(
            audit_text("Audit this. On Tuesday at 10:15 a customer complained and we replied at 11:50 the same day.")
                .as_deref(),
            Some("On Tuesday at 10:15 a customer complained and we replied at 11:50 the same day.")
        );
        // A colon inside the practice introduces a list of it, not the text.
        let text = "Please audit our monitoring for the quarter. The team reviewed each report daily. The April meeting was attended by four members: the Head of Trading in the chair and the Head of Dealing.";
        assert_eq!(
            audit_text(text).as_deref(),
            Some("The team reviewed each report daily. The April meeting was attended by four members: the Head of Trading in the chair and the Head of Dealing.")
        );
        assert_eq!(
            audit_text("Is this OK? Here is what happened: we paid the invoice in 40 days.")
                .as_deref(),
            Some("we paid the invoice in 40 days.")
        );
        assert_eq!(
            audit_text("Audit this against version 1.0 of the conflicts of interest policy: Tom declared it eight business days later.")
                .as_deref(),
            Some("Tom declared it eight business days later.")
        );
        assert_eq!(audit_text("Audit this policy"), None);
        assert_eq!(audit_text("Summarize and audit this"), None);
    }

    #[test]
    fn the_instruction_leaves_out_the_pasted_text() {
        assert_eq!(
            instruction(
                "Audit this against the AML policy: We report suspicious activity to the MLRO later."
            )
            .trim(),
            "Audit this against the AML policy:"
        );
        assert_eq!(
            instruction("How long are emails kept?"),
            "How long are emails kept?"
        );
    }

    #[test]
    fn compare_with_fewer_than_two_documents_says_it_needs_two() {
        let one = [DocRef {
            id: "a".into(),
            title: "AML Policy".into(),
        }];
        for docs in [&one[..], &[]] {
            let m = compare_needs_two(docs, "");
            assert!(m.starts_with("Compare needs at least 2 documents"), "{m}");
        }
        assert!(compare_needs_two(&one, "").contains("\"AML Policy\""));
        assert!(compare_needs_two(&one, "I couldn't find \"x\". ").starts_with("I couldn't"));
    }

    #[test]
    fn web_query_names_the_document_and_the_question() {
        let docs = [DocRef {
            id: "crr".into(),
            title: "Capital Requirements Regulation (CRR) — Excerpt".into(),
        }];
        assert_eq!(
            web_query("Is this still enforced?", &docs),
            "Capital Requirements Regulation still enforced"
        );
    }
}
