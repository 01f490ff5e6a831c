//! What the words of one sentence changed between two versions, beyond its values: the
//! phrases that differ (a longest common subsequence of the two sentences' words, runs of
//! changes joined across the small words between them), of which only those that change
//! what the sentence says are kept: a name ("the Head of Department" → "a member of the
//! Executive Committee"), a modal verb when the sentence's force changed ("should" →
//! "must"), or a phrase of at least two words of meaning added or dropped ("…, and to data
//! held in cloud collaboration tools"). A reworded sentence ("Staff may stay with friends"
//! → "Staying with friends is allowed") changes none of these. A value that moved is
//! shown with the words that bound it ("within 4 hours").

use std::collections::HashSet;
use std::ops::Range;

use crate::docmodel::rules;
use crate::docmodel::values::{words, Value, Word};
use crate::text::is_stopword;
use crate::vocabulary::term;

/// Changes at most this many small words apart are one phrase.
const JOIN_ACROSS: usize = 2;
/// A phrase added or dropped says something new with at least this many words of meaning
/// the other version does not have.
const NEW_WORDS: usize = 2;

/// Words that give a sentence its force.
const MODALS: [&str; 17] = [
    "must",
    "shall",
    "should",
    "may",
    "can",
    "cannot",
    "will",
    "might",
    "could",
    "required",
    "mandatory",
    "optional",
    "recommended",
    "expected",
    "permitted",
    "allowed",
    "prohibited",
];

/// A phrase that differs between two versions of a sentence: where it is in each (an empty
/// range where one version has nothing).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Edit {
    /// Where in the older sentence (bytes).
    pub(super) old: Range<usize>,
    /// Where in the newer sentence (bytes).
    pub(super) new: Range<usize>,
}

/// The edits that change what the sentence says, in the newer sentence's order; edits
/// that touch `skip_old` or `skip_new` (spans already reported, such as values) are left
/// out.
pub(super) fn edits(
    a: &str,
    b: &str,
    skip_old: &[Range<usize>],
    skip_new: &[Range<usize>],
) -> Vec<Edit> {
    let (wa, wb) = (words(a), words(b));
    let (ka, kb) = (keys(&wa), keys(&wb));
    let runs = differing_runs(&ka, &kb);
    let terms_a: HashSet<&str> = ka.iter().map(String::as_str).collect();
    let terms_b: HashSet<&str> = kb.iter().map(String::as_str).collect();
    let force_changed = rules::read(a).modality != rules::read(b).modality;
    let overlaps = |r: &Range<usize>, spans: &[Range<usize>]| {
        spans.iter().any(|s| s.start < r.end && r.start < s.end)
    };
    let mut out = Vec::new();
    for (ra, rb) in runs {
        let old = span(&wa, &ra);
        let new = span(&wb, &rb);
        if overlaps(&old, skip_old) || overlaps(&new, skip_new) {
            continue;
        }
        let meaning = |w: &[Word], k: &[String], r: &Range<usize>, other: &HashSet<&str>| {
            r.clone()
                .filter(|&i| !is_stopword(&w[i].text) && !other.contains(k[i].as_str()))
                .count()
        };
        let (gone, came) = (
            meaning(&wa, &ka, &ra, &terms_b),
            meaning(&wb, &kb, &rb, &terms_a),
        );
        let named = |text: &str, w: &[Word], r: &Range<usize>| {
            r.clone().any(|i| {
                let raw = &text[w[i].span.clone()];
                i > 0 && raw.chars().next().is_some_and(char::is_uppercase)
            })
        };
        let modal =
            |w: &[Word], r: &Range<usize>| r.clone().any(|i| MODALS.contains(&w[i].text.as_str()));
        // A figure no value reads ("by 12:00" → "by 10:00"): changed when both sides have
        // one and they differ.
        let figure = |text: &str, w: &[Word], r: &Range<usize>| -> Vec<String> {
            r.clone()
                .map(|i| text[w[i].span.clone()].to_string())
                .filter(|x| x.chars().any(|c| c.is_ascii_digit()))
                .collect()
        };
        let (fa, fb) = (figure(a, &wa, &ra), figure(b, &wb, &rb));
        let refigured = !fa.is_empty() && !fb.is_empty() && fa != fb;
        let significant = refigured
            || if ra.is_empty() || rb.is_empty() {
                gone.max(came) >= NEW_WORDS
            } else {
                (named(a, &wa, &ra) || named(b, &wb, &rb)) && (gone > 0 || came > 0)
                    || force_changed && (modal(&wa, &ra) || modal(&wb, &rb))
                    || gone >= NEW_WORDS && came >= NEW_WORDS
            };
        if significant {
            out.push(Edit { old, new });
        }
    }
    out
}

