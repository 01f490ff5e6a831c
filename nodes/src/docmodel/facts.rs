//! A described practice read as facts, for an audit: its sentences cut into clauses ("...
//! in economy, and submitted the claim five weeks later"), each read like a rule
//! ([`super::rules::read`]): its values with the events they count from ("a week and a half
//! after the purchase", "a month ahead of the launch", "the next working day"), the roles
//! it names (who approved, who was told), and whether it says something did not happen
//! ("nobody informed the clients", "no approval was sought").

use super::rules::{self, Anchor, Binding, Bound, Reading};
use super::values::{Limit, Unit, Value};
use crate::text::{sentences, terms};

/// One clause of a practice.
#[derive(Clone, Debug)]
pub(crate) struct Fact {
    /// The clause as written.
    pub(crate) text: String,
    /// The sentence it is in (its index among the practice's sentences).
    pub(crate) sentence: usize,
    /// Its retrieval terms.
    pub(crate) terms: Vec<String>,
    /// What it says, read like a rule.
    pub(crate) reading: Reading,
}

/// The facts of a practice, in order. A time of day after the first one the practice gives
/// ("noticed it at 9:00 ... classified it at 11:30") is a duration since then: at most the
/// time between the two.
pub(crate) fn read(practice: &str) -> Vec<Fact> {
    let mut out = Vec::new();
    let mut first_time: Option<u32> = None;
    for (n, s) in sentences(practice).iter().enumerate() {
        for c in clauses(s) {
            let mut reading = rules::read(&c);
            if let Some((at, written)) = clock_time(&c) {
                match first_time {
                    None => first_time = Some(at),
                    Some(t0) if at > t0 && reading.bounds.is_empty() => {
                        let hours = f64::from(at - t0) / 60.0;
                        let span = c.find(&written).map_or(0..0, |i| i..i + written.len());
                        reading.bounds.push(Bound {
                            value: Value {
                                unit: Unit::Days,
                                low: 0.0,
                                high: hours / 24.0,
                                shown_unit: "hour",
                                number: hours,
                                written: written.clone(),
                                span,
                                frequency: false,
                            },
                            binding: Binding::Limit(Limit::Exactly),
                            anchor: Some(Anchor::After(Vec::new())),
                            context: terms(&c).into_iter().collect(),
                        });
                    }
                    Some(_) => {}
                }
            }
            out.push(Fact {
                terms: terms(&c),
                reading,
                sentence: n,
                text: c,
            });
        }
    }
    out
}

/// The first time of day in a text ("at 9:00", "at 11:30", "14:05"), in minutes after
/// midnight, and as written ("at 11:30").
fn clock_time(text: &str) -> Option<(u32, String)> {
    let bytes: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == ':' && i > 0 && i + 2 < bytes.len() + 1 {
            let h: String = bytes[..i]
                .iter()
                .rev()
                .take_while(|c| c.is_ascii_digit())
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            let m: String = bytes[i + 1..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            if (1..=2).contains(&h.len()) && m.len() == 2 {
                let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
                if h < 24 && m < 60 {
                    let written = format!("at {h}:{m:02}");
                    return Some((h * 60 + m, written));
                }
            }
        }
        i += 1;
    }
    None
}

/// The clauses of a sentence, verbatim: cut at semicolons and at ", and", ", but", ", so",
/// ", while", ", whereas", ", then", and at a comma that starts another clause ("...
/// every eighteen months, our payroll vendor has two days ...", "... she booked business
/// class, took a taxi ..."); a piece too short to stand alone stays with the one before it.
pub(crate) fn clauses(sentence: &str) -> Vec<String> {
    let mut out = Vec::new();
    for piece in joined_clauses(sentence) {
        let mut rest = piece.as_str();
        while let Some(at) = comma_clause(rest) {
            push(&mut out, &rest[..at]);
            rest = &rest[at + 2..];
        }
        push(&mut out, rest);
    }
    out
}

