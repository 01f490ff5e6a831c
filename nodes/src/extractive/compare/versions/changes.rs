//! What moved between two versions of a sentence: each value whose amount changed, old →
//! new (paired with the value of the same kind nearest in position and words), values no
//! longer or newly stated, who approves or is told when that changed, and the phrases whose
//! change alters what the sentence says ([`super::super::wording`]), each with where it
//! sits in the newer sentence.

use std::collections::HashSet;
use std::ops::Range;

use super::super::wording::{bounded, edits};
use crate::docmodel::rules::{self, same_role, RoleKind};
use crate::docmodel::values::{values, Value};
use crate::text::terms;

/// What moved between two versions of a sentence (see [`changes`]), with where each change
/// sits in the newer sentence.
pub(super) fn changes_at(a: &str, b: &str) -> (Vec<String>, Vec<Range<usize>>) {
    let (mut out, value_spans) = value_changes(a, b);
    let roles = role_changes(a, b);
    let mut spans = value_spans;
    for (old, new) in &roles {
        out.push(format!("{old} → {new}"));
        if let Some(k) = b.find(new.as_str()) {
            spans.push(k..k + new.len());
        }
    }
    // Values and changed roles are shown above: their words are no edits of their own.
    let occurrences = |text: &str, part: &str| -> Vec<Range<usize>> {
        text.match_indices(part)
            .map(|(k, m)| k..k + m.len())
            .collect()
    };
    let mut skip_old: Vec<Range<usize>> = values(a).into_iter().map(|v| v.span).collect();
    let mut skip_new: Vec<Range<usize>> = values(b).into_iter().map(|v| v.span).collect();
    for (old, new) in &roles {
        skip_old.extend(occurrences(a, old));
        skip_new.extend(occurrences(b, new));
    }
    for e in edits(a, b, &skip_old, &skip_new) {
        let (old, new) = (&a[e.old.clone()], &b[e.new.clone()]);
        if roles.iter().any(|(o, _)| old.contains(o.as_str())) {
            continue;
        }
        out.push(match (old.is_empty(), new.is_empty()) {
            (true, _) => format!("adds \"{new}\""),
            (_, true) => format!("drops \"{old}\""),
            _ => format!("\"{old}\" → \"{new}\""),
        });
        spans.push(e.new);
    }
    (out, spans)
}

/// What moved between two versions of a clause: each value whose amount changed (paired
/// with the value of the same kind nearest in position and words), values that appear or
/// disappear, dates, and who approves or is told.
#[cfg(test)]
pub(crate) fn changes(a: &str, b: &str) -> Vec<String> {
    changes_at(a, b).0
}

/// The values that moved, old → new, with where each sits in the newer text (an empty
/// range at its end where it is no longer stated).
fn value_changes(a: &str, b: &str) -> (Vec<String>, Vec<Range<usize>>) {
    let va = values(a);
    let vb = values(b);
    let mut out = Vec::new();
    let mut spans = Vec::new();
    let mut b_used = vec![false; vb.len()];
    let kind = |v: &Value| std::mem::discriminant(&v.unit);
    let context = |text: &str, v: &Value| -> HashSet<String> {
        let before = &text[..v.span.start];
        let after = &text[v.span.end..];
        let mut w: Vec<String> = terms(before).into_iter().rev().take(4).collect();
        w.extend(terms(after).into_iter().take(4));
        w.into_iter().collect()
    };
    let mut a_unpaired = Vec::new();
    for (i, x) in va.iter().enumerate() {
        let cx = context(a, x);
        let best = vb
            .iter()
            .enumerate()
            .filter(|(j, y)| !b_used[*j] && (kind(x) == kind(y) || x.comparable(y)))
            .map(|(j, y)| {
                let cy = context(b, y);
                let shared = cx.intersection(&cy).count() as f64;
                let position = 1.0 / (1.0 + (i as f64 - j as f64).abs());
                (shared + position, j)
            })
            .max_by(|p, q| p.0.total_cmp(&q.0));
        match best {
            Some((_, j)) => {
                b_used[j] = true;
                let y = &vb[j];
                let same = x.same_as(y) && x.written.to_lowercase() == y.written.to_lowercase()
                    || x.same_as(y) && x.unit == y.unit;
                if !same {
                    out.push(format!("{} → {}", bounded(a, x), bounded(b, y)));
                    spans.push(y.span.clone());
                }
            }
            None => a_unpaired.push(x),
        }
    }
    for x in a_unpaired {
        out.push(format!("{} → (no longer stated)", x.written));
        spans.push(b.len()..b.len());
    }
    for (j, y) in vb.iter().enumerate() {
        if !b_used[j] {
            out.push(format!("(not stated before) → {}", y.written));
            spans.push(y.span.clone());
        }
    }
    (out, spans)
}

/// Who approves or is told, when that changed between two versions of a sentence: each
/// (before, after).
fn role_changes(a: &str, b: &str) -> Vec<(String, String)> {
    let roles = |text: &str| -> Vec<(String, RoleKind)> {
        rules::read(text)
            .roles
            .into_iter()
            .filter(|r| !r.negated)
            .map(|r| (r.who, r.kind))
            .collect()
    };
    let (ra, rb) = (roles(a), roles(b));
    let mut out = Vec::new();
    for (who, kind) in &ra {
        let kept = rb.iter().any(|(w, k)| k == kind && same_role(w, who));
        if kept {
            continue;
        }
        if let Some((now, _)) = rb
            .iter()
            .find(|(w, k)| k == kind && !ra.iter().any(|(x, _)| same_role(x, w)))
        {
            out.push((who.clone(), now.clone()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_list_every_moved_value_and_nothing_else() {
        let c = changes(
            "Gifts above EUR 100 must be recorded within 5 business days and approved by the Head of Department.",
            "Gifts above EUR 125 must be recorded within 3 business days and approved by a Managing Director.",
        );
        assert_eq!(
            c,
            [
                "above EUR 100 → above EUR 125",
                "within 5 business days → within 3 business days",
                "Head of Department → Managing Director"
            ]
        );
        assert!(changes(
            "Records are kept for 6 years.",
            "Records are kept for six years."
        )
        .is_empty());
        assert_eq!(
            changes(
                "Due by 31 January each year.",
                "Due by 15 February each year."
            ),
            ["31 January → 15 February"]
        );
        assert_eq!(
            changes(
                "The reconciliation is signed off by 12:00 on the next business day.",
                "The reconciliation is signed off by 10:00 on the next business day."
            ),
            ["\"12:00\" → \"10:00\""]
        );
    }
}
