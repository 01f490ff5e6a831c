//! Finding where documents answer a request: every sentence of the documents scored by the
//! share of the request's meaning it carries, each term weighted by its rarity among the
//! sentences (so "leverage" counts more than "ratio"), a term in the sentence itself
//! counting fully, one elsewhere in its clause or in its section's heading for
//! [`CONTEXT`], one in the document's title for [`TITLE`]; lowered by [`NO_VALUE`] when the
//! request asks for a kind of value ("how long", "who") the sentence does not give, and by
//! up to [`PHRASE_WEIGHT`] when it keeps the request's neighbouring terms apart.
//!
//! Scoring sentences, not whole sections, finds the one sentence of a long section that
//! answers (the definitions and the purpose beside it share words with the request too).

use std::collections::HashMap;
use std::sync::Arc;

use crate::analysis::{analysis, Analysis};
use crate::documents::Document;
use crate::question::Question;

/// What a term found elsewhere in the clause, or in its heading, counts for.
const CONTEXT: f64 = 0.6;
/// What a term found in the document's title counts for.
const TITLE: f64 = 0.3;
/// The factor of a sentence without the kind of value asked for.
const NO_VALUE: f64 = 0.7;
/// How much of a score depends on keeping the request's neighbouring terms together.
const PHRASE_WEIGHT: f64 = 0.15;
/// A sentence's first this many terms are its subject ...
const LEAD: usize = 5;
/// ... and a term found later in it counts for this.
const LATER: f64 = 0.9;
/// A sentence must share at least this many of the question's terms (or all of them).
const MIN_SHARED: usize = 2;
/// The factor of a sentence that describes its document.
const FRAMING: f64 = 0.8;
/// What a term of the conversation before a follow-up counts for.
const CONTEXT_TERM: f64 = 0.5;

/// A sentence that matches a request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Hit {
    /// The document (an index into the analyses ranked).
    pub(crate) doc: usize,
    /// The sentence (an index into its model's sentences).
    pub(crate) sentence: usize,
    /// Its clause (an index into its passages).
    pub(crate) clause: usize,
    /// How well it matches (0..1).
    pub(crate) score: f64,
}

