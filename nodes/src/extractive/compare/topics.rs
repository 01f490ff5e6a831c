//! Two documents that are not versions of each other, side by side: on what the request
//! asks about, each one's passages on it; with no topic, the passages where both speak of
//! the same thing (with their figures), then each one's main rules the other does not
//! speak of.

use std::collections::HashSet;
use std::fmt::Write as _;

use super::{best_pairs, jaccard, words_of};
use crate::docmodel::rules;
use crate::docmodel::values::values;
use crate::extractive::named;
use crate::llm::AnswerRequest;
use crate::passages::Passage;
use crate::question::Question;
use crate::state::DocRef;

/// Passages at least this alike speak of the same thing in two documents.
const SAME_TOPIC: f64 = 0.2;
/// At most this many passages of one document on a topic.
const PER_TOPIC: usize = 4;

/// One document's passages, with their words.
pub(super) struct Side<'a> {
    doc: DocRef,
    passages: Vec<&'a Passage>,
    words: Vec<HashSet<String>>,
}

/// The passages of `doc` among the request's.
pub(super) fn side<'a>(doc: &DocRef, request: &'a AnswerRequest) -> Side<'a> {
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

/// Pairs the passages of `a` and `b` that are alike enough.
fn pair(a: &Side<'_>, b: &Side<'_>) -> Vec<(usize, usize)> {
    let mut candidates = Vec::new();
    for (i, wa) in a.words.iter().enumerate() {
        for (j, wb) in b.words.iter().enumerate() {
            let sim = jaccard(wa, wb);
            if sim >= SAME_TOPIC {
                candidates.push((sim, i, j));
            }
        }
    }
    best_pairs(candidates, a.passages.len(), b.passages.len())
}

/// Two documents that are not versions of each other, on what the request asks about: each
/// one's passages on it, the values side by side.
pub(super) fn compare(
    request: &AnswerRequest,
    a: &Side<'_>,
    b: &Side<'_>,
    q: &Question,
    out: &mut String,
) {
    let _ = writeln!(
        out,
        "{} compared with {}",
        named(request, &a.doc),
        named(request, &b.doc)
    );
    // Not the words of either title: every passage of that document is about them.
    let titles: HashSet<String> = crate::text::terms(&a.doc.title)
        .into_iter()
        .chain(crate::text::terms(&b.doc.title))
        .collect();
    let wanted: Vec<&String> = q
        .topic
        .iter()
        .chain(&q.context)
        .filter(|t| !titles.contains(*t))
        .collect();
    if !wanted.is_empty() {
        let topic: Vec<String> = q
            .topic
            .iter()
            .filter(|t| wanted.contains(t))
            .map(|t| crate::text::as_written(&request.question, t))
            .collect();
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
        let pairs = pair(a, b);
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
