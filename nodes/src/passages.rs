//! Passages: documents cut into paragraphs and list items under their headings, numbered
//! so an answer can cite them as `[n]`, and ranked against a request by weighted term
//! coverage (how much of the request's meaning, weighted by rarity, a passage contains).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::analysis::{analysis, Analysis};
use crate::documents::Document;
use crate::state::{Citation, DocRef};

pub(crate) use crate::citations::{cited, strip_unknown_markers};
use crate::text::{self, sentences, shorten, squash, strip_list_marker};

/// Paragraphs longer than this are cut into groups of sentences.
const LONG_PARAGRAPH: usize = 700;
/// The size of those groups.
const GROUP: usize = 400;
/// How much of a passage's score depends on keeping the query's neighbouring terms together.
const PHRASE_WEIGHT: f64 = 0.15;
/// The longest quote a citation carries.
pub(crate) const QUOTE_CHARS: usize = 280;

/// A piece of a document an answer may cite.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Passage {
    /// Its marker in the answer (`[number]`), from 1.
    pub number: u32,
    /// The document.
    pub doc_id: String,
    /// The document's title.
    pub title: String,
    /// The heading it sits under, if any.
    pub heading: Option<String>,
    /// The text.
    pub text: String,
    /// How well it matches the request (0..1; 0 when not ranked).
    pub score: f64,
}

impl Passage {
    /// The citation of this passage.
    pub fn citation(&self) -> Citation {
        Citation {
            doc_id: self.doc_id.clone(),
            title: self.title.clone(),
            quote: shorten(&self.text, QUOTE_CHARS),
            marker: self.number,
        }
    }
}

/// The passages of a document, unnumbered (number 0), in document order.
pub(crate) fn split(doc: &Document) -> Vec<Passage> {
    let mut out = Vec::new();
    let mut heading: Option<String> = None;
    let mut paragraph: Vec<&str> = Vec::new();
    let flush = |paragraph: &mut Vec<&str>, heading: &Option<String>, out: &mut Vec<Passage>| {
        if paragraph.is_empty() {
            return;
        }
        let text = squash(&paragraph.join(" "));
        paragraph.clear();
        for piece in cut(&text) {
            out.push(Passage {
                number: 0,
                doc_id: doc.id.clone(),
                title: doc.title.clone(),
                heading: heading.clone(),
                text: piece,
                score: 0.0,
            });
        }
    };
    for line in doc.content.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            flush(&mut paragraph, &heading, &mut out);
        } else if trimmed.starts_with('#') {
            flush(&mut paragraph, &heading, &mut out);
            heading = Some(trimmed.trim_start_matches('#').trim().to_string());
        } else if strip_list_marker(trimmed).len() != trimmed.len() {
            flush(&mut paragraph, &heading, &mut out);
            paragraph.push(strip_list_marker(trimmed));
            flush(&mut paragraph, &heading, &mut out);
        } else {
            paragraph.push(trimmed);
        }
    }
    flush(&mut paragraph, &heading, &mut out);
    out
}

