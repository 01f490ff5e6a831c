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

use std::collections::HashSet;
use std::fmt::Write as _;
use std::ops::Range;

use super::kinds::{value_kind, ValueKind};
use super::wording::{bounded, edits};
use super::{jaccard, words_of, SAME_CLAUSE};
use crate::docmodel::rules::{self, same_role, RoleKind};
use crate::docmodel::values::{values, Value};
use crate::extractive::named;
use crate::llm::AnswerRequest;
use crate::passages::Passage;
use crate::question::Question;
use crate::state::DocRef;
use crate::text::{sentences, squash, terms, tokens};

/// A sentence found in one version only is said in other words by the other version's
/// clause when at least this share of its terms are there (and all its values).
const SAID_OTHERWISE: f64 = 0.75;
/// A quote shorter than this takes in the part of the sentence before it.
const SHORT_QUOTE: usize = 40;

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
    for (i, j) in &pairs {
        let (ca, cb) = (&a.clauses[*i], &b.clauses[*j]);
        if !(keep(ca) || keep(cb)) || about_the_document(ca) {
            continue;
        }
        if same_words(&ca.text, &cb.text) {
            unchanged += 1;
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
        let topic: Vec<&str> = q
            .topic
            .iter()
            .filter(|t| wanted.contains(*t) || value_kind(t).is_some())
            .map(String::as_str)
            .collect();
        if !topic.is_empty() {
            let _ = writeln!(out, "(on {})", topic.join(", "));
        }
    }
    out.push('\n');
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
                "Nothing changed: {unchanged} clauses read the same in both.\n"
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

/// What changed between two versions of a clause, a sentence at a time, each line with
/// its citations.
fn sentence_changes(ca: &Clause<'_>, cb: &Clause<'_>) -> Vec<String> {
    let sa = sentences(&ca.text);
    let sb = sentences(&cb.text);
    let wa: Vec<HashSet<String>> = sa.iter().map(|s| words_of(s)).collect();
    let wb: Vec<HashSet<String>> = sb.iter().map(|s| words_of(s)).collect();
    let mut candidates: Vec<(f64, usize, usize)> = Vec::new();
    for (i, x) in wa.iter().enumerate() {
        for (j, y) in wb.iter().enumerate() {
            let sim = jaccard(x, y);
            if sim >= SAME_CLAUSE || same_words(&sa[i], &sb[j]) {
                candidates.push((sim, i, j));
            }
        }
    }
    let mut pairs = super::best_pairs(candidates, sa.len(), sb.len());
    let mut a_used = vec![false; sa.len()];
    let mut b_used = vec![false; sb.len()];
    for (i, j) in &pairs {
        a_used[*i] = true;
        b_used[*j] = true;
    }
    pairs.sort_by_key(|p| p.1);
    let cite = |i: Option<usize>, j: Option<usize>| {
        let mut s = String::new();
        if let Some(i) = i {
            let _ = write!(s, " [{}]", ca.cite(&sa[i]));
        }
        if let Some(j) = j {
            let _ = write!(s, " [{}]", cb.cite(&sb[j]));
        }
        s
    };
    let mut out = Vec::new();
    for (i, j) in pairs {
        if same_words(&sa[i], &sb[j]) {
            continue;
        }
        let (moves, spans) = changes_at(&sa[i], &sb[j]);
        if !moves.is_empty() {
            out.push(format!(
                "{} (\"{}\"){}",
                moves.join("; "),
                quote(&sb[j], &spans),
                cite(Some(i), Some(j))
            ));
        }
    }
    for (j, s) in sb.iter().enumerate() {
        if !b_used[j] && !said_otherwise(s, &ca.text) {
            out.push(format!(
                "added: \"{}\"{}",
                s.trim_end_matches('.'),
                cite(None, Some(j))
            ));
        }
    }
    for (i, s) in sa.iter().enumerate() {
        if !a_used[i] && !said_otherwise(s, &cb.text) {
            out.push(format!(
                "removed: \"{}\"{}",
                s.trim_end_matches('.'),
                cite(Some(i), None)
            ));
        }
    }
    out
}

/// Whether `clause` says what `sentence` says in other words: most of its terms and all
/// of its values.
fn said_otherwise(sentence: &str, clause: &str) -> bool {
    let mine = terms(sentence);
    if mine.is_empty() {
        return true;
    }
    let theirs: HashSet<String> = terms(clause).into_iter().collect();
    let share = mine.iter().filter(|t| theirs.contains(*t)).count() as f64 / mine.len() as f64;
    let their_values = values(clause);
    share >= SAID_OTHERWISE
        && values(sentence)
            .iter()
            .all(|v| their_values.iter().any(|w| v.same_as(w)))
}

/// The newer sentence as far as its changes reach: the parts (between commas, semicolons,
/// "and", "or", "but") that hold a change, when the sentence also holds values that did
/// not change or is long; the whole sentence otherwise.
fn quote(sentence: &str, changed: &[Range<usize>]) -> String {
    let whole = sentence.trim_end_matches('.').to_string();
    let vals = values(sentence);
    let others = vals.iter().any(|v| {
        !changed
            .iter()
            .any(|c| c.start < v.span.end && v.span.start < c.end)
    });
    if changed.is_empty() || !(others || sentence.len() > 200) {
        return whole;
    }
    let parts = parts(sentence);
    let holds = |p: &Range<usize>| {
        changed
            .iter()
            .any(|c| c.start < p.end && p.start < c.end || c.is_empty() && p.contains(&c.start))
    };
    let Some(first) = parts.iter().position(holds) else {
        return whole;
    };
    let last = parts.iter().rposition(holds).unwrap_or(first);
    let mut start = parts[first].start;
    if sentence[start..parts[last].end].len() < SHORT_QUOTE && first > 0 {
        start = parts[first - 1].start;
    }
    let end = parts[last].end;
    let mut q = sentence[start..end]
        .trim()
        .trim_end_matches(['.', ',', ';'])
        .to_string();
    if start > 0 {
        q = format!("…{q}");
    }
    if end < sentence.trim_end_matches('.').len() {
        q.push('…');
    }
    q
}

/// The parts of a sentence between its commas, semicolons and joining words.
fn parts(sentence: &str) -> Vec<Range<usize>> {
    let lower = sentence.to_lowercase();
    let mut cuts = vec![0];
    for (i, c) in sentence.char_indices() {
        if matches!(c, ',' | ';' | ':') {
            cuts.push(i + 1);
        }
    }
    for joint in [" and ", " or ", " but ", " which ", " unless "] {
        let mut from = 0;
        while let Some(k) = lower[from..].find(joint) {
            cuts.push(from + k + 1);
            from += k + joint.len();
        }
    }
    cuts.push(sentence.len());
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2)
        .map(|w| w[0]..w[1])
        .filter(|r| sentence[r.clone()].chars().any(char::is_alphanumeric))
        .collect()
}

