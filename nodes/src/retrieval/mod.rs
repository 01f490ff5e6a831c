//! Finding where documents answer a request: every sentence of the documents scored by the
//! share of the request's meaning it carries, each term weighted by its rarity among the
//! sentences (so "leverage" counts more than "ratio"), a term in the sentence itself
//! counting fully, one elsewhere in its clause or in its section's heading for
//! [`CONTEXT`], one in the document's title for [`TITLE`]; lowered by [`NO_VALUE`] when the
//! request asks for a kind of value ("how long", "who") the sentence does not give, and by
//! up to [`PHRASE_WEIGHT`] when it keeps the request's neighbouring terms apart; among
//! several documents, an aid's sentence (a template's, a form's, training notes') counts
//! for less than a policy's (see [`crate::docmodel::header::authority`]).
//!
//! Scoring sentences, not whole sections, finds the one sentence of a long section that
//! answers (the definitions and the purpose beside it share words with the request too).

pub(crate) mod digest;

use std::sync::Arc;

use crate::docmodel::values::Value;
use crate::question::Question;
use digest::Digest;

/// What a term found elsewhere in the clause, or in its heading, counts for.
const CONTEXT: f64 = 0.6;
/// What a term found in the document's title counts for.
const TITLE: f64 = 0.3;
/// The factor of a sentence without the kind of value asked for.
const NO_VALUE: f64 = 0.7;
/// How much of a score depends on keeping the request's neighbouring terms together.
const PHRASE_WEIGHT: f64 = 0.15;
/// The factor of a sentence that sets a figure of the kind the request states of its case
/// ("a £75,000 payment": a rule with an amount in pounds).
const STATED_KIN: f64 = 1.25;
/// The factor of a sentence that sets a band the request's figure falls in.
const STATED_BAND: f64 = 2.0;
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
/// The factor of a sentence that holds none of a follow-up's own terms ("and for
/// contractors?": the sentence on employees beside the one on contractors).
const FOLLOW_UP_ELSEWHERE: f64 = 0.6;
/// Only sentences scoring at least this share of the best are hits: every use of a
/// ranking takes those near the best (the documents within 0.7 of the best one, the
/// passages within 0.8), and scoring the rest of a large library costs most of a turn.
const KEPT_SHARE: f64 = 0.5;
/// A term in at most one sentence of this many is rare: the sentences holding it are read
/// first.
const RARE_SHARE: usize = 50;
/// The largest buffer kept between rankings (in bits words: a library of a million
/// sentences).
const MAX_SCRATCH: usize = 2 << 20;

/// The documents ranked together, as one library: its sentences, and how many hold a term.
struct Library<'a> {
    digests: &'a [Arc<Digest>],
    /// How many sentences the documents have.
    units: usize,
}

impl<'a> Library<'a> {
    fn of(digests: &'a [Arc<Digest>]) -> Self {
        Library {
            digests,
            units: digests.iter().map(|d| d.sentences()).sum(),
        }
    }

    /// How many sentences of the documents hold `term`.
    fn df(&self, term: &str) -> usize {
        self.digests.iter().map(|d| d.df(term)).sum()
    }
}

/// A sentence that matches a request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Hit {
    /// The document (an index into the digests ranked).
    pub(crate) doc: usize,
    /// The sentence (an index into its model's sentences).
    pub(crate) sentence: usize,
    /// Its clause (an index into its passages).
    pub(crate) clause: usize,
    /// How well it matches (0..1).
    pub(crate) score: f64,
}

