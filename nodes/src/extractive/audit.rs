//! The extractive audit. The practice is read into facts ([`facts`]): each clause with
//! its values and the events they count from ("a week and a half after buying", "the next
//! working day"), the roles it names and whether it says something did not happen. The
//! documents' rules are their sentences' clauses read the same way ([`rules`]). Each fact is
//! matched with the rules that share most of its meaning (each word weighted by its rarity
//! among the rules), and each pair is checked on what both state:
//!
//! - a value against a limit ("within 5 business days": at most; "at least 10 days before
//!   the trade": at least, and before, not after), durations across units and business
//!   days as ranges; a value against a condition ("above EUR 25,000": does the rule apply?);
//! - who approved or was told against who the rule names, and a fact that says nobody did;
//! - an action the rule requires before an event that the practice did after it.
//!
//! Each rule gets one finding: **Breaks** when a fact contradicts it, **Meets** only when a
//! fact states what it asks with compatible values and nothing it asks is left open, **Not
//! verifiable** when a fact touches it but states nothing that can be checked (or values
//! that could fall either side). Facts no rule speaks to are listed as not covered. Every
//! finding quotes the rule and the practice verbatim, with the rule's marker.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use super::named;
use crate::docmodel::facts::{self, Fact};
use crate::docmodel::rules::{
    self, same_role, Anchor, Binding, Bound, Modality, Reading, RoleKind,
};
use crate::docmodel::timeline::Since;
use crate::docmodel::values::{Limit, Unit, Value};
use crate::llm::AnswerRequest;
use crate::passages::Passage;
use crate::state::DocRef;
use crate::text::{sentences, terms};

/// Sums of weights over sets, in one order whatever the sets' (a float sum depends on its
/// order, and an audit must say the same of the same text every time).
trait SumInOrder {
    fn sum_in_order(self) -> f64;
}

impl<I: Iterator<Item = f64>> SumInOrder for I {
    fn sum_in_order(self) -> f64 {
        let mut v: Vec<f64> = self.collect();
        v.sort_by(f64::total_cmp);
        v.iter().sum()
    }
}

/// A fact and a rule must share at least this much of their meaning to be compared.
const APPLIES: f64 = 0.22;
/// Rules within this share of a fact's best are checked too.
const NEAR_BEST: f64 = 0.75;
/// At most this many rules are checked for one fact.
const TRIED: usize = 3;
/// A rule that repeats this share of its words in a fact is said by it ("we screen all
/// customers against the sanctions lists").
const RESTATED: f64 = 0.7;
/// A fact whose words are at least this share the rule's speaks wholly of it.
const WHOLLY: f64 = 0.75;
/// A fact that says at least this share of a rule's words speaks of it.
const SPEAKS: f64 = 0.4;
/// At most this many findings are listed.
const MAX_FINDINGS: usize = 16;
/// What a value of the fact that pairs with one of the rule's adds to their match, and a
/// person both name.
const PAIRED: f64 = 0.12;
/// What the fact doing what the rule requires adds.
const ACTION: f64 = 0.08;
/// A value's own words must share at least this much with a rule for the rule to take it.
const VALUE_APPLIES: f64 = 0.3;

/// One rule: a clause of a document's sentence, read.
struct Rule<'a> {
    passage: &'a Passage,
    text: String,
    /// What a finding quotes: the clause, or, for a table row or a list item (read with its
    /// headings or its lead sentence), the passage as the document writes it.
    quote: String,
    reading: Reading,
    /// Its terms and those of its passage's heading.
    words: HashSet<String>,
    /// Its own terms.
    own: HashSet<String>,
    /// What it requires be done: the terms of the verbs after its modal ("must identify
    /// ... and verify": identify, verify).
    actions: Vec<String>,
    /// The case it is for, when it is a table's row ("New York | USD 375").
    row: Option<Row>,
}

/// The case a table row is for: its first cell, when that is a name, not a figure.
struct Row {
    /// The first cell as written.
    label: String,
    /// Its terms.
    terms: Vec<String>,
    /// The row for every case the others do not name ("Other US cities", "Rest of the
    /// world"), and the terms of the other rows' cases.
    catch_all: Option<Vec<Vec<String>>>,
}

impl Row {
    /// Whether the practice's words (`said`) speak of this row's case: they name it, or,
    /// for a row of every other case, name none of the others.
    fn applies(&self, said: &HashSet<&String>) -> bool {
        // Named: all of a short name's terms, half of a longer one's ("suitability
        // reports" for "Suitability reports and client fact-finds").
        let names = |ts: &[String]| {
            let n = ts.iter().filter(|t| said.contains(t)).count();
            !ts.is_empty() && (n == ts.len() || (ts.len() > 2 && 2 * n >= ts.len()))
        };
        match &self.catch_all {
            Some(others) => !others.iter().any(|o| names(o)),
            None => names(&self.terms),
        }
    }
}

