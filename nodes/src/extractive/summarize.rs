//! The extractive summary: per document, its version and standing, then its central
//! obligations: the sentences that bind someone (must, shall, must not, requires) with what
//! makes them concrete (a figure, a deadline, who approves or is told), at least one from
//! each section that has one, heaviest first, in document order. A sentence weighs by how
//! often its words recur in the document (what the document is about) and by what it
//! binds. When the request names a topic ("summarize the retention periods"), only
//! sentences about it (in their own words or their section's heading) are used.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use super::{edition, focus, named};
use crate::docmodel::rules::{self, Modality};
use crate::llm::AnswerRequest;
use crate::text::{sentences, terms};

/// Sentences per document when one document is summarized, and when several are.
const ONE_DOC: usize = 10;
const MANY_DOCS: usize = 5;
/// How much each thing a sentence binds multiplies its weight.
const KIND: f64 = 1.4;
/// Sections whose sentences describe the document rather than bind anyone.
const FRAMING: [&str; 9] = [
    "purpose",
    "scope",
    "definition",
    "introduction",
    "background",
    "version",
    "history",
    "contents",
    "glossary",
];

struct Candidate {
    position: usize,
    sentence: String,
    marker: u32,
    section: Option<String>,
    terms: HashSet<String>,
    heading_terms: HashSet<String>,
    emphasis: f64,
}

/// What a sentence binds, as a weight: an obligation, a figure, a role each multiply it.
fn emphasis(sentence: &str, framing: bool) -> f64 {
    let r = rules::read(sentence);
    let mut e = 1.0;
    if matches!(r.modality, Modality::Must | Modality::MustNot) {
        e *= KIND * KIND;
    }
    if !r.bounds.is_empty() {
        e *= KIND;
    }
    if !r.roles.is_empty() {
        e *= KIND;
    }
    if framing {
        e *= 0.5;
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
        let framing = p.heading.as_deref().is_some_and(|h| {
            let h = h.to_lowercase();
            FRAMING.iter().any(|f| h.contains(f))
        });
        for s in sentences(&p.text) {
            if s.split_whitespace().count() < 4 {
                continue;
            }
            out.push(Candidate {
                emphasis: emphasis(&s, framing),
                position: out.len(),
                terms: terms(&s).into_iter().collect(),
                heading_terms: heading_terms.clone(),
                section: p.heading.as_deref().map(section_of),
                sentence: s,
                marker: p.number,
            });
        }
    }
    out
}

/// The section a place belongs to ("§4.2 Approvals" -> "Approvals").
fn section_of(place: &str) -> String {
    match place.strip_prefix('§') {
        Some(rest) => rest.split_once(' ').map_or(rest, |(_, h)| h).to_string(),
        None => place.to_string(),
    }
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
        if chosen.len() < limit && c.emphasis > 1.0 && sections.insert(c.section.as_deref()) {
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
    let q = focus(request);
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
            q.topic
                .iter()
                .any(|f| c.terms.contains(f) || c.heading_terms.contains(f))
        };
        let focused = !q.topic.is_empty() && candidates.iter().any(about_focus);
        if focused {
            candidates.retain(about_focus);
        }
        let _ = writeln!(out, "{}", named(request, doc));
        if let Some(e) = edition(request, &doc.id) {
            if let Some(older) = &e.supersedes {
                let said = request
                    .versions
                    .iter()
                    .find(|r| r.stated && r.newer.id == doc.id && r.older.id == older.id)
                    .map(|r| format!(": \"{}\"", r.statement))
                    .unwrap_or_default();
                let _ = writeln!(out, "It replaces {}{said}", older.title);
            }
            if let Some(newer) = &e.superseded_by {
                let _ = writeln!(out, "It has been superseded by {}.", newer.title);
            }
        }
        if focused {
            let topic: Vec<&str> = q.topic.iter().map(String::as_str).collect();
            let _ = writeln!(out, "On {}:", topic.join(", "));
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
    out
}
