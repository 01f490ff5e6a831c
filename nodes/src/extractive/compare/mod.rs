//! The extractive comparison. Two versions of one document are compared clause by clause:
//! clauses are paired by their words (and their number and heading), then every value of
//! a pair that moved is listed old → new with its clause (durations, amounts, percentages,
//! counts, dates, who approves or is told), clauses found in one version only are listed
//! as added or removed, clauses reworded with the same values are named, and nothing that
//! stayed the same is listed. Versions are compared oldest to newest, each with the next.
//!
//! Two documents that are not versions of each other are set side by side on what the
//! request asks about (or on the topics they share): each one's sentences and values.
//! A topic in the request ("what changed for recorded calls?") narrows either.

use std::collections::HashSet;
use std::fmt::Write as _;

use super::{focus, named};
use crate::docmodel::rules::{self, same_role, RoleKind};
use crate::docmodel::values::{values, Value};
use crate::llm::AnswerRequest;
use crate::passages::Passage;
use crate::question::Question;
use crate::state::DocRef;
use crate::text::{squash, terms};

/// Clauses at least this alike are the same clause in two versions.
const SAME_CLAUSE: f64 = 0.4;
/// Passages at least this alike speak of the same thing in two documents.
const SAME_TOPIC: f64 = 0.2;
/// At most this many passages of one document on a topic.
const PER_TOPIC: usize = 4;

/// The words of a text that say what it is about: its terms without figures.
fn words_of(text: &str) -> HashSet<String> {
    terms(text)
        .into_iter()
        .filter(|t| !t.chars().any(|c| c.is_ascii_digit()))
        .collect()
}

fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

fn same_text(a: &str, b: &str) -> bool {
    squash(a).to_lowercase() == squash(b).to_lowercase()
}

struct Side<'a> {
    doc: DocRef,
    passages: Vec<&'a Passage>,
    words: Vec<HashSet<String>>,
}

fn side<'a>(doc: &DocRef, request: &'a AnswerRequest) -> Side<'a> {
    let passages: Vec<&Passage> = request
        .passages
        .iter()
        .filter(|p| p.doc_id == doc.id)
        .collect();
    let words = passages
        .iter()
        .map(|p| {
            let mut w = words_of(&p.text);
            if let Some(h) = &p.heading {
                w.extend(words_of(h));
            }
            w
        })
        .collect();
    Side {
        doc: doc.clone(),
        passages,
        words,
    }
}

pub(crate) fn compare(request: &AnswerRequest) -> String {
    let documents = oldest_first(request);
    let [first, others @ ..] = documents.as_slice() else {
        return "There are no documents to compare.".to_string();
    };
    if others.is_empty() {
        return format!(
            "Comparing needs two documents; I only have {}.",
            first.title
        );
    }
    let q = focus(request);
    let mut out = String::new();
    for pair in documents.windows(2) {
        let (a, b) = (side(&pair[0], request), side(&pair[1], request));
        if versions_of_one(request, &a.doc, &b.doc) {
            versions(request, &a, &b, &q, &mut out);
        } else {
            topics(request, &a, &b, &q, &mut out);
        }
    }
    out
}

/// Whether `a` and `b` are versions of one document (either says it follows the other,
/// or both are editions of one family the request lists).
fn versions_of_one(request: &AnswerRequest, a: &DocRef, b: &DocRef) -> bool {
    request.versions.iter().any(|r| {
        (r.newer.id == a.id && r.older.id == b.id) || (r.newer.id == b.id && r.older.id == a.id)
    }) || {
        // Further apart in one family: linked through the versions between them.
        let family = |id: &str| -> HashSet<String> {
            let mut seen = HashSet::from([id.to_string()]);
            loop {
                let before = seen.len();
                for r in &request.versions {
                    if seen.contains(&r.newer.id) || seen.contains(&r.older.id) {
                        seen.insert(r.newer.id.clone());
                        seen.insert(r.older.id.clone());
                    }
                }
                if seen.len() == before {
                    return seen;
                }
            }
        };
        family(&a.id).contains(&b.id)
    }
}