/// The label of a table row: its first cell, when the passage is a row under a header and
/// that cell holds no figure.
fn row_label(p: &Passage) -> Option<String> {
    let lead = p.lead.as_deref()?;
    if !lead.contains(" | ") || !p.text.contains(" | ") {
        return None;
    }
    let first = p.text.split(" | ").next()?.trim().trim_matches('|').trim();
    // A name: a few words, no figure, not a sentence of its own.
    let name = !first.is_empty()
        && !first
            .chars()
            .any(|c| c.is_ascii_digit() || matches!(c, ';' | '.'))
        && first.split_whitespace().count() <= 6;
    name.then(|| first.to_string())
}

/// Whether a row's label stands for every case the other rows leave out.
fn catch_all(label: &str) -> bool {
    let l = label.to_lowercase();
    [
        "other",
        "all other",
        "any other",
        "rest of",
        "elsewhere",
        "everywhere else",
        "others",
    ]
    .iter()
    .any(|p| l.starts_with(p))
}

/// What a check found of one aspect of a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Verdict {
    Breaks,
    Meets,
    NotVerifiable,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Verdict::Breaks => "Breaks",
            Verdict::Meets => "Meets",
            Verdict::NotVerifiable => "Not verifiable",
        }
    }
}

/// A rule checked against a fact.
struct Finding<'a> {
    verdict: Verdict,
    rule: usize,
    fact: &'a Fact,
    why: Vec<String>,
}

fn rules_of(request: &AnswerRequest) -> Vec<Rule<'_>> {
    let mut out = Vec::new();
    // The cases of each table's rows, by document and header.
    let mut tables: HashMap<(&str, &str), Vec<Vec<String>>> = HashMap::new();
    for p in &request.passages {
        if let (Some(label), Some(lead)) = (row_label(p), p.lead.as_deref()) {
            if !catch_all(&label) {
                tables
                    .entry((p.doc_id.as_str(), lead))
                    .or_default()
                    .push(terms(&label));
            }
        }
    }
    for p in request
        .passages
        .iter()
        .filter(|p| request.documents.iter().any(|d| d.id == p.doc_id))
    {
        let meaning = p.meaning();
        let mut context: HashSet<String> = terms(&meaning).into_iter().collect();
        if let Some(h) = p.heading.as_deref() {
            context.extend(terms(h));
        }
        if p.about_the_document() {
            continue;
        }
        for s in sentences(&meaning) {
            for c in facts::clauses(&s) {
                let reading = rules::read(&c);
                if !reading.is_rule() || crate::docmodel::header::is_metadata_line(&c) {
                    continue;
                }
                let own: HashSet<String> = terms(&c).into_iter().collect();
                let mut words = own.clone();
                words.extend(context.iter().cloned());
                let row = row_label(p).map(|label| Row {
                    terms: terms(&label),
                    catch_all: catch_all(&label).then(|| {
                        p.lead
                            .as_deref()
                            .and_then(|l| tables.get(&(p.doc_id.as_str(), l)))
                            .cloned()
                            .unwrap_or_default()
                    }),
                    label,
                });
                out.push(Rule {
                    row,
                    passage: p,
                    actions: rules::actions(&c),
                    quote: if p.lead.is_some() {
                        p.text.clone()
                    } else {
                        c.clone()
                    },
                    text: c,
                    reading,
                    words,
                    own,
                });
            }
        }
    }
    out
}

