//! What a clause of compliance text says, read without a model: its figures with their
//! bounds ("within 72 hours" is at most, "at least five years" at least, "annually" an
//! interval of at most a year), who approves ("senior management approval", "approved by
//! the Board", and whether it is "without" that approval), when ("before onboarding",
//! "immediately"; or put off: "next quarter", "later"), and its modality (must / may /
//! must not, negations). The audit compares a statement's reading with a requirement's.

use std::collections::HashSet;

use super::quantities::{located, Quantity};
use crate::text::{name_terms, terms};

/// How a requirement's figure binds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    /// "within", "up to", "every": the figure is a maximum.
    AtMost,
    /// "at least", "minimum", "satisfy": the figure is a minimum.
    AtLeast,
    /// Anything else: the figure itself.
    Exactly,
}

/// A figure and what it binds, with the terms around it (to tell which of several
/// figures a statement speaks about).
#[derive(Clone, Debug)]
pub(crate) struct Figure {
    pub(crate) quantity: Quantity,
    pub(crate) bound: Bound,
    pub(crate) after: HashSet<String>,
    pub(crate) before: HashSet<String>,
}

/// Who approves, as written, and whether the text goes ahead without them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Approver {
    pub(crate) who: String,
    pub(crate) without: bool,
}

/// When it must happen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Timing {
    /// "before onboarding": the words after "before".
    Before(String),
    /// "immediately", "without delay".
    Immediately,
}

/// What one clause says.
#[derive(Clone, Debug, Default)]
pub(crate) struct Reading {
    pub(crate) figures: Vec<Figure>,
    pub(crate) approver: Option<Approver>,
    pub(crate) timing: Option<Timing>,
    /// Put off: "next quarter", "later", "after onboarding".
    pub(crate) deferred: Option<String>,
    /// "must", "shall", "required", ...
    pub(crate) mandatory: Option<&'static str>,
    /// "may", "can", "where possible", ...
    pub(crate) optional: Option<&'static str>,
    /// "must not", "shall not", ...
    pub(crate) prohibits: bool,
    /// "not", "never", "no", "without".
    pub(crate) negated: bool,
}

const AT_MOST: [&str; 9] = [
    "within",
    "up to",
    "at most",
    "no later than",
    "not later than",
    "not exceed",
    "maximum",
    "every",
    "each",
];
const AT_LEAST: [&str; 6] = [
    "at least",
    "minimum",
    "satisfy",
    "no less than",
    "not less than",
    "for at least",
];
const MANDATORY: [&str; 7] = [
    "must",
    "shall",
    "required",
    "requires",
    "require",
    "mandatory",
    "needs to",
];
const OPTIONAL: [&str; 10] = [
    "may",
    "can",
    "optional",
    "where possible",
    "if possible",
    "when feasible",
    "if feasible",
    "at our discretion",
    "should consider",
    "when convenient",
];
const PROHIBITS: [&str; 5] = ["must not", "shall not", "may not", "cannot", "must never"];
const NEGATIONS: [&str; 6] = ["not", "never", "no", "without", "n't", "none"];
const DEFERRALS: [&str; 10] = [
    "later",
    "afterwards",
    "eventually",
    "subsequently",
    "in due course",
    "next quarter",
    "next month",
    "next week",
    "next year",
    "after onboarding",
];
const IMMEDIATELY: [&str; 4] = [
    "immediately",
    "without delay",
    "without undue delay",
    "at once",
];
const APPROVAL: [&str; 5] = [
    "approval",
    "approvals",
    "sign-off",
    "authorisation",
    "authorization",
];
const APPROVED_BY: [&str; 6] = [
    "approved by",
    "authorised by",
    "authorized by",
    "signed off by",
    "approval of",
    "approval from",
];
/// Words that end a name ("the Board before ...").
const NAME_ENDS: [&str; 14] = [
    "and", "or", "before", "after", "within", "if", "when", "for", "unless", "to", "in", "on",
    "at", "is",
];
/// Words before "approval" that are not part of who approves.
const NOT_NAMES: [&str; 16] = [
    "requires", "require", "required", "with", "without", "the", "written", "prior", "any", "no",
    "their", "its", "our", "a", "an", "need",
];

