//! Extractive answers: what the offline resolver answers with, built only from the
//! documents' own sentences, each cited with its passage marker `[n]`:
//!
//! - [`summarize`](summarize::summarize): the most central sentences of each document
//!   (obligations and figures first);
//! - [`inquire`](inquire::inquire): the sentences of the best-matching passages;
//! - [`compare`](compare::compare): passages aligned side by side: changed (with the
//!   figures that moved), only in one, unchanged;
//! - [`audit`](audit::audit): each clause of the audited text compared with its
//!   best-matching requirement (figures, approvers, timing, modality): a possible gap,
//!   consistent, not verified, or not covered.

mod audit;
mod compare;
mod inquire;
mod obligations;
mod quantities;
mod summarize;

/// Matching audited clauses with requirements (shared with the `audit` node, which
/// chooses the passages the same way).
pub(crate) mod audit_match {
    pub(crate) use super::audit::{ranked_for, statements};
}

use std::collections::HashSet;

use crate::llm::AnswerRequest;
use crate::references;
use crate::state::{Action, DocRef};
use crate::text::{terms, topic_terms};

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

/// Notes on versions the answer's documents do not show together: an older document in
/// play whose newer version is not ("X, also among your documents, replaces it"), and, with
/// `newer_too`, a newer document in play whose older version is not. Empty when there is
/// nothing to say; otherwise starts with a blank line.
pub(crate) fn versions_note(request: &AnswerRequest, newer_too: bool) -> String {
    let in_play = |id: &str| request.documents.iter().any(|d| d.id == id);
    let mut out = String::new();
    for r in &request.versions {
        match (in_play(&r.newer.id), in_play(&r.older.id)) {
            (false, true) => {
                out.push_str(&format!(
                    "\n\nNote: {} has been replaced: {}, also among your documents, says \"{}\"",
                    r.older.title, r.newer.title, r.statement
                ));
            }
            (true, false) if newer_too => {
                out.push_str(&format!(
                    "\n\n{} replaces {}: \"{}\"",
                    r.newer.title, r.older.title, r.statement
                ));
            }
            _ => {}
        }
    }
    out
}

/// The topic a request narrows the answer to: its topic terms without the words of the
/// documents' titles, of the names it gives them, and document nouns ("standard").
pub(crate) fn focus_terms(request: &AnswerRequest) -> Vec<String> {
    let mut naming: HashSet<String> = request
        .documents
        .iter()
        .flat_map(|d| terms(&d.title))
        .collect();
    for r in references::find(&request.question) {
        if let references::Reference::Named { name, .. } = r {
            // Only a name that names one of the documents says where, not what.
            if !crate::title_match::match_name(&name, &request.documents).is_empty() {
                naming.extend(terms(&name));
            }
        }
    }
    topic_terms(&request.question)
        .into_iter()
        .filter(|t| !naming.contains(t))
        .filter(|t| !references::is_doc_noun_term(t))
        .collect()
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
        assert!(answer(&request(Action::Audit)).contains("no requirements"));
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
