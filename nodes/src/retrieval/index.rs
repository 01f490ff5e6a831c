//! Where each term is in a library: for every term, the sentences that hold it and the
//! clauses that hold it (a clause's terms count for its every sentence), so that ranking a
//! request reads only the sentences that share a term with it, and a term's rarity is the
//! length of its list. Built once per library and kept for the turns after: a small memo
//! holds the last libraries seen, each by its documents' analyses (a document analysed
//! again is a different library).

use std::collections::VecDeque;
use std::sync::{Arc, LazyLock, Mutex, Weak};

use foldhash::{HashMap, HashMapExt as _};

use crate::analysis::Analysis;

/// At most this many libraries' indexes are kept.
const KEPT: usize = 8;
/// Sets of up to this many documents are kept apart from libraries.
const FEW: usize = 16;
/// At most this many sets of a few documents' indexes are kept.
const KEPT_FEW: usize = 64;

/// A place in a library: a document (its index among the analyses) and a sentence or a
/// clause of it.
pub(crate) type At = (u32, u32);

/// The index of a library.
#[derive(Default)]
pub(crate) struct Index {
    /// For each term, the sentences that hold it, in order.
    pub(crate) sentences: HashMap<String, Vec<At>>,
    /// For each term, the clauses that hold it (with their heading), in order.
    pub(crate) clauses: HashMap<String, Vec<At>>,
    /// How many sentences the library has.
    pub(crate) units: usize,
}

impl Index {
    fn of(analyses: &[Arc<Analysis>]) -> Index {
        let mut index = Index {
            sentences: HashMap::new(),
            clauses: HashMap::new(),
            units: 0,
        };
        for (d, a) in analyses.iter().enumerate() {
            let d = u32::try_from(d).unwrap_or(u32::MAX);
            index.units += a.sentence_terms.len();
            for (k, terms) in a.sentence_terms.iter().enumerate() {
                for t in terms {
                    index
                        .sentences
                        .entry(t.clone())
                        .or_default()
                        .push((d, u32::try_from(k).unwrap_or(u32::MAX)));
                }
            }
            for (c, terms) in a.clause_terms.iter().enumerate() {
                for t in terms {
                    index
                        .clauses
                        .entry(t.clone())
                        .or_default()
                        .push((d, u32::try_from(c).unwrap_or(u32::MAX)));
                }
            }
        }
        index
    }

    /// How many sentences hold `term`.
    pub(crate) fn df(&self, term: &str) -> usize {
        self.sentences.get(term).map_or(0, Vec::len)
    }
}

struct Kept {
    analyses: Vec<Weak<Analysis>>,
    index: Arc<Index>,
}

static MEMO: LazyLock<Mutex<VecDeque<Kept>>> = LazyLock::new(|| Mutex::new(VecDeque::new()));
static FEW_MEMO: LazyLock<Mutex<VecDeque<Kept>>> = LazyLock::new(|| Mutex::new(VecDeque::new()));

/// The index of the library these analyses make, from the memo when it holds them.
pub(crate) fn index(analyses: &[Arc<Analysis>]) -> Arc<Index> {
    // A few documents (the ones a turn resolved) are kept apart, so they never push a
    // library out.
    let memo = if analyses.len() <= FEW {
        &FEW_MEMO
    } else {
        &MEMO
    };
    let kept = if analyses.len() <= FEW {
        KEPT_FEW
    } else {
        KEPT
    };
    let same = |k: &Kept| {
        k.analyses.len() == analyses.len()
            && k.analyses
                .iter()
                .zip(analyses)
                .all(|(w, a)| std::ptr::eq(w.as_ptr(), Arc::as_ptr(a)) && w.strong_count() > 0)
    };
    if let Ok(mut memo) = memo.lock() {
        if let Some(i) = memo.iter().position(same) {
            let kept = memo.remove(i);
            if let Some(kept) = kept {
                let index = Arc::clone(&kept.index);
                memo.push_front(kept);
                return index;
            }
        }
    }
    let made = Arc::new(Index::of(analyses));
    if let Ok(mut memo) = memo.lock() {
        memo.retain(|k| k.analyses.iter().all(|w| w.strong_count() > 0));
        memo.push_front(Kept {
            analyses: analyses.iter().map(Arc::downgrade).collect(),
            index: Arc::clone(&made),
        });
        memo.truncate(kept);
    }
    made
}
