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

use std::cmp::Ordering;
use std::fmt;
use std::ops::Range;

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

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.written)
    }
}

/// Two amounts equal within rounding.
fn close(a: f64, b: f64) -> bool {
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

/// A word with where it is.
#[derive(Clone, Debug)]
pub(crate) struct Word {
    /// Lower case, punctuation trimmed (`%` and currency signs kept as their own words).
    pub(crate) text: String,
    /// Where it is in the text (bytes).
    pub(crate) span: Range<usize>,
}

/// The words of `text`, lower case: split at whitespace, hyphens, slashes and brackets,
/// punctuation trimmed; currency signs and `%` are words of their own.
pub(crate) fn words(text: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let push = |out: &mut Vec<Word>, s: usize, e: usize| {
        let raw = &text[s..e];
        let lead = raw.len()
            - raw
                .trim_start_matches(|c: char| !c.is_alphanumeric() && !is_sign(c))
                .len();
        let trimmed = raw
            .trim_start_matches(|c: char| !c.is_alphanumeric() && !is_sign(c))
            .trim_end_matches(|c: char| !c.is_alphanumeric() && c != '%');
        if trimmed.is_empty() {
            return;
        }
        let mut at = s + lead;
        let mut rest = trimmed;
        // Leading currency signs: "€150".
        while let Some(c) = rest.chars().next().filter(|c| is_sign(*c)) {
            out.push(Word {
                text: c.to_string(),
                span: at..at + c.len_utf8(),
            });
            at += c.len_utf8();
            rest = &rest[c.len_utf8()..];
        }
        // A trailing percent sign: "4.5%".
        let (body, percent) = match rest.strip_suffix('%') {
            Some(b) if !b.is_empty() => (b, true),
            _ => (rest, false),
        };
        if !body.is_empty() {
            out.push(Word {
                text: body.to_lowercase(),
                span: at..at + body.len(),
            });
        }
        if percent {
            let p = at + body.len();
            out.push(Word {
                text: "%".into(),
                span: p..p + 1,
            });
        }
    };
    for (i, c) in text.char_indices() {
        let splits =
            c.is_whitespace() || matches!(c, '-' | '–' | '—' | '/' | '(' | ')' | '[' | ']');
        match (splits, start) {
            (true, Some(s)) => {
                push(&mut out, s, i);
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        push(&mut out, s, text.len());
    }
    out
}

fn is_sign(c: char) -> bool {
    matches!(c, '€' | '£' | '$')
}

const ONES: [&str; 20] = [
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
];
const TENS: [&str; 8] = [
    "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
];

/// A number written as one word: digits ("1,000", "4.5", "12th"), or a number word up to
/// ninety-nine ("seven", "twenty"), "a dozen" counted by its noun.
fn number_word(w: &str) -> Option<f64> {
    if let Some(i) = ONES.iter().position(|o| *o == w) {
        return Some(i as f64);
    }
    if let Some(i) = TENS.iter().position(|t| *t == w) {
        return Some(20.0 + 10.0 * i as f64);
    }
    match w {
        "dozen" => return Some(12.0),
        "hundred" => return Some(100.0),
        "thousand" => return Some(1000.0),
        "once" => return Some(1.0),
        "twice" => return Some(2.0),
        _ => {}
    }
    let first = w.chars().next()?;
    if !first.is_ascii_digit() {
        return None;
    }
    let digits: String = w.chars().filter(|c| *c != ',').collect();
    let digits = digits
        .trim_end_matches("st")
        .trim_end_matches("nd")
        .trim_end_matches("rd")
        .trim_end_matches("th");
    // "5k", "2m": thousands and millions.
    if let Some(n) = digits.strip_suffix('k') {
        return n.parse::<f64>().ok().map(|v| v * 1e3);
    }
    if let Some(n) = digits.strip_suffix('m') {
        return n.parse::<f64>().ok().map(|v| v * 1e6);
    }
    digits.parse().ok()
}

/// A calendar or business unit word, singular, and its length in days (`None` for
/// business days).
fn duration_unit(w: &str) -> Option<(&'static str, Option<f64>)> {
    Some(match w {
        "minute" | "minutes" | "min" | "mins" => ("minute", Some(1.0 / 1440.0)),
        "hour" | "hours" | "hr" | "hrs" | "h" => ("hour", Some(1.0 / 24.0)),
        "day" | "days" => ("day", Some(1.0)),
        "week" | "weeks" => ("week", Some(7.0)),
        "fortnight" | "fortnights" => ("fortnight", Some(14.0)),
        "month" | "months" => ("month", Some(365.25 / 12.0)),
        "quarter" | "quarters" => ("quarter", Some(365.25 / 4.0)),
        "year" | "years" | "yr" | "yrs" => ("year", Some(365.25)),
        _ => return None,
    })
}

/// Words that state a frequency, as the interval they mean (singular unit, number).
fn frequency_word(w: &str) -> Option<(&'static str, f64)> {
    Some(match w {
        "annually" | "yearly" | "annual" => ("year", 1.0),
        "biannually" | "semiannually" => ("month", 6.0),
        "quarterly" => ("quarter", 1.0),
        "monthly" => ("month", 1.0),
        "weekly" => ("week", 1.0),
        "daily" => ("day", 1.0),
        "hourly" => ("hour", 1.0),
        _ => return None,
    })
}

fn currency(w: &str) -> Option<&'static str> {
    Some(match w {
        "eur" | "euro" | "euros" | "€" => "EUR",
        "usd" | "dollar" | "dollars" | "$" | "us$" => "USD",
        "gbp" | "pound" | "pounds" | "£" | "sterling" => "GBP",
        "chf" | "franc" | "francs" => "CHF",
        "jpy" | "yen" => "JPY",
        "sek" | "nok" | "dkk" => "SEK",
        _ => return None,
    })
}

/// Words before a number that make it a reference, not an amount ("Article 92", "section
/// 4", "version 2").
const REFERENCE_WORDS: [&str; 33] = [
    "article",
    "art",
    "section",
    "clause",
    "paragraph",
    "para",
    "version",
    "v",
    "rule",
    "chapter",
    "annex",
    "appendix",
    "schedule",
    "page",
    "level",
    "tier",
    "stage",
    "phase",
    "step",
    "grade",
    "band",
    "category",
    "part",
    "class",
    "pillar",
    "table",
    "figure",
    "item",
    "no",
    "number",
    "room",
    "floor",
    "box",
];

/// Nouns that are never counted things ("2024 edition", "4 pm").
const NOT_COUNTED: [&str; 12] = [
    "am", "pm", "edition", "and", "or", "to", "of", "the", "a", "an", "per", "percent",
];

/// Whether a word after a number reads as an adjective of the counted noun ("closed",
/// "numbered", "independent", "senior"), by its ending or as one of the few common ones
/// that have none.
fn adjective_like(word: &str) -> bool {
    const PLAIN: [&str; 8] = [
        "new", "open", "senior", "junior", "full", "other", "further", "separate",
    ];
    const ENDINGS: [&str; 9] = [
        "ed", "al", "ent", "ant", "ive", "ous", "ior", "ible", "able",
    ];
    PLAIN.contains(&word) || word.len() > 4 && ENDINGS.iter().any(|e| word.ends_with(e))
}

/// The number starting at word `i`, and the index of the word after it: digits, number
/// words, "twenty-four" (split at the hyphen), "one hundred", "a"/"an" before a unit, "a
/// couple of", "a few", "half a", "one and a half", "a week and a half" is read by the
/// caller.
fn number_at(ws: &[Word], i: usize) -> Option<(f64, f64, usize)> {
    let w = ws.get(i)?.text.as_str();
    let next = ws.get(i + 1).map(|w| w.text.as_str()).unwrap_or("");
    let after = ws.get(i + 2).map(|w| w.text.as_str()).unwrap_or("");
    // "a quarter of an hour", "three quarters of an hour".
    if matches!(next, "quarter" | "quarters")
        && after == "of"
        && ws
            .get(i + 3)
            .is_some_and(|w| matches!(w.text.as_str(), "a" | "an"))
    {
        let n = if matches!(w, "a" | "an") {
            Some(1.0)
        } else {
            number_word(w)
        };
        if let Some(n) = n {
            return Some((n / 4.0, n / 4.0, i + 4));
        }
    }
    match (w, next) {
        ("a" | "an", "couple") if after == "of" => return Some((2.0, 2.0, i + 3)),
        ("a" | "an", "few") => return Some((2.0, 4.0, i + 2)),
        ("several", _) => return Some((3.0, 7.0, i + 1)),
        ("half", "a" | "an") => return Some((0.5, 0.5, i + 2)),
        ("a" | "an" | "one", "half") => return Some((0.5, 0.5, i + 2)),
        ("a" | "an", "dozen") => return Some((12.0, 12.0, i + 2)),
        ("a" | "an", _) => return Some((1.0, 1.0, i + 1)),
        _ => {}
    }
    let mut n = number_word(w)?;
    let mut j = i + 1;
    // "twenty four", "twenty-four" (split at the hyphen).
    if (20.0..100.0).contains(&n) && n % 10.0 == 0.0 {
        if let Some(k) = ws
            .get(j)
            .and_then(|w| ONES.iter().position(|o| *o == w.text))
        {
            if (1..10).contains(&k) {
                n += k as f64;
                j += 1;
            }
        }
    }
    // "one hundred", "five thousand", "2 million".
    while let Some(m) = ws.get(j).and_then(|w| match w.text.as_str() {
        "hundred" => Some(100.0),
        "thousand" => Some(1e3),
        "million" | "mn" => Some(1e6),
        "billion" | "bn" => Some(1e9),
        _ => None,
    }) {
        n *= m;
        j += 1;
    }
    // "one and a half".
    if ws.get(j).is_some_and(|w| w.text == "and")
        && ws.get(j + 1).is_some_and(|w| w.text == "a")
        && ws.get(j + 2).is_some_and(|w| w.text == "half")
    {
        n += 0.5;
        j += 3;
    }
    // "two to three", "2-3" (the hyphen split it), "between 5 and 10".
    if let Some((hi, _, k)) = ws
        .get(j)
        .filter(|w| matches!(w.text.as_str(), "to" | "or"))
        .and_then(|_| number_word(ws.get(j + 1)?.text.as_str()).map(|v| (v, v, j + 2)))
    {
        if hi > n {
            return Some((n, hi, k));
        }
    }
    Some((n, n, j))
}

/// Whether "a"/"an" at word `i` (its unit ending before `after`) counts as one: a word
/// before it or after the unit says a duration is meant.
fn article_is_one(ws: &[Word], i: usize, after: usize) -> bool {
    let before = i.checked_sub(1).map(|k| ws[k].text.as_str()).unwrap_or("");
    let next = ws.get(after).map(|w| w.text.as_str()).unwrap_or("");
    // "for a day on which meals are provided": the day is described, not counted.
    if matches!(
        next,
        "on" | "when" | "where" | "which" | "that" | "during" | "of"
    ) && !matches!(before, "within" | "after" | "in")
    {
        return false;
    }
    matches!(
        before,
        "within"
            | "for"
            | "after"
            | "in"
            | "than"
            | "about"
            | "around"
            | "over"
            | "under"
            | "least"
            | "most"
            | "only"
            | "just"
            | "almost"
            | "nearly"
            | "roughly"
            | "some"
            | "to"
            | "of"
            | "taking"
            | "took"
            | "lasting"
            | "by"
    ) || matches!(
        next,
        "later"
            | "earlier"
            | "before"
            | "after"
            | "ahead"
            | "ago"
            | "and"
            | "afterwards"
            | "beforehand"
            | "prior"
            | "in"
            | "from"
    )
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
                let rate =
                    i == after_value && matches!(ws[i].text.as_str(), "a" | "an") || qualifier;
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

/// A time said in words, relative to an event: "immediately", "the next working day", "the
/// following afternoon", "the same day".
struct Relative {
    unit: Unit,
    low: f64,
    high: f64,
    shown: &'static str,
    /// The business days it crosses, when it says ("the same day": none).
    business: Option<(f64, f64)>,
    /// How many words it takes.
    words: usize,
}

/// The time said in words at word `i` (see [`Relative`]).
fn relative_at(ws: &[Word], i: usize) -> Option<Relative> {
    let w = |k: usize| ws.get(i + k).map(|w| w.text.as_str()).unwrap_or("");
    let days = |low, high, shown, words| Relative {
        unit: Unit::Days,
        low,
        high,
        shown,
        business: None,
        words,
    };
    let same_day = |words| Relative {
        business: Some((0.0, 0.0)),
        ..days(0.0, 1.0, "day", words)
    };
    let business = |n, words| Relative {
        unit: Unit::BusinessDays,
        low: n,
        high: n,
        shown: "business day",
        business: None,
        words,
    };
    match (w(0), w(1), w(2), w(3)) {
        ("immediately" | "instantly", ..) => Some(days(0.0, 0.25, "day", 1)),
        ("at", "once", ..) | ("straight" | "right", "away", ..) => Some(days(0.0, 0.25, "day", 2)),
        ("without", "delay", ..) => Some(days(0.0, 0.25, "day", 2)),
        ("the" | "that", "next" | "following", "working" | "business", "day") => {
            Some(business(1.0, 4))
        }
        ("the", "same" | "very", "working" | "business", "day") => Some(business(0.0, 4)),
        ("same", "working" | "business", "day", _) => Some(business(0.0, 3)),
        (
            "the" | "that",
            "next" | "following",
            "day" | "morning" | "afternoon" | "evening" | "night",
            _,
        ) => Some(days(0.5, 1.5, "day", 3)),
        ("the", "day", "after", _) => Some(days(0.5, 1.5, "day", 3)),
        // "approved it the week before it went live": the words after say before what.
        ("the", "day", "before" | "prior", _) => Some(days(0.5, 1.5, "day", 2)),
        ("the", "week", "before" | "prior", _) => Some(days(4.0, 10.0, "week", 2)),
        ("the", "month", "before" | "prior", _) => Some(days(15.0, 45.0, "month", 2)),
        // "signed it off the week after Finance had paid it": after what, in the words
        // after.
        ("the", "week", "after", _) => Some(days(4.0, 10.0, "week", 2)),
        ("the", "month", "after", _) => Some(days(15.0, 45.0, "month", 2)),
        ("the" | "that", "same", "day" | "morning" | "afternoon" | "evening", _)
        | ("on", "the", "day", _) => Some(same_day(3)),
        ("same", "day", ..) => Some(same_day(2)),
        // "countersigned it that afternoon": later on the day of the event before (not
        // a clause's opening "That afternoon ...", nor "at 11:50 that morning", which
        // place an event on the timeline).
        ("that", "morning" | "afternoon" | "evening", ..)
            if i.checked_sub(1).is_some_and(|p| {
                let p = ws[p].text.as_str();
                p.chars().all(char::is_alphabetic)
                    && !matches!(p, "and" | "but" | "then" | "so" | "am" | "pm")
            }) =>
        {
            Some(same_day(2))
        }
        ("the" | "that", "next" | "following", "week", _) => Some(days(4.0, 13.0, "week", 3)),
        ("the" | "that", "next" | "following", "month", _) => Some(days(15.0, 45.0, "month", 3)),
        _ => None,
    }
}

/// The first day of each month in a year that is not a leap year, from 1.
const MONTH_STARTS: [f64; 13] = [
    1.0, 32.0, 60.0, 91.0, 121.0, 152.0, 182.0, 213.0, 244.0, 274.0, 305.0, 335.0, 366.0,
];

/// A date of the year at word `i`: "31 January", "January 31", "31st of January", or a
/// month alone after "in", "by", "before", "until", "during", "end of" ("in March");
/// its first and last day, and how many words it takes.
fn date_at(ws: &[Word], i: usize) -> Option<(f64, f64, usize)> {
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

/// The value starting at word `i`, and the index of the word after it.
fn value_at(text: &str, ws: &[Word], i: usize) -> Option<(Value, usize)> {
    let w = ws[i].text.as_str();
    let start = ws[i].span.start;
    if let Some((low, high, n)) = date_at(ws, i) {
        let end = ws[i + n - 1].span.end;
        return Some((
            Value {
                unit: Unit::Date,
                low,
                high,
                shown_unit: "date",
                number: low,
                written: text[start..end].to_string(),
                span: start..end,
                frequency: false,
                business: None,
            },
            i + n,
        ));
    }
    if let Some(r) = relative_at(ws, i) {
        let end = ws[i + r.words - 1].span.end;
        let number = if r.unit == Unit::BusinessDays {
            r.high
        } else {
            r.low
        };
        return Some((
            Value {
                unit: r.unit,
                low: r.low,
                high: r.high,
                shown_unit: r.shown,
                number,
                written: text[start..end].to_string(),
                span: start..end,
                frequency: false,
                business: r.business,
            },
            i + r.words,
        ));
    }
    let make = |unit, low: f64, high: f64, shown_unit, number, end: usize, frequency| Value {
        unit,
        low,
        high,
        shown_unit,
        number,
        written: text[start..ws[end - 1].span.end].to_string(),
        span: start..ws[end - 1].span.end,
        frequency,
        business: None,
    };
    // A frequency word: "annually"; not the period an amount is counted over ("the
    // monthly limit", "an annual allowance", "daily spend").
    let per_period = ws.get(i + 1).is_some_and(|n| {
        matches!(
            n.text.as_str(),
            "limit"
                | "limits"
                | "cap"
                | "caps"
                | "allowance"
                | "allowances"
                | "budget"
                | "budgets"
                | "spend"
                | "spending"
                | "total"
                | "maximum"
                | "ceiling"
                | "salary"
                | "income"
                | "turnover"
                | "volume"
                | "volumes"
        )
    });
    if let Some((unit, n)) = frequency_word(w).filter(|_| !per_period) {
        let days = duration_unit(unit).and_then(|u| u.1).unwrap_or(1.0) * n;
        return Some((make(Unit::Days, days, days, unit, n, i + 1, true), i + 1));
    }
    // "every 6 months", "each year", "every other week", "once a year", "twice a month".
    if matches!(w, "every" | "each") {
        let (lo, _, j) = match ws.get(i + 1).map(|w| w.text.as_str()) {
            Some("other" | "second") => (2.0, 2.0, i + 2),
            _ => number_at(ws, i + 1)
                .filter(|(_, _, j)| ws.get(*j).is_some_and(|w| duration_unit(&w.text).is_some()))
                .unwrap_or((1.0, 1.0, i + 1)),
        };
        let (unit, per) = duration_unit(&ws.get(j)?.text)?;
        let days = per? * lo;
        return Some((make(Unit::Days, days, days, unit, lo, j + 1, true), j + 1));
    }
    if matches!(w, "once" | "twice" | "thrice")
        && matches!(
            ws.get(i + 1).map(|w| w.text.as_str()),
            Some("a" | "an" | "per" | "every" | "each")
        )
    {
        let times = match w {
            "once" => 1.0,
            "twice" => 2.0,
            _ => 3.0,
        };
        let (unit, per) = duration_unit(&ws.get(i + 2)?.text)?;
        let days = per? / times;
        return Some((
            make(Unit::Days, days, days, unit, 1.0 / times, i + 3, true),
            i + 3,
        ));
    }
    // A share in words: "by about a fifth", "a third of the alerts", "two thirds of".
    if let Some((share, n)) = fraction_at(ws, i) {
        let pct = share * 100.0;
        return Some((
            make(Unit::Percent, pct, pct, "percent", pct, i + n, false),
            i + n,
        ));
    }
    // A currency before the number: "EUR 150", "€150", "US$ 5".
    if let Some(code) = currency(w) {
        let (lo, hi, j) =
            number_at(ws, i + 1).filter(|(_, _, _)| number_word(&ws[i + 1].text).is_some())?;
        return Some((make(Unit::Money(code), lo, hi, code, lo, j, false), j));
    }
    // Reference numbers are not values: "Article 92", "section 4.2".
    if i > 0 && REFERENCE_WORDS.contains(&ws[i - 1].text.as_str()) {
        return None;
    }
    let (lo, hi, j) = number_at(ws, i)?;
    let next = ws.get(j).map(|w| w.text.as_str()).unwrap_or("");
    let after = ws.get(j + 1).map(|w| w.text.as_str()).unwrap_or("");
    let article = matches!(w, "a" | "an" | "half" | "several");
    // "4.5%", "10 per cent", "ten percent".
    if next == "%" || next == "percent" || (next == "per" && after == "cent") {
        let end = if next == "per" { j + 2 } else { j + 1 };
        return Some((make(Unit::Percent, lo, hi, "percent", lo, end, false), end));
    }
    // A currency after the number: "150 euros", "5,000 CHF".
    if let Some(code) = currency(next) {
        if !article {
            return Some((
                make(Unit::Money(code), lo, hi, code, lo, j + 1, false),
                j + 1,
            ));
        }
    }
    // "10 business days", "five working days", "3 calendar days", "2 clear days".
    if matches!(
        next,
        "business"
            | "working"
            | "calendar"
            | "clear"
            | "full"
            | "banking"
            | "trading"
            | "consecutive"
            | "continuous"
            | "successive"
            | "whole"
            | "complete"
    ) {
        if let Some((unit, per)) = duration_unit(after) {
            let end = j + 2;
            if matches!(next, "business" | "working" | "banking" | "trading") && unit == "day" {
                return Some((
                    make(Unit::BusinessDays, lo, hi, "business day", lo, end, false),
                    end,
                ));
            }
            let days = per?;
            return Some((
                make(Unit::Days, lo * days, hi * days, unit, lo, end, false),
                end,
            ));
        }
    }
    if let Some((unit, per)) = duration_unit(next) {
        let per = per?;
        // "a day on which meals are provided" is no quantity: an article counts as one
        // only where a duration is meant ("within a day", "a month later", "for a year").
        if matches!(w, "a" | "an") && j == i + 1 && !article_is_one(ws, i, j + 1) {
            return None;
        }
        let mut end = j + 1;
        let (mut lo_d, mut hi_d, mut number) = (lo * per, hi * per, lo);
        // "a week and a half".
        if ws.get(end).is_some_and(|w| w.text == "and")
            && ws
                .get(end + 1)
                .is_some_and(|w| matches!(w.text.as_str(), "a" | "one"))
            && ws.get(end + 2).is_some_and(|w| w.text == "half")
        {
            lo_d += per / 2.0;
            hi_d += per / 2.0;
            number += 0.5;
            end += 3;
        }
        // "a day" alone is rarely a duration to compare ("once a day" is read above; "a
        // month" is): keep it.
        return Some((make(Unit::Days, lo_d, hi_d, unit, number, end, false), end));
    }
    if article || matches!(w, "once" | "twice") {
        return None;
    }
    // A count: a number before a noun that is not a year or a time ("three quotes", "two
    // signatories"). Years and references are not counts.
    let is_year = number_word(w)
        .is_some_and(|n| (1900.0..=2100.0).contains(&n) && n.fract() == 0.0)
        && w.chars().all(|c| c.is_ascii_digit());
    let noun_like = next.len() > 2
        && next.chars().all(|c| c.is_alphabetic())
        && !NOT_COUNTED.contains(&next)
        && !crate::docmodel::header::is_month(next)
        && !crate::text::is_stopword(next);
    // "any one bank", "each one": one of several, not a count.
    let one_of = w == "one"
        && i > 0
        && matches!(
            ws[i - 1].text.as_str(),
            "any" | "each" | "every" | "no" | "only"
        );
    // "2 or more external SARs", "three or fewer breaches": a count with its bound.
    if !is_year && !w.contains('.') && next == "or" && matches!(after, "more" | "fewer" | "less") {
        let mut end = j + 2;
        while let Some(n) = ws.get(end).map(|x| x.text.as_str()) {
            if end > j + 4
                || n.len() <= 2
                || !n.chars().all(|c| c.is_alphabetic())
                || crate::text::is_stopword(n)
                || NOT_COUNTED.contains(&n)
            {
                break;
            }
            end += 1;
        }
        if end > j + 2 {
            return Some((make(Unit::Count, lo, hi, "count", lo, end, false), end));
        }
    }
    if !is_year && noun_like && !w.contains('.') && !one_of {
        // The whole noun: "two pre-clearances".
        let mut end = j + 1;
        while end < ws.len() && text.get(ws[end - 1].span.end..ws[end].span.start) == Some("-") {
            end += 1;
        }
        // A noun after an adjective: "20 closed alerts", "three numbered copies".
        if end == j + 1 && adjective_like(next) {
            if let Some(noun) = ws.get(end) {
                let joined = text
                    .get(ws[end - 1].span.end..noun.span.start)
                    .is_some_and(|gap| gap.chars().all(char::is_whitespace));
                let n = noun.text.as_str();
                if joined
                    && n.len() > 2
                    && n.chars().all(|c| c.is_alphabetic())
                    && !NOT_COUNTED.contains(&n)
                    && !crate::text::is_stopword(n)
                    && !adjective_like(n)
                {
                    end += 1;
                }
            }
        }
        return Some((make(Unit::Count, lo, hi, "count", lo, end, false), end));
    }
    None
}

/// A share written as a fraction at word `i` ("a fifth", "one third", "two thirds",
/// "half"), as a part of one and how many words it takes: only where it is a share of
/// something ("a third of the alerts", not "a quarter of an hour") or a change by it ("cut
/// by about a fifth").
fn fraction_at(ws: &[Word], i: usize) -> Option<(f64, usize)> {
    let word = |k: usize| ws.get(k).map(|w| w.text.as_str()).unwrap_or("");
    let denominator = |w: &str| match w {
        "half" | "halves" => Some(2.0),
        "third" | "thirds" => Some(3.0),
        "quarter" | "quarters" => Some(4.0),
        "fifth" | "fifths" => Some(5.0),
        "tenth" | "tenths" => Some(10.0),
        _ => None,
    };
    let (share, n) = match (word(i), word(i + 1)) {
        ("a" | "an" | "one", d) if !d.ends_with('s') || d == "halves" => (1.0 / denominator(d)?, 2),
        ("two" | "three" | "four", d) if d.ends_with('s') => {
            (number_word(word(i))? / denominator(d)?, 2)
        }
        ("half", "of") => (0.5, 1),
        _ => return None,
    };
    // "of" a thing, not of a time ("a quarter of an hour", "half of the year").
    let mut after = i + n;
    let of = word(after) == "of" && {
        after += 1;
        while matches!(
            word(after),
            "the" | "a" | "an" | "its" | "our" | "their" | "all"
        ) {
            after += 1;
        }
        duration_unit(word(after)).is_none() && !matches!(word(after), "" | "it" | "them")
    };
    // "by" a share, perhaps roughly: "by about a fifth", "by more than a third".
    let mut k = i;
    while k > 0
        && matches!(
            word(k - 1),
            "about"
                | "around"
                | "roughly"
                | "nearly"
                | "almost"
                | "some"
                | "over"
                | "under"
                | "approximately"
                | "just"
                | "than"
                | "more"
                | "less"
        )
    {
        k -= 1;
    }
    let by = k > 0 && word(k - 1) == "by";
    (of || by).then_some((share, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str) -> Vec<String> {
        values(text).iter().map(|v| v.written.clone()).collect()
    }

    fn one(text: &str) -> Value {
        let v = values(text);
        assert_eq!(v.len(), 1, "{text}: {v:?}");
        v.into_iter().next().unwrap()
    }

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
    fn consecutive_weeks_and_complete_years_are_durations() {
        let v = one("must not exceed 4 consecutive weeks");
        assert_eq!((v.unit, v.low), (Unit::Days, 28.0));
        assert_eq!(one("the previous 5 complete years").unit, Unit::Days);
    }

    #[test]
    fn a_count_with_or_more_is_read_with_its_noun() {
        assert_eq!(
            shown("Where 2 or more external SARs have been submitted"),
            ["2 or more external SARs"]
        );
        assert_eq!(one("3 or more external SARs").unit, Unit::Count);
    }

    #[test]
    fn a_share_in_words_is_a_percentage_and_a_quarter_of_an_hour_is_not() {
        let fifth = one("the vendor expects it to cut alert volume by about a fifth");
        assert_eq!((fifth.unit, fifth.low), (Unit::Percent, 20.0));
        let thirds = one("two thirds of the alerts were closed");
        assert_eq!((thirds.unit, thirds.low.round()), (Unit::Percent, 67.0));
        assert!(values("a third party").is_empty());
        assert!(values("within a quarter of an hour")
            .iter()
            .all(|v| v.unit != Unit::Percent));
        assert!(values("half of the year")
            .iter()
            .all(|v| v.unit != Unit::Percent));
    }

    #[test]
    fn durations_money_percentages_and_counts_are_read_as_written() {
        assert_eq!(
            shown("Notify within 72 hours, keep records for 5 years, a ratio of 4.5% and five working days; 12-month calls."),
            ["72 hours", "5 years", "4.5%", "five working days", "12-month"]
        );
        assert_eq!(
            shown("Gifts above EUR 150 or €5,000, £1,000 and 250 euros; USD 25,000."),
            ["EUR 150", "€5,000", "£1,000", "250 euros", "USD 25,000"]
        );
        assert_eq!(
            shown("Obtain three quotes and two signatures."),
            ["three quotes", "two signatures"]
        );
        assert!(values("Article 92 applies since 2024 under section 4.").is_empty());
        assert!(values("A Level 2 reviewer confirms it.").is_empty());
        assert_eq!(
            shown("Up to 30 working days in a calendar year; locked after a quarter of an hour."),
            ["30 working days", "a quarter of an hour"]
        );
        assert!((one("after a quarter of an hour").high * 1440.0 - 15.0).abs() < 1e-6);
        assert_eq!(
            one("no more than two pre-clearances a quarter").written,
            "two pre-clearances"
        );
        let (two, one_) = (one("two directors"), one("1 analyst"));
        assert!(two.comparable(&one_) && !two.weighs_with(&one_));
        assert!(one("three alerts").weighs_with(&one("50 alerts")));
        // An adjective before the noun is part of what is counted.
        assert_eq!(
            one("re-checks at least 20 closed alerts for every analyst").written,
            "20 closed alerts"
        );
        assert!(one("20 closed alerts").weighs_with(&one("25 alerts")));
        assert_eq!(one("two approved by the Board").written, "two approved");
    }

    #[test]
    fn amounts_are_canonical() {
        assert_eq!(one("within 72 hours").low, 3.0);
        assert_eq!(one("ten business days").unit, Unit::BusinessDays);
        assert_eq!(one("ten business days").low, 10.0);
        assert_eq!(one("€5,000").unit, Unit::Money("EUR"));
        assert_eq!(one("£1,000").low, 1000.0);
        assert_eq!(one("twenty-four hours").low, 1.0);
        assert_eq!(one("a week and a half later").low, 10.5);
        assert_eq!(one("half a day").low, 0.5);
        assert_eq!(one("one and a half years").low, 1.5 * 365.25);
        let few = one("a few days");
        assert_eq!((few.low, few.high), (2.0, 4.0));
        let annual = one("reviewed annually");
        assert!(annual.frequency);
        assert_eq!(annual.low, 365.25);
        let every = one("every 6 months");
        assert!(every.frequency);
        assert!(close(every.low, 365.25 / 2.0));
        assert!(one("once a year").frequency);
    }

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
    fn times_said_in_words_relative_to_an_event() {
        assert_eq!(
            shown("He told the DPO the following afternoon."),
            ["the following afternoon"]
        );
        assert_eq!(one("the next working day").unit, Unit::BusinessDays);
        assert_eq!(one("reported immediately").high, 0.25);
        let k = |fact: &str, rule: &str| one(fact).keeps(Limit::AtMost, &one(rule));
        assert_eq!(k("the following afternoon", "immediately"), Some(false));
        assert_eq!(k("the same day", "24 hours"), Some(true));
        assert_eq!(k("the next working day", "1 business day"), Some(true));
    }

    #[test]
    fn business_and_calendar_days_convert_as_ranges() {
        assert_eq!(business_to_calendar(5.0), (7.0, 8.0));
        assert_eq!(business_to_calendar(1.0), (1.0, 4.0));
        assert_eq!(calendar_to_business(7.0), (4.0, 5.0));
        assert_eq!(calendar_to_business(3.0), (1.0, 3.0));
    }
}
