//! The extractive answer to a question: the best-ranked passages (those within reach of
//! the best score), each cut to the sentences that carry the question's terms.

use std::fmt::Write as _;

use crate::llm::AnswerRequest;
use crate::passages::Passage;
use crate::state::DocRef;
use crate::text::{sentences, terms, topic_terms};

/// Passages scoring at least this share of the best one are used.
const NEAR_BEST: f64 = 0.6;
/// At most this many passages.
const MAX_PASSAGES: usize = 3;

pub(crate) fn inquire(request: &AnswerRequest) -> String {
    let query = topic_terms(&request.question);
    let best = request.passages.iter().map(|p| p.score).fold(0.0, f64::max);
    if best <= 0.0 {
        return nothing_matches(request);
    }
    let mut chosen: Vec<&Passage> = request
        .passages
        .iter()
        .filter(|p| p.score >= best * NEAR_BEST)
        .collect();
    chosen.sort_by(|a, b| b.score.total_cmp(&a.score));
    chosen.truncate(MAX_PASSAGES);
    let mut sources: Vec<DocRef> = Vec::new();
    for p in &chosen {
        if !sources.iter().any(|d| d.id == p.doc_id) {
            sources.push(DocRef {
                id: p.doc_id.clone(),
                title: p.title.clone(),
            });
        }
    }
    let verb = if sources.len() == 1 { "says" } else { "say" };
    let mut out = format!("Here is what {} {verb}:\n\n", super::join_titles(&sources));
    for p in chosen {
        let relevant: Vec<String> = sentences(&p.text)
            .into_iter()
            .filter(|s| {
                let t = terms(s);
                query.iter().any(|q| t.contains(q))
            })
            .collect();
        let text = if relevant.is_empty() {
            p.text.clone()
        } else {
            relevant.join(" ")
        };
        let _ = writeln!(out, "- {text} [{}]", p.number);
    }
    out
}

/// No passage carries the question's terms: say so, and show how each document describes
/// itself (its opening passage), which is what questions about a document's status need.
fn nothing_matches(request: &AnswerRequest) -> String {
    if request.documents.is_empty() {
        return "I found no document to answer from. Add your documents, or mention the one to look in, and ask again.".to_string();
    }
    let titles = super::join_titles(&request.documents);
    let mut out = format!(
        "{titles} {} nothing about \"{}\" in those words.",
        if request.documents.len() == 1 {
            "says"
        } else {
            "say"
        },
        request.question.trim()
    );
    let openings: Vec<&Passage> = request
        .documents
        .iter()
        .filter_map(|d| request.passages.iter().find(|p| p.doc_id == d.id))
        .collect();
    if openings.is_empty() {
        out.push_str(" Try other words, or name the document to look in.");
        return out;
    }
    out.push_str(if openings.len() == 1 {
        " Here is how it describes itself:\n\n"
    } else {
        " Here is how they describe themselves:\n\n"
    });
    for p in openings {
        let _ = writeln!(out, "- {} [{}]", p.text, p.number);
    }
    out
}
