//! The extractive comparison. Two versions of one document are compared clause by clause
//! ([`versions`]): every value that moved old → new, who approves or is told, the phrases
//! whose change alters what a sentence says ([`wording`]), clauses added and removed, and
//! nothing that stayed the same. Versions are compared oldest to newest, each with the
//! next.
//!
//! Two documents that are not versions of each other are set side by side on what the
//! request asks about, or on the topics they share ([`topics`]). A topic in the request
//! ("what changed for recorded calls?") narrows either, as does a kind of value it names
//! ("the deadlines": [`kinds`]).

mod kinds;
mod topics;
mod versions;
mod wording;

use std::collections::HashSet;

use super::focus;
use crate::llm::AnswerRequest;
use crate::state::DocRef;
use crate::text::terms;

/// Clauses at least this alike are the same clause in two versions.
const SAME_CLAUSE: f64 = 0.4;

/// The words of a text that say what it is about: its terms without figures.
fn words_of(text: &str) -> HashSet<String> {
    terms(text)
        .into_iter()
        .filter(|t| !t.chars().any(|c| c.is_ascii_digit()))
        .collect()
}

fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

/// Compares the request's documents, each with the next.
pub(crate) fn compare(request: &AnswerRequest) -> String {
    let documents = oldest_first(request);
    let [first, others @ ..] = documents.as_slice() else {
        return "There are no documents to compare.".to_string();
    };
    if others.is_empty() {
        return format!(
            "Comparing needs two documents; I only have {}.",
            first.title
        );
    }
    let q = focus(request);
    let mut out = String::new();
    for pair in documents.windows(2) {
        if versions_of_one(request, &pair[0], &pair[1]) {
            let (a, b) = (
                versions::version(&pair[0], request),
                versions::version(&pair[1], request),
            );
            versions::compare(request, &a, &b, &q, &mut out);
        } else {
            let (a, b) = (
                topics::side(&pair[0], request),
                topics::side(&pair[1], request),
            );
            topics::compare(request, &a, &b, &q, &mut out);
        }
    }
    out
}

/// Whether `a` and `b` are versions of one document (either says it follows the other,
/// or both are editions of one family the request lists).
fn versions_of_one(request: &AnswerRequest, a: &DocRef, b: &DocRef) -> bool {
    request.versions.iter().any(|r| {
        (r.newer.id == a.id && r.older.id == b.id) || (r.newer.id == b.id && r.older.id == a.id)
    }) || {
        // Further apart in one family: linked through the versions between them.
        let family = |id: &str| -> HashSet<String> {
            let mut seen = HashSet::from([id.to_string()]);
            loop {
                let before = seen.len();
                for r in &request.versions {
                    if seen.contains(&r.newer.id) || seen.contains(&r.older.id) {
                        seen.insert(r.newer.id.clone());
                        seen.insert(r.older.id.clone());
                    }
                }
                if seen.len() == before {
                    return seen;
                }
            }
        };
        family(&a.id).contains(&b.id)
    }
}

/// The request's documents, each older version before the version after it.
fn oldest_first(request: &AnswerRequest) -> Vec<DocRef> {
    let mut docs = request.documents.clone();
    // Sorted by how many versions precede each within its family (stable for the rest).
    let depth = |d: &DocRef| {
        let mut n = 0;
        let mut id = d.id.clone();
        while let Some(older) = request
            .versions
            .iter()
            .find(|r| r.newer.id == id)
            .map(|r| r.older.id.clone())
        {
            n += 1;
            id = older;
            if n > 64 {
                break;
            }
        }
        n
    };
    let positions: Vec<(usize, usize)> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| (depth(d), i))
        .collect();
    let mut order: Vec<usize> = (0..docs.len()).collect();
    order.sort_by_key(|&i| {
        // Keep unrelated documents where they were; order versions by depth.
        let fam_first = docs
            .iter()
            .position(|d| versions_of_one(request, d, &docs[i]) || d.id == docs[i].id)
            .unwrap_or(i);
        (fam_first, positions[i].0)
    });
    let sorted: Vec<DocRef> = order.into_iter().map(|i| docs[i].clone()).collect();
    docs.clone_from(&sorted);
    docs
}

/// The best pairs among `candidates` (similarity, index in one, index in the other),
/// best first, each index used once; sorted by the first index.
fn best_pairs(mut candidates: Vec<(f64, usize, usize)>, n: usize, m: usize) -> Vec<(usize, usize)> {
    candidates.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
    let mut a_used = vec![false; n];
    let mut b_used = vec![false; m];
    let mut pairs = Vec::new();
    for (_, i, j) in candidates {
        if !a_used[i] && !b_used[j] {
            a_used[i] = true;
            b_used[j] = true;
            pairs.push((i, j));
        }
    }
    pairs.sort_unstable();
    pairs
}
