//! Quantities in compliance text: a number with its unit ("5 years", "72 hours", "4.5%",
//! "five working days"), so answers can say what changed and audits can flag a period or
//! ratio that differs from the requirement.

use std::fmt;

/// A number and its unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Quantity {
    /// The number.
    pub(crate) value: f64,
    /// The unit, singular (`year`, `working day`, `percent`, ...).
    pub(crate) unit: &'static str,
}

impl Quantity {
    /// The quantity in days, for durations (a working day counts as a day, a month as
    /// 365/12 days): "12 months" and "1 year" are the same.
    pub(crate) fn days(&self) -> Option<f64> {
        let per = match self.unit {
            "year" => 365.0,
            "month" => 365.0 / 12.0,
            "week" => 7.0,
            "day" | "working day" => 1.0,
            "hour" => 1.0 / 24.0,
            "minute" => 1.0 / 1440.0,
            _ => return None,
        };
        Some(self.value * per)
    }

    /// Whether the two can be compared (both durations, or the same unit).
    pub(crate) fn comparable(&self, other: &Quantity) -> bool {
        self.unit == other.unit || (self.days().is_some() && other.days().is_some())
    }

    /// How this compares with `other` (durations across units); `None` when they cannot
    /// be compared.
    pub(crate) fn compare(&self, other: &Quantity) -> Option<std::cmp::Ordering> {
        match (self.days(), other.days()) {
            (Some(a), Some(b)) => {
                if (a - b).abs() < 1e-6 * a.abs().max(b.abs()).max(1.0) {
                    Some(std::cmp::Ordering::Equal)
                } else {
                    a.partial_cmp(&b)
                }
            }
            _ if self.unit == other.unit => self.value.partial_cmp(&other.value),
            _ => None,
        }
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = if self.value.fract() == 0.0 {
            format!("{}", self.value as i64)
        } else {
            format!("{}", self.value)
        };
        match self.unit {
            "percent" => write!(f, "{v}%"),
            "EUR" | "USD" | "GBP" | "CHF" => write!(f, "{} {v}", self.unit),
            unit if (self.value - 1.0).abs() < f64::EPSILON => write!(f, "{v} {unit}"),
            unit => write!(f, "{v} {unit}s"),
        }
    }
}

const NUMBER_WORDS: [&str; 21] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
];

fn unit(word: &str) -> Option<&'static str> {
    Some(match word {
        "year" | "years" => "year",
        "month" | "months" => "month",
        "week" | "weeks" => "week",
        "day" | "days" => "day",
        "hour" | "hours" => "hour",
        "minute" | "minutes" => "minute",
        "percent" | "per-cent" => "percent",
        _ => return None,
    })
}

fn number(word: &str) -> Option<f64> {
    if let Some(i) = NUMBER_WORDS.iter().position(|w| *w == word) {
        return Some(i as f64);
    }
    let digits = word.replace(',', "");
    if digits.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        digits.parse().ok()
    } else {
        None
    }
}

/// Words that state a frequency, as the interval they mean.
fn frequency(word: &str) -> Option<Quantity> {
    let (value, unit) = match word {
        "annually" | "yearly" | "annual" => (1.0, "year"),
        "quarterly" => (3.0, "month"),
        "monthly" => (1.0, "month"),
        "weekly" => (1.0, "week"),
        "daily" => (1.0, "day"),
        "hourly" => (1.0, "hour"),
        _ => return None,
    };
    Some(Quantity { value, unit })
}

fn currency(word: &str) -> Option<&'static str> {
    match word {
        "eur" | "euro" | "euros" | "€" => Some("EUR"),
        "usd" | "$" => Some("USD"),
        "gbp" | "£" => Some("GBP"),
        "chf" => Some("CHF"),
        _ => None,
    }
}