/// The sentences of the documents of `digests` that match `question`, best first (only
/// those scoring above 0). Only the documents' digests are read: each term's sentences
/// and clauses in each document, and what is kept of the sentences that hold one.
pub(crate) fn rank(digests: &[Arc<Digest>], question: &Question) -> Vec<Hit> {
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
    let index = Library::of(digests);
    let n = index.units.max(1) as f64;
    // A term no sentence has ("Manchester") cannot tell sentences apart: it weighs like
    // the commonest term, not the rarest.
    let unseen = (1.0 + n / (1.0 + n)).ln();
    let weight = |t: &str| {
        let d = index.df(t);
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
    // Which of the request's terms each sentence holds, in its own words or its clause's,
    // read from the index: a sentence that holds none cannot answer and is never looked at.
    let query: Vec<&String> = query.into_iter().take(64).collect();
    let weights: Vec<f64> = query.iter().map(|t| weight(t)).collect();
    let start: Vec<usize> = digests
        .iter()
        .scan(0, |at, a| {
            let here = *at;
            *at += a.sentences();
            Some(here)
        })
        .collect();
    // Each query term's number in each document.
    let ids: Vec<Vec<Option<u32>>> = digests
        .iter()
        .map(|d| query.iter().map(|t| d.id(t)).collect())
        .collect();
    let title_bits: Vec<u64> = digests
        .iter()
        .map(|a| {
            query
                .iter()
                .enumerate()
                .filter(|(_, t)| a.title_terms.contains(t.as_str()))
                .fold(0u64, |m, (i, _)| m | (1 << i))
        })
        .collect();
    let needed = MIN_SHARED.min(query.len());
    // What a sentence could score at most: every term it holds counted fully.
    // (A sentence with a band the request's figure falls in may score above its terms.)
    let most_factor = if question.stated.is_empty() {
        1.0
    } else {
        STATED_BAND
    };
    let ceiling = |bits: u64| -> f64 {
        (0..query.len())
            .filter(|i| bits & (1 << i) != 0)
            .map(|i| weights[i])
            .sum::<f64>()
            / total
            * most_factor
    };
    // The rare terms first: the sentences that hold one are read, each with all its terms;
    // the sentences holding only common terms ("record", "retain" in every policy) are read
    // only when those terms together could make half the best score found.
    let rare: u64 = (0..query.len())
        .filter(|&i| index.df(query[i]) * RARE_SHARE <= index.units)
        .fold(0u64, |m, i| m | (1 << i));
    let all: u64 = (0..query.len()).fold(0u64, |m, i| m | (1 << i));
    let follow_up: u64 = if question.context.is_empty() {
        0
    } else {
        (0..query.len())
            .filter(|&i| question.topic.iter().any(|o| o == query[i]))
            .fold(0u64, |m, i| m | (1 << i))
    };
    let mut scan = Scan {
        follow_up,
        digests,
        ids: &ids,
        query: &query,
        weights: &weights,
        total,
        start: &start,
        title_bits: &title_bits,
        needed,
        ceiling: &ceiling,
        question,
        own_bits: SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut())),
        clause_bits: Vec::new(),
        touched: Vec::new(),
        hits: Vec::new(),
        best: 0.0,
    };
    // One buffer for both, reused from the ranking before (zeroed where it was used).
    scan.own_bits.resize(2 * index.units, 0);
    scan.clause_bits = scan.own_bits.split_off(index.units);
    if rare == 0 || rare == all {
        scan.read(all, false);
    } else {
        scan.read(rare, true);
        // A sentence with no rare term holds at most the common ones (and the rare ones
        // through its document's title).
        let titled = title_bits.iter().fold(0u64, |m, b| m | b);
        if ceiling((all & !rare) | (titled & rare)) >= scan.best * KEPT_SHARE {
            scan.read(all & !rare, false);
        }
    }
    let best = scan.best;
    let mut hits = std::mem::take(&mut scan.hits);
    scan.release();
    hits.retain(|h| h.score >= best * KEPT_SHARE);
    // Best first; alike ones in document order.
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.doc.cmp(&b.doc))
            .then(a.sentence.cmp(&b.sentence))
    });
    hits
}

