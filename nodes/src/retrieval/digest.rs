//! A document's digest: what a turn needs of a document it does not quote, made with its
//! analysis (once, at upload) and kept far smaller than it (a few bytes a term of text, where
//! the analysis keeps texts, term sets and readings).
//!
//! - its header, for the versions of the library ([`crate::versions`]);
//! - where each term is, for ranking ([`super::rank`]): for every term, the sentences and
//!   the clauses that hold it (as numbers, in order), each sentence's terms in order (its
//!   subject and its phrases), the kinds of value it gives and whether it describes the
//!   document, and the values of the sentences that give any;
//! - its title's terms, its authority, and its opening passage.
//!
//! A library's ranking reads its documents' digests only: the document model of a
//! document is read when a turn quotes it.

use std::ops::Range;

use foldhash::{HashMap, HashMapExt as _};

use crate::analysis::Terms;
use crate::docmodel::header::Header;
use crate::docmodel::values::Value;
use crate::docmodel::DocModel;
use crate::passages::Passage;

/// The bit of [`Digest::kinds`] that says a sentence describes its document.
const FRAMING: u8 = 1 << 7;

/// What a turn needs of a document it ranks or lists but does not quote (see the module
/// docs).
#[derive(Debug)]
pub(crate) struct Digest {
    /// Each term's number.
    ids: HashMap<Box<str>, u32>,
    /// For each term, where its sentences start in `sentence_postings` (one more entry
    /// than terms).
    sentence_at: Vec<u32>,
    /// The sentences that hold each term, in order.
    sentence_postings: Vec<u32>,
    /// For each term, where its clauses start in `clause_postings`.
    clause_at: Vec<u32>,
    /// The clauses that hold each term (or their heading does), in order.
    clause_postings: Vec<u32>,
    /// Each sentence's clause.
    clause_of: Vec<u32>,
    /// For each clause, its first sentence (one more entry than clauses): a clause's
    /// sentences follow each other.
    clause_first: Vec<u32>,
    /// For each sentence, where its terms start in `sequence`.
    sequence_at: Vec<u32>,
    /// Each sentence's retrieval terms in order, as numbers.
    sequence: Vec<u32>,
    /// Each sentence's kinds of value ([`crate::question::kinds`]), and [`FRAMING`].
    kinds: Vec<u8>,
    /// The values of each sentence that states any.
    values: HashMap<u32, Vec<Value>>,
    /// The title's terms.
    pub(crate) title_terms: Terms,
    /// How much its answers count beside other documents' (an aid less than a policy:
    /// [`crate::docmodel::header::authority`]).
    pub(crate) authority: f64,
    /// What the document says about itself (family, version, dates, what it supersedes).
    pub(crate) header: Header,
    /// Its first clause, unnumbered and unscored, which says what it is.
    pub(crate) opening: Option<Passage>,
}

/// What [`Digest::of`] makes a digest from.
pub(crate) struct Parts<'a> {
    pub(crate) model: &'a DocModel,
    /// Each sentence's terms (aligned with `model.sentences`).
    pub(crate) sentence_terms: &'a [Terms],
    /// Each clause's terms, its heading's included.
    pub(crate) clause_terms: &'a [Terms],
    pub(crate) title_terms: Terms,
    pub(crate) authority: f64,
    pub(crate) opening: Option<Passage>,
}