/// The phrase of `list` the padded lower-case `text` contains, if any.
fn has(text: &str, list: &[&'static str]) -> Option<&'static str> {
    list.iter()
        .copied()
        .find(|w| text.contains(&format!(" {w} ")))
}

/// Lower case with spaces around, punctuation as spaces (so phrases match at word ends).
fn padded(text: &str) -> String {
    let spaced: String = text
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '\'' || c == '-' {
                c.to_ascii_lowercase()
            } else {
                ' '
            }
        })
        .collect();
    format!(
        " {} ",
        spaced.split_whitespace().collect::<Vec<_>>().join(" ")
    )
}

/// The clauses of a sentence, verbatim: cut at semicolons and at ", and", ", but", ", so",
/// ", while", ", whereas".
pub(crate) fn clauses(sentence: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = sentence.trim();
    loop {
        let cut = [";", ", and ", ", but ", ", so ", ", while ", ", whereas "]
            .iter()
            .filter_map(|sep| rest.find(sep).map(|i| (i, sep.len())))
            .min_by_key(|(i, _)| *i);
        match cut {
            Some((i, len)) => {
                push_clause(&mut out, &rest[..i]);
                rest = &rest[i + len..];
            }
            None => {
                push_clause(&mut out, rest);
                return out;
            }
        }
    }
}

fn push_clause(out: &mut Vec<String>, clause: &str) {
    let c = clause.trim().trim_end_matches([',', ';']).trim();
    if terms(c).len() >= 2 {
        out.push(c.to_string());
    } else if let Some(last) = out.last_mut() {
        // Too short to stand alone: it stays with the clause before it.
        last.push_str(", ");
        last.push_str(c);
    } else if !c.is_empty() {
        out.push(c.to_string());
    }
}

/// Reads a clause.
pub(crate) fn read(clause: &str) -> Reading {
    let text = padded(clause);
    let prohibits = has(&text, &PROHIBITS).is_some();
    Reading {
        figures: figures(clause),
        approver: approver(clause),
        timing: timing(clause, &text),
        deferred: has(&text, &DEFERRALS).map(str::to_string),
        mandatory: has(&text, &MANDATORY),
        optional: if prohibits {
            None
        } else {
            has(&text, &OPTIONAL)
        },
        prohibits,
        negated: has(&text, &NEGATIONS).is_some() || text.contains("n't "),
    }
}

fn figures(clause: &str) -> Vec<Figure> {
    let (words, found) = located(clause);
    let mut out = Vec::new();
    for (k, (i, quantity)) in found.iter().enumerate() {
        let start = if k == 0 { 0 } else { found[k - 1].0 + 1 };
        let end = found.get(k + 1).map_or(words.len(), |n| n.0);
        let window = words[i.saturating_sub(6).max(start)..*i].join(" ");
        let window = format!(" {window} ");
        let frequency = words.get(*i).is_some_and(|w| {
            w.ends_with("ly") || matches!(w.as_str(), "every" | "each" | "per" | "annual")
        });
        let bound = if frequency {
            Bound::AtMost
        } else {
            // The cue nearest the figure decides.
            let last = |list: &[&str]| {
                list.iter()
                    .filter_map(|c| window.rfind(&format!(" {c} ")))
                    .max()
            };
            match (last(&AT_MOST), last(&AT_LEAST)) {
                (Some(m), Some(l)) if l > m => Bound::AtLeast,
                (Some(_), _) => Bound::AtMost,
                (None, Some(_)) => Bound::AtLeast,
                (None, None) => Bound::Exactly,
            }
        };
        let after = terms(&words[(*i + 1).min(end)..end].join(" "));
        let before = terms(&words[start..*i].join(" "));
        out.push(Figure {
            quantity: *quantity,
            bound,
            after: after.into_iter().collect(),
            before: before.into_iter().collect(),
        });
    }
    out
}

/// Who approves: "approval of the X", "approved by the X", or "X approval".
fn approver(clause: &str) -> Option<Approver> {
    let words: Vec<&str> = clause
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '-'))
        .filter(|w| !w.is_empty())
        .collect();
    let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    let negated_near = |i: usize| {
        lower[i.saturating_sub(4)..i]
            .iter()
            .any(|w| matches!(w.as_str(), "without" | "no" | "not"))
    };
    for (i, pair) in lower.windows(2).enumerate() {
        let phrase = format!("{} {}", pair[0], pair[1]);
        if APPROVED_BY.contains(&phrase.as_str()) {
            let mut j = i + 2;
            if lower.get(j).map(String::as_str) == Some("the") {
                j += 1;
            }
            let name: Vec<&str> = words[j..]
                .iter()
                .zip(&lower[j..])
                .take_while(|(_, l)| !NAME_ENDS.contains(&l.as_str()))
                .take(6)
                .map(|(w, _)| *w)
                .collect();
            return Some(Approver {
                who: name.join(" "),
                without: negated_near(i + 1),
            });
        }
    }
    let at = lower.iter().position(|w| APPROVAL.contains(&w.as_str()))?;
    let mut start = at;
    while start > 0 && at - start < 3 && !NOT_NAMES.contains(&lower[start - 1].as_str()) {
        start -= 1;
    }
    Some(Approver {
        who: words[start..at].join(" "),
        without: negated_near(start),
    })
}

