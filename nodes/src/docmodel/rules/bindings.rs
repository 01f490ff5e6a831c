//! How a value of a rule binds: as a limit the action keeps ("within 5 business days" is
//! at most, "at least 10 days before the trade" at least, "retained for 7 years" at least)
//! or as a condition that says when the rule applies ("transactions above EUR 25,000 must
//! be approved", "where the flight time is below 6 hours"). A comparator before the value
//! makes it a condition inside a condition clause, before the modal verb or after a noun it
//! qualifies; otherwise the cue words before it ("within", "no later than", "minimum")
//! give the limit's direction.

use super::modality::{MAY, MUST};
use crate::docmodel::values::{Limit, Value};

/// How a value binds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Binding {
    /// A limit the action keeps.
    Limit(Limit),
    /// A condition for the rule to apply: the rule applies above the value (`true`) or
    /// below it (`false`).
    Applies { above: bool },
}

/// Words that open a condition: a value inside one says when the rule applies.
pub(super) const CONDITION_OPENERS: [&str; 8] = [
    "where", "if", "when", "whenever", "unless", "provided", "for", "whose",
];
/// Comparators that say "more than".
const ABOVE: [&str; 11] = [
    "above",
    "over",
    "exceeding",
    "exceeds",
    "exceed",
    "exceeded",
    "beyond",
    "greater",
    "reach",
    "reaches",
    "reached",
];
/// Comparators that say "less than".
const BELOW: [&str; 4] = ["below", "under", "less", "lower"];

/// Whether word `at` is in a condition clause ("where ...", "for suppliers whose ..."),
/// which runs to the modal verb.
pub(super) fn in_condition(lower: &[&str], at: usize, modal_at: Option<usize>) -> bool {
    lower[..at]
        .iter()
        .rposition(|w| CONDITION_OPENERS.contains(w))
        .is_some_and(|c| modal_at.is_none_or(|m| m < c || m > at))
}

