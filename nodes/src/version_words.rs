//! The words that say which version of a document is meant, not what the document is or
//! what a request is about: left out when titles are matched into families, when a name is
//! matched to a title, and when a question's topic is read.

/// Words that name an edition of a document: "version", "edition", "revised".
pub(crate) const EDITION: [&str; 11] = [
    "version",
    "edition",
    "revised",
    "revision",
    "update",
    "updated",
    "amended",
    "draft",
    "final",
    "consolidated",
    "v",
];

/// Words that say which version by where it stands: "current", "the old policy".
pub(crate) const STANDING: [&str; 21] = [
    "current",
    "currently",
    "latest",
    "newest",
    "newer",
    "new",
    "old",
    "older",
    "oldest",
    "previous",
    "previously",
    "prior",
    "earlier",
    "former",
    "superseded",
    "original",
    "originally",
    "outdated",
    "replaced",
    "withdrawn",
    "obsolete",
];

/// Whether a word (lower case) names an edition, a standing, a year or a version number
/// ("v2", "2024").
pub(crate) fn is_version_word(word: &str) -> bool {
    EDITION.contains(&word) || STANDING.contains(&word) || is_version_number(word)
}

/// Whether a word (lower case) is a number or a version number ("2024", "v2").
pub(crate) fn is_version_number(word: &str) -> bool {
    let digits = word.strip_prefix('v').unwrap_or(word);
    !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_years_and_standings_are_version_words() {
        for w in ["v2", "2024", "edition", "revised", "current", "old"] {
            assert!(is_version_word(w), "{w}");
        }
        for w in ["policy", "travel", "v", "vendor"] {
            assert_eq!(is_version_word(w), w == "v", "{w}");
        }
    }
}
