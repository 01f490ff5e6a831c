//! Which of a practice's values speaks of which of a rule's: comparable amounts, the same
//! event, the time since the rule's event, amounts that add up under a cap on a whole.

use super::*;

/// Sums of weights over sets, in one order whatever the sets' (a float sum depends on its
/// order, and an audit must say the same of the same text every time).
pub(super) trait SumInOrder {
    fn sum_in_order(self) -> f64;
}

impl<I: Iterator<Item = f64>> SumInOrder for I {
    fn sum_in_order(self) -> f64 {
        let mut v: Vec<f64> = self.collect();
        v.sort_by(f64::total_cmp);
        v.iter().sum()
    }
}

/// Whether a fact's value can speak of a rule's: comparable amounts, a frequency for a
/// frequency, and the same event when both say which ("three months after go-live" is not
/// "6 months after termination").
pub(super) fn can_pair(fact: &Bound, rule: &Bound) -> bool {
    if !fact.value.weighs_with(&rule.value) {
        return false;
    }
    if rule.value.frequency
        && !fact.value.frequency
        && fact.anchor.as_ref().is_none_or(|a| a.terms().is_empty())
    {
        // "every year" and "two years later" are not the same kind of thing; a fact value
        // with no event ("eighteen months ago", "was fourteen months before", "every two
        // years") may be an interval.
        return fact.value.frequency
            || matches!(&fact.anchor, Some(Anchor::Before(t)) if t.is_empty())
            || fact
                .context
                .iter()
                .any(|t| matches!(t.as_str(), "ago" | "last" | "sinc" | "everi" | "interv"));
    }
    if rule.value.frequency && !fact.value.frequency {
        return false;
    }
    // How often something is done says nothing of which case a rule is about ("monthly"
    // against "where pay is deferred over 3 years").
    // Nor of a minimum length of time ("annual" against "competent for at least 2
    // years"); against a deadline, the longest interval is the longest wait ("a script that
    // runs twice a year" against "deleted within 60 days").
    if fact.value.frequency
        && !rule.value.frequency
        && matches!(
            rule.binding,
            Binding::Applies { .. } | Binding::Limit(Limit::AtLeast)
        )
    {
        return false;
    }
    // The time between a practice's events is no measure of what a condition speaks of
    // ("flight time exceeds 6 hours" against "approved it two days later").
    if matches!(fact.anchor, Some(Anchor::Since)) && matches!(rule.binding, Binding::Applies { .. })
    {
        return false;
    }
    // "a month before the change" is notice given ahead of an event: it speaks of a
    // minimum notice ("at least 60 days before"), not of a deadline after something
    // ("within 24 hours").
    // The time since events a practice told is no notice given ahead of one.
    if matches!(fact.anchor, Some(Anchor::Since)) && matches!(rule.anchor, Some(Anchor::Before(_)))
    {
        return false;
    }
    // Nor is a time after the event told before ("the next morning", "a week later").
    let relative = fact
        .value
        .written
        .split_whitespace()
        .any(|w| matches!(w.to_lowercase().as_str(), "next" | "following" | "later"));
    if fact.anchor.is_none() && relative && matches!(rule.anchor, Some(Anchor::Before(_))) {
        return false;
    }
    if matches!(fact.anchor, Some(Anchor::Before(_)))
        && rule.binding == Binding::Limit(Limit::AtMost)
        && !matches!(rule.anchor, Some(Anchor::Before(_)))
        && rule.value.unit != crate::docmodel::values::Unit::Date
    {
        return false;
    }
    match (&fact.anchor, &rule.anchor) {
        (Some(a), Some(b)) if !a.terms().is_empty() && !b.terms().is_empty() => {
            a.terms().iter().any(|t| b.terms().contains(t)) || a.before() == b.before()
        }
        _ => true,
    }
}

/// The amounts of a fact's clause in `value`'s currency that pair with a rule's cap on a
/// whole (a trip, a year, a total), added up: `None` unless there are two or more.
pub(super) fn summed(fact: &Fact, value: &Bound, cap: &Bound, rule_text: &str) -> Option<Bound> {
    if !matches!(cap.value.unit, Unit::Money(_)) || !caps_a_whole(rule_text, &cap.value.written) {
        return None;
    }
    let parts: Vec<&Bound> = fact
        .reading
        .bounds
        .iter()
        .filter(|x| x.value.unit == value.value.unit && can_pair(x, cap))
        .collect();
    if parts.len() < 2 {
        return None;
    }
    let mut total = value.clone();
    total.value.low = parts.iter().map(|x| x.value.low).sum();
    total.value.high = parts.iter().map(|x| x.value.high).sum();
    total.value.written = format!(
        "{} in all",
        parts
            .iter()
            .map(|x| x.value.written.as_str())
            .collect::<Vec<_>>()
            .join(" and ")
    );
    Some(total)
}

