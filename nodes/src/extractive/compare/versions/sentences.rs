//! What changed between two versions of one clause, a sentence at a time: sentences are
//! paired by their words, each pair lists what moved ([`super::changes`]) with the newer
//! sentence quoted as far as the change reaches ([`super::quote`]); a sentence of one
//! version only is added or removed, unless the other version's clause says it in other
//! words.

use std::collections::HashSet;
use std::fmt::Write as _;

use super::changes::changes_at;
use super::quote::quote;
use super::{jaccard, same_words, words_of, Clause, SAME_CLAUSE};
use crate::docmodel::values::values;
use crate::text::{sentences, terms};

/// A sentence found in one version only is said in other words by the other version's
/// clause when at least this share of its terms are there (and all its values).
const SAID_OTHERWISE: f64 = 0.75;

/// What changed between two versions of a clause, a sentence at a time, each line with
/// its citations.
pub(super) fn sentence_changes(ca: &Clause<'_>, cb: &Clause<'_>) -> Vec<String> {
    let sa = sentences(&ca.text);
    let sb = sentences(&cb.text);
    let wa: Vec<HashSet<String>> = sa.iter().map(|s| words_of(s)).collect();
    let wb: Vec<HashSet<String>> = sb.iter().map(|s| words_of(s)).collect();
    let mut candidates: Vec<(f64, usize, usize)> = Vec::new();
    for (i, x) in wa.iter().enumerate() {
        for (j, y) in wb.iter().enumerate() {
            let sim = jaccard(x, y);
            if sim >= SAME_CLAUSE || same_words(&sa[i], &sb[j]) {
                candidates.push((sim, i, j));
            }
        }
    }
    let mut pairs = super::best_pairs(candidates, sa.len(), sb.len());
    let mut a_used = vec![false; sa.len()];
    let mut b_used = vec![false; sb.len()];
    for (i, j) in &pairs {
        a_used[*i] = true;
        b_used[*j] = true;
    }
    pairs.sort_by_key(|p| p.1);
    let cite = |i: Option<usize>, j: Option<usize>| {
        let mut s = String::new();
        if let Some(i) = i {
            let _ = write!(s, " [{}]", ca.cite(&sa[i]));
        }
        if let Some(j) = j {
            let _ = write!(s, " [{}]", cb.cite(&sb[j]));
        }
        s
    };
    let mut out = Vec::new();
    for (i, j) in pairs {
        if same_words(&sa[i], &sb[j]) {
            continue;
        }
        let (moves, spans) = changes_at(&sa[i], &sb[j]);
        if !moves.is_empty() {
            out.push(format!(
                "{} (\"{}\"){}",
                moves.join("; "),
                quote(&sb[j], &spans),
                cite(Some(i), Some(j))
            ));
        }
    }
    for (j, s) in sb.iter().enumerate() {
        if !b_used[j] && !said_otherwise(s, &ca.text) {
            out.push(format!(
                "added: \"{}\"{}",
                s.trim_end_matches('.'),
                cite(None, Some(j))
            ));
        }
    }
    for (i, s) in sa.iter().enumerate() {
        if !a_used[i] && !said_otherwise(s, &cb.text) {
            out.push(format!(
                "removed: \"{}\"{}",
                s.trim_end_matches('.'),
                cite(Some(i), None)
            ));
        }
    }
    out
}

/// Whether `clause` says what `sentence` says in other words: most of its terms and all
/// of its values.
fn said_otherwise(sentence: &str, clause: &str) -> bool {
    let mine = terms(sentence);
    if mine.is_empty() {
        return true;
    }
    let theirs: HashSet<String> = terms(clause).into_iter().collect();
    let share = mine.iter().filter(|t| theirs.contains(*t)).count() as f64 / mine.len() as f64;
    let their_values = values(clause);
    share >= SAID_OTHERWISE
        && values(sentence)
            .iter()
            .all(|v| their_values.iter().any(|w| v.same_as(w)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentence_split_in_two_is_not_removed() {
        assert!(said_otherwise(
            "Such claims are approved by the next manager up.",
            "Nobody may approve their own claim; these claims are approved by the next manager up."
        ));
        assert!(!said_otherwise(
            "First class may be booked for journeys over 3 hours.",
            "Rail travel is in standard class."
        ));
    }
}
