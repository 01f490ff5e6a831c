//! A described practice read as facts, for an audit: its sentences cut into clauses ("...
//! in economy, and submitted the claim five weeks later"), each read like a rule
//! ([`super::rules::read`]): its values with the events they count from ("a week and a half
//! after the purchase", "a month ahead of the launch", "the next working day"), the roles
//! it names (who approved, who was told), and whether it says something did not happen
//! ("nobody informed the clients", "no approval was sought").

pub(crate) use super::clauses::clauses;
use super::clauses::{acts, dated_apart};
use super::rules::{self, Reading};
use super::timeline::{Since, Timeline};
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
    /// The terms of the clause before it in its sentence, when it goes on with that
    /// clause's subject ("... our reviewer decided it might be a match, and emailed the
    /// MLRO": who emailed is the reviewer).
    pub(crate) carried: Vec<String>,
    /// What it says, read like a rule.
    pub(crate) reading: Reading,
    /// When it says when it happened: the time since each event told before it.
    pub(crate) since: Vec<Since>,
    /// It tells what a document asks, not what was done ("the procedure says the MLRO must
    /// be consulted"): no evidence that it was.
    pub(crate) restates: bool,
    /// A later clause of its sentence says it was not done ("..., but that step was
    /// skipped").
    pub(crate) denied: bool,
    /// It says the record is silent ("the file does not say whether the CISO approved"), or
    /// only supposes or plans it ("we believe", "will be approved next month"): neither
    /// done nor not done.
    pub(crate) uncertain: bool,
}

/// The facts of a practice, in order. An event the practice places in time after another
/// ("on Friday morning", "at 11:30", "the following Tuesday") states the time since the
/// events before it ([`super::timeline`]).
pub(crate) fn read(practice: &str) -> Vec<Fact> {
    let mut out: Vec<Fact> = Vec::new();
    let mut timeline = Timeline::default();
    for (n, s) in sentences(practice).iter().enumerate() {
        let mut before: Vec<String> = Vec::new();
        let first = out.len();
        for c in clauses(s)
            .iter()
            .flat_map(|c| acts(c))
            .flat_map(|c| dated_apart(&c))
        {
            let mut reading = rules::read(&c);
            // A time of day is a value, not words: "09:15" shares nothing with "15
            // minutes" (a label's number stays: "Level 3").
            let clock = clock_figures(&c);
            for b in &mut reading.bounds {
                b.context.retain(|t| !clock.contains(t));
            }
            let uncertain = silent_on(&c) || not_asserted(&c);
            if uncertain {
                // What the record does not say was neither done nor not done.
                reading.negated = false;
                reading.roles.clear();
            }
            // "..., but that step was skipped": the requirement told before in the
            // sentence was not met.
            if reading.negated && !uncertain && refers_back(&c) {
                for f in out[first..].iter_mut() {
                    if f.reading.modality == rules::Modality::Must
                        || f.restates
                        || asks_for(&f.text)
                    {
                        f.denied = true;
                    }
                }
            }
            let restates = tells_a_rule(&c);
            let since = match timeline.place(&c, &mut reading) {
                Some((bound, since)) => {
                    reading.bounds.extend(bound);
                    since
                }
                None => Vec::new(),
            };
            if let Some(b) = after_quarter_end(&c, &reading) {
                reading.bounds.push(b);
            }
            let own: Vec<String> = terms(&c)
                .into_iter()
                .filter(|t| !clock.contains(t))
                .collect();
            let carried = if goes_on(&c) {
                before.clone()
            } else {
                Vec::new()
            };
            before.clone_from(&own);
            out.push(Fact {
                terms: own,
                carried,
                since,
                restates,
                denied: false,
                uncertain,
                reading,
                sentence: n,
                text: c,
            });
        }
    }
    out
}

