//! The extractive audit. Each clause of the audited text is matched with the requirement
//! passages that share most of its meaning (a newer version before the one it replaces),
//! and within the best of them with the requirement clause closest to it; then the two are
//! read ([`obligations`](super::obligations)) and compared:
//!
//! - **possible gap**: a figure outside the requirement's bound (durations compared across
//!   units, amounts, ratios), another approver or none ("without senior management
//!   approval"), a step put off that must come first ("next quarter" against "before
//!   onboarding"), optional wording against a mandatory one, a negated obligation;
//! - **consistent**: only when the text states the requirement's figures, approver and
//!   timing with compatible values, and nothing differs;
//! - **not verified**: the text speaks to a requirement but states nothing the offline
//!   model can compare, or leaves part of it unsaid;
//! - **not covered**: no requirement speaks to it.
//!
//! Every finding quotes the user's clause and the requirement verbatim, with its marker. The
//! answer says that it is an extractive check, not a judgement.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::fmt::Write as _;

use super::obligations::{clauses, read, same_approver, Bound, Figure, Reading, Timing};
use super::versions_note;
use crate::llm::AnswerRequest;
use crate::passages::{passage_terms, rank_statement, Passage};
use crate::state::DocRef;
use crate::text::{sentences, shorten, terms};
use crate::versions::{newer_among, Replacement};

/// A requirement must cover at least this share of a clause's meaning to apply to it.
pub(crate) const APPLIES: f64 = 0.3;
/// Requirements within this share of the best one are tried in turn.
const NEAR_BEST: f64 = 0.8;
/// A requirement must share at least this many terms with a clause to apply to it (one
/// shared word, "staff", is a coincidence).
const SHARED: usize = 2;
/// At most this many requirements are tried for one clause.
const TRIED: usize = 3;
/// A replaced document's passages count for this share of their match.
const REPLACED: f64 = 0.5;
/// The longest requirement quote.
const QUOTE_CHARS: usize = 320;

/// What the comparison found.
enum Verdict {
    Gap(Vec<String>),
    Consistent(Vec<String>),
    NotVerified(String),
}

/// A clause of the audited text and what it was compared with.
struct Finding<'a> {
    clause: String,
    outcome: Option<(Verdict, &'a Passage, String)>,
}

/// The clauses of the audited text, each as written.
pub(crate) fn statements(text: &str) -> Vec<String> {
    sentences(text).iter().flat_map(|s| clauses(s)).collect()
}

/// The passages ranked for `clause`, best first; a replaced document's below its newer
/// version's.
pub(crate) fn ranked_for(
    clause: &str,
    passages: &[Passage],
    versions: &[Replacement],
    documents: &[DocRef],
) -> Vec<Passage> {
    let mut ranked = passages.to_vec();
    rank_statement(&mut ranked, clause);
    for p in &mut ranked {
        if newer_among(versions, &p.doc_id, documents).is_some() {
            p.score *= REPLACED;
        }
    }
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score));
    ranked
}

/// The requirement sentence and clause of `passage` closest to the statement's terms.
fn closest(statement: &HashSet<String>, passage: &Passage) -> (String, String) {
    let mut best = (0usize, passage.text.clone(), passage.text.clone());
    for s in sentences(&passage.text) {
        for c in clauses(&s) {
            let shared = terms(&c).iter().filter(|t| statement.contains(*t)).count();
            if shared > best.0 {
                best = (shared, s.clone(), c);
            }
        }
    }
    (best.1, best.2)
}

fn check<'a>(clause: &str, request: &'a AnswerRequest) -> Finding<'a> {
    let ranked = ranked_for(
        clause,
        &request.passages,
        &request.versions,
        &request.documents,
    );
    let top = ranked.first().map(|p| p.score).unwrap_or(0.0);
    let stated = read(clause);
    let statement_terms: HashSet<String> = terms(clause).into_iter().collect();
    let mut first: Option<(Verdict, &'a Passage, String)> = None;
    for r in ranked
        .iter()
        .take(TRIED)
        .filter(|r| r.score >= APPLIES && r.score >= top * NEAR_BEST)
    {
        let Some(passage) = request.passages.iter().find(|p| p.number == r.number) else {
            continue;
        };
        let shared = passage_terms(passage)
            .iter()
            .filter(|t| statement_terms.contains(*t))
            .count();
        if shared < SHARED {
            continue;
        }
        let (sentence, requirement) = closest(&statement_terms, passage);
        let verdict = compare(&stated, &read(&requirement), &statement_terms);
        match verdict {
            Verdict::NotVerified(_) => {
                if first.is_none() {
                    first = Some((verdict, passage, sentence));
                }
            }
            decisive => {
                return Finding {
                    clause: clause.to_string(),
                    outcome: Some((decisive, passage, sentence)),
                }
            }
        }
    }
    Finding {
        clause: clause.to_string(),
        outcome: first,
    }
}

