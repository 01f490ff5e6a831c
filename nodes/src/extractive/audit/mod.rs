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

mod check;
mod clock;
mod conditions;
mod document_rules;
mod events;
mod form;
mod pairing;
mod parties;
mod tables;

use check::{check, Coverage, Tried};
use document_rules::rules_of;
use pairing::{can_pair, pairs_a_value, SumInOrder};
use tables::{Band, Row};

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
/// A fact at least this share of whose words are a rule's tells the rule's act.
const SPEAKS_WHOLLY: f64 = 0.5;
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
/// A value of the practice said with at least this many of the words around the rule's is
/// a value of the same thing.
const SAME_THING: usize = 2;

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
    /// The band of values it is for, when it is a table's row for one ("£5,000.01 to
    /// £50,000 | Head of Department").
    band: Option<Band>,
    /// The conditions of an earlier sentence of its clause that it goes on under: "4.2
    /// Purchases above £100,000 require a formal tender. Suppliers must be given at least
    /// 15 business days to respond" (the tender's suppliers, so above £100,000).
    inherited: Vec<Bound>,
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
    // A term no rule has (a name, a date of the practice) cannot tell rules apart: it
    // weighs like the commonest, not the rarest.
    let idf = |t: &str| match df.get(t).copied().unwrap_or(0) {
        0 => (1.0 + n / (1.0 + n)).ln(),
        d => (1.0 + n / (1.0 + d as f64)).ln(),
    };

    // Whether the practice's case is a table row's: for a band of values, every value of
    // the practice of the band's kind inside it, or every one outside it; for a named case,
    // not when the practice names another row's case and not this one's.
    let practice: Vec<&Fact> = facts.iter().collect();
    let said_all: HashSet<&String> = facts
        .iter()
        .flat_map(|f| f.terms.iter().chain(&f.carried))
        .collect();
    let in_band: Vec<Option<bool>> = rules
        .iter()
        .map(|r| match &r.band {
            // A row of another case the practice names ("Level 3", not "Level 2").
            None if r
                .row
                .as_ref()
                .is_some_and(|row| row.of_another_case(&said_all)) =>
            {
                Some(false)
            }
            None => Some(true),
            Some(band) => {
                // The practice's values of the band's kind; those said with the words of
                // its column's heading ("a claim of GBP 1,450" for "Total value of claim")
                // when there are some.
                let values: Vec<(&Bound, bool)> = practice
                    .iter()
                    .flat_map(|f| f.reading.bounds.iter())
                    .filter_map(|b| band.holds(&b.value).map(|h| (b, h)))
                    .collect();
                // The heading's own noun ("claim" of "Total value of claim"), not the
                // words any amount may have ("a dinner that cost GBP 570 in total").
                let generic: Vec<String> = ["total", "value", "amount", "sum", "size"]
                    .iter()
                    .map(|w| crate::vocabulary::term(w))
                    .collect();
                let of_it = |b: &Bound| {
                    band.of
                        .iter()
                        .filter(|t| !generic.contains(t))
                        .any(|t| b.context.contains(t))
                };
                let named = values.iter().any(|(b, _)| of_it(b));
                let held: Vec<bool> = values
                    .iter()
                    .filter(|(b, _)| !named || of_it(b))
                    .map(|(_, h)| *h)
                    .collect();
                match (held.iter().all(|h| *h), held.iter().any(|h| *h)) {
                    _ if held.is_empty() => None,
                    (true, _) => Some(true),
                    (false, false) => Some(false),
                    _ => None,
                }
            }
        })
        .collect();
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
            .filter(|(i, _)| in_band[*i] != Some(false))
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
                // Both count a time from an event: the same one ("four weeks after we
                // received it" and "30 days from receipt of a valid invoice"), or another.
                let events: Vec<bool> = fact
                    .reading
                    .bounds
                    .iter()
                    .filter_map(|f| match &f.anchor {
                        Some(Anchor::After(t)) if !t.is_empty() => Some((f, t)),
                        _ => None,
                    })
                    .flat_map(|(f, t)| {
                        r.reading
                            .bounds
                            .iter()
                            .filter_map(move |b| match &b.anchor {
                                Some(Anchor::After(u)) if !u.is_empty() && can_pair(f, b) => {
                                    Some(pairing::same_event(t, u))
                                }
                                _ => None,
                            })
                    })
                    .collect();
                let same_event = events.iter().any(|s| *s);
                let other_event = !events.is_empty() && !same_event;
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
                if same_event {
                    score += PAIRED;
                } else if other_event {
                    score -= PAIRED / 2.0;
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
                "FACT {:?} denied={} restates={} bounds={:?} best={:?}",
                fact.text,
                fact.denied,
                fact.restates,
                fact.reading
                    .bounds
                    .iter()
                    .map(|b| (&b.value.written, b.value.frequency, &b.anchor, &b.context))
                    .collect::<Vec<_>>(),
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
                    .filter(|(i, r)| {
                        in_band[*i] != Some(false)
                            && r.reading.bounds.iter().any(|x| can_pair(b, x))
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
            // The fact does what the rule asks, to whom it names: "reported it to the SOC"
            // for "must report it to the SOC", not "told the Head of Security".
            let does_it = !rule.actions.is_empty()
                && rule.actions.iter().all(|a| fact.terms.contains(a))
                && (rule.reading.roles.is_empty()
                    || fact.reading.roles.is_empty()
                    || fact
                        .reading
                        .roles
                        .iter()
                        .any(|f| rule.reading.roles.iter().any(|x| same_role(&f.who, &x.who))));
            // Its verb, at least ("decided ... at 13:30" for "must decide ... within 3
            // hours"): a refusal is no report.
            let tells_the_verb = rule.actions.first().is_some_and(|v| fact.terms.contains(v));
            let mine: Vec<&Bound> = fact
                .reading
                .bounds
                .iter()
                .zip(&owner)
                .filter(|(b, o)| {
                    // When the act happened is a moment, not a quantity of one rule's: each
                    // rule counts to it from its own event ("decided at 13:30": three
                    // hours from the report, and the start of eight hours to open the
                    // list), when the fact is mostly the rule's words with its verb or does its act, and
                    // the rule names the event it counts from.
                    **o == Some(i)
                        || matches!(b.anchor, Some(Anchor::Since))
                            && (coverage.of_fact >= SPEAKS_WHOLLY && tells_the_verb || does_it)
                            && rule.reading.bounds.iter().any(|x| {
                                can_pair(b, x)
                                    && matches!(&x.anchor, Some(Anchor::After(t)) if !t.is_empty())
                            })
                })
                .map(|(b, _)| b)
                .collect();
            let tried = Tried {
                index: i,
                score,
                primary: primary == Some(i),
                coverage,
                in_band: in_band[i],
            };
            let got = check(fact, &mine, &scope, &practice, rule, &tried);
            if std::env::var("AUDIT_DEBUG").is_ok() {
                eprintln!(
                    "  TRY {:?} -> {:?}",
                    rule.text,
                    got.as_ref().map(|f| (f.verdict, f.why.clone()))
                );
            }
            if let Some(f) = got {
                findings.push(f);
            }
        }
    }
    report(request, &rules, findings, &uncovered, facts.len())
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
    use crate::state::Action;

    /// An audit of `practice` against one document of `clauses`.
    fn audit_of(clauses: &[&str], practice: &str) -> String {
        let passages = clauses
            .iter()
            .enumerate()
            .map(|(i, c)| Passage {
                number: i as u32 + 1,
                doc_id: "d".into(),
                title: "Policy".into(),
                heading: Some(format!("§{} Escalation", i + 1)),
                clause: None,
                text: (*c).into(),
                lead: None,
                score: 0.0,
            })
            .collect();
        audit(&AnswerRequest {
            action: Action::Audit,
            question: "Audit this".into(),
            documents: vec![DocRef {
                id: "d".into(),
                title: "Policy".into(),
            }],
            versions: vec![],
            editions: vec![],
            passages,
            retrieval_confidence: 0.0,
            audit_text: Some(practice.into()),
            web_search_query: None,
            history: vec![],
        })
    }

    #[test]
    fn one_moment_is_the_act_of_one_rule_and_the_start_of_another() {
        let r = audit_of(
            &[
                "The Control Room must decide whether the information is inside information within 3 hours of receiving the report.",
                "The Control Room must open a deal-specific section within 8 hours of deciding that information is inside information.",
            ],
            "On Monday 12 May 2025 at 09:15 an analyst heard of a rights issue. She reported it to the Control Room at 11:05. The Control Room decided it was inside information at 13:30 the same day and opened a deal-specific section at 16:00.",
        );
        let line = |figure: &str| {
            r.lines()
                .find(|l| l.contains(figure))
                .unwrap_or_else(|| panic!("{figure}: {r}"))
        };
        assert!(line("3 hours").starts_with("- **Meets**"), "{r}");
        assert!(line("8 hours").starts_with("- **Meets**"), "{r}");
    }

    #[test]
    fn the_event_a_deadline_counts_from_does_not_keep_it() {
        let r = audit_of(
            &["If the interest is not approved, the member of staff must give it up within 30 calendar days of being told of the decision."],
            "On Tuesday 2 December 2025 Compliance found an unapproved interest. The Compliance officer told the Head of Compliance that same afternoon. The Head of Compliance refused approval on Friday 5 December and told the analyst that day.",
        );
        assert!(!r.contains("**Meets**"), "{r}");
    }

    #[test]
    fn one_amount_under_a_cap_on_a_total_does_not_show_the_total_is() {
        let r = audit_of(
            &["Where gifts received from a single source in any rolling 12 months total more than £750, the member of staff must notify Compliance."],
            "On 6 November he accepted tickets worth £640 from a broker. The broker had already given him hospitality worth £520 in March. I don't know whether Compliance was told about the running total.",
        );
        assert!(!r.contains("**Meets**"), "{r}");
    }

    #[test]
    fn a_deadline_date_is_kept_or_missed_by_its_own_act() {
        let r = audit_of(
            &["All staff must attest each year, by 31 January, that they have read this policy."],
            "The broker had already given him hospitality worth £520 back in March this year.",
        );
        assert!(!r.contains("**Breaks**"), "{r}");
    }

    #[test]
    fn what_a_document_sets_out_and_how_long_it_keeps_records_are_not_broken_by_a_day() {
        let r = audit_of(
            &[
                "This policy sets out how the Firm approves, tests and releases changes to its IT systems.",
                "Agreements must be kept for 6 years after the relationship ends.",
            ],
            "On Monday 13 January the CAB approved the change. The agreement was signed the following day.",
        );
        assert!(!r.contains("**Breaks**"), "{r}");
    }

    #[test]
    fn the_time_someone_else_was_told_is_not_the_time_the_rule_asks_for() {
        let r = audit_of(
            &["Where a change causes a priority 1 incident, the Head of IT Operations must inform the Chief Operating Officer (COO) within 1 hour of the incident being identified."],
            "At 14:25 on Wednesday 4 June 2025 a priority 1 incident was identified. The CISO was told at 10:00 the next morning.",
        );
        assert!(!r.contains("**Breaks**"), "{r}");
    }
}
