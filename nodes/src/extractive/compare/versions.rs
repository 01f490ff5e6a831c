//! What changed between two versions of one document, a clause at a time. A clause is
//! what the document numbers as one ("10.1", its lead sentence and its list items
//! together, so a paragraph turned into a list is the same clause), else a passage.
//! Clauses are paired by their words (a shared number counts in favour); within a pair,
//! sentences are paired by their words, and for each pair every value that moved is listed
//! old → new, who approves or is told when that changed, and the phrases whose change
//! alters what the sentence says ([`super::wording`]), each quoted from the newer version
//! as far as the change reaches (the part of the sentence around it, not the values beside
//! it that stayed). A sentence found in one version only is added or removed, unless the
//! other version's clause says it in other words. Clauses in one version only are listed
//! as added or removed; clauses reworded with the same values are named; clauses that read
//! the same (their words, whatever their layout) are counted, not listed.
//!
//! Here: a version's clauses, pairing them, and the comparison's report; within a pair of
//! clauses, [`sentences`] pairs their sentences, [`changes`] lists what moved in a pair of
//! sentences, and [`quote`] quotes the newer sentence as far as a change reaches.

use std::collections::HashSet;
use std::fmt::Write as _;

use super::kinds::{value_kind, ValueKind};
use super::{best_pairs, jaccard, words_of, SAME_CLAUSE};
use crate::docmodel::values::values;
use crate::extractive::named;
use crate::llm::AnswerRequest;
use crate::passages::Passage;
use crate::question::Question;
use crate::state::DocRef;
use crate::text::{squash, tokens};

mod changes;
mod quote;
mod sentences;

use sentences::sentence_changes;

/// A clause of one version: its passages (consecutive, one clause number).
pub(super) struct Clause<'a> {
    passages: Vec<&'a Passage>,
    text: String,
    words: HashSet<String>,
}

impl Clause<'_> {
    fn first(&self) -> &Passage {
        self.passages[0]
    }

    /// Where it sits ("§4.2 Approvals: "), or nothing.
    fn place(&self) -> String {
        self.passages
            .iter()
            .find_map(|p| p.heading.as_deref())
            .map(|h| format!("{h}: "))
            .unwrap_or_default()
    }

    /// The number of the passage that holds `sentence` (its first passage when none does).
    fn cite(&self, sentence: &str) -> u32 {
        let probe: String = squash(sentence).chars().take(30).collect();
        self.passages
            .iter()
            .find(|p| squash(&p.text).contains(&probe))
            .unwrap_or(&self.passages[0])
            .number
    }
}

/// One version's clauses, in order.
pub(super) struct Version<'a> {
    pub(super) doc: DocRef,
    clauses: Vec<Clause<'a>>,
}

/// The clauses of `doc` among the request's passages.
pub(super) fn version<'a>(doc: &DocRef, request: &'a AnswerRequest) -> Version<'a> {
    let mut clauses: Vec<Clause<'a>> = Vec::new();
    for p in request.passages.iter().filter(|p| p.doc_id == doc.id) {
        match clauses.last_mut() {
            Some(c) if p.clause.is_some() && c.first().clause == p.clause => c.passages.push(p),
            _ => clauses.push(Clause {
                passages: vec![p],
                text: String::new(),
                words: HashSet::new(),
            }),
        }
    }
    for c in &mut clauses {
        c.text = c
            .passages
            .iter()
            .map(|p| p.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        c.words = words_of(&c.text);
        for p in &c.passages {
            // Its heading, and what its rows or items continue.
            for around in [&p.heading, &p.lead].into_iter().flatten() {
                c.words.extend(words_of(around));
            }
        }
    }
    Version {
        doc: doc.clone(),
        clauses,
    }
}

/// A definition a clause makes: the words of the term it defines and of what it says the
/// term means ('"Group securities" means the shares and bonds ...', '“Gift” includes ...').
fn defines(text: &str) -> Option<(HashSet<String>, HashSet<String>)> {
    for verb in [" means ", " includes ", " refers to "] {
        let Some(at) = text.find(verb) else { continue };
        let before = text[..at].trim_end();
        let Some(close) = before
            .chars()
            .last()
            .filter(|c| matches!(c, '"' | '”' | '\'' | '’'))
        else {
            continue;
        };
        let inner = &before[..before.len() - close.len_utf8()];
        let open = inner.rfind(['"', '“', '\'', '‘'])?;
        let term = words_of(&inner[open..]);
        let body = words_of(&text[at + verb.len()..]);
        if !term.is_empty() && !body.is_empty() {
            return Some((term, body));
        }
    }
    None
}

/// The words a request for a comparison uses to ask for it, whatever its topic.
const ASKING: [&str; 35] = [
    "get",
    "got",
    "tighter",
    "stricter",
    "looser",
    "longer",
    "shorter",
    "higher",
    "lower",
    "bigger",
    "smaller",
    "harder",
    "easier",
    "rule",
    "rules",
    "change",
    "changed",
    "changes",
    "add",
    "added",
    "drop",
    "dropped",
    "remove",
    "removed",
    "new",
    "old",
    "policy",
    "procedure",
    "standard",
    "document",
    "differ",
    "difference",
    "compare",
    "version",
    "revision",
];