/// Turns a number of things the digest counts into its `u32` (a document of the accepted
/// size holds far fewer than four billion sentences or terms).
fn n(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// Postings by term number, laid out one after the other.
fn postings(lists: Vec<Vec<u32>>) -> (Vec<u32>, Vec<u32>) {
    let mut at = Vec::with_capacity(lists.len() + 1);
    let mut all = Vec::with_capacity(lists.iter().map(Vec::len).sum());
    at.push(0);
    for l in lists {
        all.extend(l);
        at.push(n(all.len()));
    }
    (at, all)
}

impl Digest {
    /// The digest of an analysed document.
    pub(crate) fn of(parts: Parts<'_>) -> Digest {
        let model = parts.model;
        let mut ids: HashMap<Box<str>, u32> = HashMap::new();
        let mut sentences: Vec<Vec<u32>> = Vec::new();
        let mut clauses: Vec<Vec<u32>> = Vec::new();
        let mut id = |t: &str, sentences: &mut Vec<Vec<u32>>, clauses: &mut Vec<Vec<u32>>| {
            if let Some(&i) = ids.get(t) {
                return i as usize;
            }
            let i = sentences.len();
            ids.insert(t.into(), n(i));
            sentences.push(Vec::new());
            clauses.push(Vec::new());
            i
        };
        for (k, terms) in parts.sentence_terms.iter().enumerate() {
            for t in terms {
                let i = id(t, &mut sentences, &mut clauses);
                sentences[i].push(n(k));
            }
        }
        for (c, terms) in parts.clause_terms.iter().enumerate() {
            for t in terms {
                let i = id(t, &mut sentences, &mut clauses);
                clauses[i].push(n(c));
            }
        }
        let mut sequence_at = Vec::with_capacity(model.sentences.len() + 1);
        let mut sequence = Vec::new();
        let mut kinds = Vec::with_capacity(model.sentences.len());
        let mut values = HashMap::new();
        sequence_at.push(0);
        for (k, s) in model.sentences.iter().enumerate() {
            sequence.extend(s.terms.iter().map(|t| id(t, &mut sentences, &mut clauses)));
            sequence_at.push(n(sequence.len()));
            let framing = if super::describes_the_document(&s.text) {
                FRAMING
            } else {
                0
            };
            kinds.push(crate::question::kinds(&s.reading) | framing);
            if !s.reading.bounds.is_empty() {
                let v: Vec<Value> = s.reading.bounds.iter().map(|b| b.value.clone()).collect();
                values.insert(n(k), v);
            }
        }
        let sequence = sequence.into_iter().map(n).collect();
        let mut clause_first =
            vec![0u32; parts.clause_terms.len().max(model.outline.clauses.len()) + 1];
        // A clause's first sentence, else the first of the clauses after it.
        let mut next = n(model.sentences.len());
        let mut seen = vec![false; clause_first.len()];
        for (k, s) in model.sentences.iter().enumerate().rev() {
            if let Some(slot) = clause_first.get_mut(s.clause) {
                *slot = n(k);
                seen[s.clause] = true;
            }
        }
        for c in (0..clause_first.len()).rev() {
            if seen[c] {
                next = clause_first[c];
            } else {
                clause_first[c] = next;
            }
        }
        let clause_of = model.sentences.iter().map(|s| n(s.clause)).collect();
        let (sentence_at, sentence_postings) = postings(sentences);
        let (clause_at, clause_postings) = postings(clauses);
        ids.shrink_to_fit();
        Digest {
            ids,
            sentence_at,
            sentence_postings,
            clause_at,
            clause_postings,
            clause_of,
            clause_first,
            sequence_at,
            sequence,
            kinds,
            values,
            title_terms: parts.title_terms,
            authority: parts.authority,
            header: model.header.clone(),
            opening: parts.opening,
        }
    }

    /// How many sentences it has.
    pub(crate) fn sentences(&self) -> usize {
        self.clause_of.len()
    }

    /// The number of `term`, when the document has it.
    pub(crate) fn id(&self, term: &str) -> Option<u32> {
        self.ids.get(term).copied()
    }

    fn slice<'a>(at: &[u32], all: &'a [u32], id: u32) -> &'a [u32] {
        let i = id as usize;
        match (at.get(i), at.get(i + 1)) {
            (Some(&a), Some(&b)) => &all[a as usize..b as usize],
            _ => &[],
        }
    }

    /// The sentences that hold term `id`, in order.
    pub(crate) fn sentences_with(&self, id: u32) -> &[u32] {
        Self::slice(&self.sentence_at, &self.sentence_postings, id)
    }

    /// The clauses that hold term `id` (or whose heading does), in order.
    pub(crate) fn clauses_with(&self, id: u32) -> &[u32] {
        Self::slice(&self.clause_at, &self.clause_postings, id)
    }

    /// How many sentences hold `term`.
    pub(crate) fn df(&self, term: &str) -> usize {
        self.id(term).map_or(0, |i| self.sentences_with(i).len())
    }

    /// Whether sentence `k` holds term `id`.
    pub(crate) fn sentence_has(&self, k: usize, id: Option<u32>) -> bool {
        id.is_some_and(|i| self.sentences_with(i).binary_search(&n(k)).is_ok())
    }

    /// Whether clause `c` (or its heading) holds term `id`.
    pub(crate) fn clause_has(&self, c: usize, id: Option<u32>) -> bool {
        id.is_some_and(|i| self.clauses_with(i).binary_search(&n(c)).is_ok())
    }

    /// The sentences of clause `c`.
    pub(crate) fn clause_sentences(&self, c: usize) -> Range<usize> {
        match (self.clause_first.get(c), self.clause_first.get(c + 1)) {
            (Some(&a), Some(&b)) => a as usize..b as usize,
            _ => 0..0,
        }
    }

    /// Sentence `k`'s clause.
    pub(crate) fn clause_of(&self, k: usize) -> usize {
        self.clause_of.get(k).map_or(0, |&c| c as usize)
    }

    /// Sentence `k`'s retrieval terms, in order, as numbers.
    pub(crate) fn terms_of(&self, k: usize) -> &[u32] {
        Self::slice(&self.sequence_at, &self.sequence, n(k))
    }

    /// The kinds of value sentence `k` gives ([`crate::question::kinds`]).
    pub(crate) fn kinds(&self, k: usize) -> u8 {
        self.kinds.get(k).map_or(0, |b| b & !FRAMING)
    }

    /// Whether sentence `k` describes its document rather than a rule ("This policy sets
    /// out ...": [`super::describes_the_document`]).
    pub(crate) fn framing(&self, k: usize) -> bool {
        self.kinds.get(k).is_some_and(|b| b & FRAMING != 0)
    }

    /// The values sentence `k` states.
    pub(crate) fn values(&self, k: usize) -> &[Value] {
        self.values.get(&n(k)).map_or(&[], Vec::as_slice)
    }

    /// About how many bytes it holds.
    pub(crate) fn bytes(&self) -> usize {
        let words = self.sentence_at.len()
            + self.sentence_postings.len()
            + self.clause_at.len()
            + self.clause_postings.len()
            + self.clause_of.len()
            + self.clause_first.len()
            + self.sequence_at.len()
            + self.sequence.len();
        let terms: usize = self.ids.keys().map(|t| t.len() + 24).sum();
        let values: usize = self
            .values
            .values()
            .map(|v| 32 + v.len() * (std::mem::size_of::<Value>() + 16))
            .sum();
        words * 4 + self.kinds.len() + terms + values + 512
    }
}