/// The figures of a clause that are only parts of times of day ("09" and "15" of "at
/// 09:15"), not numbers of their own.
fn clock_figures(clause: &str) -> Vec<String> {
    let tokens: Vec<&str> = clause
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .collect();
    let alone: Vec<&str> = tokens
        .iter()
        .copied()
        .filter(|w| w.chars().all(|c| c.is_ascii_digit()))
        .collect();
    tokens
        .iter()
        .filter_map(|w| {
            let w = w.trim_end_matches("am").trim_end_matches("pm");
            let (h, m) = w.split_once(':').or_else(|| w.split_once('.'))?;
            let digits =
                |x: &str| !x.is_empty() && x.len() <= 2 && x.chars().all(|c| c.is_ascii_digit());
            (digits(h) && m.len() == 2 && digits(m)).then(|| [h.to_string(), m.to_string()])
        })
        .flatten()
        .filter(|d| !alone.contains(&d.as_str()))
        .collect()
}

/// The last day of each quarter of a year that is not a leap year, as its day of the year.
const QUARTER_ENDS: [f64; 4] = [90.0, 181.0, 273.0, 365.0];

/// The time from the end of the quarter a clause names to the date it gives ("sent its Q2
/// 2025 data on 25 July": 25 days after the quarter end), as a value counted from the
/// quarter's end, for a rule that counts from it ("within 20 days of the quarter end").
fn after_quarter_end(clause: &str, reading: &rules::Reading) -> Option<rules::Bound> {
    let words = lower_words(clause);
    let quarter = words.iter().find_map(|w| match w.as_str() {
        "q1" => Some(0),
        "q2" => Some(1),
        "q3" => Some(2),
        "q4" => Some(3),
        _ => None,
    })?;
    let date = reading.bounds.iter().find(|b| {
        b.value.unit == super::values::Unit::Date
            && b.value.low == b.value.high
            && b.anchor.is_none()
    })?;
    let mut days = date.value.low - QUARTER_ENDS[quarter];
    if days < 0.0 {
        // Early the next year, after the fourth quarter.
        days += 365.0;
    }
    if !(0.0..=200.0).contains(&days) {
        return None;
    }
    let mut value = date.value.clone();
    value.unit = super::values::Unit::Days;
    value.low = days;
    value.high = days;
    value.number = days;
    value.shown_unit = "day";
    value.written = format!("{} ({days} days after the quarter end)", date.value.written);
    Some(rules::Bound {
        value,
        binding: date.binding,
        anchor: Some(rules::Anchor::After(terms("quarter end"))),
        context: date.context.clone(),
    })
}

/// Whether a clause says the record, or the writer, is silent on something: "does not say
/// whether", "it is unclear whether", "no record of whether", "I don't know whether", "not
/// sure if".
fn silent_on(clause: &str) -> bool {
    let words = lower_words(clause);
    let Some(at) = words.iter().enumerate().position(|(i, w)| {
        w == "whether"
            || (w == "if"
                && i > 0
                && matches!(
                    words[i - 1].as_str(),
                    "know" | "sure" | "say" | "says" | "tell" | "clear" | "certain" | "recall"
                ))
    }) else {
        return false;
    };
    words[..at].iter().any(|w| {
        rules::NEGATIONS.contains(&w.as_str())
            || w.ends_with("n't")
            || matches!(w.as_str(), "unclear" | "unknown" | "uncertain" | "cannot")
    })
}

/// Whether a clause only supposes or plans what it tells: "we believe the manager approved
/// it", "probably", "will be put to the Board next month", "intends to submit", "is still
/// being drafted", "as far as we know".
fn not_asserted(clause: &str) -> bool {
    let words = lower_words(clause);
    let hedged = words.iter().any(|w| {
        matches!(
            w.as_str(),
            "believe"
                | "believes"
                | "think"
                | "thinks"
                | "probably"
                | "presumably"
                | "apparently"
                | "perhaps"
                | "maybe"
                | "possibly"
                | "supposedly"
                | "will"
                | "intend"
                | "intends"
                | "intended"
        )
    });
    let planned = words.windows(2).any(|p| {
        matches!(
            (p[0].as_str(), p[1].as_str()),
            ("plan" | "plans" | "planning" | "is" | "are", "to")
                | ("still" | "yet", "being" | "to")
                | ("may" | "might" | "could", "have")
        )
    });
    // "as far as we know", "as far as I can tell": what someone supposes, not a record.
    let supposed = words
        .windows(3)
        .any(|p| p[0] == "as" && p[1] == "far" && p[2] == "as");
    hedged || planned || supposed
}

