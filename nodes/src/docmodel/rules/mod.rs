//! What a sentence of compliance text requires, read without a model: its modality (must,
//! must not, may), each of its values with what it binds (a limit the action must keep:
//! "within 5 business days" is at most, "at least 10 days before the trade" at least; or
//! a condition that says when the rule applies: "transactions above EUR 25,000 must be
//! approved"), the event a duration counts from or up to ("of receipt", "before the
//! trade"), and the roles it names: who approves, who must be told, who acts.
//!
//! The same reading serves the documents' rules and the facts of a practice an audit
//! checks ([`super::facts`]), so both are compared in one vocabulary.
//!
//! [`read`] reads a sentence into a [`Reading`]; each part of the reading is read in a
//! module of its own:
//!
//! - [`modality`](mod@modality): must, must not, may, or a statement;
//! - [`bindings`]: whether each value is a limit the action keeps (and which way) or a
//!   condition for the rule to apply;
//! - [`anchors`]: the event a duration counts from or up to, and "before" an event with no
//!   figure;
//! - [`roles`](mod@roles): who approves and who is told, and whether two names are the
//!   same people;
//! - [`actions`](mod@actions): what a rule requires be done.

use std::collections::HashSet;

use super::values::{self, Limit, Value};
use crate::text::terms;

mod actions;
mod anchors;
mod bindings;
mod modality;
mod roles;
mod same_role;

pub(crate) use actions::actions;
pub(crate) use anchors::Anchor;
pub(crate) use bindings::Binding;
pub(crate) use modality::Modality;
pub(crate) use roles::{Role, RoleKind};
pub(crate) use same_role::same_role;

use anchors::{anchor, before_without_figure};
use bindings::{binding, in_condition, CONDITION_OPENERS};
use modality::{modality, MAY, MUST};
use roles::roles;

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

/// What the submodules' tests share.
#[cfg(test)]
mod test_support {
    use super::{read, Anchor, Binding};

    /// How the one value of a sentence binds, and the event it counts from or up to.
    pub(super) fn bound(s: &str) -> (Binding, Option<Anchor>) {
        let r = read(s);
        assert_eq!(r.bounds.len(), 1, "{s}: {:?}", r.bounds);
        (r.bounds[0].binding, r.bounds[0].anchor.clone())
    }
}
