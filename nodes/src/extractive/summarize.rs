//! The extractive summary: per document, its most central sentences in document order.
//! A sentence's weight is how often its terms recur in the document, favouring
//! obligations and figures; when the request names a topic ("summarize the retention
//! periods"), only sentences about it are used.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use crate::llm::AnswerRequest;
use crate::text::{sentences, terms, topic_terms};

/// Sentences per document when one document is summarized, and when several are.
const ONE_DOC: usize = 5;
const MANY_DOCS: usize = 3;

struct Candidate {
    position: usize,
    sentence: String,
    marker: u32,
    terms: HashSet<String>,
    weighty: bool,
}

pub(crate) fn summarize(request: &AnswerRequest) -> String {
    let title_terms: HashSet<String> = request
        .documents
        .iter()
        .flat_map(|d| terms(&d.title))
        .collect();
    let focus: Vec<String> = topic_terms(&request.question)
        .into_iter()
        .filter(|t| !title_terms.contains(t))
        .collect();
    let per_doc = if request.documents.len() > 1 {
        MANY_DOCS
    } else {
        ONE_DOC
    };
    let mut out = String::new();
    for doc in &request.documents {
        let mut candidates: Vec<Candidate> = Vec::new();
        for p in request.passages.iter().filter(|p| p.doc_id == doc.id) {
            for s in sentences(&p.text) {
                let lower = s.to_lowercase();
                let weighty = s.chars().any(|c| c.is_ascii_digit())
                    || ["must", "shall", "required", "at least", "within"]
                        .iter()
                        .any(|w| lower.contains(w));
                candidates.push(Candidate {
                    position: candidates.len(),
                    terms: terms(&s).into_iter().collect(),
                    sentence: s,
                    marker: p.number,
                    weighty,
                });
            }
        }
        if candidates.is_empty() {
            continue;
        }
        let about_focus = |c: &Candidate| focus.iter().any(|f| c.terms.contains(f));
        let focused = !focus.is_empty() && candidates.iter().any(about_focus);
        if focused {
            candidates.retain(about_focus);
        }
        let mut freq: HashMap<&str, usize> = HashMap::new();
        for c in &candidates {
            for t in &c.terms {
                *freq.entry(t.as_str()).or_default() += 1;
            }
        }
        let weight = |c: &Candidate| {
            let sum: usize = c.terms.iter().map(|t| freq[t.as_str()]).sum();
            let base = sum as f64 / (1.0 + c.terms.len() as f64).sqrt();
            if c.weighty {
                base * 1.5
            } else {
                base
            }
        };
        let mut ranked: Vec<(f64, &Candidate)> =
            candidates.iter().map(|c| (weight(c), c)).collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.position.cmp(&b.1.position)));
        let mut chosen: Vec<&Candidate> =
            ranked.into_iter().take(per_doc).map(|(_, c)| c).collect();
        chosen.sort_by_key(|c| c.position);
        let _ = writeln!(out, "**{}**", doc.title);
        if focused {
            let _ = writeln!(out, "On {}:", focus.join(", "));
        }
        for c in chosen {
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
