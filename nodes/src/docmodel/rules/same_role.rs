//! Whether two names mean the same people, to compare a rule's roles with a practice's or
//! another version's: "DPO" and "Data Protection Officer", "senior management" and "Senior
//! Management Committee", "her boss" and "the line manager".

use std::collections::HashSet;

/// Whether two names are the same people: equal ignoring case and "the"; one the acronym of
/// the other ("DPO", "Data Protection Officer"); every word of the shorter in the longer
/// ("senior management", "Senior Management Committee"); or known synonyms ("boss" and
/// "line manager").
pub(crate) fn same_role(a: &str, b: &str) -> bool {
    // Whose it is ("the traveller's line manager", "the user's line manager") says no more
    // than the practice's "his line manager": the possessor is left out.
    let norm = |s: &str| -> Vec<String> {
        let words: Vec<&str> = s
            .split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '\u{2019}')
            .filter(|w| !w.is_empty())
            .collect();
        let last = words.len().saturating_sub(1);
        words
            .iter()
            .enumerate()
            .filter(|(i, w)| *i == last || !(w.ends_with("'s") || w.ends_with("\u{2019}s")))
            .map(|(_, w)| {
                w.trim_end_matches("'s")
                    .trim_end_matches("\u{2019}s")
                    .to_lowercase()
            })
            .filter(|w| {
                !matches!(
                    w.as_str(),
                    "the"
                        | "a"
                        | "an"
                        | "their"
                        | "his"
                        | "her"
                        | "our"
                        | "its"
                        | "your"
                        | "and"
                        | "member"
                        | "s"
                )
            })
            .map(|w| match w.as_str() {
                "boss" | "manager" => "manager".to_string(),
                other => crate::text::singular(other),
            })
            .collect()
    };
    let (x, y) = (norm(a), norm(b));
    if x.is_empty() || y.is_empty() {
        return false;
    }
    let acronym = |words: &[String]| -> String {
        words
            .iter()
            .filter(|w| w.as_str() != "of")
            .filter_map(|w| w.chars().next())
            .collect()
    };
    if (x.len() == 1 && y.len() > 1 && x[0] == acronym(&y))
        || (y.len() == 1 && x.len() > 1 && y[0] == acronym(&x))
    {
        return true;
    }
    // An acronym in brackets: "Money Laundering Reporting Officer (MLRO)".
    if x == y {
        return true;
    }
    let (short, long) = if x.len() <= y.len() {
        (&x, &y)
    } else {
        (&y, &x)
    };
    // The shorter is the longer without words that only qualify it ("manager" and "line
    // manager", "Board" and "Board of Directors"), not without its head ("Compliance" is not
    // the "Head of Compliance", a "director" not a "Managing Director").
    let long_set: HashSet<&String> = long.iter().collect();
    if !short
        .iter()
        .filter(|w| w.as_str() != "of")
        .all(|w| long_set.contains(w))
    {
        return false;
    }
    let head = |words: &[String]| -> String {
        words.iter().position(|w| w == "of").map_or_else(
            || words.last().cloned().unwrap_or_default(),
            |i| words[..i].last().cloned().unwrap_or_default(),
        )
    };
    let extra: Vec<&String> = long
        .iter()
        .filter(|w| !short.contains(w) && w.as_str() != "of")
        .collect();
    head(short) == head(long)
        && extra.iter().all(|w| {
            QUALIFIERS.contains(&w.as_str()) || w.as_str() == "director" && head(long) == "board"
        })
}

/// Words that only qualify who is meant ("line manager", "senior management").
const QUALIFIERS: [&str; 13] = [
    // "the IT Service Desk" is the Service Desk.
    "it",
    "line",
    "direct",
    "senior",
    "relevant",
    "responsible",
    "designated",
    "appointed",
    "own",
    "immediate",
    "business",
    "unit",
    "team",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_people_by_name_acronym_or_common_words() {
        assert!(same_role("the Chief Operating Officer", "COO"));
        assert!(same_role("DPO", "Data Protection Officer"));
        assert!(same_role("Service Desk's", "IT Service Desk"));
        assert!(same_role("senior management", "Senior Management"));
        assert!(same_role("her boss", "the line manager"));
        assert!(!same_role("Chief Financial Officer", "Head of Procurement"));
        assert!(!same_role("COO", "Chief Executive Officer"));
        assert!(!same_role("manager", "Complaints Quality Manager"));
        assert!(!same_role("Compliance", "Head of Compliance"));
        assert!(!same_role("a director", "a Managing Director"));
        assert!(same_role("the Board", "Board of Directors"));
        assert!(same_role("line manager", "traveller's line manager"));
        assert!(same_role("his line manager", "the user's line manager"));
        assert!(!same_role("the traveller", "traveller's line manager"));
    }
}
