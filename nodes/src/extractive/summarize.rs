//! The extractive summary: per document, its version and standing, then its central
//! obligations: the sentences that bind someone (must, shall, must not, requires) with what
//! makes them concrete (a figure, a deadline, who approves or is told), the heaviest of
//! each section first, then the heaviest of the rest, in document order. A table, or a list
//! under its lead sentence, is one point: its rows side by side. The document's header
//! (owner, version, dates) and its framing sections (purpose, scope, definitions, version
//! history) weigh least. When the request names a topic beyond the document's own title
//! ("summarize the retention periods"), only sentences about it (in their own words or their
//! section's heading) are used.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use super::{edition, focus, named};
use crate::docmodel::header::is_metadata_line;
use crate::docmodel::rules::{self, Modality};
use crate::llm::AnswerRequest;
use crate::passages::Passage;
use crate::text::{sentences, terms};

/// The words a request for a summary uses to ask for one, whatever its topic.
const ASKING: [&str; 17] = [
    "main",
    "key",
    "step",
    "steps",
    "point",
    "points",
    "brief",
    "briefly",
    "short",
    "nutshell",
    "summary",
    "summarize",
    "summarise",
    "overview",
    "rundown",
    "say",
    "says",
];

/// Points per document when one document is summarized, and when several are.
const ONE_DOC: usize = 16;
const MANY_DOCS: usize = 5;
/// What a section's first obligation weighs more than the rest of it.
const LEAD: f64 = 0.6;
/// Sections whose sentences describe the document rather than bind anyone.
const FRAMING: [&str; 11] = [
    "purpose",
    "scope",
    "definition",
    "introduction",
    "background",
    "version",
    "history",
    "contents",
    "glossary",
    "document control",
    "references",
];
struct Candidate {
    position: usize,
    text: String,
    markers: Vec<u32>,
    section: Option<String>,
    terms: HashSet<String>,
    heading_terms: HashSet<String>,
    weight: f64,
}

/// What a point binds, as a weight: an obligation, a figure, a role each add to it; a
/// framing section's or a header line's weigh little.
fn weight(text: &str, framing: bool) -> f64 {
    if is_metadata_line(text) {
        return 0.05;
    }
    let r = rules::read(text);
    let mut w = 1.0;
    // An obligation: a modal verb, a restriction to someone ("only Corporate Communications
    // may open an account"), or a procedure's present tense with a figure ("the customer
    // base is re-screened within 48 hours").
    let only = text
        .split_whitespace()
        .next()
        .is_some_and(|w| w.eq_ignore_ascii_case("only"));
    if matches!(r.modality, Modality::Must | Modality::MustNot) || only || !r.bounds.is_empty() {
        w += 1.0;
    }
    if !r.bounds.is_empty() {
        w += 0.8;
    }
    if !r.roles.is_empty() {
        w += 0.5;
    }
    if framing {
        w *= 0.4;
    }
    w
}

/// The section of a place ("§4.2 Approvals" -> "Approvals").
fn section_of(place: &str) -> String {
    match place.strip_prefix('§') {
        Some(rest) => rest.split_once(' ').map_or(rest, |(_, h)| h).to_string(),
        None => place.to_string(),
    }
}

/// The points of a document: each sentence of a passage, and each table or list (the
/// passages that continue one lead) as one point.
fn candidates(request: &AnswerRequest, doc_id: &str) -> Vec<Candidate> {
    let passages: Vec<&Passage> = request
        .passages
        .iter()
        .filter(|p| p.doc_id == doc_id)
        .collect();
    let mut out: Vec<Candidate> = Vec::new();
    let mut led: HashSet<Option<String>> = HashSet::new();
    let mut k = 0;
    while k < passages.len() {
        let p = passages[k];
        if p.about_the_document() {
            k += 1;
            continue;
        }
        let section = p.heading.as_deref().map(section_of);
        let heading_terms: HashSet<String> = section
            .as_deref()
            .map(terms)
            .unwrap_or_default()
            .into_iter()
            .collect();
        let framing = section.as_deref().is_some_and(|h| {
            let h = h.to_lowercase();
            FRAMING.iter().any(|f| h.contains(f))
        });
        if let Some(lead) = &p.lead {
            // A table or a list: the rows that share this lead, as one point.
            let rows: Vec<&Passage> = passages[k..]
                .iter()
                .take_while(|r| {
                    r.lead.as_ref() == Some(lead) && r.heading.as_deref().map(section_of) == section
                })
                .copied()
                .collect();
            let items: Vec<String> = rows
                .iter()
                .map(|r| {
                    r.text
                        .replace(" | ", " ")
                        .trim_end_matches(['.', ';'])
                        .to_string()
                })
                .collect();
            let head = if lead.contains(" | ") {
                format!("{}: ", lead.replace(" | ", " / "))
            } else {
                format!("{} ", lead.trim_end_matches(':'))
            };
            let text = format!("{head}{}", items.join("; "));
            let meaning: String = rows
                .iter()
                .map(|r| r.meaning())
                .collect::<Vec<_>>()
                .join(" ");
            out.push(Candidate {
                position: out.len(),
                // A table of figures is worth a point of its own; a version history is not.
                weight: if framing {
                    0.05
                } else {
                    weight(&meaning, framing) + 0.5
                },
                terms: terms(&meaning).into_iter().collect(),
                heading_terms,
                section,
                text,
                markers: rows.iter().map(|r| r.number).collect(),
            });
            k += rows.len().max(1);
            continue;
        }
        for s in sentences(&p.text) {
            if s.split_whitespace().count() < 4 {
                continue;
            }
            // A section's first obligation is its general rule; what follows details it.
            let mut w = weight(&s, framing);
            if w > 1.0 && !framing && led.insert(section.clone()) {
                w += LEAD;
            }
            out.push(Candidate {
                weight: w,
                position: out.len(),
                terms: terms(&s).into_iter().collect(),
                heading_terms: heading_terms.clone(),
                section: section.clone(),
                text: s,
                markers: vec![p.number],
            });
        }
        k += 1;
    }
    out
}

