//! Which event of a practice a rule's time counts from, and the times between a practice's
//! events: the time since the rule's event ("within 72 hours of the escalation"), notice
//! ahead of an event dated elsewhere, how often an act was done, whether a clause is the
//! rule's event or another kind of act.

use super::pairing::*;
use super::*;

/// The time since the practice's event that a rule's bound counts from ("within 72 hours
/// of the escalation": the clause that speaks of escalating), when `value` is a time the
/// practice gives by when it happened and one of its events shares the words of the
/// rule's.
pub(super) fn since_event(
    fact: &Fact,
    value: &Bound,
    rule: &Bound,
    actor: &[String],
    object: &[String],
) -> Option<Value> {
    if value.value.calendar_days().is_none() || !matches!(value.anchor, Some(Anchor::Since)) {
        return None;
    }
    let event = event_of(fact, rule, actor, object)?;
    Some(Value {
        low: event.days.0,
        high: event.days.1,
        business: event.business,
        ..value.value.clone()
    })
}

/// The event told before `fact` that a rule's bound counts from ("within 72 hours of the
/// escalation": the clause that speaks of escalating), as the time since it. `actor` is
/// who the rule binds and `object` what it asks them to act on.
pub(super) fn event_of<'a>(
    fact: &'a Fact,
    rule: &Bound,
    actor: &[String],
    object: &[String],
) -> Option<&'a Since> {
    let anchor = rule.anchor.as_ref()?.terms();
    // "within 4 hours of receiving it", said of the SOC: received when it was reported,
    // sent or passed to the SOC; "acknowledges each internal SAR within 1 business day of
    // receipt": received when the internal SAR was logged.
    let receipt = crate::vocabulary::term("receive");
    if anchor.iter().all(|t| *t == receipt) {
        for by in [actor, object] {
            if by.is_empty() {
                continue;
            }
            let named = Bound {
                anchor: Some(Anchor::After(by.to_vec())),
                ..rule.clone()
            };
            if let Some(s) = event_of(fact, &named, &[], &[]) {
                return Some(s);
            }
        }
        // Or when it was sent ("the regulator sent us a formal requirement").
        let sent = Bound {
            anchor: Some(Anchor::After(vec![crate::vocabulary::term("sent")])),
            ..rule.clone()
        };
        if let Some(s) = event_of(fact, &sent, &[], &[]) {
            return Some(s);
        }
    }
    // Words of time name no event ("their last working day").
    let generic = [
        "day", "time", "date", "last", "first", "working", "week", "month", "year",
    ]
    .map(crate::vocabulary::term);
    let anchor: Vec<String> = anchor
        .iter()
        .filter(|t| !generic.contains(t))
        .cloned()
        .collect();
    // "of the incident being identified": when someone became aware of it ("realised",
    // "spotted"); identifying is finding out.
    let identified = crate::vocabulary::term("identified");
    let aware = crate::vocabulary::term("aware");
    let anchor: Vec<String> = anchor
        .into_iter()
        .map(|t| if t == identified { aware.clone() } else { t })
        .collect();
    if fact.since.is_empty() || anchor.is_empty() {
        return None;
    }
    // Of the events that say most of the rule's, the first told: later clauses name it
    // again ("approved the meeting the following day" is not the meeting).
    fact.since
        .iter()
        .map(|s| (anchor.iter().filter(|t| s.event.contains(*t)).count(), s))
        .filter(|(n, _)| *n > 0)
        .fold(None, |best: Option<(usize, &Since)>, (n, s)| match best {
            Some((m, _)) if m >= n => best,
            _ => Some((n, s)),
        })
        .map(|(_, s)| s)
}

