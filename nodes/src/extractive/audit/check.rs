//! One rule checked against one fact of the practice: its conditions, limits, events,
//! roles and form, into one finding.

use super::events::*;
use super::pairing::*;
use super::parties::*;
use super::*;

/// How much of a rule's own words a fact says, and how much of the fact's words are the
/// rule's, each word weighted by its rarity among the rules.
pub(super) struct Coverage {
    pub(super) of_rule: f64,
    pub(super) of_fact: f64,
}

/// A rule tried against a fact.
pub(super) struct Tried {
    /// The rule's index.
    pub(super) index: usize,
    /// How well they matched.
    pub(super) score: f64,
    /// Whether it is the rule the fact is most about.
    pub(super) primary: bool,
    pub(super) coverage: Coverage,
    /// For a table's row for a band of values, whether the practice's case falls in it
    /// (`None`: it cannot be told).
    pub(super) in_band: Option<bool>,
}

/// Checks one rule against a fact (and the facts of its scope, and for what the rule
/// applies to, the whole practice): `None` when they have nothing to compare and the fact
/// does not restate the rule.
pub(super) fn check<'a>(
    fact: &'a Fact,
    mine: &[&Bound],
    scope: &[&'a Fact],
    practice: &[&'a Fact],
    rule: &Rule<'_>,
    tried: &Tried,
) -> Option<Finding<'a>> {
    let Tried {
        index,
        score,
        primary,
        ref coverage,
        in_band,
    } = *tried;
    let mut breaks = Vec::new();
    let mut meets = Vec::new();
    let mut open = Vec::new();
    let conditions::Applies {
        applies,
        elsewhere,
        said,
        unknown,
    } = conditions::applies(rule, fact, scope, practice);
    if elsewhere {
        return None;
    }
    meets.extend(said);
    open.extend(unknown);
    if !applies {
        // The rule does not apply: said of the rule the fact is most about, left out
        // otherwise. A value of the fact that goes past one of the rule's limits says
        // the condition may have been misread: not verifiable, never "meets".
        let past_a_limit = rule.reading.bounds.iter().any(|b| {
            let Binding::Limit(limit) = b.binding else {
                return false;
            };
            fact.reading
                .bounds
                .iter()
                .any(|f| can_pair(f, b) && f.value.keeps(limit, &b.value) == Some(false))
        });
        if past_a_limit {
            meets.push("but the practice goes past a limit the rule sets".to_string());
            return primary.then_some(Finding {
                verdict: Verdict::NotVerifiable,
                rule: index,
                fact,
                why: meets,
            });
        }
        return primary.then_some(Finding {
            verdict: Verdict::Meets,
            rule: index,
            fact,
            why: meets,
        });
    }

    // A requirement the practice tells and then says was not met ("the procedure says the
    // MLRO must be consulted, but that step was skipped").
    // ("may be released only after a four-eyes review" asks for it as much as "must").
    if fact.denied && rule.reading.modality != Modality::MustNot && (primary || !mine.is_empty()) {
        return Some(Finding {
            verdict: Verdict::Breaks,
            rule: index,
            fact,
            why: vec!["the practice says this step was not taken".to_string()],
        });
    }

    // Optional wording for what the rule makes mandatory (of the rule the fact is most
    // about).
    if primary
        && matches!(rule.reading.modality, Modality::Must)
        && fact.reading.modality == Modality::May
    {
        breaks.push("the practice makes optional what the rule requires".to_string());
    }

    // A table row is for one case ("New York | USD 375"): its figures speak of a practice
    // only when the practice is that case.
    let other_case = rule.row.as_ref().filter(|row| {
        let said: HashSet<&String> = scope
            .iter()
            .flat_map(|f| f.terms.iter().chain(&f.carried))
            .collect();
        !row.applies(&said)
    });

    // A row for a band of values the practice's case may or may not fall in.
    if let (Some(band), None) = (&rule.band, in_band) {
        open.push(format!(
            "whether the practice's case falls in the row's \"{}\"",
            band.label
        ));
    }

    // Limits.
    let limits: Vec<&Bound> = rule
        .reading
        .bounds
        .iter()
        .filter(|b| matches!(b.binding, Binding::Limit(_)))
        .collect();
    // The fact does what the rule requires ("wrote a note of that call ten minutes after
    // hanging up" against "must write a note of the call within 15 minutes"): its value is
    // the time of that act, whatever the words around it.
    let does_the_act =
        primary && !rule.actions.is_empty() && rule.actions.iter().all(|a| fact.terms.contains(a));
    let mut paired = 0usize;
    let mut best_shared = 0usize;
    // The words a quantity of the fact (not a time: a time may be counted from another
    // event) shares with the rule's.
    let mut quantity_shared = 0usize;
    let mut unpaired: Vec<(&Bound, usize)> = Vec::new();
    let (breaks_before, meets_before) = (breaks.len(), meets.len());
    for b in &limits {
        let Binding::Limit(limit) = b.binding else {
            continue;
        };
        // Of the fact's values, one counted from the rule's own event ("five hours after
        // publication" for "within 6 hours of publication") before one that only places
        // the clause in its day ("that morning").
        let from_its_event = |m: &Bound| match (&m.anchor, &b.anchor) {
            (Some(Anchor::After(x)), Some(Anchor::After(y))) => same_event(x, y),
            _ => false,
        };
        let own = mine
            .iter()
            .filter(|m| can_pair(m, b))
            .map(|m| {
                (
                    *m,
                    m.context.intersection(&b.context).count(),
                    from_its_event(m),
                )
            })
            .fold(
                None,
                |best: Option<(&Bound, usize, bool)>, (m, n, e)| match best {
                    Some((_, k, x)) if (x, k) >= (e, n) => best,
                    _ => Some((m, n, e)),
                },
            )
            .map(|(m, n, _)| (m, n));
        // With no value of its own: notice ahead of an event the practice dates elsewhere
        // ("went to the Committee on 10 February" ... "launched on 1 April"), or how often
        // it was done, from the dates the practice gives the act ("reviewed on 3 March 2023
        // ... and again on 20 November 2024").
        let measured = (own.is_none() && primary)
            .then(|| {
                matches!(limit, Limit::AtLeast | Limit::AtMost)
                    .then(|| notice_before(fact, b, practice))
                    .flatten()
                    .or_else(|| interval_between(fact, b, &rule.actions, practice))
            })
            .flatten();
        // A deadline date ("attest each year, by 31 January") is kept or missed by its act:
        // a date of another act ("given hospitality back in March") says nothing of it.
        let own = own.filter(|(m, _)| {
            b.value.unit != Unit::Date
                || rule.actions.is_empty()
                || rule.actions.first().is_some_and(|a| fact.terms.contains(a))
                || !matches!(m.value.unit, Unit::Date) && !matches!(m.anchor, Some(Anchor::Since))
        });
        let Some((f, shared)) = own.or(measured.as_ref().map(|n| (n, 1))) else {
            unpaired.push((
                b,
                b.context.iter().filter(|t| fact.terms.contains(t)).count(),
            ));
            continue;
        };
        // "that same afternoon", "the next day": a time after the event told just before,
        // which may not be the rule's; placed on the timeline, it is counted from the rule's
        // own event as a time of day is.
        let positional = (f.anchor.is_none()
            && matches!(&b.anchor, Some(Anchor::After(t)) if !t.is_empty())
            && f.value.calendar_days().is_some()
            && !fact.since.is_empty()
            && is_position(&f.value.written))
        .then(|| Bound {
            anchor: Some(Anchor::Since),
            ..f.clone()
        });
        let f = positional.as_ref().unwrap_or(f);
        // When an act happened says nothing of how long something is kept ("signed the
        // following day" against "kept for 6 years after the relationship ends").
        if matches!(f.anchor, Some(Anchor::Since))
            && limit == Limit::AtLeast
            && !matches!(b.anchor, Some(Anchor::Before(_)))
            && !b.value.frequency
        {
            continue;
        }
        paired += 1;
        best_shared = best_shared.max(shared);
        // The time of another kind of act ("approved the engagement on 14 January" against
        // "must inform the CEO within 5 business days"): not the time of the rule's.
        // Or the time someone else was told ("the CISO was told at 10:00" against "must
        // inform the COO within 1 hour").
        // ("the Service Desk's 24-hour line" is the Service Desk).
        let told = |r: &Reading| -> Vec<String> {
            r.roles
                .iter()
                .filter(|x| x.kind == RoleKind::Told && !x.negated)
                .map(|x| x.who.split("'s ").next().unwrap_or(&x.who).to_string())
                .collect()
        };
        let (fact_told, rule_told) = (told(&fact.reading), told(&rule.reading));
        // A clause that goes on to do what the rule asks ("told her line manager, who
        // logged an internal SAR") may tell both.
        let does_more = rule
            .actions
            .iter()
            .skip(1)
            .any(|a| fact.terms.contains(a) && !rule_told.iter().any(|r| terms(r).contains(a)));
        let someone_else = !fact_told.is_empty()
            && !rule_told.is_empty()
            && !does_more
            && !fact_told
                .iter()
                .any(|f| rule_told.iter().any(|r| same_role(f, r)));
        if f.value.calendar_days().is_some()
            && (someone_else || another_kind_of_act(&fact.text, &rule.actions))
        {
            open.push(format!(
                "whether {} is when the rule's {} was kept",
                f.value.written, b.value.written
            ));
            continue;
        }
        if f.value.calendar_days().is_none() {
            quantity_shared = quantity_shared.max(shared);
        }
        // A time the practice gives by when it happened, against a rule that says from
        // which event it counts: the time since the practice's event of those words.
        // A deadline that names no event counts from the one its opening clause tells, or
        // from what its subject says arrived ([`event_terms`]).
        let implicit = (b.anchor.is_none() && limit == Limit::AtMost)
            .then(|| event_terms(&rule.text))
            .filter(|t| !t.is_empty())
            .map(|t| Bound {
                anchor: Some(Anchor::After(t)),
                ..(*b).clone()
            });
        let actor = subject_terms(&rule.text);
        // What the rule asks be acted on: its actions after the verb, or, for a rule told
        // in the present ("The MLRO's office acknowledges each internal SAR"), its own
        // words besides who acts and its figure's.
        let rest: Vec<String> = if rule.actions.len() > 1 {
            rule.actions[1..].to_vec()
        } else {
            let figure: HashSet<String> = terms(&b.value.written).into_iter().collect();
            let mut rest: Vec<String> = rule
                .own
                .iter()
                .filter(|t| !actor.contains(t) && !figure.contains(*t))
                .cloned()
                .collect();
            rest.sort();
            rest
        };
        let object = rest.as_slice();
        // "by 17:00 on the same day": the act's day and time against the event's.
        // The fact must tell the rule's act: its subject ("a written record") or all it
        // asks be done ("notify the Control Room").
        let tells_the_act = actor.iter().any(|t| fact.terms.contains(t))
            || !rule.actions.is_empty() && rule.actions.iter().all(|a| fact.terms.contains(a));
        if let Some(d) =
            super::clock::deadline(&rule.text).filter(|d| tells_the_act && d.is(&b.value.written))
        {
            match super::clock::check_deadline(&d, fact, f, b, &actor, object) {
                Some(Ok(why)) => {
                    meets.push(why);
                    continue;
                }
                Some(Err(why)) => {
                    breaks.push(why);
                    continue;
                }
                None => {}
            }
        }
        let from_event =
            since_event(fact, f, implicit.as_ref().unwrap_or(b), &actor, object).map(|v| Bound {
                value: v,
                ..f.clone()
            });
        // The clause is itself the event the rule counts from, not the act it asks for
        // ("spotted the error at 14:00" against "must be reported within 30 minutes of being
        // discovered"): its time starts the rule's clock and says nothing of keeping it.
        // A deadline counted from its opening clause's event ("When the information is
        // made public, ...") is started by a clause whose act is that event's ("the placing
        // was announced on Friday 20 June").
        let does_it_all =
            !rule.actions.is_empty() && rule.actions.iter().all(|a| fact.terms.contains(a));
        let starts_it = match (&b.anchor, &implicit) {
            // "told the analyst that day" for "give it up within 30 calendar days of being
            // told of the decision": the clause's act is the rule's event.
            (Some(a), _) => {
                is_the_event(&fact.text, a.terms())
                    || !does_it_all && is_an_event_of(&fact.text, a.terms())
            }
            (None, Some(i)) => {
                !does_the_act
                    && is_an_event_of(&fact.text, i.anchor.as_ref().map_or(&[], |a| a.terms()))
            }
            (None, None) => false,
        };
        if matches!(f.anchor, Some(Anchor::Since)) && starts_it {
            open.push(format!(
                "{} is when the rule's {} start, not the time taken",
                f.value.written, b.value.written
            ));
            continue;
        }
        let f = from_event.as_ref().unwrap_or(f);
        // A cap on a whole ("EUR 100 per trip", "in total") takes the amounts of the clause
        // together ("EUR 80 on the first day and another EUR 60 on the last").
        let total = (limit == Limit::AtMost)
            .then(|| summed(fact, f, b, &rule.text))
            .flatten();
        let f = total.as_ref().unwrap_or(f);
        // The event: before it, not after.
        if let (Some(Anchor::Before(_)), Some(Anchor::After(_))) = (&b.anchor, &f.anchor) {
            breaks.push(format!(
                "{} after the event, where the rule asks for {} before it",
                f.value.written, b.value.written
            ));
            continue;
        }
        // Two figures of the rule the value could be about ("EUR 50 for domestic trips and
        // EUR 60 for international trips") that tell different things, and its words do not
        // say which: it cannot be told.
        let rival = limits.iter().find(|o| {
            !std::ptr::eq(**o, *b)
                && can_pair(f, o)
                && o.context.intersection(&f.context).count() + 1 >= shared
                && o.binding == b.binding
                && f.value.keeps(limit, &o.value) != f.value.keeps(limit, &b.value)
        });
        if let Some(other) = rival {
            open.push(format!(
                "whether {} falls under {} or {}",
                f.value.written, b.value.written, other.value.written
            ));
            continue;
        }
        // Counted from another event than the rule's ("fifteen days after the statement"
        // against "within 20 days of returning"): within the figure says nothing of the
        // rule.
        let other_event = match (&f.anchor, &b.anchor) {
            // A time since the events told before, none of them the rule's.
            // A day said after the event before ("that evening") keeps its own count when
            // no event told is the rule's: the one before it is the likeliest.
            (Some(Anchor::Since), Some(r)) => {
                !r.terms().is_empty() && from_event.is_none() && positional.is_none()
            }
            (Some(a), Some(r)) => !same_event(a.terms(), r.terms()),
            // "within three business days of a reminder" against "acknowledge ... within 5
            // business days", counted from being told: an event the rule does not name.
            (Some(Anchor::After(t)), None) => {
                !t.is_empty() && !t.iter().any(|x| rule.words.contains(x))
            }
            _ => false,
        };
        if let Some(row) = other_case {
            open.push(format!(
                "whether the practice's case is the row's \"{}\" ({})",
                row.label, b.value.written
            ));
            continue;
        }
        // A period the rule states with no bound ("suspended for 3 months"): another one is
        // not shown to break it.
        // Counted from the rule's own event ("deleted a fortnight after the decision"
        // against "deleted 6 months after the recruitment decision"), another period is
        // not the rule's.
        let pinned = matches!(
            (&f.anchor, &b.anchor),
            (Some(Anchor::After(_)), Some(Anchor::After(_)))
        ) && !other_event;
        let period = limit == Limit::Exactly && b.value.calendar_days().is_some() && !pinned;
        match f.value.keeps(limit, &b.value) {
            // A value vouches for a rule only when its words say it is about what the rule's
            // figure is about.
            Some(true) if shared == 0 && !does_the_act => open.push(format!(
                "whether {} is what the rule's {} is about",
                f.value.written, b.value.written
            )),
            Some(true) if other_event => open.push(format!(
                "{} is counted from another event than the rule's {}",
                f.value.written, b.value.written
            )),
            Some(true) => meets.push(format!(
                "{} (the rule: {})",
                f.value.written, b.value.written
            )),
            // Sooner than a period from the rule's own event: a deadline ("deleted 30 days
            // after the end of the period") or the period itself ("deleted 6 months after
            // the decision"): the rule's words do not tell which.
            Some(false)
                if limit == Limit::Exactly
                    && pinned
                    && f.value.keeps(Limit::AtMost, &b.value) == Some(true) =>
            {
                open.push(format!(
                    "whether {} is soon enough or earlier than the {} the rule states",
                    f.value.written, b.value.written
                ))
            }
            Some(false) if period => open.push(format!(
                "whether {} keeps to the {} the rule states",
                f.value.written, b.value.written
            )),
            Some(false) => breaks.push(match limit {
                _ if b.value.frequency => format!(
                    "{} is less often than the rule's {}",
                    f.value.written, b.value.written
                ),
                Limit::AtMost => format!(
                    "{} is more than the {} allowed",
                    f.value.written, b.value.written
                ),
                Limit::AtLeast => format!(
                    "{} is less than the {} required",
                    f.value.written, b.value.written
                ),
                Limit::Exactly => format!(
                    "{} where the rule says {}",
                    f.value.written, b.value.written
                ),
            }),
            None => open.push(format!(
                "{} could be either side of {}",
                f.value.written, b.value.written
            )),
        }
    }
    // A rule whose figures the fact states but another rule takes ("other vendors every
    // 24 months" beside "critical vendors every 12 months") is not the fact's rule.
    let taken_elsewhere = paired == 0
        && !limits.is_empty()
        && fact
            .reading
            .bounds
            .iter()
            .any(|f| limits.iter().any(|b| can_pair(f, b)));
    if taken_elsewhere && rule.reading.roles.is_empty() {
        return None;
    }
    for (b, shared) in unpaired {
        if paired == 0 || shared >= best_shared {
            open.push(format!(
                "the practice does not state the {} the rule sets",
                b.value.written
            ));
            continue;
        }
        // Another figure of the rule the practice states elsewhere, short of it ("at least
        // 5 client files and one observed meeting", with "one observed meeting" here and
        // "four of his client files" in another clause): the rule is not shown met.
        let Binding::Limit(limit) = b.binding else {
            continue;
        };
        let short = practice
            .iter()
            .filter(|f| !std::ptr::eq(**f, fact))
            .flat_map(|f| f.reading.bounds.iter())
            .filter(|x| can_pair(x, b) && x.value.calendar_days().is_none())
            .find(|x| x.value.keeps(limit, &b.value) != Some(true));
        if let Some(x) = short {
            open.push(format!(
                "whether {} elsewhere in the practice keeps to the {} the rule also sets",
                x.value.written, b.value.written
            ));
        }
    }

    // Before an event, with no figure: "approved in advance", "before onboarding".
    if rule.reading.before.is_some() && limits.is_empty() {
        before_the_event(rule, fact, &mut breaks, &mut open);
    }

    // Roles. Whoever the rule says must be told, named as told in the fact's sentence:
    // the fact is of the act the rule asks for, whatever its verb ("forwarded the email to
    // Corporate Communications" against "passed to Corporate Communications").
    // "No more than 15 people ... without the approval of the Head of Compliance": the
    // approval is the way past the limit, asked for only when the limit is passed.
    let limits_kept = breaks.len() == breaks_before && meets.len() > meets_before;
    let recipient_named = check_roles(
        rule,
        fact,
        scope,
        limits_kept,
        &mut breaks,
        &mut meets,
        &mut open,
    );

    // Who acted for whom: one member for the body, a stand-in for the one they stand in
    // for.
    acting_for(fact, scope, &rule.text, &mut breaks, &mut open);

    // A form the rule asks for ("approved in writing"): said otherwise, broken; not said,
    // open.
    if !fact.reading.negated && (!meets.is_empty() || breaks.is_empty()) {
        match form::in_writing(&rule.text, fact, scope) {
            Some(form::Said::Spoken) => breaks
                .push("given by word of mouth, where the rule asks for it in writing".to_string()),
            Some(form::Said::Nothing) if !meets.is_empty() => {
                open.push("whether it was in writing, as the rule asks".to_string())
            }
            _ => {}
        }
    }

    // A rule with no value or role to compare: the practice does what it requires, or
    // says it is not done, or does what it forbids.
    if breaks.is_empty() && meets.is_empty() && open.is_empty() {
        let does = !rule.actions.is_empty() && rule.actions.iter().all(|a| fact.terms.contains(a));
        // Doing one of the things a rule forbids is enough ("given access to client money,
        // payment systems or privileged IT accounts": given access to the payment system).
        let does_one = rule.actions.first().is_some_and(|v| fact.terms.contains(v))
            && (rule.actions.len() == 1
                || rule.actions[1..].iter().any(|a| fact.terms.contains(a)));
        let restated = coverage.of_rule;
        // The fact speaks of nothing but what the rule speaks of: said not done, the rule
        // is broken; said done, it is met when the fact also says enough of the rule.
        let wholly = coverage.of_fact >= WHOLLY;
        let restates = wholly && restated >= SPEAKS;
        match rule.reading.modality {
            Modality::Must if fact.reading.negated && (does || restated >= SPEAKS || wholly) => {
                breaks.push("the practice says this is not done".to_string())
            }
            Modality::MustNot
                if !fact.reading.negated && (does || does_one || restated >= 0.5 || restates) =>
            {
                breaks.push("the practice does what the rule forbids".to_string())
            }
            Modality::MustNot if fact.reading.negated && (restated >= RESTATED || restates) => {
                meets.push("the practice says it is not done".to_string())
            }
            Modality::Must | Modality::States
                if !fact.reading.negated && (does || restated >= RESTATED || restates) =>
            {
                meets.push("the practice does what the rule requires".to_string())
            }
            _ if score >= APPLIES => open.push(
                "the practice touches this rule but states nothing to check it against".to_string(),
            ),
            _ => return None,
        }
    }
    // A condition in words the rule does not quantify ("below the Audit Committee
    // threshold") cannot be checked: such a rule is never met for sure.
    if !meets.is_empty() && condition_in_words(&rule.text) {
        open.push("the rule applies only under a condition it does not quantify".to_string());
    }
    // A fact that meets a rule's figures but says nothing of what the rule requires be
    // done ("returned the gift two days after receipt" against "record a gift within 3
    // business days") may be about something else: not verifiable. A quantity said with
    // two or more of the words of the rule's ("five market scenarios" against "at least 4
    // market scenarios", "our CET1 ratio stands at five percent") is of the same thing.
    let restates = coverage.of_fact >= WHOLLY && coverage.of_rule >= SPEAKS;
    let same_thing = quantity_shared >= SAME_THING;
    if !meets.is_empty()
        && breaks.is_empty()
        && !rule.actions.is_empty()
        && !restates
        && !same_thing
    {
        // Said of the fact's own clause (or the one whose subject it goes on with): a
        // figure beside another act of the same sentence is that act's.
        let said: HashSet<&String> = fact.terms.iter().chain(&fact.carried).collect();
        if !rule.actions.iter().any(|a| said.contains(a)) && !recipient_named {
            open.push("the practice does not say it does what the rule requires".to_string());
        }
    }
    // A rule the fact is not most about, with none of its values and nothing decisive, is
    // not worth a finding of its own.
    if !primary && mine.is_empty() && breaks.is_empty() {
        return None;
    }
    // A second act the rule joins to the first ("must be approved by the Head of
    // Compliance Operations and recorded in the exceptions register"): the practice must
    // say it too, in the words of the act or of where it puts the thing ("the error was
    // logged" for "recorded in the error log").
    if !meets.is_empty() && breaks.is_empty() {
        let said: HashSet<String> = scope
            .iter()
            .filter(|f| f.sentence == fact.sentence)
            .flat_map(|f| f.terms.iter().chain(&f.carried).cloned())
            .collect();
        for (act, object) in form::joined_acts(&rule.text) {
            let placed = !object.is_empty()
                && scope.iter().any(|f| {
                    !f.reading.negated && !f.uncertain && object.iter().all(|t| f.terms.contains(t))
                });
            if !said.contains(&crate::vocabulary::term(&act)) && !placed {
                open.push(format!("whether it was also {act}, as the rule asks"));
            }
        }
    }
    // A case the clause takes out of the rule, which the practice may be.
    if !meets.is_empty() && breaks.is_empty() {
        if let Some(exclusion) = conditions::excluded_case(rule, practice) {
            open.push(format!(
                "whether the practice is a case the clause excludes (\"{exclusion}\")"
            ));
        }
    }
    // "Meets" only of the rule the fact is most about, or of one whose value the fact
    // states: anything else the fact touches it cannot vouch for.
    // A practice that tells what the rule asks, or says the record is silent, is no
    // evidence it was done.
    if !meets.is_empty() && breaks.is_empty() && (fact.restates || fact.uncertain) {
        open.push(if fact.uncertain {
            "the practice says the record does not show it".to_string()
        } else {
            "the practice tells what the rule asks, not that it was done".to_string()
        });
    }
    let vouched = primary || !mine.is_empty();
    let verdict = if !breaks.is_empty() {
        Verdict::Breaks
    } else if !open.is_empty() || meets.is_empty() || !vouched {
        Verdict::NotVerifiable
    } else {
        Verdict::Meets
    };
    let why = match verdict {
        Verdict::Breaks => breaks,
        Verdict::Meets => meets,
        Verdict::NotVerifiable => {
            let mut w = open;
            w.extend(meets);
            w
        }
    };
    Some(Finding {
        verdict,
        rule: index,
        fact,
        why,
    })
}

/// Whether a rule states a condition as a comparison with no figure ("below the
/// threshold", "above the limit").
pub(super) fn condition_in_words(text: &str) -> bool {
    let lower = text.to_lowercase();
    [
        "below the ",
        "above the ",
        "under the ",
        "over the ",
        "exceeding the ",
        "beyond the ",
    ]
    .iter()
    .any(|w| lower.contains(w))
        && !rules::read(text)
            .bounds
            .iter()
            .any(|b| matches!(b.binding, Binding::Applies { .. }))
}
