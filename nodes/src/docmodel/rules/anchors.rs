//! The event a duration of a rule counts from or up to: "within 24 hours of its receipt"
//! counts from the receipt, "at least 10 business days before the trade" up to the trade.
//! A rule may also say that something happens before an event without a figure
//! ("approved in advance", "before onboarding", "prior to the trade").

use crate::docmodel::values::Word;
use crate::text::terms;

/// The event a duration counts from or up to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Anchor {
    /// "... after / of / from / following <event>".
    After(Vec<String>),
    /// "... before / prior to / ahead of <event>".
    Before(Vec<String>),
    /// The time since the events a practice told before, from when it says they happened
    /// (see `crate::docmodel::timeline`).
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

/// The event a value at word `end` (the word after it) counts from or up to.
pub(super) fn anchor(ws: &[Word], end: usize) -> Option<Anchor> {
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
pub(super) fn before_without_figure(lower: &[&str]) -> Option<Vec<String>> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docmodel::rules::test_support::bound;

    #[test]
    fn anchors_name_the_event() {
        let (_, a) = bound("Notify within 24 hours of its receipt.");
        assert_eq!(a, Some(Anchor::After(terms("its receipt"))));
        let (_, a) = bound("Book at least 10 business days before the trade.");
        assert!(a.unwrap().before());
        let (_, a) = bound("The engagement ran for 75 days before due diligence was complete.");
        assert_eq!(a, None);
    }
}
