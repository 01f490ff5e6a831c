//! The extractive audit: each sentence of the audited text is matched with the requirement
//! passage that shares most of its meaning, then flagged when a figure of the same unit
//! differs ("3 years" where the requirement says "5 years") or when it uses optional
//! wording ("may", "where possible") where the requirement is mandatory ("must", "shall").
//! Sentences no requirement speaks to are listed as not covered.

use std::fmt::Write as _;

use super::quantities::{quantities, Quantity};
use crate::llm::AnswerRequest;
use crate::passages::{rank, Passage};
use crate::text::{sentences, shorten, terms};

/// A requirement must cover at least this share of a sentence's meaning to apply to it.
const APPLIES: f64 = 0.3;
/// How many of the best requirements are tried before a figure is called a conflict.
const TRIED: usize = 3;

const OPTIONAL: [&str; 9] = [
    " may ",
    " can ",
    "optional",
    "where possible",
    "if possible",
    "when feasible",
    "if feasible",
    "at our discretion",
    " should consider",
];
const MANDATORY: [&str; 8] = [
    " must ",
    " shall ",
    "required",
    " requires ",
    " require ",
    "mandatory",
    "at least",
    "no later than",
];

fn has_any(text: &str, words: &[&str]) -> Option<String> {
    let padded = format!(" {} ", text.to_lowercase());
    words
        .iter()
        .find(|w| padded.contains(*w))
        .map(|w| w.trim().to_string())
}

enum Finding<'a> {
    Conflict {
        stated: Quantity,
        required: Quantity,
        passage: &'a Passage,
    },
    Weaker {
        optional: String,
        mandatory: String,
        passage: &'a Passage,
    },
    Consistent(&'a Passage),
    NotCovered,
}

fn check<'a>(sentence: &str, passages: &'a [Passage]) -> Finding<'a> {
    let mut ranked: Vec<Passage> = passages.to_vec();
    rank(&mut ranked, &terms(sentence));
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score));
    let applicable: Vec<&'a Passage> = ranked
        .iter()
        .take(TRIED)
        .filter(|r| r.score >= APPLIES)
        .filter_map(|r| passages.iter().find(|p| p.number == r.number))
        .collect();
    let Some(best) = applicable.first().copied() else {
        return Finding::NotCovered;
    };
    // The best-matching requirement with a figure of the same unit says what is required.
    for stated in quantities(sentence) {
        let with_unit: Vec<(&Passage, Vec<Quantity>)> = applicable
            .iter()
            .map(|p| {
                let q: Vec<Quantity> = quantities(&p.text)
                    .into_iter()
                    .filter(|q| q.unit == stated.unit)
                    .collect();
                (*p, q)
            })
            .filter(|(_, q)| !q.is_empty())
            .collect();
        if let Some((passage, q)) = with_unit.first() {
            if !q.contains(&stated) {
                return Finding::Conflict {
                    stated,
                    required: q[0],
                    passage,
                };
            }
        }
    }
    if let (Some(optional), Some(mandatory)) = (
        has_any(sentence, &OPTIONAL),
        has_any(&best.text, &MANDATORY),
    ) {
        return Finding::Weaker {
            optional,
            mandatory,
            passage: best,
        };
    }
    Finding::Consistent(best)
}

pub(crate) fn audit(request: &AnswerRequest) -> String {
    let text = request
        .audit_text
        .as_deref()
        .unwrap_or(request.question.as_str());
    let statements = sentences(text);
    let against = super::join_titles(&request.documents);
    if statements.is_empty() {
        return "There is no text to audit.".to_string();
    }
    if request.passages.is_empty() {
        return format!("{against} gave me no requirements to audit against.");
    }
    let mut flagged = String::new();
    let mut consistent = String::new();
    let mut uncovered = String::new();
    let mut count = 0usize;
    for s in &statements {
        match check(s, &request.passages) {
            Finding::Conflict {
                stated,
                required,
                passage,
            } => {
                count += 1;
                let _ = writeln!(
                    flagged,
                    "{count}. \"{s}\": states {stated}, but {} requires {required}: \"{}\" [{}]",
                    passage.title,
                    shorten(&passage.text, 200),
                    passage.number
                );
            }
            Finding::Weaker {
                optional,
                mandatory,
                passage,
            } => {
                count += 1;
                let _ = writeln!(
                    flagged,
                    "{count}. \"{s}\": optional wording (\"{optional}\") where {} says \"{mandatory}\": \"{}\" [{}]",
                    passage.title,
                    shorten(&passage.text, 200),
                    passage.number
                );
            }
            Finding::Consistent(p) => {
                let _ = writeln!(consistent, "- \"{s}\" [{}]", p.number);
            }
            Finding::NotCovered => {
                let _ = writeln!(uncovered, "- \"{s}\"");
            }
        }
    }
    let mut out = format!(
        "Audit against {against}: {count} of {} statement{} flagged.\n\n",
        statements.len(),
        if statements.len() == 1 { "" } else { "s" }
    );
    if !flagged.is_empty() {
        let _ = writeln!(out, "Flagged:\n{flagged}");
    }
    if !consistent.is_empty() {
        let _ = writeln!(out, "Consistent with the requirements:\n{consistent}");
    }
    if !uncovered.is_empty() {
        let _ = writeln!(out, "Not covered by these documents:\n{uncovered}");
    }
    out
}
