//! The extractive answer to a question: the best-ranked passages (those within reach of
//! the best score), each cut to the sentences that carry the question's terms. A document
//! replaced by a newer one in play is answered from the newer one, and the answer says so
//! (with what the older one said); a document replaced by one the user has is flagged. A
//! question about the library lists the documents.

use std::fmt::Write as _;

use super::versions_note;
use crate::llm::AnswerRequest;
use crate::passages::Passage;
use crate::state::DocRef;
use crate::text::{asks_for_library, sentences, shorten, terms, topic_terms};
use crate::versions::newer_among;

/// Passages scoring at least this share of the best one are used.
const NEAR_BEST: f64 = 0.75;
/// At most this many passages.
const MAX_PASSAGES: usize = 3;
/// The longest opening shown for a document in a library listing.
const OPENING_CHARS: usize = 160;

pub(crate) fn inquire(request: &AnswerRequest) -> String {
    if asks_for_library(&request.question) {
        return library(request);
    }
    let query = topic_terms(&request.question);
    let replaced = |p: &Passage| newer_among(&request.versions, &p.doc_id, &request.documents);
    let best = request
        .passages
        .iter()
        .filter(|p| replaced(p).is_none())
        .map(|p| p.score)
        .fold(0.0, f64::max);
    if best <= 0.0 {
        return nothing_matches(request);
    }
    let mut chosen: Vec<&Passage> = request
        .passages
        .iter()
        .filter(|p| replaced(p).is_none() && p.score >= best * NEAR_BEST)
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
        let _ = writeln!(out, "- {} [{}]", relevant(&p.text, &query), p.number);
    }
    // What the replaced versions said on the same point, labelled as such.
    for r in &request.versions {
        let Some(old) = request
            .passages
            .iter()
            .filter(|p| p.doc_id == r.older.id && p.score >= best * NEAR_BEST * 0.5)
            .max_by(|a, b| a.score.total_cmp(&b.score))
        else {
            continue;
        };
        if request.documents.iter().any(|d| d.id == r.newer.id) {
            let _ = write!(
                out,
                "\n{} replaces {} (\"{}\"), so this answer follows the newer version. The older one said: {} [{}]\n",
                r.newer.title,
                r.older.title,
                r.statement,
                relevant(&old.text, &query),
                old.number
            );
        }
    }
    out.push_str(&versions_note(request, false));
    out
}

/// The sentences of `text` that carry one of the query's terms (all of it when none does).
fn relevant(text: &str, query: &[String]) -> String {
    let kept: Vec<String> = sentences(text)
        .into_iter()
        .filter(|s| {
            let t = terms(s);
            query.iter().any(|q| t.contains(q))
        })
        .collect();
    if kept.is_empty() {
        text.to_string()
    } else {
        kept.join(" ")
    }
}

/// The user's documents, each with its opening.
fn library(request: &AnswerRequest) -> String {
    if request.documents.is_empty() {
        return "You have no documents yet. Upload a .txt or .md file on the documents page."
            .to_string();
    }
    let n = request.documents.len();
    let mut out = format!(
        "You have {n} document{}:\n\n",
        if n == 1 { "" } else { "s" }
    );
    for (i, d) in request.documents.iter().enumerate() {
        let opening = request.passages.iter().find(|p| p.doc_id == d.id);
        match opening {
            Some(p) => {
                let _ = writeln!(
                    out,
                    "{}. **{}**: {} [{}]",
                    i + 1,
                    d.title,
                    shorten(&p.text, OPENING_CHARS),
                    p.number
                );
            }
            None => {
                let _ = writeln!(out, "{}. **{}**", i + 1, d.title);
            }
        }
    }
    for r in &request.versions {
        let _ = write!(out, "\n{} replaces {}.", r.newer.title, r.older.title);
    }
    out
}

/// No passage carries the question's terms: say so, and show how each document describes
/// itself (its opening passage), which is what questions about a document's status need.
fn nothing_matches(request: &AnswerRequest) -> String {
    if request.documents.is_empty() {
        return format!(
            "I found nothing about \"{}\" in your documents. Mention the document to look in with @, or ask with other words.",
            request.question.trim()
        );
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
    } else {
        out.push_str(if openings.len() == 1 {
            " Here is how it describes itself:\n\n"
        } else {
            " Here is how they describe themselves:\n\n"
        });
        for p in openings {
            let _ = writeln!(out, "- {} [{}]", p.text, p.number);
        }
    }
    out.push_str(&versions_note(request, false));
    out
}