/// The notice a practice gave ahead of an event it dates elsewhere, for a rule that asks
/// for notice before that event ("at least 20 business days before the planned launch
/// date"): the days from the fact's own date ("the proposal went to the Committee on
/// Monday 10 February") to the date of the practice's clause that names the event ("it
/// launched on Tuesday 1 April"), as a value counted before that event. `None` when the
/// fact has no date of its own, no clause of the practice names and dates the event, or
/// the event came first.
pub(super) fn notice_before(fact: &Fact, rule: &Bound, practice: &[&Fact]) -> Option<Bound> {
    let Some(Anchor::Before(event)) = &rule.anchor else {
        return None;
    };
    rule.value.calendar_days()?;
    let exact_date = |f: &Fact| {
        f.reading
            .bounds
            .iter()
            .find(|b| b.value.unit == Unit::Date && b.value.low == b.value.high)
            .map(|b| b.value.clone())
    };
    // Its date, or its sentence's ("The proposal, with a draft map, went to the
    // Committee on 15 September": one act cut at a comma).
    let own = exact_date(fact).or_else(|| {
        practice
            .iter()
            .filter(|f| f.sentence == fact.sentence)
            .find_map(|f| exact_date(f))
    })?;
    // The event's own first word ("launch" of "before launch, with a draft map"), not
    // "date" or "day" that any dated clause may have.
    let generic = ["date", "day", "time", "plan"].map(crate::vocabulary::term);
    let named: Vec<&String> = event.iter().filter(|t| !generic.contains(t)).collect();
    if named.is_empty() {
        return None;
    }
    // The clause whose act is the event ("everything was destroyed on 21 July"), before
    // one that only names it ("prepared the destruction schedule on 7 July").
    let dated: Vec<(bool, Value)> = practice
        .iter()
        .filter(|f| !std::ptr::eq(**f, fact) && f.terms.contains(named[0]))
        .filter_map(|f| {
            exact_date(f).map(|d| (is_an_event_of(&f.text, std::slice::from_ref(named[0])), d))
        })
        .filter(|(_, d)| d.low != own.low)
        .collect();
    let when = dated
        .iter()
        .find(|(act, _)| *act)
        .or_else(|| dated.first())
        .map(|(_, d)| d.clone())?;
    let days = when.low - own.low;
    if days < 0.0 {
        return None;
    }
    Some(Bound {
        value: Value {
            unit: Unit::Days,
            low: days,
            high: days,
            shown_unit: "day",
            number: days,
            written: format!("{} ({days} days before {})", own.written, when.written),
            span: own.span.clone(),
            frequency: false,
            business: None,
        },
        binding: rule.binding,
        anchor: Some(Anchor::Before(event.clone())),
        context: rule.context.clone(),
    })
}

/// How often a practice did what a rule asks to be done at a frequency ("reviewed at
/// least every 18 months"): the longest gap between the dates of its clauses that tell the
/// act ("the panel was reviewed on 3 March 2023 ... and again on 20 November 2024"), the
/// fact's among them, as a frequency. `None` unless two such dates are told.
pub(super) fn interval_between(
    fact: &Fact,
    rule: &Bound,
    actions: &[String],
    practice: &[&Fact],
) -> Option<Bound> {
    if !rule.value.frequency || actions.is_empty() {
        return None;
    }
    let does = |f: &Fact| actions.iter().any(|a| f.terms.contains(a));
    if !does(fact) {
        return None;
    }
    // Each date with its year, written right after it ("3 March 2023"), in calendar
    // months since year 0, as days: 1 July to 1 October is 3 months, as a rule counts.
    let mut dates: Vec<(f64, &Value)> = practice
        .iter()
        .filter(|f| does(f))
        .flat_map(|f| {
            f.reading
                .bounds
                .iter()
                .map(move |b| (f.text.as_str(), &b.value))
        })
        .filter(|(_, v)| v.unit == Unit::Date && v.low == v.high)
        .filter_map(|(text, v)| {
            let year: f64 = text
                .get(v.span.end..)?
                .split(|c: char| !c.is_ascii_digit())
                .find(|w| !w.is_empty())
                .filter(|y| y.len() == 4)?
                .parse()
                .ok()?;
            text.get(v.span.end..)?
                .trim_start()
                .starts_with(|c: char| c.is_ascii_digit())
                .then_some((in_months(year, v.low) * 365.25 / 12.0, v))
        })
        .collect();
    dates.sort_by(|a, b| a.0.total_cmp(&b.0));
    dates.dedup_by(|a, b| (a.0 - b.0).abs() < 0.5);
    let gap = dates
        .windows(2)
        .map(|w| (w[1].0 - w[0].0).round())
        .fold(None, |m: Option<f64>, g| Some(m.map_or(g, |m| m.max(g))))?;
    let (first, last) = (dates.first()?.1, dates.last()?.1);
    Some(Bound {
        value: Value {
            unit: Unit::Days,
            low: gap,
            high: gap,
            shown_unit: "day",
            number: gap,
            written: format!("{gap} days between {} and {}", first.written, last.written),
            span: first.span.clone(),
            frequency: true,
            business: None,
        },
        binding: rule.binding,
        anchor: None,
        context: rule.context.clone(),
    })
}