/// What moved between two versions of a sentence (see [`changes`]), with where each change
/// sits in the newer sentence.
fn changes_at(a: &str, b: &str) -> (Vec<String>, Vec<Range<usize>>) {
    let (mut out, value_spans) = value_changes(a, b);
    let roles = role_changes(a, b);
    let mut spans = value_spans;
    for (old, new) in &roles {
        out.push(format!("{old} → {new}"));
        if let Some(k) = b.find(new.as_str()) {
            spans.push(k..k + new.len());
        }
    }
    // Values and changed roles are shown above: their words are no edits of their own.
    let occurrences = |text: &str, part: &str| -> Vec<Range<usize>> {
        text.match_indices(part)
            .map(|(k, m)| k..k + m.len())
            .collect()
    };
    let mut skip_old: Vec<Range<usize>> = values(a).into_iter().map(|v| v.span).collect();
    let mut skip_new: Vec<Range<usize>> = values(b).into_iter().map(|v| v.span).collect();
    for (old, new) in &roles {
        skip_old.extend(occurrences(a, old));
        skip_new.extend(occurrences(b, new));
    }
    for e in edits(a, b, &skip_old, &skip_new) {
        let (old, new) = (&a[e.old.clone()], &b[e.new.clone()]);
        if roles.iter().any(|(o, _)| old.contains(o.as_str())) {
            continue;
        }
        out.push(match (old.is_empty(), new.is_empty()) {
            (true, _) => format!("adds \"{new}\""),
            (_, true) => format!("drops \"{old}\""),
            _ => format!("\"{old}\" → \"{new}\""),
        });
        spans.push(e.new);
    }
    (out, spans)
}

/// What moved between two versions of a clause: each value whose amount changed (paired
/// with the value of the same kind nearest in position and words), values that appear or
/// disappear, dates, and who approves or is told.
#[cfg(test)]
pub(crate) fn changes(a: &str, b: &str) -> Vec<String> {
    changes_at(a, b).0
}