/// Whether a clause points back at what its sentence said before: it opens with "that",
/// "this", "it" or "which", or names "that step".
fn refers_back(clause: &str) -> bool {
    let words = lower_words(clause);
    matches!(
        words.first().map(String::as_str),
        Some("that" | "this" | "it" | "which")
    ) || words
        .windows(2)
        .any(|p| matches!(p[0].as_str(), "that" | "this") && p[1] == "step")
}

/// Whether a clause tells what a document asks ("the policy requires ...", "the procedure
/// says the MLRO must ...") rather than what was done.
fn tells_a_rule(clause: &str) -> bool {
    let words = lower_words(clause);
    let document = |w: &str| {
        matches!(
            w,
            "policy" | "procedure" | "standard" | "rule" | "rules" | "handbook" | "manual" | "code"
        )
    };
    let tells = |w: &str| {
        matches!(
            w,
            "says" | "said" | "requires" | "required" | "states" | "stated" | "asks" | "demands"
        )
    };
    words
        .windows(2)
        .take(4)
        .any(|p| document(&p[0]) && tells(&p[1]))
}

/// Whether a clause says something is needed ("covered employees need pre-clearance").
fn asks_for(clause: &str) -> bool {
    lower_words(clause).iter().any(|w| {
        matches!(
            w.as_str(),
            "need" | "needs" | "must" | "should" | "requires" | "required"
        )
    })
}

