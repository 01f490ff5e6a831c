//! The kinds of value a comparison can be asked about ("the deadlines", "the
//! thresholds"): a request that names one keeps the clauses that state such a value,
//! whatever their words.

use crate::docmodel::values::{Unit, Value};

/// A kind of value a comparison can be asked about.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum ValueKind {
    /// Deadlines, time limits, periods.
    Time,
    /// Amounts of money.
    Money,
    /// Thresholds: an amount, a percentage or a count.
    Threshold,
    /// Percentages, rates.
    Percent,
}

impl ValueKind {
    pub(super) fn holds(self, v: &Value) -> bool {
        match self {
            ValueKind::Time => v.calendar_days().is_some(),
            ValueKind::Money => matches!(v.unit, Unit::Money(_)),
            ValueKind::Percent => v.unit == Unit::Percent,
            ValueKind::Threshold => {
                ValueKind::Money.holds(v) || ValueKind::Percent.holds(v) || v.unit == Unit::Count
            }
        }
    }
}

/// The kind of value a term of a request names ("deadlines", "thresholds", "percentages").
pub(super) fn value_kind(term: &str) -> Option<ValueKind> {
    let is = |words: &[&str]| words.iter().any(|w| crate::vocabulary::term(w) == term);
    if is(&["deadline", "timescale", "timeframe", "timeline", "duration"]) {
        Some(ValueKind::Time)
    } else if is(&["threshold"]) {
        Some(ValueKind::Threshold)
    } else if is(&["amount"]) {
        Some(ValueKind::Money)
    } else if is(&["percentage"]) {
        Some(ValueKind::Percent)
    } else {
        None
    }
}