/// The words of a text as [`located`] numbers them: lower case, split at whitespace,
/// hyphens and brackets, punctuation trimmed (`%` and currency signs kept apart).
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for raw in text.split(|c: char| c.is_whitespace() || c == '-' || c == '(' || c == ')') {
        let mut w = raw;
        for sign in ['€', '$', '£'] {
            if let Some(rest) = w.strip_prefix(sign) {
                out.push(sign.to_string());
                w = rest;
            }
        }
        let w = w
            .trim_matches(|c: char| !c.is_alphanumeric() && c != '%')
            .to_lowercase();
        if !w.is_empty() {
            out.push(w);
        }
    }
    out
}

/// The quantities of `text` with the index (in [`words`]) of the word that starts each.
pub(crate) fn located(text: &str) -> (Vec<String>, Vec<(usize, Quantity)>) {
    let words = words(text);
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if let Some(n) = w.strip_suffix('%').and_then(number) {
            out.push((
                i,
                Quantity {
                    value: n,
                    unit: "percent",
                },
            ));
            continue;
        }
        if let Some(q) = frequency(w) {
            out.push((i, q));
            continue;
        }
        let next = words.get(i + 1).map(String::as_str).unwrap_or("");
        let after = words.get(i + 2).map(String::as_str).unwrap_or("");
        if matches!(w.as_str(), "every" | "each" | "per") {
            if let Some(u) = unit(next) {
                out.push((
                    i,
                    Quantity {
                        value: 1.0,
                        unit: u,
                    },
                ));
            }
            continue;
        }
        let Some(value) = number(w) else { continue };
        let before = i.checked_sub(1).and_then(|k| words.get(k));
        if let Some(c) = before.and_then(|b| currency(b)) {
            out.push((i - 1, Quantity { value, unit: c }));
        } else if matches!(next, "working" | "business") {
            if unit(after) == Some("day") {
                out.push((
                    i,
                    Quantity {
                        value,
                        unit: "working day",
                    },
                ));
            }
        } else if next == "per" && after == "cent" {
            out.push((
                i,
                Quantity {
                    value,
                    unit: "percent",
                },
            ));
        } else if let Some(u) = unit(next) {
            out.push((i, Quantity { value, unit: u }));
        }
    }
    (words, out)
}

/// The quantities of `text`, in order.
pub(crate) fn quantities(text: &str) -> Vec<Quantity> {
    located(text).1.into_iter().map(|(_, q)| q).collect()
}

/// The quantities of `b` that differ from the comparable quantity at the same place in
/// `a`, as "old → new" pairs ("12 months → 5 years": durations compare across units).
pub(crate) fn changes(a: &str, b: &str) -> Vec<(Quantity, Quantity)> {
    let qa = quantities(a);
    let qb = quantities(b);
    let mut out = Vec::new();
    for (x, y) in qa.iter().zip(qb.iter()) {
        if x.comparable(y) && x.compare(y) != Some(std::cmp::Ordering::Equal) {
            out.push((*x, *y));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_with_units_in_digits_and_words() {
        let q = quantities(
            "Keep records for 5 years, notify within 72 hours, a ratio of 4.5% and five working days; 12-month calls.",
        );
        let shown: Vec<String> = q.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            ["5 years", "72 hours", "4.5%", "5 working days", "12 months"]
        );
        assert!(quantities("Article 92 applies").is_empty());
        let shown: Vec<String> = quantities(
            "Contracts above EUR 250,000 or €5 are reviewed annually, every year and every two years.",
        )
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            shown,
            ["EUR 250000", "EUR 5", "1 year", "1 year", "2 years"]
        );
    }

    #[test]
    fn changes_pair_quantities_of_the_same_unit() {
        let c = changes("retained for 5 years", "retained for 7 years");
        assert_eq!(c.len(), 1);
        assert_eq!(format!("{} → {}", c[0].0, c[0].1), "5 years → 7 years");
        assert!(changes("within 90 days", "within 90 days").is_empty());
        let c = changes("kept for 12 months", "kept for 5 years");
        assert_eq!(format!("{} → {}", c[0].0, c[0].1), "12 months → 5 years");
        assert!(changes("kept for 12 months", "kept for 1 year").is_empty());
    }
}
