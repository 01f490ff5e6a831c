//! Scoring one answer: the case's own expectations (facts, forbidden claims, cited and
//! uncited documents, the prompt raised or none, a stop, an audit's verdicts), and three
//! checks every answer gets:
//!
//! - `quotes verbatim`: every quoted span of three words or more (`"..."`, `“...”`; an
//!   ellipsis `…` splits a quote into parts) appears word for word in the user's messages
//!   or in a document;
//! - `citation markers`: every `[n]` marker of the answer is one of its citations;
//! - `says how it was made`: the state's `answered_by` is set (of a turn that answered).

use palgraph_nodes::Document;

use super::cases::{Expect, ExpectedVerdict, Verdict};
use super::runner::{Runner, TurnEnd, TurnResult};

/// A quote shorter than this many words is not checked (a term, a label).
const QUOTE_MIN_WORDS: usize = 3;

/// One check and whether it passed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// Whether the answer passed it.
    pub passed: bool,
}

fn check(name: impl Into<String>, passed: bool) -> Check {
    Check {
        name: name.into(),
        passed,
    }
}

/// Lower case, whitespace folded to single spaces.
fn fold(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The checks of one answered turn. `said` is every message of the case so far; `runner`
/// knows the documents the user has.
pub fn score_turn(
    expect: &Expect,
    turn: &TurnResult,
    said: &[String],
    runner: &Runner,
) -> Vec<Check> {
    let answer = fold(&turn.response);
    let mut out = Vec::new();
    if let TurnEnd::Failed(e) = &turn.end {
        out.push(check(format!("the run completes ({e})"), false));
    } else if expect.stops {
        out.push(check(
            "the turn stops without an answer",
            turn.end == TurnEnd::Stopped,
        ));
    } else {
        out.push(check(
            "the turn ends with an answer",
            turn.end == TurnEnd::Answered,
        ));
    }
    match expect.asks.as_deref() {
        Some("none") => out.push(check(
            format!(
                "asks nothing (asked {})",
                turn.asked.as_deref().unwrap_or("nothing")
            ),
            turn.asked.is_none(),
        )),
        Some(kind) => out.push(check(
            format!("asks {kind}"),
            turn.asked.as_deref() == Some(kind),
        )),
        None => {}
    }
    for fact in &expect.must {
        let met = fact.spellings().iter().any(|s| answer.contains(&fold(s)));
        out.push(check(format!("says \"{fact}\""), met));
    }
    for claim in &expect.must_not {
        out.push(check(
            format!("does not say \"{claim}\""),
            !answer.contains(&fold(claim)),
        ));
    }
    let cited = |name: &str| {
        turn.citations
            .iter()
            .any(|c| runner.names(name, &c.doc_id, &c.title))
    };
    for d in &expect.cites {
        out.push(check(format!("cites {d}"), cited(d)));
    }
    for d in &expect.not_cites {
        out.push(check(format!("does not cite {d}"), !cited(d)));
    }
    let findings = findings(&turn.response);
    for v in &expect.verdicts {
        out.push(verdict_check(v, &findings));
    }
    if turn.end == TurnEnd::Answered {
        let bad = unverified_quotes(&turn.response, said, runner.library());
        let name = if bad.is_empty() {
            "quotes verbatim".to_string()
        } else {
            format!("quotes verbatim (not found: \"{}\")", bad.join("\", \""))
        };
        out.push(check(name, bad.is_empty()));
        let markers: Vec<u32> = turn.citations.iter().map(|c| c.marker).collect();
        let dangling: Vec<u32> = markers_in(&turn.response)
            .into_iter()
            .filter(|m| !markers.contains(m))
            .collect();
        out.push(check(
            format!("citation markers are citations {dangling:?}"),
            dangling.is_empty(),
        ));
    }
    if turn.end == TurnEnd::Answered {
        out.push(check("says how it was made", turn.answered_by.is_some()));
    }
    out
}

/// The name of a verdict check that failed because the finding says "meets" where the
/// rule is broken or cannot be verified: a false "consistent", the worst an audit can say.
pub const FALSE_MEETS: &str = "false meets";

/// The findings of an audit answer: each line that starts (after a list marker) with a
/// verdict in bold, folded, with its verdict.
pub fn findings(answer: &str) -> Vec<(Verdict, String)> {
    answer
        .lines()
        .filter_map(|line| {
            let folded = fold(line);
            let bare = folded
                .strip_prefix("- ")
                .or_else(|| folded.strip_prefix("* "))
                .unwrap_or(&folded);
            [Verdict::Breaks, Verdict::Meets, Verdict::NotVerifiable]
                .into_iter()
                .find(|v| bare.starts_with(&format!("**{}**", v.label().to_lowercase())))
                .map(|v| (v, folded.clone()))
        })
        .collect()
}

/// Whether the finding that mentions `expected.about` has its verdict; a finding saying
/// "meets" of a rule that is broken or cannot be verified fails as [`FALSE_MEETS`].
fn verdict_check(expected: &ExpectedVerdict, findings: &[(Verdict, String)]) -> Check {
    let about = fold(&expected.about);
    let said: Vec<Verdict> = findings
        .iter()
        .filter(|(_, line)| line.contains(&about))
        .map(|(v, _)| *v)
        .collect();
    let wanted = expected.verdict;
    if wanted != Verdict::Meets && said.contains(&Verdict::Meets) {
        return check(
            format!(
                "{FALSE_MEETS}: \"{}\" should be {}",
                expected.about,
                wanted.label()
            ),
            false,
        );
    }
    let found = if said.is_empty() {
        "no finding mentions it".to_string()
    } else {
        said.iter()
            .map(|v| v.label())
            .collect::<Vec<_>>()
            .join(", ")
    };
    check(
        format!("finds \"{}\" {} ({found})", expected.about, wanted.label()),
        said.contains(&wanted),
    )
}

/// The quoted parts of `answer` (three words or more) found neither in what the user said
/// nor in a document.
pub fn unverified_quotes(answer: &str, said: &[String], library: &[Document]) -> Vec<String> {
    // A table's cell breaks are layout, not words: a row quoted "a | b" is the row written
    // with pipes or with tabs.
    let cells = |s: &str| fold(&s.replace('|', " "));
    let sources: Vec<String> = said
        .iter()
        .map(|s| cells(s))
        .chain(library.iter().map(|d| cells(&d.content)))
        .collect();
    let mut bad = Vec::new();
    for quote in quotes(answer) {
        for part in quote.split('…') {
            let part = fold(part.trim().trim_end_matches(['.', ',', ';', ':']));
            if part.split(' ').count() < QUOTE_MIN_WORDS {
                continue;
            }
            if !sources.iter().any(|s| s.contains(&cells(&part))) {
                bad.push(part);
            }
        }
    }
    bad
}

/// The spans between straight double quotes, and between curly ones.
fn quotes(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut open: Option<(usize, char)> = None;
    for (i, c) in text.char_indices() {
        match (open, c) {
            (None, '"') => open = Some((i + 1, '"')),
            (None, '“') => open = Some((i + c.len_utf8(), '”')),
            (Some((start, close)), c) if c == close => {
                out.push(text[start..i].to_string());
                open = None;
            }
            // A paragraph break ends an unbalanced quote.
            (Some(_), '\n') if text[i + 1..].starts_with('\n') => open = None,
            _ => {}
        }
    }
    out
}

/// The numbers of the `[n]` and `[n, m]` markers of a text.
pub fn markers_in(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        rest = &rest[open + 1..];
        let Some(close) = rest.find(']') else { break };
        let inner = &rest[..close];
        let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
        if !inner.is_empty()
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        {
            out.extend(parts.iter().filter_map(|p| p.parse::<u32>().ok()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(content: &str) -> Document {
        Document {
            id: "d".into(),
            owner: "u".into(),
            title: "T".into(),
            content: content.into(),
            created_at_ms: 0,
        }
    }

    #[test]
    fn quotes_must_come_from_the_user_or_a_document() {
        let library = [doc("Critical vendors must be reassessed\nevery 12 months.")];
        let said = ["Audit: Our critical vendors are reassessed every 24 months.".to_string()];
        let ok = "\"Our critical vendors are reassessed every 24 months\" vs \"Critical vendors must be reassessed every 12 months.\" [1]";
        assert!(unverified_quotes(ok, &said, &library).is_empty());
        let mangled = "\"Our critical s are reassessed every 24 months\"";
        assert_eq!(unverified_quotes(mangled, &said, &library).len(), 1);
        let short = "the \"PEP\" label and “two words”";
        assert!(unverified_quotes(short, &said, &library).is_empty());
        let cut = "“Critical vendors must be reassessed…” [1]";
        assert!(unverified_quotes(cut, &said, &library).is_empty());
        let tabs = [doc(
            "Record\tPeriod\tOwner\nVisitor logs\t18 months\tHead of Facilities\n",
        )];
        let row = "\"Visitor logs | 18 months | Head of Facilities\" [2]";
        assert!(unverified_quotes(row, &said, &tabs).is_empty());
        let other = "\"Visitor logs | 12 months | Head of Facilities\"";
        assert_eq!(unverified_quotes(other, &said, &tabs).len(), 1);
    }

    #[test]
    fn findings_are_lines_that_start_with_a_verdict() {
        let answer = "Checked 2 statements.\n\n- **Breaks** §4.2: \"within 5 business days\"\n* **Meets** §3.1 EUR 150\n**Not verifiable** the approver\nThe **Meets** here is prose.";
        let f = findings(answer);
        let verdicts: Vec<Verdict> = f.iter().map(|(v, _)| *v).collect();
        assert_eq!(
            verdicts,
            [Verdict::Breaks, Verdict::Meets, Verdict::NotVerifiable]
        );
        let expect = |about: &str, verdict| ExpectedVerdict {
            about: about.into(),
            verdict,
        };
        assert!(verdict_check(&expect("5 Business Days", Verdict::Breaks), &f).passed);
        let false_meets = verdict_check(&expect("EUR 150", Verdict::Breaks), &f);
        assert!(!false_meets.passed && false_meets.name.starts_with(FALSE_MEETS));
        assert!(!verdict_check(&expect("absent", Verdict::Meets), &f).passed);
    }

    #[test]
    fn markers_are_read_alone_and_in_lists() {
        assert_eq!(markers_in("a [1], b [2, 3] and [x] [] [4"), [1, 2, 3]);
    }
}