/// The words as they are compared: their terms, so "claims" meets "claim".
fn keys(ws: &[Word]) -> Vec<String> {
    ws.iter().map(|w| term(&w.text)).collect()
}

/// Where a run of words sits in its sentence (an empty range at the next word when the run
/// is empty).
fn span(ws: &[Word], r: &Range<usize>) -> Range<usize> {
    if r.is_empty() {
        let at = ws
            .get(r.start)
            .map(|w| w.span.start)
            .or_else(|| ws.last().map(|w| w.span.end))
            .unwrap_or(0);
        return at..at;
    }
    ws[r.start].span.start..ws[r.end - 1].span.end
}

/// The runs of words that differ, as ranges of word indexes in each sentence, joined when
/// only small words they share lie between them.
fn differing_runs(ka: &[String], kb: &[String]) -> Vec<(Range<usize>, Range<usize>)> {
    let (n, m) = (ka.len(), kb.len());
    // lcs[i][j]: the longest common subsequence of ka[i..] and kb[j..].
    let mut lcs = vec![vec![0u16; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if ka[i] == kb[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut runs: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    let mut open: Option<(usize, usize)> = None;
    // Shared words since the last run: joined across when all are small words.
    let mut shared_small = 0usize;
    let mut shared_big = false;
    while i < n || j < m {
        if i < n && j < m && ka[i] == kb[j] {
            if let Some((si, sj)) = open.take() {
                runs.push((si..i, sj..j));
                shared_small = 0;
                shared_big = false;
            }
            if is_stopword(&ka[i]) {
                shared_small += 1;
            } else {
                shared_big = true;
            }
            i += 1;
            j += 1;
            continue;
        }
        if open.is_none() {
            let joins = !runs.is_empty() && !shared_big && shared_small <= JOIN_ACROSS;
            open = Some(match runs.pop() {
                Some((ra, rb)) if joins => (ra.start, rb.start),
                Some(last) => {
                    runs.push(last);
                    (i, j)
                }
                None => (i, j),
            });
        }
        if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            j += 1;
        } else {
            i += 1;
        }
    }
    if let Some((si, sj)) = open {
        runs.push((si..n, sj..m));
    }
    runs
}

/// A value with the words that bound it, as the text writes them ("within 4 hours", "at
/// least 20 closed alerts", "no more than EUR 500"): a limit's direction is part of the
/// rule.
pub(super) fn bounded(text: &str, v: &Value) -> String {
    const BOUNDS: [&str; 17] = [
        "within",
        "at least",
        "at most",
        "up to",
        "no more than",
        "no less than",
        "no fewer than",
        "not more than",
        "not less than",
        "more than",
        "less than",
        "fewer than",
        "over",
        "under",
        "above",
        "below",
        "exceeding",
    ];
    let before = text.get(..v.span.start).unwrap_or("").trim_end();
    BOUNDS
        .iter()
        .filter_map(|b| {
            let start = before.len().checked_sub(b.len())?;
            let tail = before.get(start..)?;
            let whole_word = before[..start]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_alphanumeric());
            (tail.eq_ignore_ascii_case(b) && whole_word).then_some(tail)
        })
        .max_by_key(|t| t.len())
        .map_or_else(|| v.written.clone(), |t| format!("{t} {}", v.written))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(a: &str, b: &str) -> Vec<(String, String)> {
        edits(a, b, &[], &[])
            .into_iter()
            .map(|e| (a[e.old].to_string(), b[e.new].to_string()))
            .collect()
    }

    #[test]
    fn a_new_name_is_a_change() {
        assert_eq!(
            shown(
                "Trips outside Europe must also be approved by the Head of Department.",
                "Trips outside Europe must also be approved by a member of the Executive Committee."
            ),
            [(
                "the Head of Department".to_string(),
                "a member of the Executive Committee".to_string()
            )]
        );
    }

    #[test]
    fn an_added_scope_is_a_change_and_rewording_is_not() {
        let e = shown(
            "This policy applies to all records created by the company.",
            "This policy applies to all records created by the company, and to data held in cloud collaboration tools.",
        );
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].1, "and to data held in cloud collaboration tools");
        assert!(shown(
            "Staff may stay with friends or family while travelling, but no accommodation allowance is paid in that case.",
            "Staying with friends or family while travelling is allowed, but no accommodation allowance is paid."
        )
        .is_empty());
        assert!(shown(
            "This policy sets the rules for booking business travel.",
            "This policy sets out the rules for booking business travel."
        )
        .is_empty());
    }

    #[test]
    fn a_change_of_force_is_a_change() {
        assert_eq!(
            shown(
                "Email correspondence should be retained.",
                "Email correspondence must be retained."
            ),
            [("should".to_string(), "must".to_string())]
        );
    }
}