fn cut(text: &str) -> Vec<String> {
    if text.len() <= LONG_PARAGRAPH {
        return vec![text.to_string()];
    }
    let mut groups = Vec::new();
    let mut current = String::new();
    for s in sentences(text) {
        if !current.is_empty() && current.len() + s.len() > GROUP {
            groups.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(&s);
    }
    if !current.is_empty() {
        groups.push(current);
    }
    groups
}

/// Numbers passages 1, 2, ... in their current order.
pub(crate) fn number(passages: &mut [Passage]) {
    for (i, p) in passages.iter_mut().enumerate() {
        p.number = u32::try_from(i + 1).unwrap_or(u32::MAX);
    }
}

/// The terms of a passage (its heading's too).
pub(crate) fn passage_terms(p: &Passage) -> HashSet<String> {
    let mut t: HashSet<String> = text::terms(&p.text).into_iter().collect();
    if let Some(h) = &p.heading {
        t.extend(text::terms(h));
    }
    t
}

/// The terms of a passage in reading order (heading first), for phrase matching.
pub(crate) fn passage_sequence(p: &Passage) -> Vec<String> {
    let mut t = p.heading.as_deref().map(text::terms).unwrap_or_default();
    t.extend(text::terms(&p.text));
    t
}

/// Sets each passage's score against `query` terms ([`scores`]), its terms computed here.
#[cfg(test)]
pub(crate) fn rank(passages: &mut [Passage], query: &[String]) {
    let sets: Vec<HashSet<String>> = passages.iter().map(passage_terms).collect();
    let seqs: Vec<Vec<String>> = passages.iter().map(passage_sequence).collect();
    let sets: Vec<&HashSet<String>> = sets.iter().collect();
    let seqs: Vec<&[String]> = seqs.iter().map(Vec::as_slice).collect();
    for (p, score) in passages.iter_mut().zip(scores(&sets, &seqs, query)) {
        p.score = score;
    }
}

/// Scores passages, given by their terms (`sets`) and their terms in reading order
/// (`seqs`), against `query` terms: the share of the query's weight (each term weighted by
/// its rarity among these passages) that the passage contains, lowered by up to
/// [`PHRASE_WEIGHT`] when it does not keep the query's neighbouring terms together
/// ("transaction records" beats "transaction ... record"). 0 when the query has no terms.
fn scores(sets: &[&HashSet<String>], seqs: &[&[String]], query: &[String]) -> Vec<f64> {
    let query: Vec<&String> = {
        let mut seen = HashSet::new();
        query.iter().filter(|t| seen.insert(*t)).collect()
    };
    let n = sets.len() as f64;
    let mut df: HashMap<&str, usize> = HashMap::new();
    for t in &query {
        df.insert(
            t.as_str(),
            sets.iter().filter(|s| s.contains(t.as_str())).count(),
        );
    }
    let weight = |t: &str| (1.0 + n / (1.0 + df.get(t).copied().unwrap_or(0) as f64)).ln();
    let total: f64 = query.iter().map(|t| weight(t)).sum();
    let ordered: Vec<String> = query.iter().map(|t| (*t).clone()).collect();
    sets.iter()
        .zip(seqs)
        .map(|(set, seq)| {
            let coverage = if total > 0.0 {
                query
                    .iter()
                    .filter(|t| set.contains(t.as_str()))
                    .map(|t| weight(t))
                    .sum::<f64>()
                    / total
            } else {
                0.0
            };
            coverage * phrase_factor(seq, &ordered)
        })
        .collect()
}

/// 1 when the passage (its terms in order: `seq`) keeps every pair of neighbouring query
/// terms together, down to `1 - PHRASE_WEIGHT` when it keeps none.
fn phrase_factor(seq: &[String], query: &[String]) -> f64 {
    let pairs: Vec<(&String, &String)> = query.windows(2).map(|w| (&w[0], &w[1])).collect();
    if pairs.is_empty() {
        return 1.0;
    }
    let kept = pairs
        .iter()
        .filter(|(a, b)| seq.windows(2).any(|w| &w[0] == *a && &w[1] == *b))
        .count();
    1.0 - PHRASE_WEIGHT * (1.0 - kept as f64 / pairs.len() as f64)
}

/// Scores passages against a statement being audited: like [`scores`], except that a term
/// of the statement that no passage contains weighs like the commonest term (it says
/// nothing about which requirement applies, and should not make every requirement look
/// unrelated), and the statement's first two terms, usually its subject ("Deletion of
/// records ..."), weigh double.
pub(crate) fn rank_statement(passages: &mut [Passage], statement: &str) {
    let query: Vec<String> = {
        let mut seen = HashSet::new();
        text::terms(statement)
            .into_iter()
            .filter(|t| seen.insert(t.clone()))
            .collect()
    };
    let sets: Vec<HashSet<String>> = passages.iter().map(passage_terms).collect();
    let n = sets.len() as f64;
    let weights: Vec<f64> = query
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let df = sets.iter().filter(|s| s.contains(t.as_str())).count() as f64;
            let idf = if df == 0.0 {
                (1.0 + n / (1.0 + n)).ln()
            } else {
                (1.0 + n / (1.0 + df)).ln()
            };
            if i < 2 {
                idf * 2.0
            } else {
                idf
            }
        })
        .collect();
    let total: f64 = weights.iter().sum();
    for (p, set) in passages.iter_mut().zip(&sets) {
        let covered: f64 = query
            .iter()
            .zip(&weights)
            .filter(|(t, _)| set.contains(t.as_str()))
            .map(|(_, w)| w)
            .sum();
        let coverage = if total > 0.0 { covered / total } else { 0.0 };
        p.score = coverage * phrase_factor(&passage_sequence(p), &query);
    }
}

