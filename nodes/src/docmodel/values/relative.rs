//! Times said in words relative to an event: "immediately", "the next working day", "the
//! following afternoon", "the same day", "the week after". Each is a duration from the
//! event, as a range where the words are vague, with the business days it crosses where it
//! says ("the same day": none).

use super::{Unit, Word};

/// A time said in words, relative to an event: "immediately", "the next working day", "the
/// following afternoon", "the same day".
pub(super) struct Relative {
    pub(super) unit: Unit,
    pub(super) low: f64,
    pub(super) high: f64,
    pub(super) shown: &'static str,
    /// The business days it crosses, when it says ("the same day": none).
    pub(super) business: Option<(f64, f64)>,
    /// How many words it takes.
    pub(super) words: usize,
}

/// The time said in words at word `i` (see [`Relative`]).
pub(super) fn relative_at(ws: &[Word], i: usize) -> Option<Relative> {
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

#[cfg(test)]
mod tests {
    use crate::docmodel::values::test_support::{one, shown};
    use crate::docmodel::values::{Limit, Unit};

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
}
