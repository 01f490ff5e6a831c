//! How values compare: whether two measure the same kind of thing, whether one keeps
//! within a [`Limit`] of another, and business days against calendar days. Amounts are
//! ranges (a vague "a few days", business days in calendar days), so a comparison answers
//! yes or no only when every reading of both agrees, and "cannot tell" otherwise.

use std::cmp::Ordering;

use super::{Unit, Value};

impl Value {
    /// The value in calendar days, as a range (business days convert with weekends and
    /// holidays: `n` business days are at least `n` plus two days a full week, at most two
    /// more days on top).
    pub(crate) fn calendar_days(&self) -> Option<(f64, f64)> {
        match self.unit {
            Unit::Days => Some((self.low, self.high)),
            Unit::BusinessDays => {
                let low = business_to_calendar(self.low).0;
                let high = business_to_calendar(self.high).1;
                Some((low, high))
            }
            _ => None,
        }
    }

    /// The value in business days, as a range (see [`calendar_to_business`]).
    fn business_days(&self) -> Option<(f64, f64)> {
        match self.unit {
            Unit::BusinessDays => Some((self.low, self.high)),
            Unit::Days if self.business.is_some() => self.business,
            Unit::Days => Some((
                calendar_to_business(self.low).0,
                calendar_to_business(self.high).1,
            )),
            _ => None,
        }
    }

    /// Whether the two measure the same kind of thing (both durations, the same currency,
    /// both percentages, both counts).
    pub(crate) fn comparable(&self, other: &Value) -> bool {
        match (self.unit, other.unit) {
            (Unit::Days | Unit::BusinessDays, Unit::Days | Unit::BusinessDays) => true,
            (a, b) => a == b,
        }
    }

    /// How this value compares with `other`: `None` when they measure different things or
    /// their ranges overlap without being equal (it cannot be told).
    #[cfg(test)]
    pub(crate) fn compare(&self, other: &Value) -> Option<Ordering> {
        if !self.comparable(other) {
            return None;
        }
        let (a, b) = match (self.unit, other.unit) {
            (Unit::BusinessDays, Unit::Days) | (Unit::Days, Unit::BusinessDays) => {
                // Compared in business days: the unit of the rule is usually the business
                // one, and the conversion is exact for whole weeks.
                (self.business_days()?, other.business_days()?)
            }
            _ => ((self.low, self.high), (other.low, other.high)),
        };
        compare_ranges(a, b)
    }

    /// For a count, what it counts (the term of its noun: "two directors" counts
    /// "director").
    pub(crate) fn counted(&self) -> Option<String> {
        if self.unit != Unit::Count {
            return None;
        }
        let noun = self.written.split_whitespace().last()?.to_lowercase();
        Some(crate::vocabulary::term(
            noun.trim_matches(|c: char| !c.is_alphanumeric()),
        ))
    }

    /// Whether the two can be weighed against each other: [`Value::comparable`], and for
    /// counts, counts of the same thing ("two directors" is not "1 analyst").
    pub(crate) fn weighs_with(&self, other: &Value) -> bool {
        self.comparable(other) && self.counted() == other.counted()
    }

    /// The same amount in the same unit.
    pub(crate) fn same_as(&self, other: &Value) -> bool {
        self.unit == other.unit
            && close(self.low, other.low)
            && close(self.high, other.high)
            && self.frequency == other.frequency
    }
}

/// Two amounts equal within rounding.
pub(super) fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0) + 1e-3
}

/// Compares two ranges: equal when both are the same point, less or greater when one lies
/// wholly below the other, `None` when they overlap.
fn compare_ranges(a: (f64, f64), b: (f64, f64)) -> Option<Ordering> {
    if close(a.0, b.0) && close(a.1, b.1) && close(a.0, a.1) {
        Some(Ordering::Equal)
    } else if a.1 < b.0 && !close(a.1, b.0) {
        Some(Ordering::Less)
    } else if a.0 > b.1 && !close(a.0, b.1) {
        Some(Ordering::Greater)
    } else {
        None
    }
}

/// How a value stands against a limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Limit {
    /// The value may be at most the limit ("within 5 days").
    AtMost,
    /// At least the limit ("at least 10 days before").
    AtLeast,
    /// The limit itself.
    Exactly,
}