/// Where a comma in `text` starts another clause: the next words are a subject and a verb
/// ("our payroll vendor has"), or a verb in the past ("took a taxi"); the words before it
/// are a clause of four words or more.
fn comma_clause(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find(", ").map(|i| from + i) {
        from = i + 2;
        let before = text[..i].split_whitespace().count();
        let after: Vec<String> = text[i + 2..]
            .split_whitespace()
            .take(5)
            .map(|w| {
                w.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase()
            })
            .collect();
        let Some(first) = after.first() else { break };
        if before < 4 {
            continue;
        }
        let verb = |w: &String| {
            crate::vocabulary::is_past_form(w)
                || matches!(
                    w.as_str(),
                    "has"
                        | "have"
                        | "had"
                        | "was"
                        | "were"
                        | "is"
                        | "are"
                        | "will"
                        | "must"
                        | "can"
                        | "may"
                        | "did"
                        | "does"
                        | "do"
                        | "keeps"
                        | "takes"
                        | "gets"
                )
        };
        let subject = matches!(
            first.as_str(),
            "we" | "they"
                | "she"
                | "he"
                | "it"
                | "our"
                | "their"
                | "his"
                | "her"
                | "its"
                | "the"
                | "this"
                | "that"
                | "nobody"
                | "no"
                | "everyone"
        );
        if (subject && after[1..].iter().take(3).any(verb))
            || (crate::vocabulary::is_past_form(first) && !first.ends_with("ly"))
        {
            return Some(i);
        }
    }
    None
}

/// The clauses of a sentence cut at semicolons and joined clauses (see [`clauses`]).
fn joined_clauses(sentence: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = sentence.trim();
    loop {
        let cut = [
            ";",
            ", and ",
            ", but ",
            ", so ",
            ", while ",
            ", whereas ",
            ", then ",
            " but ",
        ]
        .iter()
        .filter_map(|sep| rest.find(sep).map(|i| (i, sep.len())))
        .min_by_key(|(i, _)| *i);
        match cut {
            Some((i, len)) => {
                push(&mut out, &rest[..i]);
                rest = &rest[i + len..];
            }
            None => {
                push(&mut out, rest);
                return out;
            }
        }
    }
}

fn push(out: &mut Vec<String>, clause: &str) {
    let c = clause.trim().trim_end_matches([',', ';']).trim();
    if terms(c).len() >= 2 {
        out.push(c.to_string());
    } else if let Some(last) = out.last_mut() {
        last.push_str(", ");
        last.push_str(c);
    } else if !c.is_empty() {
        out.push(c.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docmodel::rules::{Anchor, RoleKind};

    #[test]
    fn a_time_of_day_after_the_first_is_the_time_since_then() {
        let f = read("At 9:00 an analyst noticed suspicious logins. The incident manager classified the incident as high at 11:30.");
        assert!(f[0].reading.bounds.is_empty());
        let b = &f[1].reading.bounds[0];
        assert!((b.value.high * 24.0 - 2.5).abs() < 1e-9);
        assert_eq!(b.value.low, 0.0);
    }

    #[test]
    fn a_practice_reads_into_clauses_with_values_events_and_roles() {
        let f = read("Anna booked her hotel eight days before leaving; nobody had said the trip was urgent. Tom declared it eight business days later, and the COO signed it off.");
        let texts: Vec<&str> = f.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Anna booked her hotel eight days before leaving",
                "nobody had said the trip was urgent.",
                "Tom declared it eight business days later",
                "the COO signed it off."
            ]
        );
        let b = &f[0].reading.bounds[0];
        assert_eq!(b.value.written, "eight days");
        assert!(matches!(b.anchor, Some(Anchor::Before(_))));
        assert!(f[1].reading.negated);
        assert!(matches!(
            f[2].reading.bounds[0].anchor,
            Some(Anchor::After(_))
        ));
        assert_eq!(f[3].reading.roles[0].kind, RoleKind::Approves);
        assert_eq!(f[3].reading.roles[0].who, "COO");
        let f = clauses("We reassess our critical vendors every eighteen months, our payroll vendor has two days to tell us, and the CEO, the CFO and the Board approve it.");
        assert_eq!(
            f,
            [
                "We reassess our critical vendors every eighteen months",
                "our payroll vendor has two days to tell us",
                "the CEO, the CFO and the Board approve it."
            ]
        );
        assert_eq!(
            clauses("She booked business class for the flight, took a taxi at night, and claimed a per diem."),
            ["She booked business class for the flight", "took a taxi at night", "claimed a per diem."]
        );
    }
}