/// Whether a rule's amount caps a whole rather than each item: "per trip", "per year",
/// "in total", "in aggregate", "combined" after it ("per night", "per transaction" cap
/// each).
pub(super) fn caps_a_whole(rule_text: &str, written: &str) -> bool {
    let lower = rule_text.to_lowercase();
    let Some(at) = lower.find(&written.to_lowercase()) else {
        return false;
    };
    let after: Vec<&str> = lower[at + written.len()..]
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(4)
        .collect();
    let each = |w: &str| {
        matches!(
            w,
            "transaction"
                | "item"
                | "night"
                | "day"
                | "person"
                | "head"
                | "payment"
                | "claim"
                | "receipt"
                | "meal"
                | "guest"
                | "gift"
                | "unit"
                | "share"
        )
    };
    after.windows(2).any(|p| p[0] == "per" && !each(p[1]))
        || after
            .windows(2)
            .any(|p| p[0] == "in" && matches!(p[1], "total" | "aggregate"))
        || after
            .iter()
            .any(|w| matches!(*w, "combined" | "cumulatively" | "altogether"))
}

/// Whether two events' terms speak of the same event: a term in common, or one term the
/// start of the other's ("receipt", "receiving" are not; "terminat", "termination" are).
pub(super) fn same_event(a: &[String], b: &[String]) -> bool {
    if a.is_empty() || b.is_empty() {
        return true;
    }
    a.iter().any(|x| {
        b.iter().any(|y| {
            x == y
                || (x.len().min(y.len()) >= 5
                    && (x.starts_with(y.as_str()) || y.starts_with(x.as_str())))
        })
    })
}

/// Whether the fact itself states exactly one value that can pair with `bound` (then it
/// speaks of it, whatever the words around it).
pub(super) fn pairs_alone(own: &[&Fact], bound: &Bound) -> bool {
    own.iter()
        .flat_map(|f| f.reading.bounds.iter())
        .filter(|b| can_pair(b, bound))
        .count()
        == 1
}

/// Whether a fact states a value that can speak of one of the rule's.
pub(super) fn pairs_a_value(fact: &Fact, rule: &Rule<'_>) -> bool {
    fact.reading
        .bounds
        .iter()
        .any(|f| rule.reading.bounds.iter().any(|r| can_pair(f, r)))
}

/// The fact's value that speaks of the rule's `bound`: one that can pair with it, sharing
/// most words around it.
pub(super) fn counterpart<'a>(bound: &Bound, facts: &'a [&Fact]) -> Option<(&'a Bound, usize)> {
    facts
        .iter()
        .flat_map(|f| f.reading.bounds.iter())
        .filter(|b| can_pair(b, bound))
        .map(|b| (b, b.context.intersection(&bound.context).count()))
        .fold(None, |best: Option<(&Bound, usize)>, (b, n)| match best {
            Some((_, m)) if m >= n => best,
            _ => Some((b, n)),
        })
}

/// The terms of what a rule binds: the words before its modal verb ("A complaint received
/// through social media" of "... must be acknowledged within 4 hours").
pub(super) fn subject_terms(rule: &str) -> Vec<String> {
    let lower = rule.to_lowercase();
    [
        " must ",
        " shall ",
        " should ",
        " needs to ",
        " has to ",
        " is to be ",
        " are to be ",
    ]
    .iter()
    .filter_map(|m| lower.find(m))
    .min()
    .map(|at| crate::text::terms(&lower[..at]))
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_on_a_trip_or_a_total_is_on_the_whole_and_a_cap_per_night_on_each() {
        assert!(caps_a_whole(
            "Cash withdrawals are limited to EUR 100 per trip",
            "EUR 100"
        ));
        assert!(caps_a_whole("gifts of up to GBP 250 in total", "GBP 250"));
        assert!(!caps_a_whole(
            "hotels of up to EUR 150 per night",
            "EUR 150"
        ));
        assert!(!caps_a_whole("a limit of EUR 150", "EUR 150"));
    }

    #[test]
    fn a_time_after_the_event_before_is_no_notice_ahead_of_one() {
        let fact = rules::read("Compliance was told the next morning.");
        let rule = rules::read(
            "Clients must be told of any material change at least 14 days before it takes effect.",
        );
        let (Some(f), Some(r)) = (fact.bounds.first(), rule.bounds.first()) else {
            panic!("{fact:?} {rule:?}");
        };
        assert!(matches!(r.anchor, Some(Anchor::Before(_))));
        assert!(!can_pair(f, r));
    }

    #[test]
    fn events_are_the_same_when_a_term_or_its_start_is_shared() {
        let t = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(same_event(&t(&["meet", "call"]), &t(&["meet"])));
        assert!(same_event(&t(&["terminat"]), &t(&["termination"])));
        assert!(!same_event(
            &t(&["receiv", "statement"]),
            &t(&["return", "trip"])
        ));
        assert!(same_event(&[], &t(&["trip"])));
    }
}
