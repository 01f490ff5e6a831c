//! What a request asks, read without a model: its topic (the terms it is about), the kind
//! of value a good answer gives ("how long" a duration, "how often" a frequency, "how
//! much" an amount, "what share" a percentage, "how many" a count, "who" a role), and the
//! version of a document it asks about ("v1.3", "the 2022 edition", "the current policy",
//! "the old one", "was that different before?": [`versions`]).

use std::collections::{HashMap, HashSet};

use crate::docmodel::rules::Reading;
use crate::docmodel::values::Unit;
use crate::text::{tokens, topic_terms};
use crate::version_words::{EDITION, STANDING};

mod parts;
mod versions;

pub(crate) use parts::parts;
pub(crate) use versions::{versions_asked, VersionAsk};

/// A kind of value an answer gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expect {
    /// A duration or a deadline.
    Duration,
    /// How often.
    Frequency,
    /// An amount of money.
    Money,
    /// A percentage.
    Percent,
    /// A count.
    Count,
    /// Who.
    Role,
}

/// What a request asks.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Question {
    /// The terms it is about (instructions and version words left out).
    pub(crate) topic: Vec<String>,
    /// Terms of the conversation it follows, when it says little of its own ("and for
    /// New York?"): they count for less than its own.
    pub(crate) context: Vec<String>,
    /// The kinds of value a good answer gives.
    pub(crate) expects: Vec<Expect>,
    /// The amounts and shares the request states of its case ("a £75,000 payment", "9% of
    /// new customers"): a rule that sets a figure of the same kind is likely the one that
    /// decides it.
    pub(crate) stated: Vec<crate::docmodel::values::Value>,
}

/// A follow-up says at most this many topic terms of its own.
const FOLLOW_UP_TERMS: usize = 2;
/// A follow-up has at most this many words.
const FOLLOW_UP_WORDS: usize = 10;

/// The question an action answers: `text` read in its conversation ([`read_in_context`]),
/// without the words that name `docs` (their titles, and names the text gives them that fit
/// one of them).
pub(crate) fn for_documents(
    text: &str,
    docs: &[crate::state::DocRef],
    previous: Option<&str>,
) -> Question {
    let mut naming: HashSet<String> = HashSet::new();
    // Titles written out ("under the Data Retention Policy 2023, how long ...").
    for s in crate::title_match::titles_in_text(text, docs) {
        naming.extend(crate::text::terms(&s.doc.title));
    }
    // Names that fit one of them ("the AML policy").
    for r in crate::references::find(text) {
        if let crate::references::Reference::Named { name, .. } = r {
            // "the current operational resilience policy": which version is not its name.
            let name: Vec<&str> = name
                .split_whitespace()
                .filter(|w| !crate::version_words::is_version_word(w))
                .collect();
            let name = name.join(" ");
            if !crate::title_match::match_name(&name, docs).is_empty() {
                naming.extend(crate::text::terms(&name));
            }
        }
    }
    // A section named by words of the title ("the suspicious activity reporting section of
    // the transaction monitoring policy") is what the request is about.
    for t in section_named(text) {
        naming.remove(&t);
    }
    // A title's word the request uses again outside the title ("under v2.2 of the incident
    // and access review policy, how long did we have to cut off a leaver's access?") is
    // also what it asks about.
    let mut said: HashMap<String, usize> = HashMap::new();
    for t in crate::text::terms(text) {
        *said.entry(t).or_default() += 1;
    }
    naming.retain(|t| said.get(t).copied().unwrap_or(0) < 2);
    read_in_context(text, previous, &naming)
}

/// The terms of what a request says it is about, though they may be words of a title: a
/// section it names ([`section_named`]), or what follows "on", "about", "regarding" or
/// "concerning" ("how did the rules on keeping and deleting recordings change": keeping,
/// deleting, recordings).
pub(crate) fn topic_named(text: &str) -> Vec<String> {
    let words = tokens(text);
    let mut out = section_named(text);
    for (i, w) in words.iter().enumerate() {
        if !matches!(w.as_str(), "on" | "about" | "regarding" | "concerning") {
            continue;
        }
        out.extend(
            words[i + 1..]
                .iter()
                .skip_while(|x| matches!(x.as_str(), "the" | "a" | "an" | "our"))
                .take_while(|x| matches!(x.as_str(), "and" | "or") || !crate::text::is_stopword(x))
                .take(6)
                .filter(|x| !matches!(x.as_str(), "and" | "or"))
                .flat_map(|x| crate::text::terms(x)),
        );
    }
    out
}