/// The sentences of `analyses` that match `question`, best first (only those scoring
/// above 0).
pub(crate) fn rank(analyses: &[Arc<Analysis>], question: &Question) -> Vec<Hit> {
    let query: Vec<&String> = {
        let mut seen = std::collections::HashSet::new();
        question
            .topic
            .iter()
            .chain(&question.context)
            .filter(|t| seen.insert(*t))
            .collect()
    };
    if query.is_empty() {
        return Vec::new();
    }
    // A follow-up's own terms count fully, those of the conversation before it half.
    let own = |t: &str| {
        if question.topic.iter().any(|o| o == t) {
            1.0
        } else {
            CONTEXT_TERM
        }
    };
    let units: usize = analyses.iter().map(|a| a.sentence_terms.len()).sum();
    let n = units.max(1) as f64;
    let mut df: HashMap<&str, usize> = HashMap::new();
    for t in &query {
        let count = analyses
            .iter()
            .flat_map(|a| &a.sentence_terms)
            .filter(|s| s.contains(t.as_str()))
            .count();
        df.insert(t.as_str(), count);
    }
    // A term no sentence has ("Manchester") cannot tell sentences apart: it weighs like
    // the commonest term, not the rarest.
    let unseen = (1.0 + n / (1.0 + n)).ln();
    let weight = |t: &str| {
        let d = df.get(t).copied().unwrap_or(0);
        own(t)
            * if d == 0 {
                unseen
            } else {
                (1.0 + n / (1.0 + d as f64)).ln()
            }
    };
    let total: f64 = query.iter().map(|t| weight(t)).sum();
    if total <= 0.0 {
        return Vec::new();
    }
    let mut hits = Vec::new();
    for (d, a) in analyses.iter().enumerate() {
        for (k, s) in a.model.sentences.iter().enumerate() {
            let own = &a.sentence_terms[k];
            let clause = &a.clause_terms[s.clause];
            let mut covered = 0.0;
            // A sentence is about its first words (its subject) more than the rest.
            let lead: std::collections::HashSet<&str> =
                s.terms.iter().take(LEAD).map(String::as_str).collect();
            for t in &query {
                let share = if lead.contains(t.as_str()) {
                    1.0
                } else if own.contains(t.as_str()) {
                    LATER
                } else if clause.contains(t.as_str()) {
                    CONTEXT
                } else if a.title_terms.contains(t.as_str()) {
                    TITLE
                } else {
                    0.0
                };
                covered += share * weight(t);
            }
            if covered <= 0.0 {
                continue;
            }
            // One word of a question of several in common is a coincidence, not an answer.
            let distinct = query
                .iter()
                .filter(|t| own.contains(t.as_str()) || clause.contains(t.as_str()))
                .count();
            // (One word and the kind of value asked for is enough: "receipt" and an amount.)
            let kind = !question.expects.is_empty() && question.answered_by(&s.reading);
            if distinct < MIN_SHARED.min(query.len()) && !(distinct == 1 && kind) {
                continue;
            }
            let mut score = covered / total;
            if !question.answered_by(&s.reading) {
                score *= NO_VALUE;
            }
            if describes_the_document(&s.text) {
                score *= FRAMING;
            }
            score *= phrase_factor(&s.terms, &query);
            hits.push(Hit {
                doc: d,
                sentence: k,
                clause: s.clause,
                score,
            });
        }
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    hits
}

/// Whether a sentence describes its document rather than a rule ("This policy sets out
/// ...", "This excerpt summarises ..."): such sentences share the document's words with
/// any question about it and rarely answer one.
fn describes_the_document(sentence: &str) -> bool {
    let mut words = sentence.split_whitespace().map(|w| w.to_lowercase());
    matches!(
        (words.next().as_deref(), words.next()),
        (Some("this" | "the"), Some(w)) if crate::references::is_doc_noun_term(&crate::vocabulary::term(w.trim_matches(|c: char| !c.is_alphanumeric())))
    ) && !sentence.to_lowercase().contains(" must ")
}

/// 1 when the sentence keeps every pair of neighbouring query terms together, down to
/// `1 - PHRASE_WEIGHT` when it keeps none.
fn phrase_factor(seq: &[String], query: &[&String]) -> f64 {
    let pairs: Vec<(&String, &String)> = query.windows(2).map(|w| (w[0], w[1])).collect();
    if pairs.is_empty() {
        return 1.0;
    }
    let kept = pairs
        .iter()
        .filter(|(a, b)| seq.windows(2).any(|w| &w[0] == *a && &w[1] == *b))
        .count();
    1.0 - PHRASE_WEIGHT * (1.0 - kept as f64 / pairs.len() as f64)
}

/// The documents that answer `question`, each with its best sentence's score, best first.
pub(crate) fn rank_documents(docs: &[Document], question: &Question) -> Vec<(usize, f64)> {
    let analyses: Vec<Arc<Analysis>> = docs.iter().map(analysis).collect();
    let mut best: Vec<(usize, f64)> = Vec::new();
    for h in rank(&analyses, question) {
        if !best.iter().any(|(d, _)| *d == h.doc) {
            best.push((h.doc, h.score));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::test_doc as doc;
    use crate::question::read;

    #[test]
    fn the_sentence_that_answers_beats_its_neighbours() {
        let d = doc(
            "r",
            "Gifts Policy",
            "## 4. Gifts\n\n4.1 A gift is anything of value given to staff, including vouchers and tickets. Gifts are recorded in the register. Staff must record a gift in the register within 5 business days of receiving it.\n\n4.2 The purpose of the register is transparency.",
        );
        let a = vec![analysis(&d)];
        let q = read("How quickly must a gift be recorded?");
        let hits = rank(&a, &q);
        let best = &a[0].model.sentences[hits[0].sentence];
        assert!(
            best.text.contains("within 5 business days"),
            "{}",
            best.text
        );
    }
}
