//! What a request's own words say about the documents it means, beyond the names it
//! gives: a plural name means every document it fits, "both" or "the versions" several
//! versions of one; mentions alone may already cover every reference; "that one" or "the
//! same policy" points back at the answer before; a quoted title is insisted on; and
//! "against the policy in force at the time" asks for the version in force on the date the
//! request gives.

use crate::references::{self, Reference};
use crate::state::DocRef;
use crate::text::tokens;
use crate::title_match::{name_score, title_has_word, SIMILARITY};

/// Whether a name is plural ("the data retention policies"): it then means every document
/// it fits.
pub(super) fn names_several(name: &str) -> bool {
    name.split_whitespace()
        .last()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .is_some_and(|w| w.len() > 3 && crate::text::singular(&w) != w)
}

/// Whether a message means several versions of the document titled `title`: it names it
/// in the plural ("the travel policies"), says "both" or "them", or asks for its versions
/// or editions.
pub(super) fn means_several(refs: &[Reference], text: &str, title: &str) -> bool {
    refs.iter().any(|r| match r {
        Reference::Kind { noun, plural } => *plural && title_has_word(title, noun),
        Reference::Named { name, .. } => {
            names_several(name) && name_score(name, title) >= SIMILARITY
        }
        Reference::Pronoun { plural } => *plural,
        Reference::Version { .. } => false,
    }) || tokens(text)
        .iter()
        .any(|w| matches!(w.as_str(), "versions" | "editions" | "revisions" | "issues"))
}

/// Whether every reference in the rest of a message is covered by the mentioned documents.
pub(super) fn only_refers_to(refs: &[Reference], docs: &[DocRef]) -> bool {
    refs.iter().all(|r| match r {
        Reference::Named { name, strong: true } => docs
            .iter()
            .any(|d| name_score(name, &d.title) >= SIMILARITY),
        Reference::Kind { noun, .. } => docs.iter().any(|d| title_has_word(&d.title, noun)),
        Reference::Named { strong: false, .. }
        | Reference::Pronoun { .. }
        | Reference::Version { .. } => true,
    })
}

/// Whether a request points back at a document named before: "that one", "this one", "the
/// same one", "that policy", "the same procedure".
/// Whether a short request goes on from the answer before it by its form: it opens with
/// "and", "but" or "also", or asks "what about", "how about", "what if" ("And if the
/// mistake turns out not to be material?", "What about contractors?").
pub(super) fn goes_on(text: &str) -> bool {
    let words = tokens(text);
    match words.as_slice() {
        [first, ..] if matches!(first.as_str(), "and" | "but" | "also") => true,
        [what, about, ..] => {
            matches!(what.as_str(), "what" | "how") && matches!(about.as_str(), "about" | "if")
        }
        _ => false,
    }
}

pub(super) fn points_back(text: &str) -> bool {
    let words = tokens(text);
    words.windows(2).any(|p| {
        matches!(p[0].as_str(), "that" | "this" | "same")
            && (p[1] == "one" || references::is_doc_noun_term(&crate::vocabulary::term(&p[1])))
    })
}

/// Whether `name` is quoted in `text` (a title the user insists on).
pub(super) fn is_quoted(text: &str, name: &str) -> bool {
    text.contains(&format!("\"{name}\"")) || text.contains(&format!("“{name}”"))
}

/// The date a request asks the documents in force at ("against the policy in force at the
/// time", "the rules that applied then"): the first date it gives with a year (year,
/// month, day; 0 for a day not given).
pub(super) fn at_the_time(text: &str) -> Option<(u16, u8, u8)> {
    let lower = text.to_lowercase();
    let asks = [
        "at the time",
        "in force then",
        "then in force",
        "applied then",
        "applicable then",
        "back then",
        "in force on that date",
    ]
    .iter()
    .any(|p| lower.contains(p));
    if !asks {
        return None;
    }
    crate::docmodel::header::first_date(text).map(|d| (d.year, d.month, d.day))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_practice_checked_against_the_rules_in_force_at_the_time_is_dated() {
        assert_eq!(
            at_the_time("Audit how we handled an email in November 2024, against the policy in force at the time."),
            Some((2024, 11, 0))
        );
        assert_eq!(
            at_the_time("Audit how we handled an email in November 2024."),
            None
        );
    }

    #[test]
    fn a_request_points_back_at_a_document_by_that_one_or_the_same_policy() {
        assert!(points_back(
            "And under that one, what if the post claims one of our staff did something wrong?"
        ));
        assert!(points_back("Does the same policy say who approves it?"));
        assert!(!points_back("What if that happens to one of our clients?"));
        assert!(goes_on("And if the mistake turns out not to be material?"));
        assert!(goes_on("What about contractors?"));
        assert!(!goes_on("What is the retention period for emails?"));
    }

    #[test]
    fn plural_names_mean_several_documents() {
        assert!(names_several("the data retention policies"));
        assert!(names_several("both regulations"));
        assert!(!names_several("the data retention policy"));
        assert!(!names_several("the gap analysis"));
    }
}
