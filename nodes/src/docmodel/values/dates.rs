//! Days of the year a text names: "31 January", "January 31", "31st of January", or a
//! month alone where it says when ("in March", "by the end of June"), as day numbers of a
//! year that is not a leap year.

use super::Word;

/// The first day of each month in a year that is not a leap year, from 1.
const MONTH_STARTS: [f64; 13] = [
    1.0, 32.0, 60.0, 91.0, 121.0, 152.0, 182.0, 213.0, 244.0, 274.0, 305.0, 335.0, 366.0,
];

/// A date of the year at word `i`: "31 January", "January 31", "31st of January", or a
/// month alone after "in", "by", "before", "until", "during", "end of" ("in March");
/// its first and last day, and how many words it takes.
pub(super) fn date_at(ws: &[Word], i: usize) -> Option<(f64, f64, usize)> {
    let word = |k: usize| ws.get(k).map(|w| w.text.as_str()).unwrap_or("");
    let month = |w: &str| crate::docmodel::header::month_number(w);
    let day = |w: &str| {
        let d: String = w.chars().take_while(char::is_ascii_digit).collect();
        let rest = &w[d.len()..];
        let suffix_ok = rest.is_empty() || matches!(rest, "st" | "nd" | "rd" | "th");
        d.parse::<u8>()
            .ok()
            .filter(|d| (1..=31).contains(d) && suffix_ok && !d.to_string().is_empty())
    };
    let at = |m: u8, d: u8| MONTH_STARTS[usize::from(m - 1)] + f64::from(d) - 1.0;
    // "31 January", "31st of January".
    if let Some(d) = day(word(i)) {
        if let Some(m) = month(word(i + 1)) {
            return Some((at(m, d), at(m, d), 2));
        }
        if word(i + 1) == "of" {
            if let Some(m) = month(word(i + 2)) {
                return Some((at(m, d), at(m, d), 3));
            }
        }
        return None;
    }
    let m = month(word(i))?;
    // "January 31" (not "January 2025": a year).
    if let Some(d) = day(word(i + 1)).filter(|_| word(i + 1).len() <= 4) {
        return Some((at(m, d), at(m, d), 2));
    }
    // A month alone, where it says when: "in March", "by the end of June".
    let before = i.checked_sub(1).map(word).unwrap_or("");
    if matches!(
        before,
        "in" | "by"
            | "before"
            | "until"
            | "during"
            | "of"
            | "early"
            | "late"
            | "mid"
            | "from"
            | "after"
            | "since"
    ) {
        let first = MONTH_STARTS[usize::from(m - 1)];
        let last = MONTH_STARTS[usize::from(m)] - 1.0;
        return Some((first, last, 1));
    }
    None
}
