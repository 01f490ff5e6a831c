//! The documents' rules, as the audit checks them: each clause of a document in play that
//! binds someone, with the case of its table row, the band of values it is for, and the
//! conditions of an earlier sentence it goes on under. A document's account of itself
//! ("This policy sets out ...") binds no one.

use super::tables::{catch_all, row_band, row_label, Row};
use super::*;

/// The rules of the documents in play: each clause of their passages that binds
/// someone, read with its table row, its band of values and the conditions it goes on
/// under.
pub(super) fn rules_of(request: &AnswerRequest) -> Vec<Rule<'_>> {
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
        // The conditions of the clause's sentences so far, with the words they qualify.
        let mut conditions: Vec<(HashSet<String>, Bound)> = Vec::new();
        for s in sentences(&meaning) {
            let stated: Vec<(HashSet<String>, Bound)> = rules::read(&s)
                .bounds
                .into_iter()
                .filter(|b| matches!(b.binding, Binding::Applies { .. }))
                .map(|b| {
                    (
                        terms(&s[..b.value.span.start.min(s.len())])
                            .into_iter()
                            .collect(),
                        b,
                    )
                })
                .collect();
            for c in facts::clauses(&s) {
                let mut reading = rules::read(&c);
                if !reading.is_rule()
                    || crate::docmodel::header::is_metadata_line(&c)
                    || describes_the_document(&c)
                {
                    continue;
                }
                // A band's figures are the row's case, not a limit it sets.
                let band = row_band(p);
                if let Some(band) = &band {
                    reading
                        .bounds
                        .retain(|b| !band.written.contains(&b.value.written));
                }
                let own: HashSet<String> = terms(&c).into_iter().collect();
                // A sentence that names again what a condition qualified sets its own
                // ("Gifts above £50 must be declared. Gifts from officials must be
                // refused"); one about something else goes on under it.
                let subject: HashSet<String> = {
                    let t = pairing::subject_terms(&c);
                    if t.is_empty() {
                        terms(&c).into_iter().take(3).collect()
                    } else {
                        t.into_iter().collect()
                    }
                };
                let inherited: Vec<Bound> = if reading
                    .bounds
                    .iter()
                    .any(|b| matches!(b.binding, Binding::Applies { .. }))
                {
                    Vec::new()
                } else {
                    conditions
                        .iter()
                        .filter(|(qualified, _)| qualified.is_disjoint(&subject))
                        .map(|(_, b)| b.clone())
                        .collect()
                };
                let mut words = own.clone();
                words.extend(context.iter().cloned());
                let row = row_label(p).map(|label| Row {
                    siblings: p
                        .lead
                        .as_deref()
                        .and_then(|l| tables.get(&(p.doc_id.as_str(), l)))
                        .map(|rows| {
                            let own = terms(&label);
                            rows.iter().filter(|r| **r != own).cloned().collect()
                        })
                        .unwrap_or_default(),
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
                    band,
                    inherited,
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
            conditions.extend(stated);
        }
    }
    out
}

/// Whether a clause tells what the document does ("This policy sets out how the Firm
/// approves, tests and releases changes"), binding no one.
fn describes_the_document(clause: &str) -> bool {
    let words: Vec<String> = clause
        .split_whitespace()
        .take(4)
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .collect();
    let w = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
    matches!(w(0), "this" | "the")
        && matches!(
            w(1),
            "policy" | "procedure" | "standard" | "document" | "manual" | "framework" | "guidance"
        )
        && matches!(
            w(2),
            "sets" | "describes" | "explains" | "establishes" | "outlines" | "defines" | "covers"
        )
}