impl Value {
    /// Whether this value keeps within `limit` of `rule`: `Some(true)` when every reading
    /// of both does, `Some(false)` when none does, `None` when it cannot be told (ranges
    /// that overlap, things not comparable).
    pub(crate) fn keeps(&self, limit: Limit, rule: &Value) -> Option<bool> {
        if !self.comparable(rule) {
            return None;
        }
        let (a, b) = match (self.unit, rule.unit) {
            (Unit::BusinessDays, Unit::Days) | (Unit::Days, Unit::BusinessDays) => {
                (self.business_days()?, rule.business_days()?)
            }
            _ => ((self.low, self.high), (rule.low, rule.high)),
        };
        let le = |x: f64, y: f64| x < y || close(x, y);
        match limit {
            Limit::AtMost if le(a.1, b.0) => Some(true),
            Limit::AtMost if !le(a.0, b.1) => Some(false),
            Limit::AtLeast if le(b.1, a.0) => Some(true),
            Limit::AtLeast if !le(b.0, a.1) => Some(false),
            Limit::Exactly => match compare_ranges(a, b) {
                Some(Ordering::Equal) => Some(true),
                Some(_) => Some(false),
                None => None,
            },
            _ => None,
        }
    }
}

/// The calendar days `n` business days span: `n` plus two days for every full week, and
/// up to two more (a weekend, or holidays) for the rest.
fn business_to_calendar(n: f64) -> (f64, f64) {
    if n <= 0.0 {
        return (0.0, 0.0);
    }
    let weeks = (n / 5.0).floor();
    let rest = n - weeks * 5.0;
    let low = n + 2.0 * weeks;
    let high = low + if rest > 0.0 { 2.0 } else { 0.0 } + 1.0;
    (low, high)
}

/// The business days `d` calendar days hold: five a full week, and for the rest of the
/// days up to five less the weekend they may cross; one fewer at least for a holiday in a
/// period of a week or more.
pub(crate) fn calendar_to_business(d: f64) -> (f64, f64) {
    if d <= 0.0 {
        return (0.0, 0.0);
    }
    let weeks = (d / 7.0).floor();
    let rest = d - weeks * 7.0;
    let high = weeks * 5.0 + rest.min(5.0);
    let mut low = weeks * 5.0 + (rest - 2.0).max(0.0);
    if d >= 7.0 {
        low -= 1.0;
    }
    (low.max(0.0), high)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docmodel::values::test_support::one;

    #[test]
    fn durations_compare_across_units_and_business_days_as_ranges() {
        let c = |a: &str, b: &str| one(a).compare(&one(b));
        assert_eq!(c("12 months", "1 year"), Some(Ordering::Equal));
        assert_eq!(c("48 hours", "1 day"), Some(Ordering::Greater));
        assert_eq!(
            c("a week and a half", "5 business days"),
            Some(Ordering::Greater)
        );
        assert_eq!(
            c("7 days", "5 business days"),
            None,
            "a week is 4 to 5 business days"
        );
        assert_eq!(c("three days", "5 business days"), Some(Ordering::Less));
        assert_eq!(c("two weeks", "10 business days"), None);
        assert_eq!(
            c("three weeks", "10 business days"),
            Some(Ordering::Greater)
        );
        assert_eq!(c("EUR 150", "EUR 100"), Some(Ordering::Greater));
        assert_eq!(c("EUR 150", "GBP 100"), None, "other currencies");
        assert_eq!(c("4%", "4.5%"), Some(Ordering::Less));
    }

    #[test]
    fn limits_hold_only_when_every_reading_does() {
        let k = |fact: &str, limit, rule: &str| one(fact).keeps(limit, &one(rule));
        assert_eq!(k("7 days", Limit::AtMost, "5 business days"), Some(true));
        assert_eq!(
            k("a week and a half", Limit::AtMost, "5 business days"),
            Some(false)
        );
        assert_eq!(
            k("two weeks", Limit::AtMost, "10 business days"),
            Some(true)
        );
        assert_eq!(k("9 days", Limit::AtMost, "5 business days"), None);
        assert_eq!(
            k("a week before", Limit::AtLeast, "10 business days"),
            Some(false)
        );
        assert_eq!(
            k("three weeks", Limit::AtLeast, "10 business days"),
            Some(true)
        );
        assert_eq!(k("EUR 120", Limit::AtMost, "EUR 150"), Some(true));
        assert_eq!(k("12 months", Limit::Exactly, "1 year"), Some(true));
        assert_eq!(k("2 years", Limit::Exactly, "1 year"), Some(false));
        assert_eq!(k("EUR 120", Limit::AtMost, "GBP 150"), None);
    }

    #[test]
    fn business_and_calendar_days_convert_as_ranges() {
        assert_eq!(business_to_calendar(5.0), (7.0, 8.0));
        assert_eq!(business_to_calendar(1.0), (1.0, 4.0));
        assert_eq!(calendar_to_business(7.0), (4.0, 5.0));
        assert_eq!(calendar_to_business(3.0), (1.0, 3.0));
    }
}
