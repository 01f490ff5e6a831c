//! Which version of a document a request asks about: one it names ("v1.3", "version 4"),
//! an edition's year ("the 2022 edition"), or one by its standing ("the current policy",
//! "the old one", "was that different before?").

use crate::docmodel::header::Version;
use crate::text::tokens;

/// Which version of a document a request asks about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum VersionAsk {
    /// A version it names ("v1.3", "version 4").
    Named(Version),
    /// An edition's year ("the 2022 edition", "the data retention policy 2023").
    Year(u16),
    /// The one in force ("current", "latest", "new", "revised", "in force").
    Current,
    /// The one before ("old", "previous", "superseded", "before").
    Previous,
}

/// Nouns after which a version word speaks of a document.
const DOC_WORDS: [&str; 20] = [
    "policy",
    "policies",
    "procedure",
    "standard",
    "regulation",
    "rules",
    "version",
    "edition",
    "one",
    "document",
    "guideline",
    "manual",
    "handbook",
    "memo",
    "framework",
    "directive",
    "code",
    "charter",
    "terms",
    "rulebook",
];

/// Every version a request names ("compare the 2023 and 2024 editions", "version 1.0 and
/// version 2.0"), in order; or the one it asks for by standing ("current", "old").
pub(crate) fn versions_asked(text: &str) -> Vec<VersionAsk> {
    let mut out: Vec<VersionAsk> = Vec::new();
    let push = |a: VersionAsk, out: &mut Vec<VersionAsk>| {
        if !out.contains(&a) {
            out.push(a);
        }
    };
    // Version numbers: "v1.3", "version 1.0", "version 4".
    let lower = text.to_lowercase();
    let raw: Vec<&str> = lower
        .split(|c: char| {
            c.is_whitespace() || matches!(c, ',' | ';' | ':' | '(' | ')' | '?' | '!' | '"')
        })
        .filter(|t| !t.is_empty())
        .collect();
    for (i, t) in raw.iter().enumerate() {
        let t = t.trim_end_matches('.');
        let number = if let Some(rest) = t
            .strip_prefix('v')
            .filter(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        {
            Some(rest)
        } else if matches!(
            t,
            "version" | "v" | "rev" | "revision" | "issue" | "edition" | "release"
        ) {
            raw.get(i + 1)
                .map(|n| n.trim_end_matches('.'))
                .filter(|n| n.starts_with(|c: char| c.is_ascii_digit()))
        } else {
            None
        };
        if let Some(v) = number.and_then(Version::parse) {
            push(VersionAsk::Named(v), &mut out);
        }
    }
    let words = tokens(text);
    // "Before the procedure was updated in September 2025": the version before the update,
    // whatever date names the update.
    let before_update = words.iter().enumerate().any(|(i, w)| {
        w == "before"
            && words[i + 1..words.len().min(i + 8)].iter().any(|n| {
                matches!(
                    n.as_str(),
                    "updated"
                        | "revised"
                        | "changed"
                        | "replaced"
                        | "amended"
                        | "update"
                        | "revision"
                        | "rewrite"
                        | "rewritten"
                )
            })
    });
    if before_update && out.is_empty() {
        return vec![VersionAsk::Previous];
    }
    let doc_nearby = words.iter().any(|w| DOC_WORDS.contains(&w.as_str()));
    // "In November 2024", "on 4 June 2025": a date the request tells, not an edition ("the
    // July 2024 edition", "the old January 2023 standard").
    let a_date = |i: usize| {
        i >= 2
            && crate::docmodel::header::is_month(&words[i - 1])
            && (words[i - 2]
                .parse::<u8>()
                .is_ok_and(|d| (1..=31).contains(&d))
                || matches!(
                    words[i - 2].as_str(),
                    "in" | "on" | "since" | "by" | "during" | "until" | "till" | "after"
                ))
    };
    for (i, w) in words.iter().enumerate() {
        if w.len() == 4 && w.chars().all(|c| c.is_ascii_digit()) && doc_nearby && !a_date(i) {
            if let Ok(y) = w.parse::<u16>() {
                if (1990..=2100).contains(&y) {
                    push(VersionAsk::Year(y), &mut out);
                }
            }
        }
    }
    if !out.is_empty() {
        return out;
    }
    let near_doc = |i: usize| {
        words[i + 1..words.len().min(i + 5)]
            .iter()
            .any(|w| DOC_WORDS.contains(&w.as_str()))
    };
    for (i, w) in words.iter().enumerate() {
        let next = words.get(i + 1).map(String::as_str).unwrap_or("");
        let ask = match w.as_str() {
            "current" | "currently" | "latest" | "newest" | "newer" | "revised" | "updated"
                if near_doc(i) || w == "currently" =>
            {
                Some(VersionAsk::Current)
            }
            "new" if DOC_WORDS.contains(&next) => Some(VersionAsk::Current),
            "in" if next == "force" => Some(VersionAsk::Current),
            "old" | "older" | "oldest" | "previous" | "prior" | "earlier" | "former"
            | "original" | "superseded" | "outdated"
                if near_doc(i) =>
            {
                Some(VersionAsk::Previous)
            }
            "previously" | "originally" => Some(VersionAsk::Previous),
            "used" if next == "to" => Some(VersionAsk::Previous),
            "before" if i + 1 == words.len() => Some(VersionAsk::Previous),
            _ => None,
        };
        if let Some(a) = ask {
            return vec![a];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_asked_for() {
        let v = |q: &str| versions_asked(q).into_iter().next();
        assert_eq!(
            v("Under v1.3, what is the limit?"),
            Some(VersionAsk::Named(Version(vec![1, 3])))
        );
        assert_eq!(
            v("Under version 4 of the dealing policy"),
            Some(VersionAsk::Named(Version(vec![4])))
        );
        assert_eq!(
            v("In the 2022 edition, how long?"),
            Some(VersionAsk::Year(2022))
        );
        assert_eq!(
            v("What does the current conflicts policy say?"),
            Some(VersionAsk::Current)
        );
        assert_eq!(
            v("Under the retention policy now in force"),
            Some(VersionAsk::Current)
        );
        assert_eq!(
            v("What did the old retention policy say?"),
            Some(VersionAsk::Previous)
        );
        assert_eq!(v("Was that different before?"), Some(VersionAsk::Previous));
        assert_eq!(
            v("Before the procedure was updated in September 2025, what share was checked?"),
            Some(VersionAsk::Previous)
        );
        assert_eq!(v("What must new joiners declare?"), None);
        assert_eq!(v("How long are emails kept?"), None);
    }

    #[test]
    fn several_versions_named() {
        assert_eq!(
            versions_asked("Compare the 2023 and 2024 editions of the travel policy"),
            [VersionAsk::Year(2023), VersionAsk::Year(2024)]
        );
        assert_eq!(
            versions_asked("What changed between version 1.0 and v2.0?"),
            [
                VersionAsk::Named(Version(vec![1, 0])),
                VersionAsk::Named(Version(vec![2, 0]))
            ]
        );
    }

    #[test]
    fn a_date_the_request_tells_is_no_edition() {
        assert!(!versions_asked(
            "Audit how we handled an email in November 2024, against the policy in force at the time."
        )
        .iter()
        .any(|a| matches!(a, VersionAsk::Year(_))));
        assert_eq!(
            versions_asked(
                "On 4 June 2025 we onboarded a client: was that in line with the policy?"
            ),
            []
        );
        assert_eq!(
            versions_asked(
                "What did the old January 2023 classification standard say about faxes?"
            ),
            [VersionAsk::Year(2023)]
        );
    }
}