fn lower_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether a clause goes on with the subject of the clause before it: it starts with a
/// verb ("emailed the MLRO", "took a taxi").
fn goes_on(clause: &str) -> bool {
    let first = clause
        .split_whitespace()
        .next()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_string())
        .unwrap_or_default();
    first.chars().next().is_some_and(char::is_lowercase)
        && crate::vocabulary::is_past_form(&first)
        && !first.ends_with("ly")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docmodel::rules::{Anchor, RoleKind};

    #[test]
    fn an_act_a_relative_day_after_a_dated_event_is_its_own_fact() {
        let f = read("A transaction monitoring alert generated on Wednesday 5 June at 16:30 was closed by the Client Onboarding team the following Monday.");
        let texts: Vec<&str> = f.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(texts.len(), 2, "{texts:?}");
        let generated = crate::vocabulary::term("generated");
        let since = f[1]
            .since
            .iter()
            .find(|s| s.event.contains(&generated))
            .expect("counted from the alert");
        assert_eq!(since.business, Some((3.0, 3.0)));
    }

    #[test]
    fn each_act_of_a_clause_has_its_own_time() {
        let f = read("On Friday 8 November an analyst paid for groceries with her card. She told the Expenses Team on Wednesday 13 November and repaid the amount on 2 December.");
        assert_eq!(
            f.len(),
            3,
            "{:?}",
            f.iter().map(|f| &f.text).collect::<Vec<_>>()
        );
        let f = read("The last test ended on Friday 3 October 2025 and the Head of Operational Resilience presented the results to the ORC on Friday 24 October.");
        assert_eq!(
            f.len(),
            2,
            "{:?}",
            f.iter().map(|f| &f.text).collect::<Vec<_>>()
        );
        assert!(f[1]
            .text
            .starts_with("the Head of Operational Resilience presented"));
        for (clause, first, second) in [
            (
                "Two agents who joined the team on Monday 1 September completed their training on Friday 12 September.",
                "Two agents who joined the team on Monday 1 September",
                "completed their training on Friday 12 September.",
            ),
            (
                "The previous review was completed on 10 April 2025 and the next one was opened on Monday 20 October 2025.",
                "The previous review was completed on 10 April 2025",
                "the next one was opened on Monday 20 October 2025.",
            ),
        ] {
            let f = read(clause);
            let texts: Vec<&str> = f.iter().map(|f| f.text.as_str()).collect();
            assert_eq!(texts, [first, second], "{clause}");
        }
        assert_eq!(
            read("The files were checked between 3 March and 7 March.").len(),
            1
        );
        let f = read("At 10:00 the Control Room noticed it, and alerted the Deal Lead at 10:20 and the Head of Compliance at 11:15.");
        let texts: Vec<&str> = f.iter().map(|f| f.text.as_str()).collect();
        assert!(
            texts.contains(&"alerted the Head of Compliance at 11:15."),
            "{texts:?}"
        );
        let f =
            read("A compliance analyst spotted it at 4pm on Friday and it was taken down at 6pm.");
        assert_eq!(
            f.len(),
            2,
            "{:?}",
            f.iter().map(|f| &f.text).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_date_after_a_named_quarter_is_counted_from_its_end() {
        let f = read("Our distributor sent its Q2 2025 sales data on 25 July.");
        let b = f[0]
            .reading
            .bounds
            .iter()
            .find(|b| b.value.unit == crate::docmodel::values::Unit::Days)
            .expect("a time after the quarter end");
        assert_eq!(b.value.low, 25.0);
        assert_eq!(b.anchor, Some(Anchor::After(terms("quarter end"))));
    }

    #[test]
    fn a_requirement_told_then_denied_is_denied_and_a_silent_record_is_uncertain() {
        let f = read("Covered employees need pre-clearance from the Chief Compliance Officer before contributing to a state candidate, but that step was skipped because he was travelling. The procedure says the MLRO must be consulted before a refusal like this is decided. The file does not say whether the Chief Information Security Officer approved the change.");
        assert!(f[0].denied);
        assert!(!f[1].denied);
        assert!(f[2].restates && !f[2].denied);
        assert!(f[3].uncertain && !f[3].reading.negated && f[3].reading.roles.is_empty());
        for unknown in [
            "I don't know whether Mr Hale ever confirmed his son's nomination in writing.",
            "We're not sure if the Board approved it.",
        ] {
            let f = read(unknown);
            assert!(f[0].uncertain && !f[0].denied, "{unknown}");
        }
    }

    #[test]
    fn a_time_of_day_is_no_words_and_a_supposition_is_no_record() {
        assert_eq!(
            clock_figures("Compliance was told at 09:15 the next morning"),
            ["09", "15"]
        );
        assert!(clock_figures("flagged as Level 3 at 3.30pm on 3 June")
            .iter()
            .all(|d| d != "3"));
        let f = read("Compliance was told at 09:15 the next morning.");
        assert!(!f[0].terms.iter().any(|t| t == "15"));
        let f = read("The Head of Compliance approved it, and as far as we know it was entered in the register.");
        assert!(!f[0].uncertain && f[1].uncertain);
    }

    #[test]
    fn a_time_of_day_after_the_first_is_the_time_since_then() {
        let f = read("At 9:00 an analyst noticed suspicious logins. The incident manager classified the incident as high at 11:30.");
        assert!(f[0].reading.bounds.is_empty());
        let b = &f[1].reading.bounds[0];
        assert!((b.value.low * 24.0 - 2.5).abs() < 1e-9);
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
        // What tells only when belongs to the act after it.
        assert_eq!(
            clauses(
                "Eleven days later, on Friday 31 January, we paid the introducer a fee of £12,000."
            ),
            ["Eleven days later, on Friday 31 January, we paid the introducer a fee of £12,000."]
        );
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
