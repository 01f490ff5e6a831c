//! The value that starts at a word, of whichever kind the words make it: a date, a time
//! relative to an event, a frequency ("annually", "every 6 months", "twice a year"), a
//! share in words, money with its currency before or after the number, a percentage, a
//! calendar or business duration, or a count of the noun after the number. Numbers that
//! are references ("Article 92", "section 4"), years and times of day are no values.

use super::dates::date_at;
use super::numbers::{fraction_at, number_at, number_word};
use super::relative::relative_at;
use super::unit_words::{currency, duration_unit, frequency_word};
use super::{Unit, Value, Word};

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

/// The value starting at word `i`, and the index of the word after it.
pub(super) fn value_at(text: &str, ws: &[Word], i: usize) -> Option<(Value, usize)> {
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
    // "four of his client files", "two of the quotes": a count of the noun after the
    // determiner ("three of the five directors" is a share, read before).
    if !is_year && !w.contains('.') && next == "of" {
        let determiner = matches!(
            after,
            "his" | "her" | "their" | "its" | "our" | "the" | "your" | "my" | "these" | "those"
        );
        let noun_at = |k: usize| {
            ws.get(k).is_some_and(|x| {
                let n = x.text.as_str();
                n.len() > 2
                    && n.chars().all(|c| c.is_alphabetic())
                    && !NOT_COUNTED.contains(&n)
                    && !crate::text::is_stopword(n)
                    && !crate::docmodel::header::is_month(n)
            })
        };
        if determiner && noun_at(j + 2) {
            let end = if noun_at(j + 3) { j + 4 } else { j + 3 };
            return Some((make(Unit::Count, lo, hi, "count", lo, end, false), end));
        }
    }
    // "SOC 2 Type II", "ISO 27001 Certificate", "Tier 2 Model": a number in a name, not a
    // count (an acronym before it, or a capitalised word after it).
    let in_a_name = {
        let raw = |k: usize| {
            ws.get(k)
                .and_then(|x| text.get(x.span.clone()))
                .unwrap_or("")
        };
        let before = if i > 0 { raw(i - 1) } else { "" };
        let after = raw(j);
        (before.len() >= 2 && before.chars().all(|c| c.is_ascii_uppercase()))
            || after.starts_with(|c: char| c.is_uppercase())
    };
    if !is_year && noun_like && !w.contains('.') && !one_of && !in_a_name {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docmodel::values::compare::close;
    use crate::docmodel::values::test_support::{one, shown};
    use crate::docmodel::values::values;

    #[test]
    fn consecutive_weeks_and_complete_years_are_durations() {
        let v = one("must not exceed 4 consecutive weeks");
        assert_eq!((v.unit, v.low), (Unit::Days, 28.0));
        assert_eq!(one("the previous 5 complete years").unit, Unit::Days);
    }

    #[test]
    fn a_count_of_some_of_a_things_is_read_with_its_noun() {
        let v = one("it reviewed four of his client files");
        assert_eq!((v.unit, v.low), (Unit::Count, 4.0));
        assert_eq!(v.written, "four of his client files");
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
}