/// Whether two texts say the same words, whatever their case, punctuation and layout.
fn same_words(a: &str, b: &str) -> bool {
    tokens(a) == tokens(b)
}

/// Writes what changed from `a` to `b` to `out`.
pub(super) fn compare(
    request: &AnswerRequest,
    a: &Version<'_>,
    b: &Version<'_>,
    q: &Question,
    out: &mut String,
) {
    let pairs = pair(a, b);
    let mut a_used = vec![false; a.clauses.len()];
    let mut b_used = vec![false; b.clauses.len()];
    for (i, j) in &pairs {
        a_used[*i] = true;
        b_used[*j] = true;
    }
    // What the request asks about beyond the document's own name.
    let title: HashSet<String> = words_of(&a.doc.title)
        .into_iter()
        .chain(words_of(&b.doc.title))
        .collect();
    // Not the words of asking for a comparison ("which rules were added or dropped in
    // v4").
    let asking: HashSet<String> = ASKING.iter().map(|w| crate::vocabulary::term(w)).collect();
    // A kind of value asked about ("the deadlines", "the thresholds"): the clauses that
    // state one, whatever their words.
    let kinds: Vec<ValueKind> = q
        .topic
        .iter()
        .chain(&q.context)
        .filter_map(|t| value_kind(t))
        .collect();
    // Words of the title the request says it is about ("the rules on keeping and deleting
    // recordings" of a record-keeping policy) are its topic all the same.
    let said_topic = crate::question::topic_named(&request.question);
    let mut wanted: HashSet<String> = q
        .topic
        .iter()
        .chain(&q.context)
        .filter(|t| {
            (!title.contains(*t) || said_topic.contains(*t))
                && !asking.contains(*t)
                && !crate::version_words::is_version_word(t)
                && value_kind(t).is_none()
        })
        .cloned()
        .collect();
    // A term the documents define by the topic's words ("'Group securities' means the
    // shares ...") is the topic in their words.
    let defined: Vec<String> = a
        .clauses
        .iter()
        .chain(&b.clauses)
        .filter_map(|c| defines(&c.text))
        .filter(|(_, body)| wanted.iter().any(|t| body.contains(t)))
        .flat_map(|(term, _)| term)
        .collect();
    wanted.extend(defined);
    let of_kind = |c: &Clause<'_>| {
        kinds.is_empty()
            || values(&c.text)
                .iter()
                .any(|v| kinds.iter().any(|k| k.holds(v)))
    };
    let on_topic = |c: &Clause<'_>| {
        (wanted.is_empty() || wanted.iter().any(|t| c.words.contains(t.as_str()))) && of_kind(c)
    };
    let focused = (!wanted.is_empty() || !kinds.is_empty())
        && (a.clauses.iter().any(on_topic) || b.clauses.iter().any(on_topic));
    let keep = |c: &Clause<'_>| !focused || on_topic(c);
    let about_the_document = |c: &Clause<'_>| c.passages.iter().all(|p| p.about_the_document());

    let mut changed = String::new();
    let mut reworded: Vec<String> = Vec::new();
    let mut unchanged = 0usize;
    // The clause the request is most about, when it reads the same in both ("did the
    // deadline for cleansing investors change?"): said so, with its figure.
    let overlap = |c: &Clause<'_>| {
        wanted
            .iter()
            .filter(|t| c.words.contains(t.as_str()))
            .count()
    };
    // ... among those that give what it asks ("how long": a time).
    let gives = |c: &Clause<'_>| q.answered_by(&crate::docmodel::rules::read(&c.text));
    let answering = |c: &Clause<'_>| of_kind(c) && gives(c);
    let overlaps: Vec<usize> = pairs
        .iter()
        .filter(|(i, j)| {
            !about_the_document(&a.clauses[*i])
                && (answering(&a.clauses[*i]) || answering(&b.clauses[*j]))
        })
        .map(|(i, j)| overlap(&a.clauses[*i]).max(overlap(&b.clauses[*j])))
        .collect();
    let most = overlaps.iter().copied().max().unwrap_or(0);
    // Asked whether it changed ("Did ...", "Has ...", "Is it still ..."), of one or two
    // clauses that say most of it.
    let yes_or_no = matches!(
        crate::text::tokens(&request.question)
            .first()
            .map(String::as_str),
        Some("did" | "does" | "has" | "have" | "is" | "was" | "were" | "are")
    );
    let few_clauses = overlaps.iter().filter(|o| **o == most).count() <= 2;
    let mut same_on_topic: Vec<String> = Vec::new();
    for (i, j) in &pairs {
        let (ca, cb) = (&a.clauses[*i], &b.clauses[*j]);
        if !(keep(ca) || keep(cb)) || about_the_document(ca) {
            continue;
        }
        if same_words(&ca.text, &cb.text) {
            unchanged += 1;
            if focused
                && yes_or_no
                && few_clauses
                && most >= wanted.len().clamp(1, 2)
                && overlap(cb) == most
                && answering(cb)
                && !values(&cb.text).is_empty()
            {
                same_on_topic.push(format!(
                    "- {}{} [{}] [{}]",
                    cb.place(),
                    cb.text,
                    ca.first().number,
                    cb.first().number
                ));
            }
            continue;
        }
        let lines = sentence_changes(ca, cb);
        if lines.is_empty() {
            let number = cb.first().clause.as_ref().map(|c| format!("§{c} "));
            reworded.push(format!(
                "{}[{}] [{}]",
                number.unwrap_or_default(),
                ca.first().number,
                cb.first().number
            ));
            continue;
        }
        let place = cb.place();
        for line in lines {
            let _ = writeln!(changed, "- {place}{line}");
        }
    }
    let listed = |v: &Version<'_>, used: &[bool]| {
        let mut text = String::new();
        for (k, c) in v.clauses.iter().enumerate() {
            if used[k] || !keep(c) || about_the_document(c) {
                continue;
            }
            let place = c.place();
            for p in &c.passages {
                let _ = writeln!(text, "- {place}{} [{}]", p.text, p.number);
            }
        }
        text
    };
    let added = listed(b, &b_used);
    let removed = listed(a, &a_used);

    let _ = writeln!(
        out,
        "What changed from {} to {}:",
        named(request, &a.doc),
        named(request, &b.doc)
    );
    if let Some(r) = request
        .versions
        .iter()
        .find(|r| r.stated && r.newer.id == b.doc.id && r.older.id == a.doc.id)
    {
        let _ = writeln!(out, "({} says: \"{}\")", b.doc.title, r.statement);
    }
    if focused {
        let topic: Vec<String> = q
            .topic
            .iter()
            .filter(|t| wanted.contains(*t) || value_kind(t).is_some())
            .map(|t| crate::text::as_written(&request.question, t))
            .collect();
        if !topic.is_empty() {
            let _ = writeln!(out, "(on {})", topic.join(", "));
        }
    }
    out.push('\n');
    if !same_on_topic.is_empty() {
        let _ = writeln!(
            out,
            "The same in both versions:\n{}\n",
            same_on_topic.join("\n")
        );
    }
    if !changed.is_empty() {
        let _ = writeln!(out, "Changed:\n{changed}");
    }
    if !added.is_empty() {
        let _ = writeln!(out, "Added in {}:\n{added}", b.doc.title);
    }
    if !removed.is_empty() {
        let _ = writeln!(out, "Removed from {}:\n{removed}", a.doc.title);
    }
    if !reworded.is_empty() {
        let _ = writeln!(
            out,
            "Reworded, with the same values: {}\n",
            reworded.join(", ")
        );
    }
    if changed.is_empty() && added.is_empty() && removed.is_empty() && reworded.is_empty() {
        if unchanged == 0 {
            let _ = writeln!(out, "I found nothing to compare on this topic.\n");
        } else {
            let _ = writeln!(
                out,
                "Nothing changed: {unchanged} {} the same in both.\n",
                if unchanged == 1 {
                    "clause reads"
                } else {
                    "clauses read"
                }
            );
        }
    }
}