/// A date (its year, and its day of a year that is not a leap year) in calendar months
/// since year 0: whole months, and the days into the month as a share of an average one.
fn in_months(year: f64, day_of_year: f64) -> f64 {
    const STARTS: [f64; 12] = [
        1.0, 32.0, 60.0, 91.0, 121.0, 152.0, 182.0, 213.0, 244.0, 274.0, 305.0, 335.0,
    ];
    let month = STARTS.iter().rposition(|s| *s <= day_of_year).unwrap_or(0);
    year * 12.0 + month as f64 + (day_of_year - STARTS[month]) / (365.25 / 12.0)
}

/// What a practice says of doing before an event what a rule asks to be done before it,
/// with no figure ("approved in advance", "before onboarding"): done after the rule's event,
/// or after one it does not name ("paid four weeks after we received it" is not after the
/// order a PO must come before), it breaks the rule; not said to be done first, it is open.
pub(super) fn before_the_event(
    rule: &Rule<'_>,
    fact: &Fact,
    breaks: &mut Vec<String>,
    open: &mut Vec<String>,
) {
    let event = rule.reading.before.as_deref().unwrap_or_default();
    let after = fact.reading.bounds.iter().find(|b| match &b.anchor {
        Some(Anchor::After(t)) => same_event(t, event),
        _ => false,
    });
    // "after" that is a value's, of another event, says nothing of this one.
    let other_after = fact.reading.bounds.iter().any(|b| match &b.anchor {
        Some(Anchor::After(t)) => !same_event(t, event),
        _ => false,
    });
    let deferred = ["later", "afterwards", "after", "next"]
        .iter()
        .filter(|w| !(other_after && **w == "after"))
        .any(|w| {
            fact.text
                .to_lowercase()
                .split_whitespace()
                .any(|x| x.trim_matches(|c: char| !c.is_alphanumeric()) == *w)
        });
    // Said to be done first: "in advance", "beforehand", "before ...", "prior to".
    let first = fact.reading.before.is_some()
        || fact
            .reading
            .bounds
            .iter()
            .any(|b| matches!(b.anchor, Some(Anchor::Before(_))));
    if let Some(a) = after {
        breaks.push(format!(
            "{} after the event, where the rule asks for it before",
            a.value.written
        ));
    } else if deferred && !fact.reading.negated {
        breaks.push("done after the event, where the rule asks for it before".to_string());
    } else if !first && !fact.reading.negated {
        open.push("whether it was done before, as the rule asks".to_string());
    }
}

/// Whether a practice's clause tells the event a rule counts from (`event`, its terms in
/// order): its last verb in the past is the event's last word, its verb ("spotted the error
/// at 14:00" for "of being discovered"; not "reported the freeze" for "of the freeze", "the
/// alert this generated was reviewed" for "of being generated", nor "completed" for "of the
/// date the complete application is received").
pub(super) fn is_the_event(clause: &str, event: &[String]) -> bool {
    last_act(clause).is_some_and(|w| event.last() == Some(&w))
}

