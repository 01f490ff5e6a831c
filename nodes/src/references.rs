//! How a message refers to documents, read without an LLM: by name ("the data retention
//! policy", a quoted title, an acronym like "CRR"), by kind ("that regulation"), by a
//! pronoun ("it", "its", "this", "both"), or by version ("the newer one", "the older
//! policy"). The offline resolver and the doc resolver's stage 3 use
//! these; an LLM does the same job when one is configured.

use crate::text::{is_stopword, singular};

/// One way a message refers to a document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reference {
    /// A name. `strong` names (a document noun with words before it, or a quoted title)
    /// must match a document; weak ones (acronyms) only count when they do.
    Named {
        /// The name as written.
        name: String,
        /// Whether it must match.
        strong: bool,
    },
    /// A kind of document with no name: "that regulation", "the policy".
    Kind {
        /// The document noun (singular).
        noun: String,
        /// "these policies": several.
        plural: bool,
    },
    /// A pronoun or a generic noun: "it", "this", "both", "the document".
    Pronoun {
        /// "both", "them", "these": several.
        plural: bool,
    },
    /// One version among the documents discussed: "the newer one", "the older policy".
    Version {
        /// The newest (else the oldest).
        newest: bool,
    },
}

/// Words that pick the newest version ("the newer one") or the oldest ("the older one").
fn recency(word: &str) -> Option<bool> {
    match word {
        "newer" | "newest" | "latest" | "later" => Some(true),
        "older" | "oldest" | "earlier" | "previous" | "former" | "prior" => Some(false),
        _ => None,
    }
}

/// Words after a document noun that show it is a verb ("report it", "file a report").
const VERB_FOLLOWERS: [&str; 9] = ["a", "an", "it", "them", "to", "this", "that", "on", "any"];

/// Nouns that name a kind of document (singular).
const DOC_NOUNS: [&str; 21] = [
    "policy",
    "regulation",
    "directive",
    "standard",
    "procedure",
    "guideline",
    "framework",
    "act",
    "report",
    "manual",
    "handbook",
    "rulebook",
    "law",
    "charter",
    "memo",
    "contract",
    "agreement",
    "excerpt",
    "notice",
    "statement",
    "code",
];

/// Nouns that name any document.
const GENERIC_NOUNS: [&str; 4] = ["document", "doc", "file", "version"];

/// Words that end a name when walking back from its noun.
const NAME_BREAKS: [&str; 14] = [
    "summarize",
    "summarise",
    "compare",
    "audit",
    "check",
    "explain",
    "review",
    "read",
    "open",
    "against",
    "versus",
    "vs",
    "say",
    "says",
];

/// Words after "this"/"that" that show it stands for a document ("is this still ...").
const PRONOUN_FOLLOWERS: [&str; 24] = [
    "is", "are", "was", "were", "still", "say", "says", "said", "mean", "means", "require",
    "requires", "cover", "covers", "apply", "applies", "state", "states", "contain", "contains",
    "and", "with", "against", "to",
];

/// Whether a retrieval term (see [`crate::text::terms`]) is that of a document noun
/// ("standard", "policies", "document").
pub(crate) fn is_doc_noun_term(term: &str) -> bool {
    DOC_NOUNS
        .iter()
        .chain(GENERIC_NOUNS.iter())
        .any(|n| crate::vocabulary::term(n) == term)
}

/// Whether `word` (any case) is a document noun, and its singular.
fn doc_noun(word: &str) -> Option<(String, bool)> {
    let lower = word.to_lowercase();
    let one = singular(&lower);
    let plural = one != lower;
    if DOC_NOUNS.contains(&one.as_str()) || GENERIC_NOUNS.contains(&one.as_str()) {
        Some((one, plural))
    } else {
        None
    }
}

fn is_acronym(word: &str) -> bool {
    let core = word.strip_suffix('s').unwrap_or(word);
    let letters = core.chars().filter(|c| c.is_ascii_uppercase()).count();
    (2..=6).contains(&core.len())
        && letters >= 2
        && core
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

/// A word of the message with what follows it.
struct Word<'a> {
    text: &'a str,
    /// The character right after it (`?`, `:`, a space, ...), if any.
    next_char: Option<char>,
}

