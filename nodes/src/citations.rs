//! Citation markers in an answer: `[3]`, or a list `[1, 3]`. [`cited`] reads the passages
//! an answer cites; [`strip_unknown_markers`] drops the numbers of passages the answer was
//! not given (a model may invent `[12]` when it had eight passages).

use std::collections::HashSet;
use std::ops::Range;

use crate::passages::Passage;
use crate::state::Citation;

/// A marker: where it stands in the text, and its numbers.
struct Marker {
    span: Range<usize>,
    numbers: Vec<u32>,
}

/// The markers of `text`, in order.
fn markers(text: &str) -> Vec<Marker> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(open) = text[from..].find('[').map(|i| from + i) {
        from = open + 1;
        let Some(close) = text[open..].find(']').map(|i| open + i) else {
            break;
        };
        let inner = &text[open + 1..close];
        let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
        let numeric = !inner.trim().is_empty()
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.len() <= 6 && p.chars().all(|c| c.is_ascii_digit()));
        if numeric {
            out.push(Marker {
                span: open..close + 1,
                numbers: parts.iter().filter_map(|p| p.parse().ok()).collect(),
            });
            from = close + 1;
        }
    }
    out
}

/// The citations an answer's markers point to, in order of first use, each once.
pub(crate) fn cited(answer: &str, passages: &[Passage]) -> Vec<Citation> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for m in markers(answer) {
        for n in m.numbers {
            if let Some(p) = passages.iter().find(|p| p.number == n) {
                if seen.insert(n) {
                    out.push(p.citation());
                }
            }
        }
    }
    out
}

/// `answer` without the numbers of passages it was not given: `[2, 9]` becomes `[2]`, and
/// `[9]` goes (with the space before it).
pub(crate) fn strip_unknown_markers(answer: &str, passages: &[Passage]) -> String {
    let known = |n: &u32| passages.iter().any(|p| p.number == *n);
    let mut out = String::with_capacity(answer.len());
    let mut last = 0;
    for m in markers(answer) {
        let kept: Vec<String> = m
            .numbers
            .iter()
            .filter(|n| known(n))
            .map(u32::to_string)
            .collect();
        if kept.len() == m.numbers.len() {
            continue;
        }
        let before = &answer[last..m.span.start];
        if kept.is_empty() {
            out.push_str(before.strip_suffix(' ').unwrap_or(before));
        } else {
            out.push_str(before);
            out.push('[');
            out.push_str(&kept.join(", "));
            out.push(']');
        }
        last = m.span.end;
    }
    out.push_str(&answer[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::analysis;
    use crate::documents::test_doc;
    use crate::passages::number;

    fn passages() -> Vec<Passage> {
        let mut p = analysis(&test_doc("citations-d", "T", "One.\n\nTwo.\n\nThree."))
            .passages
            .clone();
        number(&mut p);
        p
    }

    #[test]
    fn cited_follows_markers_in_order_once_each() {
        let c = cited(
            "See [2] and [1], again [2]; not [9] nor [x]; both [3, 1].",
            &passages(),
        );
        let markers: Vec<u32> = c.iter().map(|c| c.marker).collect();
        assert_eq!(markers, [2, 1, 3]);
        assert_eq!(c[0].quote, "Two.");
    }

    #[test]
    fn markers_of_passages_not_given_are_dropped() {
        assert_eq!(
            strip_unknown_markers("Kept 5 years [1]. Also [12]. Both [2, 40].", &passages()),
            "Kept 5 years [1]. Also. Both [2]."
        );
        let clean = "Nothing to drop [3], see [note].";
        assert_eq!(strip_unknown_markers(clean, &passages()), clean);
    }
}