/// One ranking's reading of the index (see [`rank`]).
struct Scan<'a> {
    digests: &'a [Arc<Digest>],
    /// Each query term's number in each document.
    ids: &'a [Vec<Option<u32>>],
    query: &'a [&'a String],
    weights: &'a [f64],
    total: f64,
    /// Where each document's sentences start among the library's.
    start: &'a [usize],
    /// For each document, the query's terms its title holds.
    title_bits: &'a [u64],
    needed: usize,
    ceiling: &'a dyn Fn(u64) -> f64,
    question: &'a Question,
    /// A follow-up's own terms (a bit per query term; none for a request of its own).
    follow_up: u64,
    /// For each sentence, the query's terms read for it from the index: its own, its
    /// clause's.
    own_bits: Vec<u64>,
    clause_bits: Vec<u64>,
    /// Every sentence whose bits were set.
    touched: Vec<usize>,
    hits: Vec<Hit>,
    best: f64,
}

thread_local! {
    /// The bits of the last ranking on this thread, all zero, to be used again: a large
    /// library's would otherwise be a fresh allocation (and its pages cleared) per request.
    static SCRATCH: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Scan<'_> {
    /// Whether sentence `k` of document `d` sets a figure of the kind the request states
    /// of its case (an amount in its currency, a share).
    fn states_a_kin(&self, d: usize, k: usize) -> bool {
        self.stated_factor(d, k) > 1.0
    }

    /// [`STATED_BAND`] for a sentence that sets a band the request's figure falls in ("£50,000.01
    /// to £250,000" for a £120,000 purchase), [`STATED_KIN`] for one that sets a figure of
    /// its kind, else 1.
    fn stated_factor(&self, d: usize, k: usize) -> f64 {
        let stated = &self.question.stated;
        if stated.is_empty() {
            return 1.0;
        }
        let values = self.digests[d].values(k);
        let kin = |q: &Value, v: &Value| q.comparable(v);
        // A band is written as one value ("two to three days") or as its two ends in turn
        // ("£50,000.01 to £250,000").
        let within = |q: &Value, low: &Value, high: &Value| {
            kin(q, low)
                && kin(q, high)
                && low.low < high.high
                && q.low >= low.low
                && q.high <= high.high
        };
        let band = values
            .iter()
            .any(|v| stated.iter().any(|q| within(q, v, v)))
            || values
                .windows(2)
                .any(|w| stated.iter().any(|q| within(q, &w[0], &w[1])));
        if band {
            STATED_BAND
        } else if values.iter().any(|v| stated.iter().any(|q| kin(q, v))) {
            STATED_KIN
        } else {
            1.0
        }
    }

    /// Zeroes the bits it set and gives its buffer back for the next ranking.
    fn release(mut self) {
        for &at in &self.touched {
            self.own_bits[at] = 0;
            self.clause_bits[at] = 0;
        }
        let mut buffer = std::mem::take(&mut self.own_bits);
        buffer.append(&mut self.clause_bits);
        if buffer.len() <= MAX_SCRATCH {
            SCRATCH.with(|s| *s.borrow_mut() = buffer);
        }
    }

    /// Reads the sentences that hold one of `terms` (a bit per query term) and were not read
    /// before, and scores those that could reach half the best score. With
    /// `others_unread`, the other terms of the query are looked up in each sentence; else
    /// they were read before (a sentence holding one was read then).
    fn read(&mut self, terms: u64, others_unread: bool) {
        let (digests, query) = (self.digests, self.query);
        let mut touched: Vec<usize> = Vec::new();
        for i in 0..query.len() {
            let bit = 1u64 << i;
            if terms & bit == 0 {
                continue;
            }
            for (d, dg) in digests.iter().enumerate() {
                let Some(id) = self.ids[d][i] else {
                    continue;
                };
                for &k in dg.sentences_with(id) {
                    let at = self.start[d] + k as usize;
                    if self.own_bits[at] | self.clause_bits[at] == 0 {
                        touched.push(at);
                    }
                    self.own_bits[at] |= bit;
                }
                for &c in dg.clauses_with(id) {
                    for k in dg.clause_sentences(c as usize) {
                        let at = self.start[d] + k;
                        if self.own_bits[at] | self.clause_bits[at] == 0 {
                            touched.push(at);
                        }
                        self.clause_bits[at] |= bit;
                    }
                }
            }
        }
        touched.sort_unstable();
        self.touched.extend_from_slice(&touched);
        // The sentences that hold enough of the request, those that could score most first:
        // a sentence that cannot reach half the best score found is not scored.
        let mut qualified: Vec<(f64, usize, usize, u64, u64)> = Vec::new();
        for at in touched {
            let d = self.start.partition_point(|&s0| s0 <= at) - 1;
            let k = at - self.start[d];
            let (mut own, mut clause) = (self.own_bits[at], self.clause_bits[at]);
            if !others_unread
                && (self.ceiling)(own | clause | self.title_bits[d]) < self.best * KEPT_SHARE
            {
                continue;
            }
            let dg = &digests[d];
            // The terms not read from the index, looked up in the sentence itself.
            if others_unread {
                for i in 0..query.len() {
                    let bit = 1u64 << i;
                    if terms & bit != 0 {
                        continue;
                    }
                    let id = self.ids[d][i];
                    if dg.sentence_has(k, id) {
                        own |= bit;
                    } else if dg.clause_has(dg.clause_of(k), id) {
                        clause |= bit;
                    }
                }
            }
            let clause = clause & !own;
            // One word of a question of several in common is a coincidence, not an
            // answer. (One word and the kind of value asked for is enough: "receipt" and an
            // amount.)
            let distinct = (own | clause).count_ones() as usize;
            if distinct < self.needed {
                let kind = !self.question.expects.is_empty()
                    && self.question.answered_by_kinds(dg.kinds(k));
                if !(distinct == 1 && (kind || self.states_a_kin(d, k))) {
                    continue;
                }
            }
            let most = (self.ceiling)(own | clause | self.title_bits[d]);
            qualified.push((most, d, k, own, clause));
        }
        qualified.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
        for (most, d, k, own, clause) in qualified {
            if most < self.best * KEPT_SHARE {
                break;
            }
            let score = self.score(d, k, own, clause);
            self.best = self.best.max(score);
            self.hits.push(Hit {
                doc: d,
                sentence: k,
                clause: digests[d].clause_of(k),
                score,
            });
        }
    }

    /// Sentence `k` of document `d`'s score, with the query's terms it holds (`own`) and
    /// its clause holds (`clause`).
    fn score(&self, d: usize, k: usize, own: u64, clause: u64) -> f64 {
        let a = &self.digests[d];
        let ids = &self.ids[d];
        let seq = a.terms_of(k);
        let mut covered = 0.0;
        for (i, &id) in ids.iter().enumerate().take(self.query.len()) {
            let bit = 1u64 << i;
            // A sentence is about its first words (its subject) more than the rest.
            let share = if own & bit != 0 {
                if seq.iter().take(LEAD).any(|&x| Some(x) == id) {
                    1.0
                } else {
                    LATER
                }
            } else if clause & bit != 0 {
                CONTEXT
            } else if self.title_bits[d] & bit != 0 {
                TITLE
            } else {
                0.0
            };
            covered += share * self.weights[i];
        }
        let mut score = covered / self.total;
        if self.follow_up != 0 && own & self.follow_up == 0 {
            score *= FOLLOW_UP_ELSEWHERE;
        }
        if !self.question.answered_by_kinds(a.kinds(k)) {
            score *= NO_VALUE;
        }
        if a.framing(k) {
            score *= FRAMING;
        }
        score *= self.stated_factor(d, k);
        score *= phrase_factor(seq, ids);
        // Among several documents, an aid's answer counts for less than a policy's.
        if self.digests.len() > 1 {
            score *= a.authority;
        }
        score
    }
}