/// The requirement figure a statement's figure speaks about: comparable, and with the
/// most of the statement's terms around it.
fn matching_figure<'a>(
    figure: &Figure,
    required: &'a [Figure],
    statement: &HashSet<String>,
) -> Option<&'a Figure> {
    let near = |f: &Figure| {
        let after = f.after.iter().filter(|t| statement.contains(*t)).count() as f64;
        let before = f.before.iter().filter(|t| statement.contains(*t)).count() as f64;
        after + before / 2.0
    };
    required
        .iter()
        .filter(|r| r.quantity.comparable(&figure.quantity))
        .fold(None, |best: Option<&Figure>, f| match best {
            Some(b) if near(b) >= near(f) => Some(b),
            _ => Some(f),
        })
}

fn compare(stated: &Reading, required: &Reading, statement: &HashSet<String>) -> Verdict {
    let mut gaps = Vec::new();
    let mut matched = Vec::new();
    let mut unsaid = Vec::new();

    let mut compared_figures = false;
    for figure in &stated.figures {
        let Some(req) = matching_figure(figure, &required.figures, statement) else {
            continue;
        };
        compared_figures = true;
        let (s, r) = (figure.quantity, req.quantity);
        let order = s.compare(&r);
        match (req.bound, order) {
            (_, None) => {}
            (Bound::Exactly, Some(Ordering::Equal))
            | (Bound::AtMost, Some(Ordering::Less | Ordering::Equal))
            | (Bound::AtLeast, Some(Ordering::Greater | Ordering::Equal)) => {
                matched.push(format!("{s} (required: {r})"));
            }
            (Bound::AtMost, Some(_)) => gaps.push(format!("states {s}, more than the {r} allowed")),
            (Bound::AtLeast, Some(_)) => {
                gaps.push(format!("states {s}, less than the {r} required"))
            }
            (Bound::Exactly, Some(_)) => {
                gaps.push(format!("states {s} where the requirement says {r}"))
            }
        }
    }
    if !compared_figures {
        if let Some(f) = required.figures.first() {
            unsaid.push(format!("the figure the requirement sets ({})", f.quantity));
        }
    }

    if let Some(req) = &required.approver {
        match &stated.approver {
            Some(s) if s.without => gaps.push(format!(
                "goes ahead without {} approval, which the requirement asks for",
                if s.who.is_empty() { &req.who } else { &s.who }
            )),
            Some(s) if same_approver(&s.who, &req.who) => {
                matched.push(format!("approval by {}", req.who))
            }
            Some(s) => gaps.push(format!(
                "approval by {} where the requirement names {}",
                s.who, req.who
            )),
            None => unsaid.push(format!("approval by {}", req.who)),
        }
    }

    match (&required.timing, &stated.deferred) {
        (Some(Timing::Before(when)), Some(later)) => {
            gaps.push(format!(
                "puts it off (\"{later}\") where it is required before {when}"
            ));
        }
        (Some(Timing::Immediately), Some(later)) => {
            gaps.push(format!(
                "puts it off (\"{later}\") where it is required immediately"
            ));
        }
        (Some(Timing::Immediately), None) if !stated.figures.is_empty() => {
            gaps.push("gives a delay where it is required immediately".to_string());
        }
        (Some(t), None) => match (&stated.timing, t) {
            (Some(s), _) if s == t => matched.push("the timing".to_string()),
            (Some(Timing::Before(_)), Timing::Before(_)) => matched.push("the timing".to_string()),
            _ => unsaid.push(match t {
                Timing::Before(when) => format!("that it happens before {when}"),
                Timing::Immediately => "that it happens immediately".to_string(),
            }),
        },
        (None, _) => {}
    }

    if let (Some(may), Some(must)) = (stated.optional, required.mandatory) {
        if !required.prohibits {
            gaps.push(format!(
                "optional wording (\"{may}\") where the requirement says \"{must}\""
            ));
        }
    }
    let skipped_approval = stated.approver.as_ref().is_some_and(|a| a.without);
    if required.prohibits && !stated.negated {
        gaps.push("the requirement forbids this".to_string());
    } else if required.prohibits && stated.negated {
        matched.push("the prohibition".to_string());
    } else if stated.negated && required.mandatory.is_some() && !skipped_approval {
        gaps.push("says it is not done where the requirement says it must be".to_string());
    }

    if !gaps.is_empty() {
        Verdict::Gap(gaps)
    } else if !matched.is_empty() && unsaid.is_empty() {
        Verdict::Consistent(matched)
    } else if !matched.is_empty() {
        Verdict::NotVerified(format!(
            "{} match, but the text does not state {}",
            matched.join(", "),
            unsaid.join(" or ")
        ))
    } else if !unsaid.is_empty() {
        Verdict::NotVerified(format!("the text does not state {}", unsaid.join(" or ")))
    } else {
        Verdict::NotVerified(
            "the text has no figure, deadline or approver the offline check can compare"
                .to_string(),
        )
    }
}