pub(crate) fn audit(request: &AnswerRequest) -> String {
    let text = request.audit_text.as_deref().unwrap_or(&request.question);
    let facts = facts::read(text);
    let rules = rules_of(request);
    if rules.is_empty() {
        return format!(
            "I found no rules in {} to check your text against.",
            super::join_titles(&request.documents)
        );
    }
    // Each term weighted by its rarity among the rules.
    let n = rules.len() as f64;
    let mut df: HashMap<&str, usize> = HashMap::new();
    for r in &rules {
        for t in &r.words {
            *df.entry(t.as_str()).or_default() += 1;
        }
    }
    let idf = |t: &str| (1.0 + n / (1.0 + df.get(t).copied().unwrap_or(0) as f64)).ln();

    let denials: HashSet<String> = rules::NEGATIONS
        .iter()
        .map(|w| crate::vocabulary::term(w))
        .collect();
    let mut findings: Vec<Finding<'_>> = Vec::new();
    let mut uncovered: Vec<&Fact> = Vec::new();
    for (k, fact) in facts.iter().enumerate() {
        // The fact with the sentences around it: "A company ... won a EUR 40,000 contract.
        // The CFO approved it and it never went to the Audit Committee."
        let scope: Vec<&Fact> = facts
            .iter()
            .filter(|f| f.sentence + 1 >= fact.sentence && f.sentence <= fact.sentence + 1)
            .collect();
        let fact_terms: HashSet<&str> = fact.terms.iter().map(String::as_str).collect();
        // Terms of the clause whose subject it goes on with count for half.
        let carried: HashSet<&str> = fact
            .carried
            .iter()
            .map(String::as_str)
            .filter(|t| !fact_terms.contains(t))
            .collect();
        let fact_weight: f64 = fact_terms.iter().map(|t| idf(t)).sum_in_order()
            + carried.iter().map(|t| idf(t) / 2.0).sum_in_order();
        let mut scored: Vec<(f64, usize)> = rules
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let shared: Vec<&&str> = fact_terms
                    .iter()
                    .filter(|t| r.words.contains(**t))
                    .collect();
                let shared_carried: f64 = carried
                    .iter()
                    .filter(|t| r.words.contains(**t))
                    .map(|t| idf(t) / 2.0)
                    .sum_in_order();
                let paired = pairs_a_value(fact, r);
                let same_people = fact
                    .reading
                    .roles
                    .iter()
                    .any(|f| r.reading.roles.iter().any(|x| same_role(&f.who, &x.who)));
                // Both name who approves (or who is told): the fact may say who did.
                let same_kind = fact
                    .reading
                    .roles
                    .iter()
                    .any(|f| r.reading.roles.iter().any(|x| x.kind == f.kind));
                let acts = r.actions.iter().any(|a| fact_terms.contains(a.as_str()));
                if shared.len() < 2 && !(shared.len() == 1 && (paired || same_people || same_kind))
                {
                    return None;
                }
                let rule_weight: f64 = r.words.iter().map(|t| idf(t)).sum_in_order();
                let common: f64 = shared.iter().map(|t| idf(t)).sum_in_order() + shared_carried;
                let mut score = common / (fact_weight * rule_weight).sqrt().max(1e-9);
                if paired {
                    score += PAIRED;
                }
                if same_people {
                    score += PAIRED;
                } else if same_kind {
                    score += PAIRED / 2.0;
                }
                if acts {
                    score += ACTION;
                }
                Some((score, i))
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        tracing::trace!(
            fact = %fact.text,
            rules = ?scored.iter().take(5).map(|(sc, i)| (*sc, &rules[*i].text)).collect::<Vec<_>>(),
            "a fact and the rules nearest to it"
        );
        let best = scored.first().map_or(0.0, |s| s.0);
        if std::env::var("AUDIT_DEBUG").is_ok() {
            eprintln!(
                "FACT {:?} denied={} restates={} best={:?}",
                fact.text,
                fact.denied,
                fact.restates,
                scored
                    .iter()
                    .take(3)
                    .map(|(s, i)| (*s, rules[*i].text.clone()))
                    .collect::<Vec<_>>()
            );
        }
        if best < APPLIES {
            if k == 0 || !fact.reading.bounds.is_empty() || fact.terms.len() >= 4 {
                uncovered.push(fact);
            }
            continue;
        }
        let mut tried: Vec<(f64, usize)> = scored
            .iter()
            .take(TRIED)
            .filter(|(s, _)| *s >= best * NEAR_BEST)
            .copied()
            .collect();
        // Each value of the fact is compared with one rule: of the rules that bind a value
        // of its kind, the one its own words speak of most ("three weeks" after "filed her
        // initial declaration" is the initial declaration's; "two days to tell us about an
        // incident" the incident notice's, though the fact is mostly about something
        // else); a rule found so joins those checked.
        let clause_score = |i: usize| {
            scored
                .iter()
                .find(|(_, j)| *j == i)
                .map_or(0.0, |(s, _)| *s)
        };
        // The practice's words around the fact: which case of a table it is.
        let said: HashSet<&String> = scope
            .iter()
            .flat_map(|f| f.terms.iter().chain(&f.carried))
            .collect();
        let owner: Vec<Option<usize>> = fact
            .reading
            .bounds
            .iter()
            .map(|b| {
                let weight: f64 = b.context.iter().map(|t| idf(t)).sum_in_order().max(1e-9);
                rules
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| {
                        r.reading.bounds.iter().any(|x| can_pair(b, x))
                            && r.row.as_ref().is_none_or(|row| row.applies(&said))
                    })
                    .map(|(i, r)| {
                        let own: f64 = b
                            .context
                            .iter()
                            .filter(|t| r.own.contains(*t))
                            .map(|t| idf(t))
                            .sum_in_order();
                        let near: f64 = b
                            .context
                            .iter()
                            .filter(|t| r.words.contains(*t))
                            .map(|t| idf(t))
                            .sum_in_order();
                        ((own + near) / (2.0 * weight) + clause_score(i), i)
                    })
                    .filter(|(v, _)| *v >= VALUE_APPLIES)
                    .max_by(|x, y| x.0.total_cmp(&y.0))
                    .map(|(_, i)| i)
            })
            .collect();
        for i in owner.iter().flatten() {
            if !tried.iter().any(|(_, j)| j == i) {
                tried.push((clause_score(*i).max(APPLIES), *i));
            }
        }
        let primary = tried.first().map(|(_, i)| *i);
        for (score, i) in tried {
            let mine: Vec<&Bound> = fact
                .reading
                .bounds
                .iter()
                .zip(&owner)
                .filter(|(_, o)| **o == Some(i))
                .map(|(b, _)| b)
                .collect();
            let rule = &rules[i];
            let weight = |ts: &mut dyn Iterator<Item = &String>| ts.map(|t| idf(t)).sum_in_order();
            // The fact's words, without those that deny ("nobody did adverse media
            // checks" speaks wholly of the rule on adverse media checks).
            let fact_own: HashSet<&String> = fact
                .terms
                .iter()
                .filter(|t| !denials.contains(t.as_str()))
                .collect();
            let coverage = Coverage {
                of_rule: weight(&mut rule.own.iter().filter(|t| fact_own.contains(t)))
                    / weight(&mut rule.own.iter()).max(1e-9),
                of_fact: weight(&mut fact_own.iter().copied().filter(|t| rule.own.contains(*t)))
                    / weight(&mut fact_own.iter().copied()).max(1e-9),
            };
            let tried = Tried {
                index: i,
                score,
                primary: primary == Some(i),
                coverage,
            };
            if let Some(f) = check(fact, &mine, &scope, rule, &tried) {
                findings.push(f);
            }
        }
    }
    report(request, &rules, findings, &uncovered, facts.len())
}