/// Whether a sentence describes its document rather than a rule ("This policy sets out
/// ...", "This excerpt summarises ..."): such sentences share the document's words with
/// any question about it and rarely answer one.
pub(crate) fn describes_the_document(sentence: &str) -> bool {
    let mut words = sentence.split_whitespace().map(|w| w.to_lowercase());
    matches!(
        (words.next().as_deref(), words.next()),
        (Some("this" | "the"), Some(w)) if crate::references::is_doc_noun_term(&crate::vocabulary::term(w.trim_matches(|c: char| !c.is_alphanumeric())))
    ) && !sentence.to_lowercase().contains(" must ")
}

/// 1 when the sentence (its terms' numbers, in order) keeps every pair of neighbouring
/// query terms (their numbers in its document, `None` for a term it does not have)
/// together, down to `1 - PHRASE_WEIGHT` when it keeps none.
fn phrase_factor(seq: &[u32], query: &[Option<u32>]) -> f64 {
    let pairs: Vec<(Option<u32>, Option<u32>)> = query.windows(2).map(|w| (w[0], w[1])).collect();
    if pairs.is_empty() {
        return 1.0;
    }
    let kept = pairs
        .iter()
        .filter(|(a, b)| seq.windows(2).any(|w| Some(w[0]) == *a && Some(w[1]) == *b))
        .count();
    1.0 - PHRASE_WEIGHT * (1.0 - kept as f64 / pairs.len() as f64)
}

