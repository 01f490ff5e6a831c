//! The newer version of a changed sentence, quoted as far as its changes reach: only the
//! parts of the sentence (between its commas, semicolons and joining words) that hold a
//! change, when it also holds values that stayed or is long, so the quote does not show a
//! value beside the change as if it had moved.

use std::ops::Range;

use crate::docmodel::values::values;

/// A quote shorter than this takes in the part of the sentence before it.
const SHORT_QUOTE: usize = 40;

/// The newer sentence as far as its changes reach: the parts (between commas, semicolons,
/// "and", "or", "but") that hold a change, when the sentence also holds values that did
/// not change or is long; the whole sentence otherwise.
pub(super) fn quote(sentence: &str, changed: &[Range<usize>]) -> String {
    let whole = sentence.trim_end_matches('.').to_string();
    let vals = values(sentence);
    let others = vals.iter().any(|v| {
        !changed
            .iter()
            .any(|c| c.start < v.span.end && v.span.start < c.end)
    });
    if changed.is_empty() || !(others || sentence.len() > 200) {
        return whole;
    }
    let parts = parts(sentence);
    let holds = |p: &Range<usize>| {
        changed
            .iter()
            .any(|c| c.start < p.end && p.start < c.end || c.is_empty() && p.contains(&c.start))
    };
    let Some(first) = parts.iter().position(holds) else {
        return whole;
    };
    let last = parts.iter().rposition(holds).unwrap_or(first);
    let mut start = parts[first].start;
    if sentence[start..parts[last].end].len() < SHORT_QUOTE && first > 0 {
        start = parts[first - 1].start;
    }
    let end = parts[last].end;
    let mut q = sentence[start..end]
        .trim()
        .trim_end_matches(['.', ',', ';'])
        .to_string();
    if start > 0 {
        q = format!("…{q}");
    }
    if end < sentence.trim_end_matches('.').len() {
        q.push('…');
    }
    q
}

/// The parts of a sentence between its commas, semicolons and joining words.
fn parts(sentence: &str) -> Vec<Range<usize>> {
    let lower = sentence.to_lowercase();
    let mut cuts = vec![0];
    for (i, c) in sentence.char_indices() {
        if matches!(c, ',' | ';' | ':') {
            cuts.push(i + 1);
        }
    }
    for joint in [" and ", " or ", " but ", " which ", " unless "] {
        let mut from = 0;
        while let Some(k) = lower[from..].find(joint) {
            cuts.push(from + k + 1);
            from += k + joint.len();
        }
    }
    cuts.push(sentence.len());
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2)
        .map(|w| w[0]..w[1])
        .filter(|r| sentence[r.clone()].chars().any(char::is_alphanumeric))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quote_keeps_to_the_change() {
        let s = "The per diem is EUR 50 per day for domestic trips and EUR 60 per day for international trips.";
        let at = s.find("EUR 50").unwrap_or(0);
        assert_eq!(
            quote(s, std::slice::from_ref(&(at..at + 6))),
            "The per diem is EUR 50 per day for domestic trips…"
        );
        let short = "Travel must be booked 21 days ahead.";
        assert_eq!(
            quote(short, std::slice::from_ref(&(22..29))),
            "Travel must be booked 21 days ahead"
        );
    }
}