fn words(text: &str) -> Vec<Word<'_>> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (i, c) in text.char_indices() {
        let part_of_word = c.is_alphanumeric() || (c == '-' && start.is_some());
        match (part_of_word, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push(Word {
                    text: text[s..i].trim_end_matches('-'),
                    next_char: Some(c),
                });
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push(Word {
            text: &text[s..],
            next_char: None,
        });
    }
    out
}

/// The references in `text`, in order.
pub(crate) fn find(text: &str) -> Vec<Reference> {
    let mut out = Vec::new();
    for quoted in quoted_parts(text) {
        push(
            &mut out,
            Reference::Named {
                name: quoted,
                strong: true,
            },
        );
    }
    let w = words(text);
    for (i, word) in w.iter().enumerate() {
        let lower = word.text.to_lowercase();
        let prev = i
            .checked_sub(1)
            .and_then(|k| w.get(k))
            .map(|p| p.text.to_lowercase());
        let next = w.get(i + 1).map(|n| n.text.to_lowercase());
        if let Some(newest) = recency(&lower) {
            let names_one = next
                .as_deref()
                .is_some_and(|n| matches!(n, "one" | "ones") || doc_noun(n).is_some());
            if names_one {
                push(&mut out, Reference::Version { newest });
            }
            continue;
        }
        if prev.as_deref().and_then(recency).is_some() {
            continue;
        }
        // "report it", "file a report": a verb; but after a determiner and a name's words
        // ("the remote working standard on printing") still a noun.
        let named_before = i >= 2
            && !is_stopword(&w[i - 1].text.to_lowercase())
            && (0..i).rev().take(6).any(|k| {
                matches!(
                    w[k].text.to_lowercase().as_str(),
                    "the" | "our" | "this" | "that" | "your" | "its"
                )
            });
        let used_as_verb =
            next.as_deref().is_some_and(|n| VERB_FOLLOWERS.contains(&n)) && !named_before;
        if let Some((noun, plural)) = doc_noun(word.text).filter(|_| !used_as_verb) {
            let mut j = i;
            while j > 0 && i - j < 7 {
                let prev = w[j - 1].text.to_lowercase();
                let stops = matches!(w[j - 1].next_char, Some(',' | ';' | ':' | '.' | '?' | '!'));
                // "of", "and" join the words of one name ("conflicts of interest policy",
                // "travel and expenses policy") when a word of the name comes before them.
                let joins = matches!(prev.as_str(), "of" | "and" | "&") && j >= 2 && j < i + 1 && {
                    let before = w[j - 2].text.to_lowercase();
                    !is_stopword(&before) && !NAME_BREAKS.contains(&before.as_str())
                };
                // An action word inside a name ("the incident and access review policy")
                // is the name's: a word of the name comes before it.
                let inside = NAME_BREAKS.contains(&prev.as_str()) && j >= 2 && {
                    let before = w[j - 2].text.to_lowercase();
                    !is_stopword(&before)
                        && !NAME_BREAKS.contains(&before.as_str())
                        && !matches!(w[j - 2].next_char, Some(',' | ';' | ':' | '.' | '?' | '!'))
                };
                if stops
                    || (!joins
                        && (is_stopword(&prev)
                            || (NAME_BREAKS.contains(&prev.as_str()) && !inside)))
                {
                    break;
                }
                j -= 1;
            }
            // "an outsourcing contract", "any gift register entry": a kind of thing, not a
            // document's name.
            let indefinite = j > 0
                && matches!(
                    w[j - 1].text.to_lowercase().as_str(),
                    "a" | "an" | "any" | "each" | "every" | "no" | "such" | "another"
                );
            let generic = GENERIC_NOUNS.contains(&noun.as_str());
            // "the current policy", "the 2024 procedure": a standing or a year, no name.
            let only_version = j < i
                && w[j..i]
                    .iter()
                    .all(|x| crate::version_words::is_version_word(&x.text.to_lowercase()));
            if indefinite {
                // Nothing: it names no document.
            } else if j < i && !only_version {
                // "the vendor standard" must name a document; "customer documents" may
                // just be documents of another kind.
                let name: Vec<&str> = w[j..=i].iter().map(|w| w.text).collect();
                push(
                    &mut out,
                    Reference::Named {
                        name: name.join(" "),
                        strong: !generic,
                    },
                );
            } else if generic {
                push(&mut out, Reference::Pronoun { plural });
            } else {
                push(&mut out, Reference::Kind { noun, plural });
            }
        } else if is_acronym(word.text) {
            push(
                &mut out,
                Reference::Named {
                    name: word.text.to_string(),
                    strong: false,
                },
            );
        } else if matches!(lower.as_str(), "it" | "its" | "them" | "both") {
            let plural = !matches!(lower.as_str(), "it" | "its");
            push(&mut out, Reference::Pronoun { plural });
        } else if matches!(lower.as_str(), "this" | "that" | "these" | "those") {
            let next = w.get(i + 1).map(|n| n.text.to_lowercase());
            let stands_alone = match word.next_char {
                Some(':') => false,
                None | Some('?' | '.' | '!' | ',' | ';') => true,
                _ => next
                    .as_deref()
                    .is_some_and(|n| PRONOUN_FOLLOWERS.contains(&n)),
            };
            if stands_alone {
                let plural = matches!(lower.as_str(), "these" | "those");
                push(&mut out, Reference::Pronoun { plural });
            }
        }
    }
    out
}