/// Whether a fact's value can speak of a rule's: comparable amounts, a frequency for a
/// frequency, and the same event when both say which ("three months after go-live" is not
/// "6 months after termination").
fn can_pair(fact: &Bound, rule: &Bound) -> bool {
    if !fact.value.weighs_with(&rule.value) {
        return false;
    }
    if rule.value.frequency && !fact.value.frequency && fact.anchor.is_none() {
        // "every year" and "two years later" are not the same kind of thing; a fact value
        // with no event ("eighteen months ago", "every two years") may be an interval.
        return fact.value.frequency
            || fact
                .context
                .iter()
                .any(|t| matches!(t.as_str(), "ago" | "last" | "sinc" | "everi" | "interv"));
    }
    if rule.value.frequency && !fact.value.frequency {
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
fn summed(fact: &Fact, value: &Bound, cap: &Bound, rule_text: &str) -> Option<Bound> {
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
fn caps_a_whole(rule_text: &str, written: &str) -> bool {
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

/// The body a practice's clause says one member of acted: "one member of the Disclosure
/// Committee decided" gives "Disclosure Committee" (its capitalised words).
fn member_of(text: &str) -> Option<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| matches!(w.to_lowercase().as_str(), "member" | "members"))?;
    if words.get(at + 1).map(|w| w.to_lowercase()) != Some("of".to_string()) {
        return None;
    }
    let name: Vec<&str> = words[at + 2..]
        .iter()
        .skip_while(|w| matches!(w.to_lowercase().as_str(), "the" | "our" | "its"))
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .take_while(|w| w.chars().next().is_some_and(char::is_uppercase))
        .collect();
    (!name.is_empty()).then(|| name.join(" "))
}

/// Who a rule lets act only in another's absence, and that other, in lower case: "the
/// Deputy MLRO in the MLRO's absence", "or, in the absence of the CFO, the Finance
/// Director".
fn stand_in(rule_text: &str) -> Option<(String, String)> {
    let lower = rule_text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .collect();
    let at = words.iter().position(|w| *w == "absence")?;
    let stop = |w: &str| matches!(w, "the" | "or" | "and" | "a" | "an" | "by" | "of");
    // Whose absence: "in the MLRO's absence" or "in the absence of the MLRO".
    let absent: Vec<&str> = if at > 0 && words[at - 1].ends_with("'s") {
        words[..at]
            .iter()
            .rev()
            .take_while(|w| !stop(w) && **w != "in")
            .copied()
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect()
    } else {
        words[at + 1..]
            .iter()
            .skip_while(|w| stop(w))
            .take_while(|w| !stop(w))
            .take(3)
            .copied()
            .collect()
    };
    let absent = absent.join(" ").trim_end_matches("'s").to_string();
    // The stand-in: the words before "in ... absence", else those after it.
    let opening = words[..at].iter().rposition(|w| *w == "in")?;
    let before: Vec<&str> = words[..opening]
        .iter()
        .rev()
        .take_while(|w| !stop(w))
        .take(3)
        .copied()
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let stand_in: Vec<&str> = if before.is_empty() {
        let from = if words[at - 1].ends_with("'s") {
            at + 1
        } else {
            let skipped = words[at + 1..].iter().take_while(|w| stop(w)).count();
            at + 1 + skipped + absent.split(' ').count()
        };
        words
            .get(from..)?
            .iter()
            .skip_while(|w| stop(w))
            .take_while(|w| !stop(w))
            .take(3)
            .copied()
            .collect()
    } else {
        before
    };
    let stand_in = stand_in.join(" ");
    if absent.is_empty() || stand_in.is_empty() || stand_in == absent {
        return None;
    }
    // As the rule writes them, when lower case kept the text's length.
    let as_written = |phrase: &str| {
        lower
            .find(phrase)
            .filter(|_| lower.len() == rule_text.len())
            .and_then(|i| rule_text.get(i..i + phrase.len()))
            .unwrap_or(phrase)
            .to_string()
    };
    Some((as_written(&stand_in), as_written(&absent)))
}

/// Whether a fact's approval is of another thing than the rule's: its own words, past who
/// approved and the act, are two or more and none is the rule's ("the Board approved this
/// year's operations budget" against "material outsourcing must be approved by the
/// Board"); "the Board approved it" says nothing else and is not.
fn of_another_thing(fact: &Fact, earlier: &[&Fact], rule: &Rule<'_>, who: &str) -> bool {
    let acts: HashSet<String> = [
        "approve",
        "approved",
        "approval",
        "signed",
        "sign",
        "off",
        "authorised",
        "agreed",
        "cleared",
        "consent",
    ]
    .iter()
    .map(|w| crate::vocabulary::term(w))
    .collect();
    let theirs: HashSet<String> = terms(who).into_iter().collect();
    // What was approved: the clause up to a comma or a relative pronoun.
    let lower = fact.text.to_lowercase();
    let cut = [", ", " which ", " that ", " who "]
        .iter()
        .filter_map(|p| lower.find(p))
        .min()
        .unwrap_or(lower.len());
    let rest: Vec<String> = terms(&fact.text[..cut.min(fact.text.len())])
        .into_iter()
        .filter(|t| !acts.contains(t) && !theirs.contains(t))
        .collect();
    // A thing told before is the matter at hand ("we are moving ... the Board approved the
    // move").
    let told_before = |t: &String| {
        earlier
            .iter()
            .filter(|f| f.sentence < fact.sentence)
            .any(|f| f.terms.contains(t))
    };
    rest.len() >= 2
        && !rest
            .iter()
            .any(|t| rule.own.contains(t) || rule.words.contains(t) || told_before(t))
}

/// Whether two events' terms speak of the same event: a term in common, or one term the
/// start of the other's ("receipt", "receiving" are not; "terminat", "termination" are).
fn same_event(a: &[String], b: &[String]) -> bool {
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

/// The time since the practice's event that a rule's bound counts from ("within 72 hours
/// of the escalation": the clause that speaks of escalating), when `value` is a time the
/// practice gives by when it happened and one of its events shares the words of the
/// rule's.
fn since_event(fact: &Fact, value: &Bound, rule: &Bound) -> Option<Value> {
    let anchor = rule.anchor.as_ref()?.terms();
    if fact.since.is_empty() || anchor.is_empty() || value.value.calendar_days().is_none() {
        return None;
    }
    let is_timeline = matches!(value.anchor, Some(Anchor::Since));
    if !is_timeline {
        return None;
    }
    // Of the events that say most of the rule's, the first told: later clauses name it
    // again ("approved the meeting the following day" is not the meeting).
    let event = fact
        .since
        .iter()
        .map(|s| (anchor.iter().filter(|t| s.event.contains(*t)).count(), s))
        .filter(|(n, _)| *n > 0)
        .fold(None, |best: Option<(usize, &Since)>, (n, s)| match best {
            Some((m, _)) if m >= n => best,
            _ => Some((n, s)),
        })?
        .1;
    Some(Value {
        low: event.days.0,
        high: event.days.1,
        business: event.business,
        ..value.value.clone()
    })
}

/// Whether the fact itself states exactly one value that can pair with `bound` (then it
/// speaks of it, whatever the words around it).
fn pairs_alone(own: &[&Fact], bound: &Bound) -> bool {
    own.iter()
        .flat_map(|f| f.reading.bounds.iter())
        .filter(|b| can_pair(b, bound))
        .count()
        == 1
}

/// Whether a fact states a value that can speak of one of the rule's.
fn pairs_a_value(fact: &Fact, rule: &Rule<'_>) -> bool {
    fact.reading
        .bounds
        .iter()
        .any(|f| rule.reading.bounds.iter().any(|r| can_pair(f, r)))
}

/// The fact's value that speaks of the rule's `bound`: one that can pair with it, sharing
/// most words around it.
fn counterpart<'a>(bound: &Bound, facts: &'a [&Fact]) -> Option<(&'a Bound, usize)> {
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

/// How much of a rule's own words a fact says, and how much of the fact's words are the
/// rule's, each word weighted by its rarity among the rules.
struct Coverage {
    of_rule: f64,
    of_fact: f64,
}

/// A rule tried against a fact.
struct Tried {
    /// The rule's index.
    index: usize,
    /// How well they matched.
    score: f64,
    /// Whether it is the rule the fact is most about.
    primary: bool,
    coverage: Coverage,
}

/// Checks one rule against a fact (and the facts of its scope): `None` when they have
/// nothing to compare and the fact does not restate the rule.
fn check<'a>(
    fact: &'a Fact,
    mine: &[&Bound],
    scope: &[&'a Fact],
    rule: &Rule<'_>,
    tried: &Tried,
) -> Option<Finding<'a>> {
    let Tried {
        index,
        score,
        primary,
        ref coverage,
    } = *tried;
    let mut breaks = Vec::new();
    let mut meets = Vec::new();
    let mut open = Vec::new();
    let own = [fact];
    let mut applies = true;

    // Conditions: does the rule apply to what the practice did? A fact's value decides
    // only when it speaks of the same thing (a word around it in common).
    for b in rule
        .reading
        .bounds
        .iter()
        .filter(|b| matches!(b.binding, Binding::Applies { .. }))
    {
        let Binding::Applies { above } = b.binding else {
            continue;
        };
        let found = counterpart(b, &own).or_else(|| counterpart(b, scope));
        match found {
            Some((f, shared)) if shared > 0 || pairs_alone(&own, b) => {
                let limit = if above { Limit::AtLeast } else { Limit::AtMost };
                match f.value.keeps(limit, &b.value) {
                    Some(true) => {}
                    Some(false) => {
                        applies = false;
                        meets.push(format!(
                            "the rule applies {} {}; the practice states {}",
                            if above { "above" } else { "below" },
                            b.value.written,
                            f.value.written
                        ));
                    }
                    None => open.push(format!(
                        "whether {} is {} {}",
                        f.value.written,
                        if above { "above" } else { "below" },
                        b.value.written
                    )),
                }
            }
            _ => open.push(format!(
                "the amount the rule applies to ({} {})",
                if above { "above" } else { "below" },
                b.value.written
            )),
        }
    }
    if !applies {
        // The rule does not apply: said of the rule the fact is most about, left out
        // otherwise.
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

    // Limits.
    let limits: Vec<&Bound> = rule
        .reading
        .bounds
        .iter()
        .filter(|b| matches!(b.binding, Binding::Limit(_)))
        .collect();
    let mut paired = 0usize;
    let mut best_shared = 0usize;
    let mut unpaired: Vec<(&Bound, usize)> = Vec::new();
    for b in &limits {
        let Binding::Limit(limit) = b.binding else {
            continue;
        };
        let Some((f, shared)) = mine
            .iter()
            .filter(|m| can_pair(m, b))
            .map(|m| (*m, m.context.intersection(&b.context).count()))
            .fold(None, |best: Option<(&Bound, usize)>, (m, n)| match best {
                Some((_, k)) if k >= n => best,
                _ => Some((m, n)),
            })
        else {
            unpaired.push((
                b,
                b.context.iter().filter(|t| fact.terms.contains(t)).count(),
            ));
            continue;
        };
        paired += 1;
        best_shared = best_shared.max(shared);
        // A time the practice gives by when it happened, against a rule that says from
        // which event it counts: the time since the practice's event of those words.
        let from_event = since_event(fact, f, b).map(|v| Bound {
            value: v,
            ..f.clone()
        });
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
            (Some(Anchor::Since), Some(r)) => !r.terms().is_empty() && from_event.is_none(),
            (Some(a), Some(r)) => !same_event(a.terms(), r.terms()),
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
        let period = limit == Limit::Exactly && b.value.calendar_days().is_some();
        match f.value.keeps(limit, &b.value) {
            // A value vouches for a rule only when its words say it is about what the rule's
            // figure is about.
            Some(true) if shared == 0 => open.push(format!(
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
        }
    }

    // Before an event, with no figure: "approved in advance", "before onboarding".
    if rule.reading.before.is_some() && limits.is_empty() {
        let after = fact
            .reading
            .bounds
            .iter()
            .find(|b| matches!(b.anchor, Some(Anchor::After(_))));
        let deferred = ["later", "afterwards", "after", "next"].iter().any(|w| {
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

    // Roles.
    for role in &rule.reading.roles {
        let said: Vec<&rules::Role> = scope
            .iter()
            .flat_map(|f| f.reading.roles.iter())
            .filter(|r| r.kind == role.kind || role.kind == RoleKind::Approves)
            .collect();
        let named_it = said.iter().find(|r| same_role(&r.who, &role.who));
        // Met only by the same act in the fact's own sentence: someone told is not someone
        // who approved, and a name in the sentence before may be of another matter.
        // A member of a body is not the body ("a Board member agreed" is not the Board's
        // approval).
        let member = |who: &str| {
            who.split_whitespace()
                .any(|w| matches!(w.to_lowercase().as_str(), "member" | "members" | "one"))
        };
        let here = scope
            .iter()
            .filter(|f| f.sentence == fact.sentence)
            .flat_map(|f| f.reading.roles.iter())
            .any(|r| {
                r.kind == role.kind
                    && !r.negated
                    && same_role(&r.who, &role.who)
                    && member(&r.who) == member(&role.who)
            });
        match named_it {
            Some(r) if r.negated => breaks.push(format!(
                "the practice says {} did not {}",
                role.who,
                if role.kind == RoleKind::Approves {
                    "approve"
                } else {
                    "hear of it"
                }
            )),
            // A rule that forbids it: done by them, it is broken.
            Some(_) if here && rule.reading.modality == Modality::MustNot => breaks.push(format!(
                "{} by {}, which the rule forbids",
                if role.kind == RoleKind::Approves {
                    "approved"
                } else {
                    "told"
                },
                role.who
            )),
            // Approval of something else ("the Board approved the budget, which includes
            // the contract's cost"): not the approval the rule asks for.
            Some(_)
                if here
                    && role.kind == RoleKind::Approves
                    && of_another_thing(fact, scope, rule, &role.who) =>
            {
                open.push(format!(
                    "whether what {} approved is what the rule asks them to approve",
                    role.who
                ))
            }
            Some(_) if here => meets.push(format!(
                "{} by {}",
                if role.kind == RoleKind::Approves {
                    "approved"
                } else {
                    "told"
                },
                role.who
            )),
            Some(_) => open.push(format!(
                "whether {} {} this",
                role.who,
                if role.kind == RoleKind::Approves {
                    "approved"
                } else {
                    "was told of"
                }
            )),
            None => {
                let others: Vec<&&rules::Role> =
                    said.iter().filter(|r| r.kind == role.kind).collect();
                // Named where the practice only supposes it ("we believe her line manager
                // approved it too"): open, whoever else approved.
                let supposed = scope.iter().any(|f| {
                    f.uncertain && {
                        let said = f.text.to_lowercase();
                        role.who
                            .to_lowercase()
                            .split_whitespace()
                            .filter(|w| !w.ends_with("'s"))
                            .all(|w| said.contains(w))
                    }
                });
                if supposed {
                    open.push(format!(
                        "whether {} {}",
                        role.who,
                        if role.kind == RoleKind::Approves {
                            "approved"
                        } else {
                            "was told"
                        }
                    ));
                } else if role.kind == RoleKind::Approves {
                    if let Some(other) = others.iter().find(|r| !r.negated) {
                        breaks.push(format!(
                            "approved by {} where the rule names {}",
                            other.who, role.who
                        ));
                    } else if fact.reading.negated && asks_leave(&fact.text) {
                        breaks.push(format!(
                            "no approval by {}, which the rule asks for",
                            role.who
                        ));
                    } else {
                        open.push(format!("whether {} approved", role.who));
                    }
                } else {
                    open.push(format!("whether {} was told", role.who));
                }
            }
        }
    }

    // One member of a body where the rule names the body ("the Disclosure Committee shall
    // decide"): the body did not act; broken when the practice says it did not.
    if let Some(body) = member_of(&fact.text) {
        let rule_lower = rule.text.to_lowercase();
        let body_lower = body.to_lowercase();
        let names_body = rule_lower.contains(&body_lower)
            && !rule_lower
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| matches!(w, "member" | "members"));
        if names_body {
            let last = body_lower.split_whitespace().last().unwrap_or("");
            let body_did_not = scope
                .iter()
                .any(|f| f.reading.negated && f.text.to_lowercase().contains(last));
            if body_did_not {
                breaks.push(format!(
                    "one member of the {body} acted and the practice says the {body} did not"
                ));
            } else {
                open.push(format!(
                    "whether the {body} acted, not only one of its members"
                ));
            }
        }
    }

    // A stand-in the rule allows only in someone's absence ("the Deputy MLRO in the MLRO's
    // absence"): their act meets the rule only when the practice says the other was away.
    if let Some((stand_in, absent)) = stand_in(&rule.text) {
        let acted = fact.text.to_lowercase().contains(&stand_in.to_lowercase());
        let away = scope.iter().any(|f| {
            f.text
                .to_lowercase()
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| {
                    matches!(
                        w,
                        "absent"
                            | "absence"
                            | "away"
                            | "leave"
                            | "holiday"
                            | "unavailable"
                            | "sick"
                            | "vacation"
                    )
                })
        });
        if acted && !away && breaks.is_empty() {
            open.push(format!(
                "whether the {absent} was absent, as the rule asks before the {stand_in} acts"
            ));
        }
    }

    // A form the rule asks for ("approved in writing", "written consent"): said otherwise
    // ("agreed verbally"), it is broken; not said, it is open.
    let words_of = |t: &str| -> Vec<String> {
        t.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let rule_words = words_of(&rule.text);
    let in_writing = rule_words
        .windows(2)
        .any(|p| p[0] == "in" && p[1] == "writing")
        || rule_words.iter().any(|w| w == "written");
    if in_writing && !fact.reading.negated && (!meets.is_empty() || breaks.is_empty()) {
        let said: Vec<String> = scope.iter().flat_map(|f| words_of(&f.text)).collect();
        let spoken = said.iter().any(|w| {
            matches!(
                w.as_str(),
                "verbal" | "verbally" | "oral" | "orally" | "phone" | "telephone" | "spoke"
            )
        });
        let written = said.iter().any(|w| {
            matches!(
                w.as_str(),
                "writing" | "written" | "email" | "emailed" | "letter" | "signed" | "form"
            )
        });
        if spoken && !written {
            breaks
                .push("given by word of mouth, where the rule asks for it in writing".to_string());
        } else if !written && !meets.is_empty() {
            open.push("whether it was in writing, as the rule asks".to_string());
        }
    }

    // A rule with no value or role to compare: the practice does what it requires, or
    // says it is not done, or does what it forbids.
    if breaks.is_empty() && meets.is_empty() && open.is_empty() {
        let does = !rule.actions.is_empty() && rule.actions.iter().all(|a| fact.terms.contains(a));
        let restated = coverage.of_rule;
        // The fact speaks of nothing but what the rule speaks of: said not done, the rule
        // is broken; said done, it is met when the fact also says enough of the rule.
        let wholly = coverage.of_fact >= WHOLLY;
        let restates = wholly && restated >= SPEAKS;
        match rule.reading.modality {
            Modality::Must if fact.reading.negated && (does || restated >= SPEAKS || wholly) => {
                breaks.push("the practice says this is not done".to_string())
            }
            Modality::MustNot if !fact.reading.negated && (does || restated >= 0.5 || restates) => {
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
    // business days") may be about something else: not verifiable.
    let restates = coverage.of_fact >= WHOLLY && coverage.of_rule >= SPEAKS;
    if !meets.is_empty() && breaks.is_empty() && !rule.actions.is_empty() && !restates {
        // Said of the fact's own clause (or the one whose subject it goes on with): a
        // figure beside another act of the same sentence is that act's.
        let said: HashSet<&String> = fact.terms.iter().chain(&fact.carried).collect();
        if !rule.actions.iter().any(|a| said.contains(a)) {
            open.push("the practice does not say it does what the rule requires".to_string());
        }
    }
    // A rule the fact is not most about, with none of its values and nothing decisive, is
    // not worth a finding of its own.
    if !primary && mine.is_empty() && breaks.is_empty() {
        return None;
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

/// Whether a text speaks of asking leave: approval, permission, consent, sign-off,
/// clearance, asking ("without asking anyone").
fn asks_leave(text: &str) -> bool {
    let lower = text.to_lowercase();
    [
        "approv",
        "permission",
        "consent",
        "sign-off",
        "signoff",
        "sign off",
        "clearance",
        "asking",
        "ask ",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// Whether a rule states a condition as a comparison with no figure ("below the
/// threshold", "above the limit").
fn condition_in_words(text: &str) -> bool {
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

fn report(
    request: &AnswerRequest,
    rules: &[Rule<'_>],
    mut findings: Vec<Finding<'_>>,
    uncovered: &[&Fact],
    facts: usize,
) -> String {
    // One finding a rule: a break over a meet over an open question.
    findings.sort_by(|a, b| a.rule.cmp(&b.rule).then(a.verdict.cmp(&b.verdict)));
    findings.dedup_by(|later, first| later.rule == first.rule);
    // And one a clause of a document: its strongest.
    findings.sort_by(|a, b| {
        let pa = rules[a.rule].passage.number;
        let pb = rules[b.rule].passage.number;
        pa.cmp(&pb).then(a.verdict.cmp(&b.verdict))
    });
    let mut seen_text: HashSet<String> = HashSet::new();
    findings.retain(|f| seen_text.insert(format!("{}|{}", rules[f.rule].text, f.verdict.label())));
    findings.sort_by(|a, b| {
        a.verdict.cmp(&b.verdict).then(
            rules[a.rule]
                .passage
                .number
                .cmp(&rules[b.rule].passage.number),
        )
    });
    findings.truncate(MAX_FINDINGS);

    let docs: Vec<String> = request
        .documents
        .iter()
        .map(|d| named(request, d))
        .collect();
    let mut out = format!(
        "I checked {} statement{} of your text against {}, rule by rule. This is a check of the text against the documents' wording, not a legal opinion.\n\n",
        facts,
        if facts == 1 { "" } else { "s" },
        if docs.is_empty() { "your documents".to_string() } else { docs.join(" and ") }
    );
    for f in &findings {
        let r = &rules[f.rule];
        let place = r
            .passage
            .heading
            .as_deref()
            .map(|h| format!(" {h}"))
            .unwrap_or_default();
        let doc = DocRef {
            id: r.passage.doc_id.clone(),
            title: r.passage.title.clone(),
        };
        let source = if request.documents.len() > 1 {
            format!(" ({})", doc.title)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "- **{}**{place}{source}: \"{}\" [{}]. The practice: \"{}\": {}.",
            f.verdict.label(),
            r.quote.trim_end_matches('.'),
            r.passage.number,
            f.fact.text.trim_end_matches('.'),
            f.why.join("; ")
        );
    }
    if findings.is_empty() {
        out.push_str("No rule of these documents speaks to what your text describes.\n");
    }
    if !uncovered.is_empty() {
        out.push_str("\nNot covered by these documents (no rule speaks to it):\n");
        for f in uncovered {
            let _ = writeln!(out, "- \"{}\"", f.text.trim_end_matches('.'));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stand_in_and_whose_absence_it_waits_for() {
        assert_eq!(
            stand_in("The MLRO, or the Deputy MLRO in the MLRO's absence, decides within 72 hours"),
            Some(("Deputy MLRO".to_string(), "MLRO".to_string()))
        );
        assert_eq!(
            stand_in("Payments are approved by the CFO or, in the absence of the CFO, the Finance Director"),
            Some(("Finance Director".to_string(), "CFO".to_string()))
        );
        assert_eq!(stand_in("The MLRO decides within 72 hours"), None);
    }

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
