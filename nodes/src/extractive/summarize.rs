//! The extractive summary: per document, its most central sentences in document order,
//! at least one from each section when there is room. A sentence's weight is how often its
//! terms recur in the document, favouring obligations, figures and who approves or is
//! responsible; when the request names
//! a topic ("summarize the retention periods"), only sentences about it (in their own words
//! or their section's heading) are used. What a document replaces, or is replaced by, is
//! said at the end.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use super::{focus_terms, versions_note};
use crate::llm::AnswerRequest;
use crate::text::{sentences, terms};

/// Sentences per document when one document is summarized, and when several are.
const ONE_DOC: usize = 8;
const MANY_DOCS: usize = 4;

struct Candidate {
    position: usize,
    sentence: String,
    marker: u32,
    section: Option<String>,
    terms: HashSet<String>,
    heading_terms: HashSet<String>,
    /// How much the sentence's kind weighs: obligations, figures and responsibilities
    /// each multiply it.
    emphasis: f64,
}

/// What makes a sentence weigh more: each kind it has multiplies its weight by [`KIND`].
const OBLIGATION: [&str; 5] = ["must", "shall", "required", "requires", "at least"];
const RESPONSIBILITY: [&str; 5] = ["approv", "responsib", "owner", "authoris", "authoriz"];
const KIND: f64 = 1.3;

fn emphasis(sentence: &str) -> f64 {
    let lower = sentence.to_lowercase();
    let mut e = 1.0;
    if OBLIGATION.iter().any(|w| lower.contains(w)) {
        e *= KIND;
    }
    if sentence.chars().any(|c| c.is_ascii_digit()) {
        e *= KIND;
    }
    if RESPONSIBILITY.iter().any(|w| lower.contains(w)) {
        e *= KIND;
    }
    e
}

fn candidates(request: &AnswerRequest, doc_id: &str) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    for p in request.passages.iter().filter(|p| p.doc_id == doc_id) {
        let heading_terms: HashSet<String> = p
            .heading
            .as_deref()
            .map(terms)
            .unwrap_or_default()
            .into_iter()
            .collect();
        for s in sentences(&p.text) {
            out.push(Candidate {
                emphasis: emphasis(&s),
                position: out.len(),
                terms: terms(&s).into_iter().collect(),
                heading_terms: heading_terms.clone(),
                section: p.heading.clone(),
                sentence: s,
                marker: p.number,
            });
        }
    }
    out
}

/// Up to `limit` candidates: the heaviest of each section first (heaviest sections
/// first), then the heaviest of the rest; in document order.
fn choose(candidates: &[Candidate], limit: usize) -> Vec<&Candidate> {
    let mut freq: HashMap<&str, usize> = HashMap::new();
    for c in candidates {
        for t in &c.terms {
            *freq.entry(t.as_str()).or_default() += 1;
        }
    }
    let weight = |c: &Candidate| {
        let sum: usize = c.terms.iter().map(|t| freq[t.as_str()]).sum();
        sum as f64 / (1.0 + c.terms.len() as f64).sqrt() * c.emphasis
    };
    let mut ranked: Vec<(f64, &Candidate)> = candidates.iter().map(|c| (weight(c), c)).collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.position.cmp(&b.1.position)));
    let mut chosen: Vec<&Candidate> = Vec::new();
    let mut sections: HashSet<Option<&str>> = HashSet::new();
    for (_, c) in &ranked {
        if chosen.len() < limit && sections.insert(c.section.as_deref()) {
            chosen.push(c);
        }
    }
    for (_, c) in &ranked {
        if chosen.len() < limit && !chosen.iter().any(|x| x.position == c.position) {
            chosen.push(c);
        }
    }
    chosen.sort_by_key(|c| c.position);
    chosen
}

pub(crate) fn summarize(request: &AnswerRequest) -> String {
    let focus = focus_terms(request);
    let per_doc = if request.documents.len() > 1 {
        MANY_DOCS
    } else {
        ONE_DOC
    };
    let mut out = String::new();
    for doc in &request.documents {
        let mut candidates = candidates(request, &doc.id);
        if candidates.is_empty() {
            continue;
        }
        let about_focus = |c: &Candidate| {
            focus
                .iter()
                .any(|f| c.terms.contains(f) || c.heading_terms.contains(f))
        };
        let focused = !focus.is_empty() && candidates.iter().any(about_focus);
        if focused {
            candidates.retain(about_focus);
        }
        let _ = writeln!(out, "**{}**", doc.title);
        if focused {
            let _ = writeln!(out, "On {}:", focus.join(", "));
        }
        for c in choose(&candidates, per_doc) {
            let _ = writeln!(out, "- {} [{}]", c.sentence, c.marker);
        }
        out.push('\n');
    }
    if out.is_empty() {
        return format!(
            "{} has no text to summarize.",
            super::join_titles(&request.documents)
        );
    }
    out.push_str(versions_note(request, true).trim_start_matches('\n'));
    out
}