/// The values that moved, old → new, with where each sits in the newer text (an empty
/// range at its end where it is no longer stated).
fn value_changes(a: &str, b: &str) -> (Vec<String>, Vec<Range<usize>>) {
    let va = values(a);
    let vb = values(b);
    let mut out = Vec::new();
    let mut spans = Vec::new();
    let mut b_used = vec![false; vb.len()];
    let kind = |v: &Value| std::mem::discriminant(&v.unit);
    let context = |text: &str, v: &Value| -> HashSet<String> {
        let before = &text[..v.span.start];
        let after = &text[v.span.end..];
        let mut w: Vec<String> = terms(before).into_iter().rev().take(4).collect();
        w.extend(terms(after).into_iter().take(4));
        w.into_iter().collect()
    };
    let mut a_unpaired = Vec::new();
    for (i, x) in va.iter().enumerate() {
        let cx = context(a, x);
        let best = vb
            .iter()
            .enumerate()
            .filter(|(j, y)| !b_used[*j] && (kind(x) == kind(y) || x.comparable(y)))
            .map(|(j, y)| {
                let cy = context(b, y);
                let shared = cx.intersection(&cy).count() as f64;
                let position = 1.0 / (1.0 + (i as f64 - j as f64).abs());
                (shared + position, j)
            })
            .max_by(|p, q| p.0.total_cmp(&q.0));
        match best {
            Some((_, j)) => {
                b_used[j] = true;
                let y = &vb[j];
                let same = x.same_as(y) && x.written.to_lowercase() == y.written.to_lowercase()
                    || x.same_as(y) && x.unit == y.unit;
                if !same {
                    out.push(format!("{} → {}", bounded(a, x), bounded(b, y)));
                    spans.push(y.span.clone());
                }
            }
            None => a_unpaired.push(x),
        }
    }
    for x in a_unpaired {
        out.push(format!("{} → (no longer stated)", x.written));
        spans.push(b.len()..b.len());
    }
    for (j, y) in vb.iter().enumerate() {
        if !b_used[j] {
            out.push(format!("(not stated before) → {}", y.written));
            spans.push(y.span.clone());
        }
    }
    (out, spans)
}

/// Who approves or is told, when that changed between two versions of a sentence: each
/// (before, after).
fn role_changes(a: &str, b: &str) -> Vec<(String, String)> {
    let roles = |text: &str| -> Vec<(String, RoleKind)> {
        rules::read(text)
            .roles
            .into_iter()
            .filter(|r| !r.negated)
            .map(|r| (r.who, r.kind))
            .collect()
    };
    let (ra, rb) = (roles(a), roles(b));
    let mut out = Vec::new();
    for (who, kind) in &ra {
        let kept = rb.iter().any(|(w, k)| k == kind && same_role(w, who));
        if kept {
            continue;
        }
        if let Some((now, _)) = rb
            .iter()
            .find(|(w, k)| k == kind && !ra.iter().any(|(x, _)| same_role(x, w)))
        {
            out.push((who.clone(), now.clone()));
        }
    }
    out
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

    #[test]
    fn changes_list_every_moved_value_and_nothing_else() {
        let c = changes(
            "Gifts above EUR 100 must be recorded within 5 business days and approved by the Head of Department.",
            "Gifts above EUR 125 must be recorded within 3 business days and approved by a Managing Director.",
        );
        assert_eq!(
            c,
            [
                "above EUR 100 → above EUR 125",
                "within 5 business days → within 3 business days",
                "Head of Department → Managing Director"
            ]
        );
        assert!(changes(
            "Records are kept for 6 years.",
            "Records are kept for six years."
        )
        .is_empty());
        assert_eq!(
            changes(
                "Due by 31 January each year.",
                "Due by 15 February each year."
            ),
            ["31 January → 15 February"]
        );
    }

    #[test]
    fn a_quote_keeps_to_the_change() {
        let s = "The per diem is EUR 50 per day for domestic trips and EUR 60 per day for international trips.";
        let at = s.find("EUR 50").unwrap_or(0);
        assert_eq!(
            quote(s, std::slice::from_ref(&(at..at + 6))),
            "The per diem is EUR 50 per day for domestic trips…"
        );
        let short = "Travel must be booked 21 days ahead.";
        assert_eq!(
            quote(short, std::slice::from_ref(&(22..29))),
            "Travel must be booked 21 days ahead"
        );
    }

    #[test]
    fn a_sentence_split_in_two_is_not_removed() {
        assert!(said_otherwise(
            "Such claims are approved by the next manager up.",
            "Nobody may approve their own claim; these claims are approved by the next manager up."
        ));
        assert!(!said_otherwise(
            "First class may be booked for journeys over 3 hours.",
            "Rail travel is in standard class."
        ));
    }
}