/// How the value at word `at` binds: a condition when it sits in a condition clause
/// ("where ... below 6 hours") or before the modal verb with a comparator ("transactions
/// above EUR 25,000 must"), a limit otherwise, its direction from the comparator or the
/// words before it.
pub(super) fn binding(
    lower: &[&str],
    at: usize,
    from: usize,
    modal_at: Option<usize>,
    v: &Value,
) -> Binding {
    let window = &lower[at.saturating_sub(4).max(from.min(at))..at];
    let has = |list: &[&str]| window.iter().rev().position(|w| list.contains(w));
    let above = has(&ABOVE).or_else(|| {
        window
            .windows(2)
            .rev()
            .position(|p| matches!(p, ["more", "than"] | ["greater", "than"]))
    });
    let below = has(&BELOW);
    let in_condition = in_condition(lower, at, modal_at);
    let before_modal = modal_at.is_some_and(|m| at < m);
    let comparator = match (above, below) {
        (Some(a), Some(b)) => Some(a < b),
        (Some(_), None) => Some(true),
        (None, Some(_)) => Some(false),
        (None, None) => None,
    };
    // "... unless the total held is below £10 million": an exception, so the rule applies
    // on the other side of the figure.
    let exception = lower[..at]
        .iter()
        .rposition(|w| *w == "unless" || CONDITION_OPENERS.contains(w))
        .is_some_and(|c| lower[c] == "unless" && modal_at.is_none_or(|m| m < c || m > at));
    // "no more than 20% may be ...": a limit, whatever comes after.
    // "may not exceed GBP 250": a cap, not a condition.
    let limit_words = window.windows(2).any(|p| {
        matches!(p[0], "no" | "not") && matches!(p[1], "more" | "less" | "fewer" | "greater")
            || matches!(p[0], "not" | "never" | "cannot")
                && (p[1].starts_with("exceed") || p[1].starts_with("surpass"))
    });
    if let Some(above) = comparator.filter(|_| !limit_words) {
        if exception {
            return Binding::Applies { above: !above };
        }
        if in_condition || before_modal || is_noun_modifier(window) {
            return Binding::Applies { above };
        }
    }
    // "Where 2 or more SARs have been submitted within 12 months, ... must": a window of
    // the condition, the rule's case, not a deadline it sets.
    if comparator.is_none() && in_condition && before_modal && window.contains(&"within") {
        return Binding::Applies { above: false };
    }
    if v.frequency {
        return Binding::Limit(Limit::AtMost);
    }
    if v.unit == super::values::Unit::Date {
        // A date is a deadline ("by 31 January"), unless the rule says from when.
        let from = window
            .iter()
            .any(|w| matches!(*w, "after" | "from" | "since"));
        let on = window.last() == Some(&"on");
        return Binding::Limit(if from {
            Limit::AtLeast
        } else if on {
            Limit::Exactly
        } else {
            Limit::AtMost
        });
    }
    // The cues of a limit: the words before the value, back to the modal verb when it is
    // near ("shall at all times satisfy a CET1 capital ratio of 4.5%").
    let from = match modal_at {
        Some(m) if m < at && at - m <= 16 => m,
        // "The standard monthly limit on each card is GBP 7,500": the subject's noun.
        _ if lower[at.saturating_sub(2)..at].contains(&"is")
            || lower[at.saturating_sub(2)..at].contains(&"are") =>
        {
            at.saturating_sub(8)
        }
        _ => at.saturating_sub(4),
    };
    let near = lower[from..at].join(" ");
    // "must not be more than 90 days": no more than.
    let near = format!(" {near} ")
        .replace(" not be more than ", " not more than ")
        .replace(" not be longer than ", " not more than ")
        .replace(" not be later than ", " not later than ")
        .replace(" not be less than ", " not less than ");
    let at_most = [
        " within ",
        " up to ",
        " at most ",
        " no later than ",
        " not later than ",
        " not exceed ",
        " maximum ",
        " max ",
        " deadline ",
        " time limit ",
        " no more than ",
        " not more than ",
        " by ",
        " cap ",
        " capped at ",
        " limited to ",
        // "the monthly limit on each card is GBP 7,500", a table's "Limit" column.
        " limit ",
        " limits ",
        " ceiling ",
        " less than ",
        " below ",
        " under ",
        " exceed ",
        " exceeding ",
    ];
    let at_least = [
        " at least ",
        " minimum ",
        " min ",
        " no less than ",
        " not less than ",
        " more than ",
        " over ",
        " above ",
        " minimum of ",
        // "The pass mark is 80%": a score passes at it or above.
        " pass mark is ",
        " pass mark of ",
        " pass rate is ",
        " pass score is ",
        " passing score is ",
        " satisfy ",
        " maintain ",
        " meet ",
    ];
    // The last cue of each kind, as where it ends ("no more than" holds "more than": the
    // longer cue ends where the shorter does and wins).
    let last = |list: &[&str]| {
        list.iter()
            .filter_map(|c| near.rfind(c).map(|i| (i + c.len(), c.len())))
            .max()
    };
    match (last(&at_most), last(&at_least)) {
        (Some(m), Some(l)) if l > m => Binding::Limit(Limit::AtLeast),
        (Some(_), _) => Binding::Limit(Limit::AtMost),
        (None, Some(_)) => Binding::Limit(Limit::AtLeast),
        // "kept for 7 years": at least that long; "valid for 14 days": at most; another
        // period ("suspended for 3 months") is the period itself.
        (None, None) if window.last() == Some(&"for") => {
            let verb = window.iter().rev().nth(1).copied().unwrap_or("");
            match crate::vocabulary::term(verb).as_str() {
                "retain" => Binding::Limit(Limit::AtLeast),
                "valid" | "last" | "remain" => Binding::Limit(Limit::AtMost),
                _ => Binding::Limit(Limit::Exactly),
            }
        }
        // "notified on the same business day", "by the next working day": a day said
        // relative to the event is when the act is due.
        (None, None)
            if v.calendar_days().is_some()
                && v.written
                    .split_whitespace()
                    .next()
                    .is_some_and(|w| matches!(w.to_lowercase().as_str(), "the" | "same"))
                && v.written.split_whitespace().any(|w| {
                    matches!(w.to_lowercase().as_str(), "same" | "next" | "following")
                }) =>
        {
            Binding::Limit(Limit::AtMost)
        }
        (None, None) => {
            let after = lower.get(at + 2).copied().unwrap_or("");
            let next = lower.get(at + 1).copied().unwrap_or("");
            // "4 weeks before the announcement": an advance notice is a minimum; "30
            // days after the end": a deadline.
            if [next, after]
                .iter()
                .any(|w| matches!(*w, "before" | "prior" | "ahead" | "advance"))
            {
                Binding::Limit(Limit::AtLeast)
            } else if [next, after]
                .iter()
                .any(|w| matches!(*w, "after" | "following" | "of" | "from"))
                && v.calendar_days().is_some()
            {
                // "Files are deleted 6 months after the decision": a deletion is due at the
                // end of a period that records are kept for, not any time before it.
                let deleted = crate::vocabulary::term("delete");
                if window.iter().any(|w| crate::vocabulary::term(w) == deleted) {
                    Binding::Limit(Limit::Exactly)
                } else {
                    Binding::Limit(Limit::AtMost)
                }
            } else {
                Binding::Limit(Limit::Exactly)
            }
        }
    }
}