fn push(out: &mut Vec<Reference>, r: Reference) {
    if !out.contains(&r) {
        out.push(r);
    }
}

fn quoted_parts(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut open: Option<(usize, char)> = None;
    for (i, c) in text.char_indices() {
        match (open, c) {
            (None, '"' | '“') => {
                open = Some((i + c.len_utf8(), if c == '"' { '"' } else { '”' }))
            }
            (Some((start, close)), c) if c == close => {
                let inner = text[start..i].trim();
                if !inner.is_empty() && inner.split_whitespace().count() <= 12 {
                    out.push(inner.to_string());
                }
                open = None;
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(n: &str, strong: bool) -> Reference {
        Reference::Named {
            name: n.into(),
            strong,
        }
    }

    #[test]
    fn names_end_at_instructions_and_stopwords() {
        assert_eq!(
            find("Summarize the data retention policy"),
            [named("data retention policy", true)]
        );
        assert_eq!(
            find("Review AML policy"),
            [named("AML", false), named("AML policy", true)]
        );
        assert!(
            find("the two versions of the incident and access review policy?")
                .contains(&named("incident and access review policy", true))
        );
        assert_eq!(
            find("What does the AML policy require for PEPs?"),
            [
                named("AML", false),
                named("AML policy", true),
                named("PEPs", false)
            ]
        );
    }

    #[test]
    fn kinds_and_pronouns_are_found() {
        assert_eq!(
            find("What does that regulation say about leverage?"),
            [Reference::Kind {
                noun: "regulation".into(),
                plural: false
            }]
        );
        assert_eq!(
            find("Is this still enforced?"),
            [Reference::Pronoun { plural: false }]
        );
        assert_eq!(
            find("compare both documents"),
            [Reference::Pronoun { plural: true }]
        );
        // A standing or a year with the noun names no document: a kind.
        assert_eq!(
            find("How often is the list reviewed under the current policy?"),
            [Reference::Kind {
                noun: "policy".into(),
                plural: false
            }]
        );
    }

    #[test]
    fn this_before_a_colon_is_pasted_text_not_a_document() {
        assert!(find("Summarize and audit this: we keep records for three years.").is_empty());
        assert!(find("What are the capital requirements?").is_empty());
    }

    #[test]
    fn versions_verbs_and_generic_names() {
        assert_eq!(
            find("What does the newer one say about chat messages?"),
            [Reference::Version { newest: true }]
        );
        assert_eq!(
            find("Summarize the older policy"),
            [Reference::Version { newest: false }]
        );
        assert!(find("When must employees report a suspected incident?").is_empty());
        assert_eq!(
            find("Can printed customer documents be taken home?"),
            [named("printed customer documents", false)]
        );
        assert_eq!(
            find("How long must its records be kept?"),
            [Reference::Pronoun { plural: false }]
        );
    }

    #[test]
    fn names_keep_their_joining_words_and_indefinite_kinds_are_no_names() {
        assert_eq!(
            find("Summarize the revised conflicts of interest policy"),
            [named("revised conflicts of interest policy", true)]
        );
        assert_eq!(
            find("What is in the travel and expenses policy?"),
            [named("travel and expenses policy", true)]
        );
        assert!(find("What must an outsourcing contract include?").is_empty());
    }

    #[test]
    fn quoted_titles_are_strong_names() {
        assert_eq!(
            find("open “Travel Expenses” now"),
            [named("Travel Expenses", true)]
        );
    }
}