/// Up to `limit` points: the heaviest of each section first (heaviest sections first), then
/// the heaviest of the rest; in document order. A point weighs by what it binds, and a
/// little by how much its words recur in the document (what the document is about).
fn choose(candidates: &[Candidate], limit: usize) -> Vec<&Candidate> {
    let mut freq: HashMap<&str, usize> = HashMap::new();
    for c in candidates {
        for t in &c.terms {
            *freq.entry(t.as_str()).or_default() += 1;
        }
    }
    let most = candidates
        .iter()
        .map(|c| {
            c.terms.iter().map(|t| freq[t.as_str()]).sum::<usize>() as f64
                / (1.0 + c.terms.len() as f64).sqrt()
        })
        .fold(0.0, f64::max)
        .max(1e-9);
    let score = |c: &Candidate| {
        let central = c.terms.iter().map(|t| freq[t.as_str()]).sum::<usize>() as f64
            / (1.0 + c.terms.len() as f64).sqrt();
        c.weight * (0.6 + 0.4 * central / most)
    };
    let mut ranked: Vec<(f64, &Candidate)> = candidates.iter().map(|c| (score(c), c)).collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.position.cmp(&b.1.position)));
    let mut chosen: Vec<&Candidate> = Vec::new();
    let mut sections: HashSet<Option<&str>> = HashSet::new();
    for (_, c) in &ranked {
        if chosen.len() < limit && c.weight > 1.0 && sections.insert(c.section.as_deref()) {
            chosen.push(c);
        }
    }
    for (_, c) in &ranked {
        if chosen.len() < limit
            && c.weight > 0.5
            && !chosen.iter().any(|x| x.position == c.position)
        {
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
    // A topic beyond a document's own title narrows the summary, and so does a section
    // named in the title's words ("the suspicious activity reporting section"); not the
    // words of asking for a summary ("the main steps", "in brief"), nor "section" itself.
    let section: Vec<String> = crate::question::topic_named(&request.question);
    let structure: Vec<String> = ["section", "part", "chapter"]
        .iter()
        .map(|w| crate::vocabulary::term(w))
        .collect();
    let asking: Vec<String> = ASKING.iter().map(|w| crate::vocabulary::term(w)).collect();
    for doc in &request.documents {
        let mut candidates = candidates(request, &doc.id);
        if candidates.is_empty() {
            continue;
        }
        // A "section" that says all the title's own words is the document named ("our
        // policy on preventing the facilitation of tax evasion"), not a part of it.
        let own: Vec<String> = terms(&doc.title)
            .into_iter()
            .filter(|t| {
                t.chars().any(char::is_alphabetic) && !crate::version_words::is_version_word(t)
            })
            .collect();
        let names_a_part = terms(&request.question)
            .iter()
            .any(|t| structure.contains(t));
        let names_the_document = !names_a_part
            && own.len() >= 2
            && own
                .iter()
                .filter(|t| section.contains(t) || q.topic.contains(t))
                .count()
                * 4
                >= own.len() * 3;
        let title: HashSet<String> = terms(&doc.title)
            .into_iter()
            .filter(|t| names_the_document || !section.contains(t))
            .collect();
        // What the request for a summary names, not the situation told beside it ("I've
        // just been made Business Sponsor. Can you summarise the policy for me?").
        let asked: Option<HashSet<String>> = {
            let said = sentences(&request.question);
            let asks: Vec<&String> = said
                .iter()
                .filter(|s| {
                    crate::llm::requested_actions(s).contains(&crate::state::Action::Summarize)
                })
                .collect();
            (said.len() > 1 && !asks.is_empty())
                .then(|| asks.iter().flat_map(|s| terms(s)).collect())
        };
        let topic: Vec<&String> = q
            .topic
            .iter()
            // A word of the title, in any of its forms ("preventing" of "Prevention of ..."),
            // names the document, not a part of it.
            .filter(|t| {
                !title.iter().any(|x| {
                    x == *t
                        || x.len().min(t.len()) >= 5
                            && (x.starts_with(t.as_str()) || t.starts_with(x.as_str()))
                })
            })
            .filter(|t| !asking.contains(t) && !structure.contains(t))
            .filter(|t| asked.as_ref().is_none_or(|a| a.contains(*t)))
            .collect();
        let about_focus = |c: &Candidate| {
            topic
                .iter()
                .any(|f| c.terms.contains(*f) || c.heading_terms.contains(*f))
        };
        let focused = !topic.is_empty() && candidates.iter().any(about_focus);
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
                let _ = writeln!(out, "It replaces {}{said}", super::titled(request, older));
            }
            if let Some(newer) = &e.superseded_by {
                let _ = writeln!(
                    out,
                    "It has been superseded by {}.",
                    super::titled(request, newer)
                );
            }
        }
        if focused {
            // The words as the request wrote them ("sponsors", not the term "sponsor").
            let shown: Vec<String> = topic
                .iter()
                .map(|t| crate::text::as_written(&request.question, t))
                .collect();
            let _ = writeln!(out, "On {}:", shown.join(", "));
        }
        for c in choose(&candidates, per_doc) {
            let markers: String = c.markers.iter().map(|m| format!("[{m}]")).collect();
            let _ = writeln!(out, "- {} {markers}", c.text);
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
