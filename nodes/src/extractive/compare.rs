//! The extractive comparison: the first document side by side with each other one. Passages
//! are paired by topic (term overlap); a pair that reads differently is a change (with the
//! figures that moved), an unpaired passage exists in one document only, the rest is
//! unchanged. A topic in the request ("compare the retention periods") narrows the rows.
//! When one document says it replaces the other, the older one is the base of the
//! comparison and the answer says so.

use std::collections::HashSet;
use std::fmt::Write as _;

use super::quantities::changes;
use super::{focus_terms, versions_note};
use crate::llm::AnswerRequest;
use crate::passages::{passage_terms, Passage};
use crate::state::DocRef;
use crate::text::squash;

/// Passages at least this similar (Jaccard of their terms) are about the same thing.
const SAME_TOPIC: f64 = 0.4;

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
    doc: &'a DocRef,
    passages: Vec<&'a Passage>,
    terms: Vec<HashSet<String>>,
}

fn side<'a>(doc: &'a DocRef, request: &'a AnswerRequest) -> Side<'a> {
    let passages: Vec<&Passage> = request
        .passages
        .iter()
        .filter(|p| p.doc_id == doc.id)
        .collect();
    let terms = passages.iter().map(|p| passage_terms(p)).collect();
    Side {
        doc,
        passages,
        terms,
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
    let focus = focus_terms(request);
    let a = side(first, request);
    let mut out = String::new();
    for r in &request.versions {
        if documents.iter().any(|d| d.id == r.older.id)
            && documents.iter().any(|d| d.id == r.newer.id)
        {
            let _ = writeln!(
                out,
                "{} replaces {}: \"{}\"\n",
                r.newer.title, r.older.title, r.statement
            );
        }
    }
    for other in others {
        let b = side(other, request);
        pair(&a, &b, &focus, &mut out);
    }
    out.push_str(versions_note(request, false).trim_start_matches('\n'));
    out
}

/// The request's documents with each older version moved before the one replacing it.
fn oldest_first(request: &AnswerRequest) -> Vec<DocRef> {
    let mut docs = request.documents.clone();
    for r in &request.versions {
        let newer = docs.iter().position(|d| d.id == r.newer.id);
        let older = docs.iter().position(|d| d.id == r.older.id);
        if let (Some(n), Some(o)) = (newer, older) {
            if o > n {
                let d = docs.remove(o);
                docs.insert(n, d);
            }
        }
    }
    docs
}

fn pair(a: &Side<'_>, b: &Side<'_>, focus: &[String], out: &mut String) {
    let mut candidates: Vec<(f64, usize, usize)> = Vec::new();
    for (i, ta) in a.terms.iter().enumerate() {
        for (j, tb) in b.terms.iter().enumerate() {
            let sim = jaccard(ta, tb);
            if sim >= SAME_TOPIC {
                candidates.push((sim, i, j));
            }
        }
    }
    candidates.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
    let mut a_used = vec![false; a.passages.len()];
    let mut b_used = vec![false; b.passages.len()];
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for (_, i, j) in candidates {
        if !a_used[i] && !b_used[j] {
            a_used[i] = true;
            b_used[j] = true;
            pairs.push((i, j));
        }
    }
    pairs.sort();
    let on_topic = |t: &HashSet<String>| focus.is_empty() || focus.iter().any(|f| t.contains(f));
    let focus_hits = pairs
        .iter()
        .any(|(i, j)| on_topic(&a.terms[*i]) || on_topic(&b.terms[*j]))
        || a.terms.iter().any(&on_topic)
        || b.terms.iter().any(&on_topic);
    let keep = |t: &HashSet<String>| !focus_hits || on_topic(t);

    let mut changed = String::new();
    let mut unchanged = 0usize;
    for (i, j) in &pairs {
        let (pa, pb) = (a.passages[*i], b.passages[*j]);
        if !(keep(&a.terms[*i]) || keep(&b.terms[*j])) {
            continue;
        }
        if same_text(&pa.text, &pb.text) {
            unchanged += 1;
            continue;
        }
        let moved: Vec<String> = changes(&pa.text, &pb.text)
            .iter()
            .map(|(x, y)| format!("{x} → {y}"))
            .collect();
        let topic = pb
            .heading
            .as_deref()
            .or(pa.heading.as_deref())
            .map(|h| format!("{h}: "))
            .unwrap_or_default();
        let moved = if moved.is_empty() {
            String::new()
        } else {
            format!(" ({})", moved.join(", "))
        };
        let _ = writeln!(
            changed,
            "- {topic}\"{}\" [{}] → \"{}\" [{}]{moved}",
            pa.text, pa.number, pb.text, pb.number
        );
    }
    let only = |s: &Side<'_>, used: &[bool]| {
        let mut text = String::new();
        for (k, p) in s.passages.iter().enumerate() {
            if !used[k] && keep(&s.terms[k]) {
                let _ = writeln!(text, "- \"{}\" [{}]", p.text, p.number);
            }
        }
        text
    };
    let only_b = only(b, &b_used);
    let only_a = only(a, &a_used);

    let _ = writeln!(out, "**{}** compared with **{}**", a.doc.title, b.doc.title);
    if focus_hits && !focus.is_empty() {
        let _ = writeln!(out, "(on {})", focus.join(", "));
    }
    out.push('\n');
    if !changed.is_empty() {
        let _ = writeln!(out, "Changed:\n{changed}");
    }
    if !only_b.is_empty() {
        let _ = writeln!(out, "Only in {}:\n{only_b}", b.doc.title);
    }
    if !only_a.is_empty() {
        let _ = writeln!(out, "Only in {}:\n{only_a}", a.doc.title);
    }
    match (
        changed.is_empty() && only_a.is_empty() && only_b.is_empty(),
        unchanged,
    ) {
        (true, 0) => {
            let _ = writeln!(out, "I found nothing to compare on this topic.\n");
        }
        (true, n) => {
            let _ = writeln!(out, "The documents read the same ({n} passages match).\n");
        }
        (false, 0) => {}
        (false, n) => {
            let _ = writeln!(out, "Unchanged: {n} passages read the same in both.\n");
        }
    }
}
