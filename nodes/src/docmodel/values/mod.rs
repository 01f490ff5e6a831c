//! Values in compliance text, read without a model: durations ("72 hours", "ten business
//! days", "a week and a half", "12-month"), frequencies ("annually", "every 6 months"),
//! amounts of money in any of the common currencies ("EUR 150", "£1,000", "USD 25,000",
//! "150 euros"), percentages ("4.5%", "ten per cent") and counts ("three quotes", "no more
//! than two gifts"), numbers in digits or words.
//!
//! Each value is kept as written (for quotes) and as an amount a comparison can use:
//! calendar durations in days, business days as such (they convert to calendar days only
//! as a range: five business days are seven to eleven calendar days, depending on weekends
//! and holidays), money per currency. Comparisons answer less / equal / greater, or
//! "cannot tell" when the ranges overlap: an audit then says a rule is not verifiable
//! rather than guess.
//!
//! [`values`] reads every value of a text. The parts:
//!
//! - [`words`](mod@words): a text's words with where each is, the input of every reading here;
//! - [`parse`]: the value starting at a word, of any kind;
//! - [`numbers`]: numbers in digits or words, ranges ("two to three") and shares in words
//!   ("a fifth");
//! - [`unit_words`]: the words of durations, frequencies and currencies;
//! - [`dates`]: days of the year ("31 January", "in March");
//! - [`relative`]: times said in words relative to an event ("the next working day");
//! - [`compare`]: how values compare with each other and keep a [`Limit`], with business
//!   and calendar days converted as ranges.

use std::fmt;
use std::ops::Range;

mod compare;
mod dates;
mod numbers;
pub(crate) use numbers::number_word;
mod parse;
mod relative;
mod unit_words;
mod words;

pub(crate) use compare::Limit;
pub(crate) use words::{words, Word};

use parse::value_at;

/// What a value measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Unit {
    /// A calendar duration (stored in days).
    Days,
    /// Business (working) days.
    BusinessDays,
    /// An amount of money in a currency (ISO code).
    Money(&'static str),
    /// A percentage.
    Percent,
    /// A count of things.
    Count,
    /// A day of the year ("31 January", "by 15 February"), as its number (1 to 366); a
    /// month alone ("in March") is the range of its days.
    Date,
}

/// A value found in a text.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Value {
    /// What it measures.
    pub(crate) unit: Unit,
    /// The amount in that unit (days for [`Unit::Days`]); a range when the text is vague
    /// ("a few days") or written as one ("two to three days").
    pub(crate) low: f64,
    /// The upper end of the amount (equal to `low` for an exact value).
    pub(crate) high: f64,
    /// The unit word as written, singular ("hour", "business day", "month", "EUR"), for
    /// showing the value in the text's own terms.
    pub(crate) shown_unit: &'static str,
    /// The number as written in that unit (72 for "72 hours").
    pub(crate) number: f64,
    /// The value as the text writes it ("72 hours", "€150", "a week and a half").
    pub(crate) written: String,
    /// Where it is in the text (bytes).
    pub(crate) span: Range<usize>,
    /// A frequency ("annually", "every 6 months"): the longest interval between two events.
    pub(crate) frequency: bool,
    /// For a calendar duration, the business days it crosses when the text says so ("the
    /// same day": none; Thursday to the following Tuesday: three), as a range.
    pub(crate) business: Option<(f64, f64)>,
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.written)
    }
}

/// Whether `word` (lower case) names what a number measures: a duration ("days",
/// "years"), a currency ("pounds") or a count of times.
pub(crate) fn is_unit_word(word: &str) -> bool {
    unit_words::duration_unit(word).is_some()
        || unit_words::currency(word).is_some()
        || word == "times"
}

