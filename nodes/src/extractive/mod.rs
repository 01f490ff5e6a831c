//! Extractive answers: what the offline model answers with, built only from the
//! documents' own sentences, each cited with its passage marker `[n]`, and from what the
//! document model reads in them ([`crate::docmodel`]):
//!
//! - [`summarize`](summarize::summarize): each document's central obligations, section by
//!   section, with their figures and who approves;
//! - [`inquire`](inquire::inquire): the sentence that answers, from the version in force,
//!   and what another version of the document says on the same point when it differs;
//! - [`compare`](compare::compare): two versions clause by clause: every value that
//!   changed (old → new), what was added and removed, nothing that stayed the same; or two
//!   documents on a topic side by side;
//! - [`audit`](audit::audit): each fact of the described practice checked against the
//!   rules it touches: meets, breaks or not verifiable.

mod audit;
mod compare;
mod inquire;
mod summarize;

use crate::llm::{AnswerRequest, ChatRole};
use crate::question::{self, Question};
use crate::state::{Action, DocRef};
use crate::versions::Edition;

/// The extractive answer to `request`.
pub(crate) fn answer(request: &AnswerRequest) -> String {
    let mut out = String::new();
    if request.web_search_query.is_some() {
        out.push_str(
            "Web search is not available without an LLM configured, so this answer relies on your documents only; check the current status with the issuing authority.\n\n",
        );
    }
    out.push_str(&match request.action {
        Action::Summarize => summarize::summarize(request),
        Action::Inquire => inquire::inquire(request),
        Action::Compare => compare::compare(request),
        Action::Audit => audit::audit(request),
    });
    out.trim_end().to_string()
}

/// Where `doc` stands among its versions, when the request says.
pub(crate) fn edition<'a>(request: &'a AnswerRequest, doc: &str) -> Option<&'a Edition> {
    request.editions.iter().find(|e| e.doc.id == doc)
}

/// A document's title, with its version when it shares the title with another version
/// ("Anti-Fraud and Corruption Policy (v2)").
pub(crate) fn titled(request: &AnswerRequest, doc: &DocRef) -> String {
    let shared = request
        .editions
        .iter()
        .any(|e| e.doc.id != doc.id && e.doc.title == doc.title);
    match edition(request, &doc.id).and_then(|e| e.label.as_deref()) {
        Some(label) if shared => format!("{} ({label})", doc.title),
        _ => doc.title.clone(),
    }
}

/// A document's name for an answer: its title in bold, and its version and standing when
/// it has other versions ("**Policy v2.0** (in force)", "**Procedure (2022 edition)**
/// (superseded by ...)").
pub(crate) fn named(request: &AnswerRequest, doc: &DocRef) -> String {
    let mut out = format!("**{}**", doc.title);
    let Some(e) = edition(request, &doc.id) else {
        return out;
    };
    let label = e.label.as_deref().filter(|l| {
        !doc.title
            .to_lowercase()
            .contains(&l.trim_start_matches('v').to_lowercase())
    });
    let standing = match (&e.superseded_by, &e.supersedes) {
        (Some(newer), _) => Some(format!("superseded by {}", titled(request, newer))),
        (None, Some(_)) => Some("in force".to_string()),
        (None, None) => None,
    };
    match (label, standing) {
        (Some(l), Some(s)) => out.push_str(&format!(" ({l}, {s})")),
        (Some(l), None) => out.push_str(&format!(" ({l})")),
        (None, Some(s)) => out.push_str(&format!(" ({s})")),
        (None, None) => {}
    }
    out
}

/// What the request asks, its topic without the words that name its documents (their
/// titles, the names it gives them) and document nouns; a follow-up that says little of its
/// own ("and for New York?", "was that different before?") keeps the topic of the user's
/// previous message beside it.
pub(crate) fn focus(request: &AnswerRequest) -> Question {
    let previous = request
        .history
        .iter()
        .rev()
        .find(|l| l.role == ChatRole::User)
        .map(|l| l.content.as_str());
    let mut docs = request.documents.clone();
    docs.extend(request.editions.iter().map(|e| e.doc.clone()));
    question::for_documents(&request.question, &docs, previous)
}

/// "A", "A and B", "A, B and C".
pub(crate) fn join_titles(docs: &[DocRef]) -> String {
    let titles: Vec<&str> = docs.iter().map(|d| d.title.as_str()).collect();
    match titles.as_slice() {
        [] => "your documents".to_string(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(action: Action) -> AnswerRequest {
        AnswerRequest {
            action,
            question: "What is the retention period?".into(),
            documents: vec![],
            versions: vec![],
            editions: vec![],
            passages: vec![],
            retrieval_confidence: 0.0,
            audit_text: None,
            web_search_query: None,
            history: vec![],
        }
    }

    #[test]
    fn with_no_documents_every_action_says_so() {
        assert!(answer(&request(Action::Inquire)).contains("found nothing"));
        assert!(answer(&request(Action::Compare)).contains("no documents"));
        assert!(answer(&request(Action::Audit)).contains("no rules"));
        assert!(answer(&request(Action::Summarize)).contains("no text"));
    }

    #[test]
    fn web_search_offline_is_reported_first() {
        let mut r = request(Action::Inquire);
        r.web_search_query = Some("q".into());
        assert!(answer(&r).starts_with("Web search is not available"));
    }

    #[test]
    fn titles_join_like_prose() {
        let d = |t: &str| DocRef {
            id: t.into(),
            title: t.into(),
        };
        assert_eq!(join_titles(&[d("A")]), "A");
        assert_eq!(join_titles(&[d("A"), d("B"), d("C")]), "A, B and C");
    }
}