/// The request's documents, each older version before the version after it.
fn oldest_first(request: &AnswerRequest) -> Vec<DocRef> {
    let mut docs = request.documents.clone();
    // Sorted by how many versions precede each within its family (stable for the rest).
    let depth = |d: &DocRef| {
        let mut n = 0;
        let mut id = d.id.clone();
        while let Some(older) = request
            .versions
            .iter()
            .find(|r| r.newer.id == id)
            .map(|r| r.older.id.clone())
        {
            n += 1;
            id = older;
            if n > 64 {
                break;
            }
        }
        n
    };
    let positions: Vec<(usize, usize)> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| (depth(d), i))
        .collect();
    let mut order: Vec<usize> = (0..docs.len()).collect();
    order.sort_by_key(|&i| {
        // Keep unrelated documents where they were; order versions by depth.
        let fam_first = docs
            .iter()
            .position(|d| versions_of_one(request, d, &docs[i]) || d.id == docs[i].id)
            .unwrap_or(i);
        (fam_first, positions[i].0)
    });
    let sorted: Vec<DocRef> = order.into_iter().map(|i| docs[i].clone()).collect();
    docs.clone_from(&sorted);
    docs
}

/// What changed between two versions, a clause at a time.
fn versions(request: &AnswerRequest, a: &Side<'_>, b: &Side<'_>, q: &Question, out: &mut String) {
    let pairs = pair(a, b, SAME_CLAUSE, true);
    let mut a_used = vec![false; a.passages.len()];
    let mut b_used = vec![false; b.passages.len()];
    for (i, j) in &pairs {
        a_used[*i] = true;
        b_used[*j] = true;
    }
    let wanted: HashSet<&String> = q.topic.iter().chain(&q.context).collect();
    let on_topic =
        |w: &HashSet<String>| wanted.is_empty() || wanted.iter().any(|t| w.contains(t.as_str()));
    let focused =
        !wanted.is_empty() && (a.words.iter().any(&on_topic) || b.words.iter().any(&on_topic));
    let keep = |w: &HashSet<String>| !focused || on_topic(w);

    let mut changed = String::new();
    let mut reworded: Vec<String> = Vec::new();
    let mut unchanged = 0usize;
    for (i, j) in &pairs {
        let (pa, pb) = (a.passages[*i], b.passages[*j]);
        if !(keep(&a.words[*i]) || keep(&b.words[*j])) || about_the_document(pa) {
            continue;
        }
        if same_text(&pa.text, &pb.text) {
            unchanged += 1;
            continue;
        }
        let place = pb
            .heading
            .as_deref()
            .or(pa.heading.as_deref())
            .map(|h| format!("{h}: "))
            .unwrap_or_default();
        let lines = sentence_changes(&pa.text, &pb.text);
        if lines.is_empty() {
            reworded.push(format!(
                "{}[{}] [{}]",
                short_place(pb).map(|p| format!("{p} ")).unwrap_or_default(),
                pa.number,
                pb.number
            ));
            continue;
        }
        for line in lines {
            let _ = writeln!(changed, "- {place}{line} [{}] [{}]", pa.number, pb.number);
        }
    }
    let listed = |s: &Side<'_>, used: &[bool]| {
        let mut text = String::new();
        for (k, p) in s.passages.iter().enumerate() {
            if !used[k] && keep(&s.words[k]) && !about_the_document(p) {
                let place = p
                    .heading
                    .as_deref()
                    .map(|h| format!("{h}: "))
                    .unwrap_or_default();
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
        let topic: Vec<&str> = q.topic.iter().map(String::as_str).collect();
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

/// A clause's number as a place ("§4.2"), without its heading.
fn short_place(p: &Passage) -> Option<String> {
    p.clause.as_ref().map(|c| format!("§{c}"))
}

/// A passage about the document rather than its rules: its version history or document
/// control (by its heading), or a line that only states its version or date.
fn about_the_document(p: &Passage) -> bool {
    let heading = p.heading.as_deref().unwrap_or("").to_lowercase();
    [
        "history",
        "document control",
        "change log",
        "revision",
        "version",
    ]
    .iter()
    .any(|w| heading.contains(w))
        || is_version_line(&p.text)
}

/// A line that only states a document's version or date (its header): not a rule that
/// was added or removed.
fn is_version_line(text: &str) -> bool {
    let lower = text.to_lowercase();
    let header_words = [
        "version",
        "effective",
        "approved by",
        "supersedes",
        "replaces",
        "owner",
        "issued",
        "first issue",
    ];
    text.len() < 160
        && header_words.iter().any(|w| lower.contains(w))
        && rules::read(text).modality == rules::Modality::States
}

/// Pairs the clauses of `a` and `b` that are alike enough, best first, each used once; in
/// `a`'s order. With `by_number`, a shared clause number or heading counts in favour.
fn pair(a: &Side<'_>, b: &Side<'_>, min: f64, by_number: bool) -> Vec<(usize, usize)> {
    let mut candidates: Vec<(f64, usize, usize)> = Vec::new();
    for (i, wa) in a.words.iter().enumerate() {
        for (j, wb) in b.words.iter().enumerate() {
            let mut sim = jaccard(wa, wb);
            if by_number {
                let (pa, pb) = (a.passages[i], b.passages[j]);
                if pa.clause.is_some() && pa.clause == pb.clause {
                    sim += 0.1;
                }
            }
            if sim >= min {
                candidates.push((sim, i, j));
            }
        }
    }
    candidates.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
    let mut a_used = vec![false; a.passages.len()];
    let mut b_used = vec![false; b.passages.len()];
    let mut pairs = Vec::new();
    for (_, i, j) in candidates {
        if !a_used[i] && !b_used[j] {
            a_used[i] = true;
            b_used[j] = true;
            pairs.push((i, j));
        }
    }
    pairs.sort();
    pairs
}

/// What changed between two versions of a clause, a sentence at a time: the values that
/// moved in sentences that say the same thing (with the newer sentence), sentences added,
/// sentences removed.
fn sentence_changes(a: &str, b: &str) -> Vec<String> {
    let sa = crate::text::sentences(a);
    let sb = crate::text::sentences(b);
    let wa: Vec<HashSet<String>> = sa.iter().map(|s| words_of(s)).collect();
    let wb: Vec<HashSet<String>> = sb.iter().map(|s| words_of(s)).collect();
    let mut candidates: Vec<(f64, usize, usize)> = Vec::new();
    for (i, x) in wa.iter().enumerate() {
        for (j, y) in wb.iter().enumerate() {
            let sim = jaccard(x, y);
            if sim >= SAME_CLAUSE || same_text(&sa[i], &sb[j]) {
                candidates.push((sim, i, j));
            }
        }
    }
    candidates.sort_by(|x, y| y.0.total_cmp(&x.0));
    let mut a_used = vec![false; sa.len()];
    let mut b_used = vec![false; sb.len()];
    let mut out = Vec::new();
    let mut pairs = Vec::new();
    for (_, i, j) in candidates {
        if !a_used[i] && !b_used[j] {
            a_used[i] = true;
            b_used[j] = true;
            pairs.push((i, j));
        }
    }
    pairs.sort_by_key(|p| p.1);
    for (i, j) in pairs {
        if same_text(&sa[i], &sb[j]) {
            continue;
        }
        let moves = changes(&sa[i], &sb[j]);
        if !moves.is_empty() {
            out.push(format!(
                "{} (\"{}\")",
                moves.join("; "),
                sb[j].trim_end_matches('.')
            ));
        }
    }
    for (j, s) in sb.iter().enumerate() {
        if !b_used[j] {
            out.push(format!("added: \"{}\"", s.trim_end_matches('.')));
        }
    }
    for (i, s) in sa.iter().enumerate() {
        if !a_used[i] {
            out.push(format!("removed: \"{}\"", s.trim_end_matches('.')));
        }
    }
    out
}

/// What moved between two versions of a clause: each value whose amount changed (paired
/// with the value of the same kind nearest in position and words), values that appear or
/// disappear, dates, and who approves or is told.
pub(crate) fn changes(a: &str, b: &str) -> Vec<String> {
    let va = values(a);
    let vb = values(b);
    let mut out = Vec::new();
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
                    out.push(format!("{} → {}", x.written, y.written));
                }
            }
            None => a_unpaired.push(x),
        }
    }
    for x in a_unpaired {
        out.push(format!("{} → (no longer stated)", x.written));
    }
    for (j, y) in vb.iter().enumerate() {
        if !b_used[j] {
            out.push(format!("(not stated before) → {}", y.written));
        }
    }
    out.extend(role_changes(a, b));
    out
}