/// The terms of a section a request names: the words before "section", "part" or
/// "chapter" ("the suspicious activity reporting section"), or after "section on" or
/// "part about" ("the section on record keeping").
pub(crate) fn section_named(text: &str) -> Vec<String> {
    let words = tokens(text);
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if !matches!(w.as_str(), "section" | "sections" | "part" | "chapter") {
            continue;
        }
        let mut before: Vec<&String> = words[..i]
            .iter()
            .rev()
            .take_while(|x| !crate::text::is_stopword(x))
            .take(4)
            .collect();
        before.reverse();
        out.extend(before.iter().flat_map(|x| crate::text::terms(x)));
        if matches!(
            words.get(i + 1).map(String::as_str),
            Some("on" | "about" | "covering" | "for")
        ) {
            out.extend(
                words[i + 2..]
                    .iter()
                    .skip_while(|x| matches!(x.as_str(), "the" | "a" | "an"))
                    .take_while(|x| !crate::text::is_stopword(x))
                    .take(4)
                    .flat_map(|x| crate::text::terms(x)),
            );
        }
    }
    out
}

/// Reads a request in its conversation: its topic without `naming` (the words that name
/// its documents); a short one that says little of its own takes the topic of `previous`
/// (the user's message before) as context, and its kind of value when it asks none.
pub(crate) fn read_in_context(
    text: &str,
    previous: Option<&str>,
    naming: &HashSet<String>,
) -> Question {
    let mut q = read(text);
    q.topic.retain(|t| !naming.contains(t));
    let short = tokens(text).len() <= FOLLOW_UP_WORDS;
    if let Some(prev) = previous.filter(|_| short && q.topic.len() <= FOLLOW_UP_TERMS) {
        let before = read(prev);
        q.context = before
            .topic
            .into_iter()
            .filter(|t| !naming.contains(t) && !q.topic.contains(t))
            .collect();
        if q.expects.is_empty() {
            q.expects = before.expects;
        }
    }
    q
}

/// Words that place a version in time, besides the version words ("in force before").
const WHEN_WORDS: [&str; 2] = ["before", "force"];

/// Words that name a document, not what it is about ("the policy", "this standard"); words
/// that are also content ("report", "notice", "contract") stay.
const DOCUMENT_WORDS: [&str; 22] = [
    "policy",
    "policies",
    "procedure",
    "procedures",
    "standard",
    "standards",
    "regulation",
    "document",
    "documents",
    "doc",
    "file",
    "version",
    "guideline",
    "guidelines",
    "manual",
    "handbook",
    "rulebook",
    "memo",
    "framework",
    "directive",
    "charter",
    "excerpt",
];

/// Words that ask for a value ("what amount", "which figure"), not what it is about.
const VALUE_WORDS: [&str; 6] = ["amount", "figure", "number", "value", "sum", "level"];

/// Numbers in words, which are values, not topics.
const NUMBER_WORDS: [&str; 13] = [
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "both", "first",
    "second",
];

/// Reads a request.
pub(crate) fn read(text: &str) -> Question {
    let words = tokens(text);
    // "Issue 2", "edition 3", "the July 2024 edition": which version, not what about.
    let numbered: HashSet<String> = words
        .windows(2)
        .filter(|p| {
            (matches!(p[0].as_str(), "issue" | "edition" | "release")
                || crate::docmodel::header::is_month(&p[0]))
                && p[1].chars().all(|c| c.is_ascii_digit())
        })
        .map(|p| crate::vocabulary::term(&p[0]))
        .collect();
    let version_terms: Vec<String> = EDITION
        .iter()
        .chain(&STANDING)
        .chain(&WHEN_WORDS)
        .map(|w| crate::vocabulary::term(w))
        .collect();
    let topic = topic_terms(text)
        .into_iter()
        .filter(|t| !version_terms.contains(t) && !numbered.contains(t))
        .filter(|t| !t.chars().all(|c| c.is_ascii_digit()))
        .filter(|t| {
            !DOCUMENT_WORDS
                .iter()
                .any(|d| crate::vocabulary::term(d) == *t)
        })
        // A number said in words ("these two") or a stray letter ("what's") says nothing
        // of the topic: values are read apart.
        .filter(|t| {
            t.len() > 1
                && !NUMBER_WORDS
                    .iter()
                    .any(|n| crate::vocabulary::term(n) == *t)
        })
        .filter(|t| !VALUE_WORDS.iter().any(|n| crate::vocabulary::term(n) == *t))
        .collect();
    Question {
        topic,
        context: Vec::new(),
        expects: expects(&words),
        stated: stated(text),
    }
}

