//! Tables in the rules: a row speaks only of its own case ("New York | USD 375"), a row
//! for "other" cases of every case the other rows do not name, and a row for a band of
//! values ("£5,000.01 to £50,000 | Head of Department") of a case whose value falls in it.

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
    /// The terms of the other rows' cases of its table.
    pub(super) siblings: Vec<Vec<String>>,
}

impl Row {
    /// Whether the practice's words (`said`) speak of this row's case: they name it, or,
    /// for a row of every other case, name none of the others.
    pub(super) fn applies(&self, said: &HashSet<&String>) -> bool {
        match &self.catch_all {
            Some(others) => !others.iter().any(|o| names(o, said)),
            None => names(&self.terms, said),
        }
    }

    /// Whether the practice's words are of another row's case and not of this one ("a
    /// Level 3 case" against the row for Level 2): the row says nothing of the practice.
    pub(super) fn of_another_case(&self, said: &HashSet<&String>) -> bool {
        self.catch_all.is_none()
            && !names(&self.terms, said)
            && self.siblings.iter().any(|s| names(s, said))
    }
}

/// Whether words name a case: all of a short name's terms, half of a longer one's
/// ("suitability reports" for "Suitability reports and client fact-finds").
fn names(ts: &[String], said: &HashSet<&String>) -> bool {
    let n = ts.iter().filter(|t| said.contains(t)).count();
    !ts.is_empty() && (n == ts.len() || (ts.len() > 2 && 2 * n >= ts.len()))
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
    (name || identifier(first)).then(|| first.to_string())
}

/// Whether a cell names a case by a numbered identifier: a word and its number ("Tier 3",
/// "Level 2 – Standard") or a short code ("P1", "F4"), not a figure, a date or a version.
fn identifier(cell: &str) -> bool {
    let words: Vec<&str> = cell
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let code = |w: &str| {
        w.len() <= 4
            && w.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && w.chars().skip(1).all(|c| c.is_ascii_digit())
            && w.len() >= 2
    };
    let numbered = |a: &str, b: &str| {
        a.len() > 2
            && a.chars().all(char::is_alphabetic)
            && !crate::docmodel::header::is_month(&a.to_lowercase())
            && crate::docmodel::values::values(a).is_empty()
            && !matches!(
                a.to_lowercase().as_str(),
                "version"
                    | "edition"
                    | "section"
                    | "article"
                    | "clause"
                    | "year"
                    | "up"
                    | "above"
                    | "below"
                    | "over"
                    | "under"
                    | "from"
            )
            && b.len() <= 2
            && b.chars()
                .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
    };
    !cell.contains(';')
        && words.len() <= 4
        && crate::docmodel::values::values(cell).is_empty()
        && match words.as_slice() {
            [w, ..] if code(w) => true,
            [a, b, ..] => numbered(a, b),
            _ => false,
        }
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

/// The band of values a table row is for, when its first cell is one ("Up to £5,000",
/// "£5,000.01 to £50,000", "Above £250,000", "10-49 staff").
#[derive(Clone, Debug)]
pub(super) struct Band {
    /// The first cell as written.
    pub(super) label: String,
    /// The values the cell writes (a row's figures that are its case, not its rule).
    pub(super) written: Vec<String>,
    /// The terms of its column's heading ("Total value of claim"): what the value is of.
    pub(super) of: Vec<String>,
    /// Its lowest and highest value, in the unit of `unit`.
    low: f64,
    high: f64,
    unit: Value,
}

impl Band {
    /// Whether a value falls in the band: `None` when it measures something else or its
    /// range straddles an end.
    pub(super) fn holds(&self, v: &Value) -> Option<bool> {
        if !v.comparable(&self.unit) || v.unit != self.unit.unit {
            return None;
        }
        let inside = |x: f64| x >= self.low - 1e-9 && x <= self.high + 1e-9;
        match (inside(v.low), inside(v.high)) {
            (true, true) => Some(true),
            (false, false) if v.high < self.low || v.low > self.high => Some(false),
            _ => None,
        }
    }
}

/// The band a table row's first cell names, if it names one.
pub(super) fn row_band(p: &Passage) -> Option<Band> {
    let lead = p.lead.as_deref()?;
    if !lead.contains(" | ") || !p.text.contains(" | ") {
        return None;
    }
    let first = p.text.split(" | ").next()?.trim().trim_matches('|').trim();
    let mut b = band(first)?;
    b.of = terms(lead.split(" | ").next().unwrap_or(""));
    Some(b)
}

/// The band a cell names: two values ("£5,000.01 to £50,000"), a range ("10-49"), or one
/// value with the words that open it ("up to £5,000", "above £250,000", "£1m or more").
pub(super) fn band(cell: &str) -> Option<Band> {
    let vs = crate::docmodel::values::values(cell);
    let lower = cell.to_lowercase();
    let has = |ws: &[&str]| {
        ws.iter().any(|w| {
            lower
                .split(|c: char| !c.is_alphanumeric())
                .collect::<Vec<_>>()
                .windows(w.split(' ').count())
                .any(|win| win.join(" ") == *w)
        })
    };
    let (low, high, unit) = match vs.as_slice() {
        [a, b] if a.unit == b.unit => (a.low, b.high, a.clone()),
        [a] if has(&[
            "up to",
            "below",
            "under",
            "less than",
            "not exceeding",
            "no more than",
            "maximum",
            "max",
        ]) || lower.contains('<')
            || lower.contains('≤') =>
        {
            (0.0, a.high, a.clone())
        }
        [a] if has(&[
            "above",
            "over",
            "more than",
            "exceeding",
            "greater than",
            "at least",
            "or more",
            "and above",
            "from",
            "minimum",
        ]) || lower.contains('>')
            || lower.contains('≥')
            || lower.trim_end().ends_with('+') =>
        {
            (a.low, f64::INFINITY, a.clone())
        }
        [a] if a.low < a.high => (a.low, a.high, a.clone()),
        _ => return None,
    };
    Some(Band {
        label: cell.to_string(),
        written: vs.iter().map(|v| v.written.clone()).collect(),
        of: Vec::new(),
        low,
        high,
        unit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amount(text: &str) -> Value {
        crate::docmodel::values::values(text).remove(0)
    }

    #[test]
    fn a_row_for_a_band_of_values_holds_the_values_inside_it() {
        let mid = band("£5,000.01 to £50,000").expect("a band");
        assert_eq!(mid.holds(&amount("£38,400")), Some(true));
        assert_eq!(mid.holds(&amount("£120,000")), Some(false));
        assert_eq!(mid.holds(&amount("EUR 10,000")), None);
        let top = band("Above £250,000").expect("a band");
        assert_eq!(top.holds(&amount("£300,000")), Some(true));
        assert_eq!(top.holds(&amount("£38,400")), Some(false));
        let low = band("Up to £5,000").expect("a band");
        assert_eq!(low.holds(&amount("£4,999")), Some(true));
        assert!(band("£5,000").is_none());
        assert!(band("Head of Department").is_none());
    }

    #[test]
    fn a_numbered_tier_or_a_code_names_a_rows_case_and_a_date_or_figure_does_not() {
        for cell in [
            "Tier 3",
            "Level 2 – Standard",
            "P1",
            "F4",
            "Tier 1 — critical",
        ] {
            assert!(identifier(cell), "{cell}");
        }
        for cell in [
            "January 2023",
            "2023",
            "4 hours",
            "Up to £5,000",
            "Version 2",
            "OR-014",
        ] {
            assert!(!identifier(cell), "{cell}");
        }
    }
}