/// Whether a comparator directly follows a noun ("gifts above", "a shareholding of more
/// than"): the value then says which things the rule is about.
fn is_noun_modifier(window: &[&str]) -> bool {
    let Some(cmp) = window
        .iter()
        .rposition(|w| ABOVE.contains(w) || BELOW.contains(w) || *w == "more" || *w == "greater")
    else {
        return false;
    };
    let before = cmp.checked_sub(1).map(|i| window[i]).unwrap_or("");
    let before = if before == "of" {
        cmp.checked_sub(2).map(|i| window[i]).unwrap_or("")
    } else {
        before
    };
    !before.is_empty()
        && !MUST.contains(&before)
        && !MAY.contains(&before)
        && !matches!(
            before,
            "be" | "is" | "are" | "not" | "was" | "were" | "exceed" | "cost" | "costs" | "worth"
        )
        && before.chars().all(char::is_alphabetic)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docmodel::rules::read;
    use crate::docmodel::rules::test_support::bound;

    #[test]
    fn limits_and_conditions() {
        assert_eq!(
            bound(
                "Staff must declare any conflict within 5 business days of becoming aware of it."
            )
            .0,
            Binding::Limit(Limit::AtMost)
        );
        assert_eq!(
            bound("Related-party transactions above EUR 25,000 must be approved in advance by the Audit Committee.").0,
            Binding::Applies { above: true }
        );
        assert_eq!(
            bound("Flights must be booked in economy class where the scheduled flight time is below 6 hours.").0,
            Binding::Applies { above: false }
        );
        assert_eq!(
            bound("Travel must be booked at least 14 days before departure.").0,
            Binding::Limit(Limit::AtLeast)
        );
        assert_eq!(
            bound("Staff must notify Compliance 4 weeks before their candidacy is announced.").0,
            Binding::Limit(Limit::AtLeast)
        );
        assert_eq!(
            bound("Register entries are retained for 7 years after the conflict has ended.").0,
            Binding::Limit(Limit::AtLeast)
        );
        assert_eq!(
            bound("Screening results are valid for 14 days.").0,
            Binding::Limit(Limit::AtMost)
        );
        let unless = read(
            "No more than 20% may be deposited with any one bank, unless the total held is below £10 million.",
        );
        assert_eq!(unless.bounds[0].binding, Binding::Limit(Limit::AtMost));
        assert_eq!(unless.bounds.len(), 2, "{:?}", unless.bounds);
        assert_eq!(unless.bounds[1].binding, Binding::Applies { above: true });
        assert_eq!(
            bound(
                "Each action has a deadline, which must not be more than 90 days after the review."
            )
            .0,
            Binding::Limit(Limit::AtMost)
        );
        // A frequency that says what a condition measures is no limit.
        let spend = read(
            "Set-up requires a credit check for suppliers whose expected annual spend exceeds £25,000.",
        );
        assert!(
            spend.bounds.iter().all(|b| !b.value.frequency),
            "{:?}",
            spend.bounds
        );
        assert!(
            read("For critical vendors, the exit plan is tested annually.")
                .bounds
                .iter()
                .any(|b| b.value.frequency)
        );
        assert_eq!(
            bound("Access is suspended for 3 months.").0,
            Binding::Limit(Limit::Exactly)
        );
        assert_eq!(
            bound("Expired records are deleted 30 days after the end of the period.").0,
            Binding::Limit(Limit::Exactly)
        );
        assert_eq!(
            bound("Reports are filed 30 days after the end of the period.").0,
            Binding::Limit(Limit::AtMost)
        );
        assert_eq!(
            bound("Records must be retained for 7 years.").0,
            Binding::Limit(Limit::AtLeast)
        );
        assert_eq!(
            bound("Gifts must not exceed EUR 100.").0,
            Binding::Limit(Limit::AtMost)
        );
        assert_eq!(
            bound("The register is reviewed every 6 months.").0,
            Binding::Limit(Limit::AtMost)
        );
        assert_eq!(
            bound("Outside employment that generates more than GBP 2,500 a year requires the approval of the Head of Compliance.").0,
            Binding::Applies { above: true }
        );
    }

    #[test]
    fn a_cap_after_a_condition_is_a_limit() {
        let r = read(
            "Where a person's variable pay for a year exceeds GBP 50,000, 40% of it is deferred.",
        );
        let pct = r
            .bounds
            .iter()
            .find(|b| b.value.written == "40%")
            .expect("40%");
        assert!(
            matches!(pct.binding, Binding::Limit(_)),
            "{:?}",
            pct.binding
        );
        let r = read("For other products, a competition may run for no more than 4 weeks, prizes may not exceed GBP 250 per person.");
        let cap = r
            .bounds
            .iter()
            .find(|b| b.value.written == "GBP 250")
            .expect("GBP 250");
        assert_eq!(cap.binding, Binding::Limit(Limit::AtMost));
        let r = read("The incident is logged and Compliance is notified on the same business day.");
        assert_eq!(r.bounds[0].binding, Binding::Limit(Limit::AtMost));
        let r = read("An itemised receipt is required for every item of GBP 10 or more.");
        assert_eq!(r.bounds[0].binding, Binding::Applies { above: true });
        let r = read("Analysts must complete 20 hours or more of training each year.");
        assert_eq!(r.bounds[0].binding, Binding::Limit(Limit::AtLeast));
        for rule in [
            "The standard monthly limit on each card is GBP 7,500.",
            "Expense: Hotel in London, per night, room only, Limit: GBP 220",
        ] {
            let r = read(rule);
            let cap = r
                .bounds
                .iter()
                .find(|b| b.value.written.starts_with("GBP"))
                .expect("an amount");
            assert_eq!(cap.binding, Binding::Limit(Limit::AtMost), "{rule}");
            assert!(r.bounds.iter().all(|b| !b.value.frequency), "{rule}");
        }
    }

    #[test]
    fn a_pass_mark_is_a_floor() {
        let r = super::super::read("The pass mark is 80%.");
        assert_eq!(r.bounds[0].binding, Binding::Limit(Limit::AtLeast));
    }
}
