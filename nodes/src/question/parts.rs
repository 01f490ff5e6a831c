//! The questions a request asks at once: "Who signs the capital return, and can they hand
//! that job to a deputy?" asks who signs and whether it may be delegated; each part is
//! looked up on its own, so the passage that answers one is not crowded out by the words
//! of the other.

/// Words that open a question of their own after "and".
const OPENERS: [&str; 20] = [
    "who", "whom", "whose", "what", "which", "when", "where", "how", "why", "can", "could", "may",
    "must", "should", "do", "does", "is", "are", "will", "by",
];

/// A part must have at least this many words to be a question of its own.
const MIN_WORDS: usize = 3;

/// The parts of `text` that are questions of their own; one part (the whole) when it asks
/// one thing.
pub(crate) fn parts(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    // "Who signs it? Can they delegate?": each sentence that asks.
    for sentence in text.split_inclusive('?') {
        let mut rest = sentence.trim();
        // "..., and can they ...", "... and who approves ...".
        while let Some((head, tail)) = split_at_and(rest) {
            out.push(head.to_string());
            rest = tail;
        }
        if !rest.is_empty() {
            out.push(rest.to_string());
        }
    }
    let questions: Vec<String> = out
        .into_iter()
        .filter(|p| p.split_whitespace().count() >= MIN_WORDS)
        .collect();
    if questions.len() > 1 {
        questions
    } else {
        vec![text.to_string()]
    }
}

/// `text` split before its first "and" that opens a question of its own, both sides long
/// enough to ask something.
fn split_at_and(text: &str) -> Option<(&str, &str)> {
    let lower = text.to_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find(" and ").map(|k| k + from) {
        let after = &lower[at + " and ".len()..];
        let next = after
            .split(|c: char| !c.is_alphanumeric())
            .next()
            .unwrap_or("");
        let head = text[..at].trim_end_matches([',', ';', ' ']);
        if OPENERS.contains(&next)
            && head.split_whitespace().count() >= MIN_WORDS
            && after.split_whitespace().count() >= MIN_WORDS
        {
            return Some((head, &text[at + " and ".len()..]));
        }
        from = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::parts;

    #[test]
    fn a_request_that_asks_two_things_has_two_parts() {
        assert_eq!(
            parts("Who has to sign the quarterly capital return, and can they hand that job to a deputy?"),
            vec![
                "Who has to sign the quarterly capital return",
                "can they hand that job to a deputy?"
            ]
        );
        assert_eq!(
            parts("Who approves a gift? How long do they have?"),
            vec!["Who approves a gift?", "How long do they have?"]
        );
    }

    #[test]
    fn one_question_with_an_and_stays_whole() {
        for q in [
            "How long do we keep emails and phone recordings?",
            "What are the rules on gifts and hospitality?",
            "Summarize the AML policy and the gifts policy",
            "Do we keep records? Yes",
        ] {
            assert_eq!(parts(q), vec![q.to_string()], "{q}");
        }
    }
}
