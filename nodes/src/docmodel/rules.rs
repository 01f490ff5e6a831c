//! What a sentence of compliance text requires, read without a model: its modality (must,
//! must not, may), each of its values with what it binds (a limit the action must keep:
//! "within 5 business days" is at most, "at least 10 days before the trade" at least; or
//! a condition that says when the rule applies: "transactions above EUR 25,000 must be
//! approved"), the event a duration counts from or up to ("of receipt", "before the
//! trade"), and the roles it names: who approves, who must be told, who acts.
//!
//! The same reading serves the documents' rules and the facts of a practice an audit
//! checks ([`super::facts`]), so both are compared in one vocabulary.

use std::collections::HashSet;

use super::values::{self, Limit, Value, Word};
use crate::text::terms;

/// What a rule does with an action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Modality {
    /// "must", "shall", "is required", "requires".
    Must,
    /// "must not", "may not", "shall not", "is prohibited".
    MustNot,
    /// "may", "can", "is permitted".
    May,
    /// A statement of fact or of how things are done ("Entries are retained for 7 years").
    States,
}

/// How a value binds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Binding {
    /// A limit the action keeps.
    Limit(Limit),
    /// A condition for the rule to apply: the rule applies above the value (`true`) or
    /// below it (`false`).
    Applies { above: bool },
}

/// The event a duration counts from or up to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Anchor {
    /// "... after / of / from / following <event>".
    After(Vec<String>),
    /// "... before / prior to / ahead of <event>".
    Before(Vec<String>),
    /// The time since the events a practice told before, from when it says they happened
    /// (see `super::timeline`).
    Since,
}

impl Anchor {
    /// The event's terms.
    pub(crate) fn terms(&self) -> &[String] {
        match self {
            Anchor::After(t) | Anchor::Before(t) => t,
            Anchor::Since => &[],
        }
    }

    /// Whether it counts up to the event (before it).
    pub(crate) fn before(&self) -> bool {
        matches!(self, Anchor::Before(_))
    }
}

/// A value of a rule and how it binds.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Bound {
    /// The value.
    pub(crate) value: Value,
    /// A limit or a condition.
    pub(crate) binding: Binding,
    /// The event it counts from or up to, for durations.
    pub(crate) anchor: Option<Anchor>,
    /// The terms of the words near it (what it is about: "hotel night London").
    pub(crate) context: HashSet<String>,
}

/// What a role does in a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RoleKind {
    /// Approves, signs off, authorises.
    Approves,
    /// Is told: notified, informed, reported or declared to.
    Told,
}

/// A role a sentence names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Role {
    /// Who, as written ("the Head of Compliance", "senior management").
    pub(crate) who: String,
    /// What they do.
    pub(crate) kind: RoleKind,
    /// The sentence says it does not happen ("without senior management approval", "nobody
    /// told the client").
    pub(crate) negated: bool,
}

/// A sentence read as a rule (or as a fact of a practice).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Reading {
    pub(crate) modality: Modality,
    pub(crate) bounds: Vec<Bound>,
    pub(crate) roles: Vec<Role>,
    /// It must happen before an event, with no figure ("approved in advance", "before
    /// onboarding"): the event's terms (empty for "in advance").
    pub(crate) before: Option<Vec<String>>,
    /// The sentence denies its action ("was not", "never", "nobody", "without").
    pub(crate) negated: bool,
}

impl Reading {
    /// Whether the sentence says anything a check can use: a value, a role, a modality.
    pub(crate) fn is_rule(&self) -> bool {
        self.modality != Modality::States || !self.bounds.is_empty() || !self.roles.is_empty()
    }
}