/// Pairs the clauses of `a` and `b` that are alike enough, best first, each used once; in
/// `a`'s order. A shared clause number counts in favour.
fn pair(a: &Version<'_>, b: &Version<'_>) -> Vec<(usize, usize)> {
    let mut candidates: Vec<(f64, usize, usize)> = Vec::new();
    for (i, ca) in a.clauses.iter().enumerate() {
        for (j, cb) in b.clauses.iter().enumerate() {
            let mut sim = jaccard(&ca.words, &cb.words);
            if ca.first().clause.is_some() && ca.first().clause == cb.first().clause {
                sim += 0.1;
            }
            if sim >= SAME_CLAUSE {
                candidates.push((sim, i, j));
            }
        }
    }
    super::best_pairs(candidates, a.clauses.len(), b.clauses.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_gives_the_term_and_what_it_means() {
        let (term, body) = defines(
            "1(2) \"Group securities\" means the shares and bonds issued by any member of the Group.",
        )
        .unwrap();
        assert!(term.contains(&crate::vocabulary::term("securities")));
        assert!(body.contains(&crate::vocabulary::term("shares")));
        assert!(defines("“Gift” includes hospitality of any kind.").is_some());
        assert!(defines("The policy means well.").is_none());
    }

    #[test]
    fn a_kind_of_value_asked_about_is_no_word_to_find() {
        let kind = |w: &str| value_kind(&crate::vocabulary::term(w));
        assert!(kind("deadlines") == Some(ValueKind::Time));
        assert!(kind("thresholds") == Some(ValueKind::Threshold));
        assert!(kind("surveillance").is_none());
        let v = &values("within 48 hours")[0];
        assert!(ValueKind::Time.holds(v) && !ValueKind::Threshold.holds(v));
    }
}
