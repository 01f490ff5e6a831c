//! What a rule requires be done: the terms of the verb its modal governs and of its
//! object, of the verbs joined to it, or of a passive rule's participle. An audit looks for
//! them among a practice's facts to tell whether a fact is about what the rule asks.

use crate::text::terms;

/// Words between a modal and the verb it governs ("must not be", "shall always").
const BEFORE_VERB: [&str; 16] = [
    "not",
    "never",
    "be",
    "been",
    "always",
    "also",
    "only",
    "first",
    "promptly",
    "immediately",
    "either",
    "both",
    "then",
    "to",
    "all",
    "still",
];

/// What a rule requires be done: the terms of the verb its modal governs and of the words
/// of its object ("must complete an initial declaration": complete, initial, declaration),
/// of verbs joined to it with their object ("and verify their identity": verify,
/// identity), or of the participle of a passive rule and what follows it ("are approved
/// by": approve).
pub(crate) fn actions(clause: &str) -> Vec<String> {
    let words: Vec<String> = clause
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let modal = words
        .iter()
        .position(|w| matches!(w.as_str(), "must" | "shall" | "should" | "will" | "cannot"))
        .or_else(|| {
            words
                .windows(2)
                .position(|p| {
                    matches!(
                        p[0].as_str(),
                        "required" | "needs" | "need" | "has" | "have" | "obliged"
                    ) && p[1] == "to"
                })
                .map(|i| i + 1)
        });
    let mut out = Vec::new();
    let push = |w: &str, out: &mut Vec<String>| {
        if let Some(t) = terms(w).into_iter().next() {
            if !out.contains(&t) {
                out.push(t);
            }
        }
    };
    // The verb at `v` and the content words of its object, up to a preposition.
    let phrase = |v: usize, out: &mut Vec<String>| {
        push(&words[v], out);
        for w in words[v + 1..].iter().take(4) {
            if OBJECT_ENDS.contains(&w.as_str()) || w.chars().all(|c| c.is_ascii_digit()) {
                break;
            }
            if !crate::text::is_stopword(w) && !BEFORE_VERB.contains(&w.as_str()) {
                push(w, out);
            }
        }
    };
    match modal {
        Some(m) => {
            if let Some(v) =
                (m + 1..words.len()).find(|&i| !BEFORE_VERB.contains(&words[i].as_str()))
            {
                phrase(v, &mut out);
            }
            for i in m + 1..words.len().saturating_sub(2) {
                if matches!(words[i].as_str(), "and" | "or")
                    && matches!(
                        words[i + 2].as_str(),
                        "the"
                            | "their"
                            | "its"
                            | "his"
                            | "her"
                            | "a"
                            | "an"
                            | "all"
                            | "every"
                            | "any"
                            | "it"
                            | "them"
                    )
                {
                    phrase(i + 1, &mut out);
                }
            }
        }
        None => {
            if let Some(v) = (1..words.len()).find(|&i| {
                matches!(words[i - 1].as_str(), "is" | "are" | "was" | "were")
                    && words[i].ends_with("ed")
            }) {
                phrase(v, &mut out);
            }
        }
    }
    out
}

/// Words that end a verb's object when reading its words.
const OBJECT_ENDS: [&str; 16] = [
    "within", "by", "before", "after", "to", "in", "on", "at", "for", "from", "of", "unless",
    "until", "where", "when", "if",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_are_the_verbs_a_rule_governs() {
        assert_eq!(
            actions("staff must identify every beneficial owner and verify their identity"),
            terms("identify beneficial owner verify identity")
        );
        assert_eq!(
            actions("Records must not be deleted until Legal lifts the hold"),
            terms("deleted")
        );
        assert_eq!(
            actions("Such roles are approved by the CEO"),
            terms("approved")
        );
        assert_eq!(
            actions("New joiners must complete an initial declaration within 30 days"),
            terms("complete initial declaration")
        );
    }
}