/// Who approves or is told, when that changed between two versions of a clause.
fn role_changes(a: &str, b: &str) -> Vec<String> {
    let roles = |text: &str| -> Vec<(String, RoleKind)> {
        crate::text::sentences(text)
            .iter()
            .flat_map(|s| rules::read(s).roles)
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
            out.push(format!("{who} → {now}"));
        }
    }
    out
}

/// Two documents that are not versions of each other, on what the request asks about: each
/// one's passages on it, the values side by side.
fn topics(request: &AnswerRequest, a: &Side<'_>, b: &Side<'_>, q: &Question, out: &mut String) {
    let _ = writeln!(
        out,
        "{} compared with {}",
        named(request, &a.doc),
        named(request, &b.doc)
    );
    let wanted: Vec<&String> = q.topic.iter().chain(&q.context).collect();
    if !wanted.is_empty() {
        let topic: Vec<&str> = q.topic.iter().map(String::as_str).collect();
        let _ = writeln!(out, "(on {})", topic.join(", "));
    }
    out.push('\n');
    let relevance = |s: &Side<'_>, k: usize| -> f64 {
        if wanted.is_empty() {
            return 0.0;
        }
        wanted
            .iter()
            .filter(|t| s.words[k].contains(t.as_str()))
            .count() as f64
            / wanted.len() as f64
    };
    let pick = |s: &Side<'_>| -> Vec<usize> {
        let mut ks: Vec<usize> = (0..s.passages.len()).collect();
        if wanted.is_empty() {
            // No topic: what they share.
            return Vec::new();
        }
        ks.sort_by(|x, y| relevance(s, *y).total_cmp(&relevance(s, *x)).then(x.cmp(y)));
        ks.into_iter()
            .filter(|k| relevance(s, *k) > 0.0)
            .take(PER_TOPIC)
            .collect()
    };
    let (ka, kb) = (pick(a), pick(b));
    if wanted.is_empty() || (ka.is_empty() && kb.is_empty()) {
        // No topic: side by side where both speak of the same thing, then each one's main
        // rules the other does not speak of.
        let pairs = pair(a, b, SAME_TOPIC, false);
        let mut a_used = vec![false; a.passages.len()];
        let mut b_used = vec![false; b.passages.len()];
        if !pairs.is_empty() {
            out.push_str("Where both speak of the same thing:\n");
        }
        for &(i, j) in pairs.iter().take(PER_TOPIC * 2) {
            a_used[i] = true;
            b_used[j] = true;
            let (pa, pb) = (a.passages[i], b.passages[j]);
            let _ = writeln!(out, "- {}: {} [{}]", a.doc.title, pa.text, pa.number);
            let _ = writeln!(out, "  {}: {} [{}]", b.doc.title, pb.text, pb.number);
            let (va, vb) = (figures(&pa.meaning()), figures(&pb.meaning()));
            if va != vb && !(va.is_empty() && vb.is_empty()) {
                let shown = |v: &[String]| {
                    if v.is_empty() {
                        "none".to_string()
                    } else {
                        v.join(", ")
                    }
                };
                let _ = writeln!(
                    out,
                    "  Figures: {} {}; {} {}",
                    a.doc.title,
                    shown(&va),
                    b.doc.title,
                    shown(&vb)
                );
            }
        }
        for (s, used) in [(a, &a_used), (b, &b_used)] {
            let main: Vec<&Passage> = s
                .passages
                .iter()
                .enumerate()
                .filter(|(k, p)| !used[*k] && binds(p))
                .map(|(_, p)| *p)
                .take(PER_TOPIC)
                .collect();
            if !main.is_empty() {
                let _ = writeln!(out, "\nOnly {} speaks of:", s.doc.title);
                for p in main {
                    let place = p
                        .heading
                        .as_deref()
                        .map(|h| format!("{h}: "))
                        .unwrap_or_default();
                    let _ = writeln!(out, "- {place}{} [{}]", p.text, p.number);
                }
            }
        }
        return;
    }
    for (s, ks) in [(a, &ka), (b, &kb)] {
        let _ = writeln!(out, "{}:", s.doc.title);
        if ks.is_empty() {
            let _ = writeln!(out, "- nothing on this topic");
        }
        for k in ks.iter() {
            let p = s.passages[*k];
            let place = p
                .heading
                .as_deref()
                .map(|h| format!("{h}: "))
                .unwrap_or_default();
            let _ = writeln!(out, "- {place}{} [{}]", p.text, p.number);
        }
        out.push('\n');
    }
}

/// The values of a text as written, in order.
fn figures(text: &str) -> Vec<String> {
    values(text).into_iter().map(|v| v.written).collect()
}

/// Whether a passage binds someone to something concrete: an obligation with a figure or
/// a role.
fn binds(p: &Passage) -> bool {
    crate::text::sentences(&p.meaning()).iter().any(|s| {
        let r = rules::read(s);
        matches!(r.modality, rules::Modality::Must | rules::Modality::MustNot)
            && (!r.bounds.is_empty() || !r.roles.is_empty())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_list_every_moved_value_and_nothing_else() {
        let c = changes(
            "Gifts above EUR 100 must be recorded within 5 business days and approved by the Head of Department.",
            "Gifts above EUR 125 must be recorded within 3 business days and approved by a Managing Director.",
        );
        assert_eq!(
            c,
            [
                "EUR 100 → EUR 125",
                "5 business days → 3 business days",
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
}