fn timing(clause: &str, text: &str) -> Option<Timing> {
    if has(text, &IMMEDIATELY).is_some() {
        return Some(Timing::Immediately);
    }
    let lower = clause.to_lowercase();
    for cue in ["before ", "prior to "] {
        if let Some(i) = lower.find(cue) {
            let rest: String = clause[i + cue.len()..]
                .split([',', ';', '.'])
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            return Some(Timing::Before(rest));
        }
    }
    None
}

/// Whether two approvers are the same people: every word of the shorter name is in the
/// longer one ("senior management" and "Senior Management"; not "the Board" and "the
/// Head of Procurement"). An empty name ("without approval") matches any.
pub(crate) fn same_approver(a: &str, b: &str) -> bool {
    let (a, b) = (name_terms(a), name_terms(b));
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    short.iter().all(|w| long.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clauses_cut_at_semicolons_and_joined_sentences() {
        assert_eq!(
            clauses("Critical vendors must be reassessed every 12 months; other vendors every 24 months."),
            ["Critical vendors must be reassessed every 12 months", "other vendors every 24 months."]
        );
        assert_eq!(
            clauses("The CEO is a minister's brother, so we fast-tracked it without senior management approval."),
            ["The CEO is a minister's brother", "we fast-tracked it without senior management approval."]
        );
    }

    #[test]
    fn figures_know_their_bounds() {
        let bounds = |t: &str| read(t).figures.iter().map(|f| f.bound).collect::<Vec<_>>();
        assert_eq!(bounds("must be notified within 72 hours"), [Bound::AtMost]);
        assert_eq!(bounds("retained for at least five years"), [Bound::AtLeast]);
        assert_eq!(bounds("retained for 5 years"), [Bound::Exactly]);
        assert_eq!(
            bounds("training at onboarding and annually thereafter"),
            [Bound::AtMost]
        );
        assert_eq!(
            bounds("shall at all times satisfy a ratio of 4.5%"),
            [Bound::AtLeast]
        );
        assert_eq!(
            bounds("may work from home up to three days a week"),
            [Bound::AtMost]
        );
    }

    #[test]
    fn approvers_and_whether_they_were_skipped() {
        let who = |t: &str| read(t).approver;
        assert_eq!(
            who("A business relationship with a PEP requires senior management approval"),
            Some(Approver {
                who: "senior management".into(),
                without: false
            })
        );
        assert_eq!(
            who("we fast-tracked it without senior management approval."),
            Some(Approver {
                who: "senior management".into(),
                without: true
            })
        );
        assert_eq!(
            who("Deletion may only be postponed with the written approval of the Data Protection Officer."),
            Some(Approver { who: "Data Protection Officer".into(), without: false })
        );
        assert_eq!(
            who("Contracts above EUR 250,000 are approved by the Head of Procurement."),
            Some(Approver {
                who: "Head of Procurement".into(),
                without: false
            })
        );
        assert!(same_approver("senior management", "Senior Management"));
        assert!(!same_approver(
            "Chief Financial Officer",
            "Head of Procurement"
        ));
    }

    #[test]
    fn timing_deferral_and_modality() {
        let r = read("the source of funds must be established before onboarding");
        assert_eq!(r.timing, Some(Timing::Before("onboarding".into())));
        assert_eq!(r.mandatory, Some("must"));
        let s = read("We will collect the source of funds next quarter.");
        assert_eq!(s.deferred.as_deref(), Some("next quarter"));
        let s = read("the vendor may keep our data for 90 days");
        assert_eq!(s.optional, Some("may"));
        assert!(read("Printed customer documents must not be taken home.").prohibits);
        assert!(read("We do not screen customers.").negated);
    }
}