/// Every value of `text`, in order.
pub(crate) fn values(text: &str) -> Vec<Value> {
    let ws = words(text);
    let mut out: Vec<Value> = Vec::new();
    let mut i = 0;
    let mut after_value = usize::MAX;
    while i < ws.len() {
        match value_at(text, &ws, i) {
            Some((v, next)) => {
                // "GBP 2,500 a year", "EUR 0.35 per km": "a year" is the rate's unit; "by 31
                // January each year": "each year" says the date comes back.
                // "30 working days in a calendar year", "EUR 500 per year": the same.
                let qualifier = after_value.checked_add(1) == Some(i)
                    && matches!(ws[i - 1].text.as_str(), "in" | "per" | "each")
                    && matches!(
                        ws[i].text.as_str(),
                        "a" | "an" | "calendar" | "year" | "month"
                    );
                // "more than 10 complaints ... in a calendar month": the window an amount is
                // counted over, not a time allowed.
                let window = i > 0
                    && matches!(ws[i - 1].text.as_str(), "in" | "per" | "during")
                    && matches!(ws[i].text.as_str(), "a" | "an" | "any" | "each")
                    && matches!(v.unit, Unit::Days)
                    && out
                        .iter()
                        .any(|p| matches!(p.unit, Unit::Count | Unit::Money(_) | Unit::Percent));
                let rate = i == after_value && matches!(ws[i].text.as_str(), "a" | "an")
                    || qualifier
                    || window;
                let recurring_date = i == after_value
                    && v.frequency
                    && out.last().is_some_and(|p: &Value| p.unit == Unit::Date);
                if !rate && !recurring_date {
                    out.push(v);
                }
                i = next.max(i + 1);
                after_value = i;
            }
            None => i += 1,
        }
    }
    shares(text, &mut out);
    out
}

/// Adds, after an amount told as part of another ("£2.1 million of the £14 million of
/// client money"), the share it is of it, as a percentage.
fn shares(text: &str, out: &mut Vec<Value>) {
    let mut k = 0;
    while k + 1 < out.len() {
        let (a, b) = (&out[k], &out[k + 1]);
        let between = text
            .get(a.span.end..b.span.start)
            .unwrap_or("")
            .to_lowercase();
        let joined = matches!(
            between.split_whitespace().collect::<Vec<_>>().as_slice(),
            ["of"] | ["of", "the" | "our" | "its" | "their"] | ["out", "of"]
        );
        if joined
            && matches!(a.unit, Unit::Money(_))
            && a.unit == b.unit
            && b.low > 0.0
            && a.high <= b.low
        {
            let low = a.low / b.high * 100.0;
            let high = a.high / b.low * 100.0;
            let share = Value {
                unit: Unit::Percent,
                low,
                high,
                shown_unit: "percent",
                number: low,
                written: text[a.span.start..b.span.end].to_string(),
                span: a.span.start..b.span.end,
                frequency: false,
                business: None,
            };
            out.insert(k + 2, share);
            k += 3;
        } else {
            k += 1;
        }
    }
}

/// What the submodules' tests share.
#[cfg(test)]
mod test_support {
    use super::{values, Value};

    /// The values of a text as written.
    pub(super) fn shown(text: &str) -> Vec<String> {
        values(text).iter().map(|v| v.written.clone()).collect()
    }

    /// The one value of a text.
    pub(super) fn one(text: &str) -> Value {
        let v = values(text);
        assert_eq!(v.len(), 1, "{text}: {v:?}");
        v.into_iter().next().unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_amount_told_as_part_of_another_is_also_its_share() {
        let v = values("£2.1 million of the £14 million of client money we hold");
        let share = v.iter().find(|v| v.unit == Unit::Percent).expect("a share");
        assert!((share.low - 15.0).abs() < 1e-9);
        assert!(values("£500 of expenses and £300 of fees")
            .iter()
            .all(|v| v.unit != Unit::Percent));
    }

    #[test]
    fn the_window_an_amount_is_counted_over_is_no_time_allowed() {
        let units = |t: &str| values(t).into_iter().map(|v| v.unit).collect::<Vec<_>>();
        assert_eq!(
            units("more than 10 complaints about the product are received in a calendar month"),
            [Unit::Count]
        );
        assert_eq!(
            units("The review must be finished in a month."),
            [Unit::Days]
        );
    }
}