/// The passages of the documents analysed in `analyses` ([`analysis`]), scored against
/// `query` ([`scores`]), in document order, each with its document's index.
fn ranked<'a>(analyses: &'a [Arc<Analysis>], query: &[String]) -> Vec<(usize, &'a Passage, f64)> {
    let sets: Vec<&HashSet<String>> = analyses.iter().flat_map(|a| &a.terms).collect();
    let seqs: Vec<&[String]> = analyses
        .iter()
        .flat_map(|a| a.sequences.iter().map(Vec::as_slice))
        .collect();
    let passages = analyses
        .iter()
        .enumerate()
        .flat_map(|(d, a)| a.passages.iter().map(move |p| (d, p)));
    passages
        .zip(scores(&sets, &seqs, query))
        .map(|((d, p), score)| (d, p, score))
        .collect()
}

/// The best passages for `query` across `docs`: ranked, those scoring at least `min`, at
/// most `limit`, best first, numbered.
pub(crate) fn best(docs: &[Document], query: &[String], min: f64, limit: usize) -> Vec<Passage> {
    let analyses: Vec<Arc<Analysis>> = docs.iter().map(analysis).collect();
    let mut all = ranked(&analyses, query);
    all.sort_by(|a, b| b.2.total_cmp(&a.2));
    let mut best: Vec<Passage> = all
        .into_iter()
        .filter(|(_, _, score)| *score >= min && *score > 0.0)
        .take(limit)
        .map(|(_, p, score)| Passage { score, ..p.clone() })
        .collect();
    number(&mut best);
    best
}

/// Ranks the user's documents for a request: each document's best passage score, best
/// first, only those with a positive score.
pub(crate) fn rank_documents(docs: &[Document], query: &[String]) -> Vec<(DocRef, f64)> {
    let analyses: Vec<Arc<Analysis>> = docs.iter().map(analysis).collect();
    let mut top = vec![0.0_f64; docs.len()];
    for (d, _, score) in ranked(&analyses, query) {
        top[d] = top[d].max(score);
    }
    let mut best: Vec<(DocRef, f64)> = docs
        .iter()
        .zip(top)
        .filter(|(_, s)| *s > 0.0)
        .map(|(d, s)| (d.doc_ref(), s))
        .collect();
    best.sort_by(|a, b| b.1.total_cmp(&a.1));
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(content: &str) -> Document {
        crate::documents::test_doc("d", "T", content)
    }

    #[test]
    fn split_keeps_headings_and_cuts_list_items() {
        let d = doc(
            "Intro line one\nline two.\n\n## Rules\n\n- Keep records.\n- Delete later.\n\nTail.",
        );
        let p = split(&d);
        let texts: Vec<&str> = p.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Intro line one line two.",
                "Keep records.",
                "Delete later.",
                "Tail."
            ]
        );
        assert_eq!(p[0].heading, None);
        assert_eq!(p[1].heading.as_deref(), Some("Rules"));
    }

    #[test]
    fn rare_terms_weigh_more_in_the_rank() {
        let d = doc("Capital ratio is 8%.\n\nLeverage ratio is 3%.\n\nThe ratio is reported.");
        let mut p = split(&d);
        rank(&mut p, &text::terms("leverage ratio"));
        assert!(p[1].score > 0.99);
        assert!(p[0].score > 0.0 && p[0].score < 0.5);
    }
}
