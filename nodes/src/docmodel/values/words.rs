//! The words of a text, lower case, each with where it is (its byte span): every value is
//! read from them, and a rule's reading uses them to place its values among the words of
//! its sentence.

use std::ops::Range;

/// A word with where it is.
#[derive(Clone, Debug)]
pub(crate) struct Word {
    /// Lower case, punctuation trimmed (`%` and currency signs kept as their own words).
    pub(crate) text: String,
    /// Where it is in the text (bytes).
    pub(crate) span: Range<usize>,
}

/// The words of `text`, lower case: split at whitespace, hyphens, slashes and brackets,
/// punctuation trimmed; currency signs and `%` are words of their own.
pub(crate) fn words(text: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let push = |out: &mut Vec<Word>, s: usize, e: usize| {
        let raw = &text[s..e];
        let lead = raw.len()
            - raw
                .trim_start_matches(|c: char| !c.is_alphanumeric() && !is_sign(c))
                .len();
        let trimmed = raw
            .trim_start_matches(|c: char| !c.is_alphanumeric() && !is_sign(c))
            .trim_end_matches(|c: char| !c.is_alphanumeric() && c != '%');
        if trimmed.is_empty() {
            return;
        }
        let mut at = s + lead;
        let mut rest = trimmed;
        // Leading currency signs: "€150".
        while let Some(c) = rest.chars().next().filter(|c| is_sign(*c)) {
            out.push(Word {
                text: c.to_string(),
                span: at..at + c.len_utf8(),
            });
            at += c.len_utf8();
            rest = &rest[c.len_utf8()..];
        }
        // A trailing percent sign: "4.5%".
        let (body, percent) = match rest.strip_suffix('%') {
            Some(b) if !b.is_empty() => (b, true),
            _ => (rest, false),
        };
        if !body.is_empty() {
            out.push(Word {
                text: body.to_lowercase(),
                span: at..at + body.len(),
            });
        }
        if percent {
            let p = at + body.len();
            out.push(Word {
                text: "%".into(),
                span: p..p + 1,
            });
        }
    };
    for (i, c) in text.char_indices() {
        let splits =
            c.is_whitespace() || matches!(c, '-' | '–' | '—' | '/' | '(' | ')' | '[' | ']');
        match (splits, start) {
            (true, Some(s)) => {
                push(&mut out, s, i);
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        push(&mut out, s, text.len());
    }
    out
}

fn is_sign(c: char) -> bool {
    matches!(c, '€' | '£' | '$')
}