pub(crate) fn audit(request: &AnswerRequest) -> String {
    let text = request
        .audit_text
        .as_deref()
        .unwrap_or(request.question.as_str());
    let statements = statements(text);
    let against = super::join_titles(&request.documents);
    if statements.is_empty() {
        return "There is no text to audit.".to_string();
    }
    if request.passages.is_empty() {
        return format!("{against} gave me no requirements to audit against.");
    }
    let (mut gaps, mut open, mut consistent, mut uncovered) =
        (String::new(), String::new(), String::new(), String::new());
    let mut gap_count = 0usize;
    for s in &statements {
        let finding = check(s, request);
        let Some((verdict, passage, sentence)) = finding.outcome else {
            let _ = writeln!(uncovered, "- \"{}\"", finding.clause);
            continue;
        };
        let quote = format!(
            "{}: \"{}\" [{}]",
            passage.title,
            shorten(&sentence, QUOTE_CHARS),
            passage.number
        );
        match verdict {
            Verdict::Gap(reasons) => {
                gap_count += 1;
                let _ = writeln!(
                    gaps,
                    "{gap_count}. \"{}\": {}. {quote}",
                    finding.clause,
                    reasons.join("; ")
                );
            }
            Verdict::NotVerified(why) => {
                let _ = writeln!(
                    open,
                    "- \"{}\": {why}. Closest requirement, {quote}",
                    finding.clause
                );
            }
            Verdict::Consistent(what) => {
                let _ = writeln!(
                    consistent,
                    "- \"{}\": {}. {quote}",
                    finding.clause,
                    what.join(", ")
                );
            }
        }
    }
    let n = statements.len();
    let mut out = format!(
        "Offline check of {n} statement{} against {against}. This extractive check matches your text to the documents' wording and compares figures, deadlines and approvers; it is not a compliance judgement.\n\n",
        if n == 1 { "" } else { "s" },
    );
    if !gaps.is_empty() {
        let _ = writeln!(out, "Possible gaps:\n{gaps}");
    }
    if !open.is_empty() {
        let _ = writeln!(out, "Not verified (check these by hand):\n{open}");
    }
    if !consistent.is_empty() {
        let _ = writeln!(
            out,
            "Consistent (the same figures, approver and timing as the requirement):\n{consistent}"
        );
    }
    if !uncovered.is_empty() {
        let _ = writeln!(out, "Not covered by these documents:\n{uncovered}");
    }
    out.push_str(versions_note(request, false).trim_start_matches('\n'));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::samples::samples;
    use crate::documents::Document;
    use crate::passages::{number, split};
    use crate::state::Action;

    /// An audit of `text` against the sample whose title starts with `prefix`, with every
    /// passage given.
    fn audit_of(prefix: &str, text: &str) -> String {
        let s = samples()
            .into_iter()
            .find(|s| s.title.starts_with(prefix))
            .expect("a sample");
        let doc = Document {
            id: "d".into(),
            owner: "u".into(),
            title: s.title,
            content: s.content,
            created_at_ms: 0,
        };
        let mut passages = split(&doc);
        number(&mut passages);
        audit(&AnswerRequest {
            action: Action::Audit,
            question: "Audit".into(),
            documents: vec![doc.doc_ref()],
            versions: vec![],
            passages,
            retrieval_confidence: 1.0,
            audit_text: Some(text.into()),
            web_search_query: None,
            history: vec![],
        })
    }

    #[test]
    fn a_skipped_approval_and_a_deferred_check_are_gaps_never_consistent() {
        let r = audit_of(
            "Anti-Money",
            "The CEO is the brother of a government minister, so we fast-tracked it without senior management approval. We will collect the source of funds next quarter.",
        );
        assert!(
            r.contains("goes ahead without senior management approval"),
            "{r}"
        );
        assert!(
            r.contains("puts it off (\"next quarter\") where it is required before onboarding"),
            "{r}"
        );
        assert!(!r.contains("Consistent"), "{r}");
    }

    #[test]
    fn durations_are_compared_across_units() {
        let r = audit_of(
            "Data Retention Policy 2024",
            "Recorded calls are kept for 12 months.",
        );
        assert!(
            r.contains("states 12 months where the requirement says 5 years"),
            "{r}"
        );
        let r = audit_of(
            "Data Retention Policy 2023",
            "Recorded telephone calls with customers are retained for one year.",
        );
        assert!(r.contains("Consistent"), "{r}");
        assert!(r.contains("1 year (required: 12 months)"), "{r}");
    }

    #[test]
    fn a_text_that_shares_one_common_word_is_not_covered() {
        let r = audit_of(
            "Anti-Money",
            "The staff canteen serves vegetarian meals every Friday.",
        );
        assert!(r.contains("Not covered by these documents:"), "{r}");
        assert!(
            !r.contains("Possible gaps") && !r.contains("Consistent"),
            "{r}"
        );
    }

    #[test]
    fn an_obligation_the_text_only_touches_is_not_verified() {
        let r = audit_of(
            "Data Retention Policy 2024",
            "Deletion of expired records is postponed whenever a business unit considers them still useful.",
        );
        assert!(r.contains("Not verified"), "{r}");
        assert!(r.contains("approval by Data Protection Officer"), "{r}");
    }
}
