//! Tables in the rules: a row speaks only of its own case ("New York | USD 375"), and a
//! row for "other" cases of every case the other rows do not name.

use super::*;

/// The case a table row is for: its first cell, when that is a name, not a figure.
pub(super) struct Row {
    /// The first cell as written.
    pub(super) label: String,
    /// Its terms.
    pub(super) terms: Vec<String>,
    /// The row for every case the others do not name ("Other US cities", "Rest of the
    /// world"), and the terms of the other rows' cases.
    pub(super) catch_all: Option<Vec<Vec<String>>>,
}

impl Row {
    /// Whether the practice's words (`said`) speak of this row's case: they name it, or,
    /// for a row of every other case, name none of the others.
    pub(super) fn applies(&self, said: &HashSet<&String>) -> bool {
        // Named: all of a short name's terms, half of a longer one's ("suitability
        // reports" for "Suitability reports and client fact-finds").
        let names = |ts: &[String]| {
            let n = ts.iter().filter(|t| said.contains(t)).count();
            !ts.is_empty() && (n == ts.len() || (ts.len() > 2 && 2 * n >= ts.len()))
        };
        match &self.catch_all {
            Some(others) => !others.iter().any(|o| names(o)),
            None => names(&self.terms),
        }
    }
}

/// The label of a table row: its first cell, when the passage is a row under a header and
/// that cell holds no figure.
pub(super) fn row_label(p: &Passage) -> Option<String> {
    let lead = p.lead.as_deref()?;
    if !lead.contains(" | ") || !p.text.contains(" | ") {
        return None;
    }
    let first = p.text.split(" | ").next()?.trim().trim_matches('|').trim();
    // A name: a few words, no figure, not a sentence of its own.
    let name = !first.is_empty()
        && !first
            .chars()
            .any(|c| c.is_ascii_digit() || matches!(c, ';' | '.'))
        && first.split_whitespace().count() <= 6;
    name.then(|| first.to_string())
}

/// Whether a row's label stands for every case the other rows leave out.
pub(super) fn catch_all(label: &str) -> bool {
    let l = label.to_lowercase();
    [
        "other",
        "all other",
        "any other",
        "rest of",
        "elsewhere",
        "everywhere else",
        "others",
    ]
    .iter()
    .any(|p| l.starts_with(p))
}