/// The documents of `digests` that answer `question`, each with its best sentence's score,
/// best first.
pub(crate) fn rank_documents(digests: &[Arc<Digest>], question: &Question) -> Vec<(usize, f64)> {
    rank_answers(digests, question)
        .into_iter()
        .map(|a| (a.doc, a.score))
        .collect()
}

/// A document's best answer to a request.
pub(crate) struct Answer {
    /// The document (an index into those ranked).
    pub(crate) doc: usize,
    /// Its best sentence's score.
    pub(crate) score: f64,
    /// The values that sentence states.
    pub(crate) values: Vec<crate::docmodel::values::Value>,
}

/// The documents of `digests` that answer `question`, each with its best sentence's score
/// and values, best first.
pub(crate) fn rank_answers(digests: &[Arc<Digest>], question: &Question) -> Vec<Answer> {
    let mut best: Vec<Answer> = Vec::new();
    for h in rank(digests, question) {
        if !best.iter().any(|a| a.doc == h.doc) {
            let values = digests[h.doc].values(h.sentence).to_vec();
            best.push(Answer {
                doc: h.doc,
                score: h.score,
                values,
            });
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
        let a = [crate::analysis::analysis(&d)];
        let q = read("How quickly must a gift be recorded?");
        let hits = rank(&[a[0].digest.clone()], &q);
        let best = &a[0].model.sentences[hits[0].sentence];
        assert!(
            best.text.contains("within 5 business days"),
            "{}",
            best.text
        );
    }

    #[test]
    fn the_band_a_stated_figure_falls_in_answers() {
        let d = doc(
            "p",
            "Procurement Policy",
            "## 2. Definitions\n\n2.1 **Purchase value** means the total value of the commitment including VAT, over the full term of the contract.\n\n## 3. Approval limits\n\n3.1 Every purchase must be approved by the role set out below:\n\n| Purchase value | Approver |\n|---|---|\n| Up to £5,000 | Budget holder |\n| £5,000.01 to £50,000 | Head of Department |\n| £50,000.01 to £250,000 | Chief Financial Officer |\n| Above £250,000 | Executive Committee |",
        );
        let a = crate::analysis::analysis(&d);
        let q =
            read("Whose sign-off do I need for a software licence worth £120,000 including VAT?");
        let hits = rank(std::slice::from_ref(&a.digest), &q);
        let best = &a.model.sentences[hits[0].sentence];
        assert!(
            best.text.contains("Chief Financial Officer"),
            "{}",
            best.text
        );
        // A figure said as a bound falls in no band.
        let q = read("Whose sign-off do I need for a licence of more than £50,000?");
        assert!(q.stated[0].high.is_infinite());
        let hits = rank(std::slice::from_ref(&a.digest), &q);
        assert!(!a.model.sentences[hits[0].sentence]
            .text
            .contains("Head of Department"));
        // Without a figure, no row is preferred to another.
        let q = read("Whose sign-off do I need for a software licence?");
        let hits = rank(std::slice::from_ref(&a.digest), &q);
        assert!(hits.len() >= 4 && (hits[0].score - hits[3].score).abs() < 1e-9);
    }
}