/// The amounts and shares `text` states of its case; one said as a bound ("a claim of more
/// than five thousand pounds") is the open range it bounds.
fn stated(text: &str) -> Vec<crate::docmodel::values::Value> {
    let lower = text.to_lowercase();
    crate::docmodel::values::values(text)
        .into_iter()
        .filter(|v| matches!(v.unit, Unit::Money(_) | Unit::Percent))
        .map(|mut v| {
            let before = lower.get(..v.span.start).unwrap_or("").trim_end();
            let ends = |words: &[&str]| words.iter().any(|w| before.ends_with(w));
            if ends(&[
                "more than",
                "over",
                "above",
                "exceeding",
                "at least",
                "greater than",
            ]) {
                v.high = f64::INFINITY;
            } else if ends(&[
                "less than",
                "under",
                "below",
                "up to",
                "at most",
                "no more than",
            ]) {
                v.low = f64::NEG_INFINITY;
            }
            v
        })
        .collect()
}

fn expects(words: &[String]) -> Vec<Expect> {
    let w = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
    let has = |x: &str| words.iter().any(|v| v == x);
    let time_unit = |s: &str| {
        matches!(
            s,
            "day"
                | "days"
                | "hour"
                | "hours"
                | "week"
                | "weeks"
                | "month"
                | "months"
                | "year"
                | "years"
                | "minutes"
                | "business"
                | "working"
                | "calendar"
        )
    };
    let mut out = Vec::new();
    for i in 0..words.len() {
        match (w(i), w(i + 1), w(i + 2)) {
            ("how", "often" | "frequently" | "regularly", _) => out.push(Expect::Frequency),
            ("what", "frequency" | "interval", _) => out.push(Expect::Frequency),
            ("how", "long" | "quickly" | "soon" | "fast" | "late", _)
            | ("how", "far", "ahead" | "in")
            | ("by", "when", _)
            | ("what", "deadline" | "notice" | "period", _)
            | ("how", "much", "notice" | "warning" | "time") => out.push(Expect::Duration),
            ("how", "many", u) if time_unit(u) || time_unit(w(i + 3)) => out.push(Expect::Duration),
            ("how", "many", _) => out.push(Expect::Count),
            ("what", "percentage" | "percent" | "share" | "proportion" | "ratio", _)
            | ("how", "big", "a" | "share") => out.push(Expect::Percent),
            ("how", "much", _) | ("what", "amount" | "value" | "rate", _) => {
                out.push(Expect::Money)
            }
            // A limit may be an amount or a share ("the cap on commission": 5% of the
            // contract's value).
            ("what", "limit" | "cap" | "threshold" | "ceiling" | "maximum" | "minimum", _) => {
                out.push(Expect::Money);
                out.push(Expect::Percent);
            }
            ("above" | "over" | "below" | "under" | "from", "what", _)
            | ("up", "to", "what")
            | ("what", "size", _) => {
                out.push(Expect::Money);
                out.push(Expect::Percent);
            }
            ("who" | "whom" | "whose", _, _) => out.push(Expect::Role),
            ("which", "role" | "person" | "committee" | "team" | "function" | "manager", _) => {
                out.push(Expect::Role)
            }
            ("when", _, _) => out.push(Expect::Duration),
            _ => {}
        }
    }
    let share_words = [
        "%",
        "percent",
        "percentage",
        "stake",
        "shareholding",
        "holding",
        "ownership",
        "ratio",
        "share",
    ];
    if share_words.iter().any(|w| has(w))
        && out
            .iter()
            .any(|e| matches!(e, Expect::Money | Expect::Percent))
        || has("%")
        || has("percent")
        || has("percentage")
    {
        out.retain(|e| *e != Expect::Money);
        if !out.contains(&Expect::Percent) {
            out.push(Expect::Percent);
        }
    }
    let money_words = ["most", "least", "spend", "worth", "cost"];
    let limit_words = [
        "maximum",
        "minimum",
        "cap",
        "limit",
        "threshold",
        "ceiling",
        "max",
        "min",
    ];
    if out.is_empty() && words.iter().any(|v| money_words.contains(&v.as_str())) {
        out.push(Expect::Money);
    }
    if out.is_empty() && words.iter().any(|v| limit_words.contains(&v.as_str())) {
        out.push(Expect::Money);
        out.push(Expect::Percent);
    }
    let mut seen = Vec::new();
    out.retain(|e| {
        let new = !seen.contains(e);
        seen.push(*e);
        new
    });
    out
}