/// The term of the last act a clause tells in the past ("announced" of "the placing was
/// announced on Friday 20 June").
fn last_act(clause: &str) -> Option<String> {
    clause
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .rfind(|w| crate::vocabulary::is_past_form(w))
        .map(|w| crate::vocabulary::term(&w))
}

/// Whether the last act a clause tells in the past is one of `event`'s words ("the placing
/// was announced on Friday 20 June" for the information made public).
pub(super) fn is_an_event_of(clause: &str, event: &[String]) -> bool {
    last_act(clause).is_some_and(|w| event.contains(&w))
}

/// Whether a value the practice writes is a day or a time relative to the event told before
/// ("that same afternoon", "the next day", "the following morning").
pub(super) fn is_position(written: &str) -> bool {
    let lower = format!(" {} ", written.to_lowercase());
    [
        " same ",
        " next ",
        " following ",
        " that ",
        " day after ",
        " later ",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// Kinds of act a practice tells and a rule asks for: telling someone, approving,
/// recording.
const ACT_KINDS: [&[&str]; 3] = [
    &[
        "tell", "told", "notify", "inform", "report", "escalate", "alert", "email", "flag",
        "refer", "forward", "send", "submit",
    ],
    &[
        "approve",
        "authorise",
        "authorize",
        "sign",
        "consent",
        "agree",
        "refuse",
        "reject",
        "decline",
    ],
    &[
        "record", "log", "enter", "register", "document", "write", "update",
    ],
];

/// Whether a clause's act is of another kind than a rule's ("the Head of Compliance
/// approved the engagement" for "must inform the CEO"): both acts known, and of different
/// kinds.
pub(super) fn another_kind_of_act(clause: &str, actions: &[String]) -> bool {
    let kind = |t: &str| {
        ACT_KINDS
            .iter()
            .position(|k| k.iter().any(|w| crate::vocabulary::term(w) == t))
    };
    let Some(rule) = actions.first().and_then(|a| kind(a)) else {
        return false;
    };
    let acts: Vec<usize> = clause
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| crate::vocabulary::is_past_form(w))
        .filter_map(|w| kind(&crate::vocabulary::term(&w)))
        .collect();
    !acts.is_empty() && !acts.contains(&rule)
}

/// The event a rule's deadline counts from when it names none after its figure: the
/// event its opening clause tells ("When the information is made public ..., the Deal Lead
/// must confirm this within 10 business days": the information made public), else what its
/// subject says arrived ("a complaint received through social media must be acknowledged
/// within 4 hours": the complaint).
pub(super) fn event_terms(rule: &str) -> Vec<String> {
    let lower = rule.to_lowercase();
    let opener = ["when ", "once ", "after ", "following "]
        .iter()
        .find_map(|o| lower.strip_prefix(o));
    if let Some(rest) = opener {
        let subject = subject_terms(rule);
        if let Some(comma) = rest.find(',') {
            let event = crate::text::terms(&rest[..comma]);
            if !event.is_empty() && !subject.is_empty() {
                return event;
            }
        }
    }
    subject_terms(rule)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approval_is_another_kind_of_act_than_telling() {
        let inform = crate::docmodel::rules::actions(
            "The Head of Compliance must inform the CEO within 5 business days of the decision.",
        );
        assert!(another_kind_of_act(
            "the Head of Compliance approved the engagement on Tuesday 14 January",
            &inform
        ));
        assert!(!another_kind_of_act(
            "she emailed the CEO on Friday",
            &inform
        ));
        assert!(!another_kind_of_act(
            "on Friday the CEO heard of it",
            &inform
        ));
    }

    #[test]
    fn a_deadline_counts_from_the_event_its_opening_clause_tells() {
        let t = event_terms(
            "When the information is made public, the Deal Lead must confirm this within 10 business days.",
        );
        assert!(t.contains(&crate::vocabulary::term("announced")), "{t:?}");
        assert!(!t.contains(&crate::vocabulary::term("lead")), "{t:?}");
        let t = event_terms(
            "A complaint received through social media must be acknowledged within 4 hours.",
        );
        assert!(t.contains(&crate::vocabulary::term("complaint")), "{t:?}");
    }

    #[test]
    fn a_receipt_is_when_the_actor_was_sent_it_and_identifying_is_becoming_aware() {
        let facts = crate::docmodel::facts::read(
            "She realised at 10:20 and reported it to the SOC at 11:45. The SOC classified it as Severity 3 at 13:00. The incident was referred to the DPO at 16:00.",
        );
        let time = |f: &Fact| {
            f.reading
                .bounds
                .iter()
                .find(|b| matches!(b.anchor, Some(Anchor::Since)))
                .cloned()
                .expect("a time since")
        };
        let triage = rules::read("The SOC must triage each report within 4 hours of receiving it.");
        let actor =
            subject_terms("The SOC must triage each report within 4 hours of receiving it.");
        let v = since_event(&facts[2], &time(&facts[2]), &triage.bounds[0], &actor, &[])
            .expect("since the report");
        assert!((v.low * 24.0 - 1.25).abs() < 1e-6, "{v:?}");
        let dpo = rules::read(
            "Any incident must be referred to the DPO within 24 hours of the incident being identified.",
        );
        let v = since_event(&facts[3], &time(&facts[3]), &dpo.bounds[0], &[], &[])
            .expect("since she realised");
        assert!(
            (v.low * 24.0 - (16.0 - 10.0 - 20.0 / 60.0)).abs() < 1e-6,
            "{v:?}"
        );
    }

    #[test]
    fn notice_ahead_of_an_event_dated_elsewhere_is_the_days_between() {
        let facts = crate::docmodel::facts::read(
            "The full proposal went to the Committee on Monday 10 February 2025. The scheme launched on Tuesday 1 April 2025.",
        );
        let practice: Vec<&Fact> = facts.iter().collect();
        let rule = rules::read(
            "The complete proposal must reach the Committee at least 20 business days before the planned launch date.",
        );
        let n = notice_before(&facts[0], &rule.bounds[0], &practice).expect("the notice");
        assert_eq!(n.value.low, 50.0);
        assert_eq!(
            n.value.keeps(Limit::AtLeast, &rule.bounds[0].value),
            Some(true)
        );
        // The event before the act: no notice was given.
        assert!(notice_before(&facts[1], &rule.bounds[0], &practice).is_none());
    }

    #[test]
    fn how_often_an_act_was_done_is_the_longest_gap_between_its_dates() {
        let text =
            "The Head of Compliance must review the permanent insider section every 3 months.";
        let rule = rules::read(text);
        let actions = rules::actions(text);
        let check = |practice: &str| {
            let facts = crate::docmodel::facts::read(practice);
            let all: Vec<&Fact> = facts.iter().collect();
            interval_between(&facts[0], &rule.bounds[0], &actions, &all)
                .map(|b| b.value.keeps(Limit::AtMost, &rule.bounds[0].value))
        };
        assert_eq!(
            check("The section was reviewed on 1 July 2025 and again on 1 October 2025."),
            Some(Some(true))
        );
        assert_eq!(
            check("The section was reviewed on 1 July 2025 and again on 15 November 2025."),
            Some(Some(false))
        );
        assert_eq!(check("The section was reviewed on 1 July 2025."), None);
    }

    #[test]
    fn a_clause_is_the_rules_event_when_its_last_verb_is() {
        let event = |w: &str| vec![crate::vocabulary::term(w)];
        assert!(is_the_event(
            "spotted the error at 14:00",
            &event("spotted")
        ));
        assert!(!is_the_event(
            "the MLRO reported the freeze the Monday after that",
            &event("freeze")
        ));
        assert!(!is_the_event(
            "The alert this generated on Friday was reviewed on the following Wednesday",
            &event("generated")
        ));
        let received = ["complete", "application", "received"]
            .map(crate::vocabulary::term)
            .to_vec();
        assert!(!is_the_event(
            "her identity verification was completed on Friday 14 November",
            &received
        ));
        assert!(is_the_event(
            "Her complete application was received on Monday 3 November",
            &received
        ));
    }
}