const MUST: [&str; 12] = [
    "must",
    "shall",
    "required",
    "requires",
    "require",
    "mandatory",
    "needs",
    "need",
    "obliged",
    "has",
    "have",
    "will",
];
const MAY: [&str; 4] = ["may", "can", "permitted", "allowed"];
pub(crate) const NEGATIONS: [&str; 19] = [
    "not",
    "never",
    "no",
    "nobody",
    "none",
    "without",
    "n't",
    "neither",
    "nor",
    "nothing",
    "forgot",
    "failed",
    "fails",
    "omitted",
    "neglected",
    "skipped",
    "missed",
    "ignored",
    "refused",
];
/// Words that open a condition: a value inside one says when the rule applies.
const CONDITION_OPENERS: [&str; 8] = [
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

/// Who a role noun phrase may end with.
const ROLE_NOUNS: [&str; 34] = [
    "manager",
    "management",
    "officer",
    "committee",
    "board",
    "team",
    "department",
    "head",
    "director",
    "directors",
    "owner",
    "compliance",
    "supervisor",
    "regulator",
    "authority",
    "partner",
    "lead",
    "leader",
    "desk",
    "hr",
    "finance",
    "legal",
    "audit",
    "ciso",
    "cfo",
    "ceo",
    "coo",
    "dpo",
    "mlro",
    "controller",
    "secretary",
    "executive",
    "client",
    "customer",
];

/// Words that end a role's name when reading it forwards.
const NAME_ENDS: [&str; 36] = [
    "and", "or", "before", "after", "within", "if", "when", "for", "unless", "to", "in", "on",
    "at", "is", "are", "must", "will", "was", "who", "which", "that", "of", "the", "a", "an",
    "their", "his", "her", "its", "our", "your", "this", "these", "those", "any", "all",
];

/// Reads a sentence.
pub(crate) fn read(sentence: &str) -> Reading {
    let ws = values::words(sentence);
    let found = values::values(sentence);
    // "in May": the month, not the modal verb.
    let lower: Vec<&str> = ws
        .iter()
        .map(|w| {
            if w.text == "may" && w.span.start > 0 && sentence[w.span.clone()].starts_with('M') {
                "may_month"
            } else {
                w.text.as_str()
            }
        })
        .collect();
    let modal_at = lower
        .iter()
        .position(|w| MUST.contains(w) || MAY.contains(w));
    let negated = lower.iter().any(|w| NEGATIONS.contains(w)) || sentence.contains("n't ");
    let mut modality = modality(&lower);
    if modality == Modality::States {
        let text = format!(" {} ", lower.join(" "));
        let optional = [
            " where possible ",
            " if possible ",
            " when feasible ",
            " if feasible ",
            " when convenient ",
            " at our discretion ",
            " if practical ",
        ];
        if optional.iter().any(|o| text.contains(o)) {
            modality = Modality::May;
        }
    }
    let mut bounds = Vec::new();
    // Where each value starts and ends (word indices), to keep each one's words to itself.
    let spans: Vec<(usize, usize)> = found
        .iter()
        .filter_map(|v| {
            let a = ws.iter().position(|w| w.span.start >= v.span.start)?;
            let b = ws
                .iter()
                .rposition(|w| w.span.end <= v.span.end)
                .map_or(a + 1, |e| e + 1);
            Some((a, b.max(a + 1)))
        })
        .collect();
    for v in found {
        let Some(start) = ws.iter().position(|w| w.span.start >= v.span.start) else {
            continue;
        };
        let end = ws
            .iter()
            .rposition(|w| w.span.end <= v.span.end)
            .map_or(start + 1, |e| e + 1)
            .max(start + 1);
        // "suppliers whose expected annual spend exceeds £25,000": a frequency in a
        // condition says what is measured, not how often anything is done.
        let adjective = !v.written.contains(' ')
            && lower.get(end).is_some_and(|n| {
                n.chars().all(char::is_alphabetic) && !crate::text::is_stopword(n)
            });
        let opener = lower[..start]
            .iter()
            .rposition(|w| CONDITION_OPENERS.contains(w))
            .map(|c| lower[c]);
        if v.frequency
            && adjective
            && opener.is_some_and(|o| o != "for")
            && in_condition(&lower, start, modal_at)
        {
            continue;
        }
        // The comparator before a value is its own, not past the value before it
        // ("exceeds GBP 50,000, 40% of it is deferred": the 40% has none).
        let after_value = spans
            .iter()
            .filter(|(_, b)| *b <= start)
            .map(|(_, b)| *b)
            .max()
            .unwrap_or(0);
        let mut binding = binding(&lower, start, after_value, modal_at, &v);
        // "every item of GBP 10 or more": which things the rule is about; "complete 20
        // hours or more": at least that.
        let after = (
            lower.get(end).copied().unwrap_or(""),
            lower.get(end + 1).copied().unwrap_or(""),
        );
        let trailing = match after {
            ("or" | "and", "more" | "above" | "over" | "higher" | "greater") => Some(true),
            ("or" | "and", "less" | "fewer" | "below" | "under" | "lower") => Some(false),
            _ => None,
        };
        if let Some(above) = trailing {
            let of_a_thing = start >= 2
                && lower[start - 1] == "of"
                && !matches!(
                    lower[start - 2],
                    "minimum" | "maximum" | "total" | "limit" | "cap" | "period" | "rate" | "ratio"
                );
            binding = if of_a_thing || in_condition(&lower, start, modal_at) {
                Binding::Applies { above }
            } else {
                Binding::Limit(if above { Limit::AtLeast } else { Limit::AtMost })
            };
        }
        // "ran for 75 days before due diligence was complete": how long something lasted
        // until the event, not notice given ahead of it.
        let lasted = start > 0 && lower[start - 1] == "for";
        let anchor = anchor(&ws, end).filter(|a| !(lasted && a.before()));
        // "no later than 10 days before the trade" is at least 10 days before it.
        let later_than = lower[start.saturating_sub(4)..start]
            .windows(2)
            .any(|p| p == ["later", "than"]);
        if binding == Binding::Limit(Limit::AtMost)
            && later_than
            && matches!(anchor, Some(Anchor::Before(_)))
        {
            binding = Binding::Limit(Limit::AtLeast);
        }
        // Its words: up to six on each side, not past another value, nor past a
        // conjunction that starts the next thing said ("calls for two years and emails for
        // three years": "emails" is the second value's).
        let prev_end = spans
            .iter()
            .filter(|(_, b)| *b <= start)
            .map(|(_, b)| *b)
            .max()
            .unwrap_or(0);
        let next_start = spans
            .iter()
            .filter(|(a, _)| *a >= end)
            .map(|(a, _)| *a)
            .min()
            .unwrap_or(ws.len());
        let mut lo = start.saturating_sub(6).max(prev_end);
        if let Some(k) = (lo..start)
            .rev()
            .find(|&k| matches!(lower[k], "and" | "or" | "but" | "while" | "whereas"))
        {
            if prev_end > 0 {
                lo = k + 1;
            }
        }
        let mut hi = (end + 6).min(next_start);
        if next_start < ws.len() {
            if let Some(k) =
                (end..hi).find(|&k| matches!(lower[k], "and" | "or" | "but" | "while" | "whereas"))
            {
                hi = k;
            }
        }
        let mut context: HashSet<String> = ws[lo.min(start)..hi.max(end)]
            .iter()
            .filter(|w| w.span.end <= v.span.start || w.span.start >= v.span.end)
            .flat_map(|w| terms(&w.text))
            .collect();
        // What a count counts is what it is about ("3 numbered copies": copies).
        context.extend(v.counted());
        bounds.push(Bound {
            value: v,
            binding,
            anchor,
            context,
        });
    }
    Reading {
        modality,
        bounds,
        roles: roles(sentence, &ws),
        before: before_without_figure(&lower),
        negated,
    }
}

fn modality(lower: &[&str]) -> Modality {
    for (i, w) in lower.iter().enumerate() {
        let next = lower.get(i + 1).copied().unwrap_or("");
        let after = lower.get(i + 2).copied().unwrap_or("");
        if matches!(*w, "must" | "shall" | "may" | "can" | "cannot") {
            if *w == "cannot" || next == "not" || next == "never" {
                return Modality::MustNot;
            }
            return if matches!(*w, "may" | "can") {
                Modality::May
            } else {
                Modality::Must
            };
        }
        if matches!(*w, "prohibited" | "forbidden" | "banned") {
            return Modality::MustNot;
        }
        if *w == "never" && i > 0 {
            return Modality::MustNot;
        }
        if matches!(
            *w,
            "required" | "requires" | "require" | "mandatory" | "obliged"
        ) || (*w == "is" && next == "to")
            || (matches!(*w, "has" | "have") && next == "to")
        {
            return Modality::Must;
        }
        if matches!(*w, "permitted" | "allowed") {
            return if i > 0 && lower[i - 1] == "not" {
                Modality::MustNot
            } else {
                Modality::May
            };
        }
        let _ = after;
    }
    Modality::States
}

/// Whether word `at` is in a condition clause ("where ...", "for suppliers whose ..."),
/// which runs to the modal verb.
fn in_condition(lower: &[&str], at: usize, modal_at: Option<usize>) -> bool {
    lower[..at]
        .iter()
        .rposition(|w| CONDITION_OPENERS.contains(w))
        .is_some_and(|c| modal_at.is_none_or(|m| m < c || m > at))
}

/// How the value at word `at` binds: a condition when it sits in a condition clause
/// ("where ... below 6 hours") or before the modal verb with a comparator ("transactions
/// above EUR 25,000 must"), a limit otherwise, its direction from the comparator or the
/// words before it.
fn binding(lower: &[&str], at: usize, from: usize, modal_at: Option<usize>, v: &Value) -> Binding {
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

/// The event a value at word `end` (the word after it) counts from or up to.
fn anchor(ws: &[Word], end: usize) -> Option<Anchor> {
    let word = |i: usize| ws.get(i).map(|w| w.text.as_str()).unwrap_or("");
    let (mut i, before) = match (word(end), word(end + 1)) {
        ("later" | "afterwards" | "afterward", _) => return Some(Anchor::After(Vec::new())),
        ("earlier" | "beforehand", _) => return Some(Anchor::Before(Vec::new())),
        ("before" | "ahead", _) => (end + 1, true),
        ("prior", "to") => (end + 2, true),
        ("in", "advance") => (end + 2, true),
        ("after" | "of" | "from" | "following" | "since", _) => (end + 1, false),
        _ => return None,
    };
    if before && word(i) == "of" {
        i += 1;
    }
    let event: Vec<String> = ws[i.min(ws.len())..]
        .iter()
        .take_while(|w| {
            !matches!(
                w.text.as_str(),
                "and" | "or" | "unless" | "if" | "where" | "when" | "must" | "shall"
            )
        })
        .take(6)
        .flat_map(|w| terms(&w.text))
        .collect();
    Some(if before {
        Anchor::Before(event)
    } else {
        Anchor::After(event)
    })
}

/// "in advance", "before onboarding", "prior to the trade" with no figure before them.
fn before_without_figure(lower: &[&str]) -> Option<Vec<String>> {
    for (i, w) in lower.iter().enumerate() {
        let prev = i.checked_sub(1).map(|k| lower[k]).unwrap_or("");
        // "3 days prior", "two weeks before": a figure's, not "requires prior approval".
        let prev_is_unit = matches!(
            prev.trim_end_matches('s'),
            "minute" | "hour" | "day" | "week" | "fortnight" | "month" | "quarter" | "year"
        );
        if prev_is_unit {
            continue;
        }
        let event = |from: usize| -> Vec<String> {
            lower[from.min(lower.len())..]
                .iter()
                .take_while(|w| !matches!(**w, "and" | "or" | "unless"))
                .take(5)
                .flat_map(|w| terms(w))
                .collect()
        };
        match (*w, lower.get(i + 1).copied()) {
            ("in", Some("advance")) | ("beforehand", _) => return Some(Vec::new()),
            ("prior", Some("to")) => return Some(event(i + 2)),
            ("prior", _) if matches!(lower.get(i + 1), Some(&"approval") | Some(&"written")) => {
                return Some(Vec::new())
            }
            ("before", _) => return Some(event(i + 1)),
            _ => {}
        }
    }
    None
}

/// Where "by" follows an act, past the words that say how ("off", "in advance", "in
/// writing", "jointly"): at `from` or up to three words on.
fn by_after(lower: &[&str], from: usize) -> Option<usize> {
    (from..lower.len().min(from + 4))
        .take_while(|k| {
            matches!(
                lower[*k],
                "by" | "off"
                    | "in"
                    | "advance"
                    | "writing"
                    | "beforehand"
                    | "first"
                    | "also"
                    | "jointly"
                    | "separately"
                    | "personally"
                    | "formally"
            )
        })
        .find(|k| lower[*k] == "by")
}

/// Whether a word can be part of a role's name.
fn namey(w: &str) -> bool {
    let first = w.chars().next();
    first.is_some_and(|c| c.is_uppercase())
        || ROLE_NOUNS.contains(&crate::text::singular(&w.to_lowercase()).as_str())
}

/// The roles a sentence names, each with what it does.
fn roles(sentence: &str, ws: &[Word]) -> Vec<Role> {
    let raw: Vec<&str> = ws.iter().map(|w| &sentence[w.span.clone()]).collect();
    let lower: Vec<&str> = ws.iter().map(|w| w.text.as_str()).collect();
    let mut out: Vec<Role> = Vec::new();
    let negated_near = |i: usize| {
        lower[i.saturating_sub(5)..i].iter().any(|w| {
            matches!(
                *w,
                "without"
                    | "no"
                    | "not"
                    | "never"
                    | "nobody"
                    | "n't"
                    | "forgot"
                    | "failed"
                    | "omitted"
                    | "neglected"
                    | "skipped"
                    | "refused"
            )
        }) || lower.get(i + 1).is_some_and(|w| *w == "never")
    };
    fn add(out: &mut Vec<Role>, who: String, kind: RoleKind, negated: bool) {
        let who = who.trim().to_string();
        if who.is_empty() || terms(&who).is_empty() {
            return;
        }
        if !out
            .iter()
            .any(|r| r.who.eq_ignore_ascii_case(&who) && r.kind == kind)
        {
            out.push(Role { who, kind, negated });
        }
    }
    // A name read forwards from word `j`: "the Head of Compliance", "senior management".
    let forward = |j: usize| -> String {
        let mut k = j;
        while k < lower.len()
            && matches!(
                lower[k],
                "the"
                    | "a"
                    | "an"
                    | "their"
                    | "his"
                    | "her"
                    | "its"
                    | "our"
                    | "your"
                    | "both"
                    | "any"
                    | "some"
                    | "every"
                    | "each"
            )
        {
            k += 1;
        }
        let mut name = Vec::new();
        // "a member of the Executive Committee": one of a body, named with it.
        if matches!(lower.get(k), Some(&("member" | "members"))) && lower.get(k + 1) == Some(&"of")
        {
            name.extend([raw[k], raw[k + 1]]);
            k += 2;
            if matches!(lower.get(k), Some(&("the" | "our" | "its" | "their"))) {
                name.push(raw[k]);
                k += 1;
            }
        }
        while k < raw.len() && name.len() < 9 {
            let w = raw[k];
            // "the traveller's line manager": a possessive is part of who is meant.
            let l = lower[k].trim_end_matches("'s");
            let role_follows = k + 1 < raw.len()
                && (namey(raw[k + 1])
                    || lower
                        .get(k + 2)
                        .is_some_and(|n| ROLE_NOUNS.contains(&crate::text::singular(n).as_str())));
            if lower[k].ends_with("'s") && role_follows {
                name.push(w);
                k += 1;
                continue;
            }
            let joins = matches!(l, "of" | "and" | "&")
                && k + 1 < raw.len()
                && namey(raw[k + 1])
                && !name.is_empty();
            if joins
                || (namey(w) && !NAME_ENDS.contains(&l))
                || ((name.is_empty() || name.last().is_some_and(|n| n.ends_with("'s")))
                    && l.chars().all(char::is_alphabetic)
                    && lower
                        .get(k + 1)
                        .is_some_and(|n| ROLE_NOUNS.contains(&crate::text::singular(n).as_str())))
            {
                name.push(w);
                k += 1;
            } else {
                break;
            }
        }
        name.join(" ")
    };
    // A name read backwards from word `j` (exclusive): "senior management approval".
    let backward = |j: usize| -> String {
        // "the Head of Compliance then approved": past a word that says when or how.
        let mut k = if j > 1
            && matches!(
                lower[j - 1],
                "then"
                    | "later"
                    | "subsequently"
                    | "finally"
                    | "eventually"
                    | "also"
                    | "duly"
                    | "formally"
                    | "personally"
                    | "promptly"
                    | "immediately"
            )
            && namey(raw[j - 2])
        {
            j - 1
        } else {
            j
        };
        let mut name = Vec::new();
        while k > 0 && name.len() < 4 {
            let w = raw[k - 1];
            let l = lower[k - 1];
            if namey(w) && !NAME_ENDS.contains(&l)
                || (l.chars().all(char::is_alphabetic)
                    && !name.is_empty()
                    && name.len() < 2
                    && matches!(
                        l,
                        "senior" | "line" | "executive" | "risk" | "audit" | "general"
                    ))
            {
                name.insert(0, w);
                k -= 1;
            } else {
                break;
            }
        }
        // "the Head of Compliance Operations approved": the head, not the function.
        if !name.is_empty() && k >= 2 && lower[k - 1] == "of" && namey(raw[k - 2]) {
            let mut from = k - 2;
            while from > 0 && namey(raw[from - 1]) && k - from < 4 {
                from -= 1;
            }
            name.splice(0..0, raw[from..k].iter().copied());
            k = from;
        }
        // "a member of the Executive Committee approved": one of the body.
        if !name.is_empty() {
            let the = usize::from(k >= 1 && matches!(lower[k - 1], "the" | "our" | "its"));
            if k >= 2 + the
                && lower[k - 1 - the] == "of"
                && matches!(lower[k - 2 - the], "member" | "members")
            {
                let from = k - 2 - the;
                name.splice(0..0, raw[from..k].iter().copied());
            }
        }
        name.join(" ")
    };
    for i in 0..lower.len() {
        let w = lower[i];
        let next = lower.get(i + 1).copied().unwrap_or("");
        match w {
            // "approved by X", "authorised by X", "signed off by X", "approved in advance
            // by X", "approved in writing by X".
            "approved" | "authorised" | "authorized" | "sanctioned" | "agreed" | "signed"
                if by_after(&lower, i + 1).is_some() =>
            {
                let j = by_after(&lower, i + 1).map_or(i + 2, |b| b + 1);
                add(&mut out, forward(j), RoleKind::Approves, negated_near(i));
            }
            // "... by her line manager and by a member of the Executive Committee", "and,
            // where the value exceeds £50,000, also by the Chief Financial Officer".
            "by" if i >= 1
                && matches!(lower[i - 1], "and" | "or" | "also")
                && out.last().is_some() =>
            {
                let kind = out.last().map_or(RoleKind::Approves, |r| r.kind);
                add(&mut out, forward(i + 1), kind, negated_near(i));
            }
            // "approval of X", "approval from X", "sign-off from X", "consent of X".
            "approval" | "authorisation" | "authorization" | "consent" | "sign" | "off"
                if matches!(next, "of" | "from" | "by") =>
            {
                add(
                    &mut out,
                    forward(i + 2),
                    RoleKind::Approves,
                    negated_near(i),
                );
            }
            // "X approval", "X's approval", "X sign-off".
            "approval" | "authorisation" | "authorization" | "consent" => {
                let name = backward(i);
                if !name.is_empty() {
                    let at = i.saturating_sub(name.split_whitespace().count());
                    add(&mut out, name, RoleKind::Approves, negated_near(at));
                }
            }
            // "X approves", "X approved the move", "X signed off the directorship".
            "approves" | "approve" | "approved" | "authorises" | "authorizes" | "signed"
            | "signs" => {
                let name = backward(i);
                if !name.is_empty() && !matches!(next, "by") {
                    let negated =
                        negated_near(i) || i > 0 && matches!(lower[i - 1], "not" | "never");
                    add(&mut out, name, RoleKind::Approves, negated);
                }
            }
            // "notify X", "inform X", "tell X", "told X": the person told follows.
            "notify" | "notifies" | "notified" | "inform" | "informs" | "informed" | "tell"
            | "tells" | "told" | "alert" | "alerted" | "contact" | "contacted" | "consult"
            | "consulted" | "warn" | "warned" | "rang" | "phoned"
                if next != "by" && next != "of" && next != "that" =>
            {
                let name = forward(i + 1);
                let negated = negated_near(i);
                if !name.is_empty() {
                    add(&mut out, name, RoleKind::Told, negated);
                } else if i > 0
                    && matches!(lower[i - 1], "was" | "were" | "be" | "been" | "is" | "are")
                {
                    // "the DPO was told": the person told comes before.
                    let name = backward(i - 1);
                    add(&mut out, name, RoleKind::Told, negated);
                }
            }
            // "the Specialist Support Team received the referral": told, by what it got.
            "received" | "receives" | "receive" | "got"
                if lower
                    .get(i + 1..(i + 4).min(lower.len()))
                    .is_some_and(|after| {
                        after.iter().any(|a| {
                            [
                                "referral",
                                "report",
                                "notification",
                                "notice",
                                "escalation",
                                "alert",
                                "disclosure",
                                "declaration",
                                "complaint",
                                "request",
                            ]
                            .iter()
                            .any(|n| a.trim_end_matches('s') == *n)
                        })
                    }) =>
            {
                let name = backward(i);
                if !name.is_empty() {
                    add(&mut out, name, RoleKind::Told, negated_near(i));
                }
            }
            // "it never went to the Audit Committee", "put to the Board": submitted to them.
            "went" | "go" | "goes" | "gone" | "put" | "taken" | "brought" | "presented"
            | "escalated"
                if next == "to" =>
            {
                let name = forward(i + 2);
                if name.split_whitespace().any(namey) {
                    let negated = negated_near(i + 1);
                    add(&mut out, name, RoleKind::Told, negated);
                }
            }
            // "report to X", "declare ... to X", "escalate to X", "send ... to X".
            "to" if i > 0 => {
                let verb = lower[..i].iter().rev().take(8).find(|v| {
                    [
                        "report", "declar", "escalat", "notif", "submit", "sent", "send", "refer",
                        "pass", "disclos", "provid", "forward", "return", "hand", "flag", "rais",
                        "email", "mail",
                    ]
                    .iter()
                    .any(|s| v.starts_with(s))
                });
                if let Some(verb) = verb {
                    let name = forward(i + 1);
                    if !name.is_empty() && name.split_whitespace().any(namey) {
                        let at = lower[..i].iter().rposition(|v| v == verb).unwrap_or(i);
                        add(&mut out, name, RoleKind::Told, negated_near(at + 1));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Words between a modal and the verb it governs ("must not be", "shall always").
const BEFORE_VERB: [&str; 16] = [
    "not",
    "never",
    "be",
    "been",
    "always",
    "also",
    "only",
    "first",
    "promptly",
    "immediately",
    "either",
    "both",
    "then",
    "to",
    "all",
    "still",
];

/// What a rule requires be done: the terms of the verb its modal governs and of the words
/// of its object ("must complete an initial declaration": complete, initial, declaration),
/// of verbs joined to it with their object ("and verify their identity": verify,
/// identity), or of the participle of a passive rule and what follows it ("are approved
/// by": approve).
pub(crate) fn actions(clause: &str) -> Vec<String> {
    let words: Vec<String> = clause
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let modal = words
        .iter()
        .position(|w| matches!(w.as_str(), "must" | "shall" | "should" | "will" | "cannot"))
        .or_else(|| {
            words
                .windows(2)
                .position(|p| {
                    matches!(
                        p[0].as_str(),
                        "required" | "needs" | "need" | "has" | "have" | "obliged"
                    ) && p[1] == "to"
                })
                .map(|i| i + 1)
        });
    let mut out = Vec::new();
    let push = |w: &str, out: &mut Vec<String>| {
        if let Some(t) = terms(w).into_iter().next() {
            if !out.contains(&t) {
                out.push(t);
            }
        }
    };
    // The verb at `v` and the content words of its object, up to a preposition.
    let phrase = |v: usize, out: &mut Vec<String>| {
        push(&words[v], out);
        for w in words[v + 1..].iter().take(4) {
            if OBJECT_ENDS.contains(&w.as_str()) || w.chars().all(|c| c.is_ascii_digit()) {
                break;
            }
            if !crate::text::is_stopword(w) && !BEFORE_VERB.contains(&w.as_str()) {
                push(w, out);
            }
        }
    };
    match modal {
        Some(m) => {
            if let Some(v) =
                (m + 1..words.len()).find(|&i| !BEFORE_VERB.contains(&words[i].as_str()))
            {
                phrase(v, &mut out);
            }
            for i in m + 1..words.len().saturating_sub(2) {
                if matches!(words[i].as_str(), "and" | "or")
                    && matches!(
                        words[i + 2].as_str(),
                        "the"
                            | "their"
                            | "its"
                            | "his"
                            | "her"
                            | "a"
                            | "an"
                            | "all"
                            | "every"
                            | "any"
                            | "it"
                            | "them"
                    )
                {
                    phrase(i + 1, &mut out);
                }
            }
        }
        None => {
            if let Some(v) = (1..words.len()).find(|&i| {
                matches!(words[i - 1].as_str(), "is" | "are" | "was" | "were")
                    && words[i].ends_with("ed")
            }) {
                phrase(v, &mut out);
            }
        }
    }
    out
}

/// Words that end a verb's object when reading its words.
const OBJECT_ENDS: [&str; 16] = [
    "within", "by", "before", "after", "to", "in", "on", "at", "for", "from", "of", "unless",
    "until", "where", "when", "if",
];

/// Whether two names are the same people: equal ignoring case and "the"; one the acronym of
/// the other ("DPO", "Data Protection Officer"); every word of the shorter in the longer
/// ("senior management", "Senior Management Committee"); or known synonyms ("boss" and
/// "line manager").
pub(crate) fn same_role(a: &str, b: &str) -> bool {
    // Whose it is ("the traveller's line manager", "the user's line manager") says no more
    // than the practice's "his line manager": the possessor is left out.
    let norm = |s: &str| -> Vec<String> {
        let words: Vec<&str> = s
            .split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '\u{2019}')
            .filter(|w| !w.is_empty())
            .collect();
        let last = words.len().saturating_sub(1);
        words
            .iter()
            .enumerate()
            .filter(|(i, w)| *i == last || !(w.ends_with("'s") || w.ends_with("\u{2019}s")))
            .map(|(_, w)| {
                w.trim_end_matches("'s")
                    .trim_end_matches("\u{2019}s")
                    .to_lowercase()
            })
            .filter(|w| {
                !matches!(
                    w.as_str(),
                    "the"
                        | "a"
                        | "an"
                        | "their"
                        | "his"
                        | "her"
                        | "our"
                        | "its"
                        | "your"
                        | "and"
                        | "member"
                        | "s"
                )
            })
            .map(|w| match w.as_str() {
                "boss" | "manager" => "manager".to_string(),
                other => crate::text::singular(other),
            })
            .collect()
    };
    let (x, y) = (norm(a), norm(b));
    if x.is_empty() || y.is_empty() {
        return false;
    }
    let acronym = |words: &[String]| -> String {
        words
            .iter()
            .filter(|w| w.as_str() != "of")
            .filter_map(|w| w.chars().next())
            .collect()
    };
    if (x.len() == 1 && y.len() > 1 && x[0] == acronym(&y))
        || (y.len() == 1 && x.len() > 1 && y[0] == acronym(&x))
    {
        return true;
    }
    // An acronym in brackets: "Money Laundering Reporting Officer (MLRO)".
    if x == y {
        return true;
    }
    let (short, long) = if x.len() <= y.len() {
        (&x, &y)
    } else {
        (&y, &x)
    };
    // The shorter is the longer without words that only qualify it ("manager" and "line
    // manager", "Board" and "Board of Directors"), not without its head ("Compliance" is not
    // the "Head of Compliance", a "director" not a "Managing Director").
    let long_set: HashSet<&String> = long.iter().collect();
    if !short
        .iter()
        .filter(|w| w.as_str() != "of")
        .all(|w| long_set.contains(w))
    {
        return false;
    }
    let head = |words: &[String]| -> String {
        words.iter().position(|w| w == "of").map_or_else(
            || words.last().cloned().unwrap_or_default(),
            |i| words[..i].last().cloned().unwrap_or_default(),
        )
    };
    let extra: Vec<&String> = long
        .iter()
        .filter(|w| !short.contains(w) && w.as_str() != "of")
        .collect();
    head(short) == head(long)
        && extra.iter().all(|w| {
            QUALIFIERS.contains(&w.as_str()) || w.as_str() == "director" && head(long) == "board"
        })
}

/// Words that only qualify who is meant ("line manager", "senior management").
const QUALIFIERS: [&str; 12] = [
    "line",
    "direct",
    "senior",
    "relevant",
    "responsible",
    "designated",
    "appointed",
    "own",
    "immediate",
    "business",
    "unit",
    "team",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(s: &str) -> (Binding, Option<Anchor>) {
        let r = read(s);
        assert_eq!(r.bounds.len(), 1, "{s}: {:?}", r.bounds);
        (r.bounds[0].binding, r.bounds[0].anchor.clone())
    }

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
    fn anchors_name_the_event() {
        let (_, a) = bound("Notify within 24 hours of its receipt.");
        assert_eq!(a, Some(Anchor::After(terms("its receipt"))));
        let (_, a) = bound("Book at least 10 business days before the trade.");
        assert!(a.unwrap().before());
        let (_, a) = bound("The engagement ran for 75 days before due diligence was complete.");
        assert_eq!(a, None);
    }

    #[test]
    fn modality() {
        assert_eq!(
            read("Staff must not accept cash.").modality,
            Modality::MustNot
        );
        assert_eq!(read("Taxis may be used at night.").modality, Modality::May);
        assert_eq!(
            read("Business class always requires the prior approval of the CFO.").modality,
            Modality::Must
        );
        assert_eq!(
            read("Entries are kept for 7 years.").modality,
            Modality::States
        );
        assert_eq!(
            read("Cash gifts are prohibited.").modality,
            Modality::MustNot
        );
    }

    #[test]
    fn roles_that_approve_or_are_told() {
        let who = |s: &str| {
            read(s)
                .roles
                .into_iter()
                .map(|r| (r.who, r.kind, r.negated))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            who("Such roles are approved by the Chief Executive Officer after review."),
            [(
                "Chief Executive Officer".to_string(),
                RoleKind::Approves,
                false
            )]
        );
        assert_eq!(
            who("A business relationship with a PEP requires senior management approval."),
            [("senior management".to_string(), RoleKind::Approves, false)]
        );
        assert_eq!(
            who("We fast-tracked it without senior management approval."),
            [("senior management".to_string(), RoleKind::Approves, true)]
        );
        assert_eq!(
            who("Transactions above EUR 500,000 also require the approval of the Board."),
            [("Board".to_string(), RoleKind::Approves, false)]
        );
        assert_eq!(
            who("Every trip must be approved in advance by the traveller's line manager."),
            [(
                "traveller's line manager".to_string(),
                RoleKind::Approves,
                false
            )]
        );
        assert_eq!(
            who("Trips outside Europe must also be approved by a member of the Executive Committee."),
            [(
                "member of the Executive Committee".to_string(),
                RoleKind::Approves,
                false
            )]
        );
        assert_eq!(
            who("A member of the Executive Committee approved the trip in writing before she booked."),
            [(
                "member of the Executive Committee".to_string(),
                RoleKind::Approves,
                false
            )]
        );
        assert_eq!(
            who("The COO signed off the directorship."),
            [("COO".to_string(), RoleKind::Approves, false)]
        );
        assert_eq!(
            who("Staff must declare any conflict to Compliance within 5 business days."),
            [("Compliance".to_string(), RoleKind::Told, false)]
        );
        assert_eq!(
            who("Nobody informed the clients."),
            [("clients".to_string(), RoleKind::Told, true)]
        );
        assert_eq!(
            who("The Data Protection Officer was told the following afternoon."),
            [("Data Protection Officer".to_string(), RoleKind::Told, false)]
        );
    }

    #[test]
    fn actions_are_the_verbs_a_rule_governs() {
        assert_eq!(
            actions("staff must identify every beneficial owner and verify their identity"),
            terms("identify beneficial owner verify identity")
        );
        assert_eq!(
            actions("Records must not be deleted until Legal lifts the hold"),
            terms("deleted")
        );
        assert_eq!(
            actions("Such roles are approved by the CEO"),
            terms("approved")
        );
        assert_eq!(
            actions("New joiners must complete an initial declaration within 30 days"),
            terms("complete initial declaration")
        );
    }

    #[test]
    fn the_same_people_by_name_acronym_or_common_words() {
        assert!(same_role("the Chief Operating Officer", "COO"));
        assert!(same_role("DPO", "Data Protection Officer"));
        assert!(same_role("senior management", "Senior Management"));
        assert!(same_role("her boss", "the line manager"));
        assert!(!same_role("Chief Financial Officer", "Head of Procurement"));
        assert!(!same_role("COO", "Chief Executive Officer"));
        assert!(!same_role("manager", "Complaints Quality Manager"));
        assert!(!same_role("Compliance", "Head of Compliance"));
        assert!(!same_role("a director", "a Managing Director"));
        assert!(same_role("the Board", "Board of Directors"));
        assert!(same_role("line manager", "traveller's line manager"));
        assert!(same_role("his line manager", "the user's line manager"));
        assert!(!same_role("the traveller", "traveller's line manager"));
    }

    #[test]
    fn a_team_that_received_the_referral_was_told() {
        let r = read("the Specialist Support Team received the referral three hours later");
        assert!(r
            .roles
            .iter()
            .any(|x| x.who == "Specialist Support Team" && x.kind == RoleKind::Told));
    }

    #[test]
    fn the_head_of_a_function_who_approved_is_the_head() {
        let r = read("In March the Head of Compliance Operations approved an exception.");
        assert!(r
            .roles
            .iter()
            .any(|x| x.who == "Head of Compliance Operations" && x.kind == RoleKind::Approves));
        let r = read("The Head of Financial Crime Compliance then approved the full engagement.");
        assert!(r
            .roles
            .iter()
            .any(|x| x.who.ends_with("Head of Financial Crime Compliance")
                && x.kind == RoleKind::Approves));
    }

    #[test]
    fn an_approver_added_under_a_condition_is_an_approver() {
        let r = read("It is approved by the Head of Procurement and, where the purchase value exceeds £50,000, also by the Chief Financial Officer.");
        assert!(r
            .roles
            .iter()
            .any(|x| x.who == "Chief Financial Officer" && x.kind == RoleKind::Approves));
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
}