impl Question {
    /// Whether a sentence's reading has a value or role of a kind the question expects
    /// (true when it expects none).
    pub(crate) fn answered_by(&self, reading: &Reading) -> bool {
        self.answered_by_kinds(kinds(reading))
    }

    /// [`Question::answered_by`] for a sentence whose reading gives `kinds` (see [`kinds`]).
    pub(crate) fn answered_by_kinds(&self, kinds: u8) -> bool {
        self.expects.is_empty() || self.expects.iter().any(|e| kinds & e.bit() != 0)
    }
}

impl Expect {
    /// Its bit among a reading's [`kinds`].
    fn bit(self) -> u8 {
        match self {
            Expect::Role => 1,
            Expect::Frequency => 1 << 1,
            Expect::Duration => 1 << 2,
            Expect::Money => 1 << 3,
            Expect::Percent => 1 << 4,
            Expect::Count => 1 << 5,
        }
    }
}

/// The kinds of answer a sentence's reading gives, a bit per [`Expect`] (what
/// [`Question::answered_by`] asks of it, kept in a byte per sentence).
pub(crate) fn kinds(reading: &Reading) -> u8 {
    let mut out = 0;
    if !reading.roles.is_empty() {
        out |= Expect::Role.bit();
    }
    for b in &reading.bounds {
        let v = &b.value;
        // "Every 24 months", "annually": a deadline ("within 30 days") is no frequency.
        if v.frequency {
            out |= Expect::Frequency.bit();
        }
        out |= match v.unit {
            Unit::Days | Unit::BusinessDays => Expect::Duration.bit(),
            Unit::Money(_) => Expect::Money.bit(),
            Unit::Percent => Expect::Percent.bit(),
            Unit::Count => Expect::Count.bit(),
            _ => 0,
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_named_in_the_titles_words_is_what_the_request_is_about() {
        let t = |w: &[&str]| {
            w.iter()
                .map(|x| crate::vocabulary::term(x))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            section_named("Summarise the suspicious activity reporting section of the policy"),
            t(&["suspicious", "activity", "reporting"])
        );
        assert_eq!(
            section_named("What does the section on record keeping say?"),
            t(&["record", "keeping"])
        );
        assert!(section_named("Summarise the policy").is_empty());
        assert_eq!(
            topic_named("What changed in the rules on keeping and deleting recordings?"),
            t(&["keeping", "deleting", "recordings"])
        );
    }

    #[test]
    fn the_kind_of_value_asked_for() {
        let e = |q: &str| read(q).expects;
        assert_eq!(e("How long are emails kept?"), [Expect::Duration]);
        assert_eq!(
            e("How often must high-risk customers be reviewed?"),
            [Expect::Frequency]
        );
        assert_eq!(
            e("Within how many days must records be deleted?"),
            [Expect::Duration]
        );
        assert_eq!(e("How many quotes do we need?"), [Expect::Count]);
        assert_eq!(
            e("What's the most I can spend per night on a hotel?"),
            [Expect::Money]
        );
        assert_eq!(
            e("What share of our applications may one provider host?"),
            [Expect::Percent]
        );
        assert_eq!(e("Who must approve a directorship?"), [Expect::Role]);
        assert_eq!(
            e("How far ahead of signing must we tell the regulator?"),
            [Expect::Duration]
        );
        assert!(e("Summarize the policy").is_empty());
    }

    #[test]
    fn the_words_that_name_the_document_are_not_its_topic() {
        let docs = [crate::state::DocRef {
            id: "a".into(),
            title: "Operational Resilience and Important Business Services Policy v2.0".into(),
        }];
        let q = for_documents(
            "Under the current operational resilience policy, who can grant an exception to it?",
            &docs,
            None,
        );
        let t = |w: &str| crate::vocabulary::term(w);
        assert!(!q.topic.contains(&t("operational")) && !q.topic.contains(&t("resilience")));
        assert!(q.topic.contains(&t("exception")));
    }

    #[test]
    fn version_words_are_not_the_topic() {
        assert_eq!(
            read("What did the old policy say about calls?").topic,
            crate::text::terms("calls")
        );
    }
}
