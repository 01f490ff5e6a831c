//! The `inquire` node: the passages of the resolved documents whose sentences best answer
//! the question (`retrieval`: the question's terms weighted by rarity, the kind of
//! value it asks for), best first; then, for each resolved document that has other versions
//! in the library, the best-matching passages of the version next to it (the one it
//! replaced, or the one that replaced it), so the answer can say what changed. A question
//! about the user's library ("Which documents do I have?") gets each document's opening
//! passage.

use std::sync::Arc;

use palgraph::{NodeContext, NodeError};

use super::{run, Inputs, Prepared};
use crate::analysis::Analysis;
use crate::deps::PalAssistDeps;
use crate::passages::{number, Passage};
use crate::question::Question;
use crate::retrieval;
use crate::state::{Action, AgentState, AgentStateUpdate, InferenceSource};
use crate::text::asks_for_library;

/// At most this many passages of the resolved documents answer a question.
const PASSAGES: usize = 8;
/// At most this many passages of another version of one of them.
const OTHER_VERSION: usize = 3;

/// Words that name a case by its number or letter ("Level 2", "Tier 3", "Category B").
const LABEL_WORDS: [&str; 10] = [
    "level", "tier", "band", "category", "class", "grade", "severity", "stage", "priority", "type",
];

/// The label a sentence gives a case ("**Level 2 – Enhanced** (roles handling payments ...)":
/// "level 2"), lower case: its first label word followed by a number or a letter.
fn label(sentence: &str) -> Option<String> {
    let words: Vec<String> = sentence
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    words.windows(2).find_map(|p| {
        let names = p[1].chars().all(|c| c.is_ascii_digit()) && p[1].len() <= 2
            || p[1].len() == 1 && p[1].chars().all(|c| c.is_ascii_alphabetic());
        (LABEL_WORDS.contains(&p[0].as_str()) && names).then(|| format!("{} {}", p[0], p[1]))
    })
}

/// A question that describes a case ("how often do we rescreen people in payments
/// roles?") finds the sentence that defines it ("Level 2 ... roles handling payments"),
/// which does not give the kind of value asked for; the rule that does is said of the
/// case's label ("Level 2 and Level 3 staff are rescreened every 3 years"). That rule's
/// hit is put first: a sentence of the same document that names the label, gives the kind
/// of value asked and shares a word of the question the defining sentence does not have.
fn through_label(analyses: &[Arc<Analysis>], q: &Question, hits: &mut Vec<retrieval::Hit>) {
    let Some(first) = hits.first().copied() else {
        return;
    };
    let a = &analyses[first.doc];
    let defining = &a.model.sentences[first.sentence];
    if q.expects.is_empty() || q.answered_by(&defining.reading) {
        return;
    }
    let Some(label) = label(&defining.text) else {
        return;
    };
    let rest: Vec<&String> = q
        .topic
        .iter()
        .filter(|t| !defining.terms.contains(*t))
        .collect();
    let found = a.model.sentences.iter().enumerate().find(|(k, s)| {
        *k != first.sentence
            && s.text.to_lowercase().contains(&label)
            && q.answered_by(&s.reading)
            && rest.iter().any(|t| s.terms.contains(*t))
    });
    if let Some((k, s)) = found {
        hits.retain(|h| !(h.doc == first.doc && h.sentence == k));
        hits.insert(
            0,
            retrieval::Hit {
                doc: first.doc,
                sentence: k,
                clause: s.clause,
                score: first.score,
            },
        );
    }
}

/// The best clauses of `analyses` for `q`, each once, scored by its best sentence.
fn best_clauses(analyses: &[Arc<Analysis>], q: &Question, limit: usize) -> Vec<Passage> {
    let mut out: Vec<Passage> = Vec::new();
    let digests: Vec<Arc<retrieval::digest::Digest>> =
        analyses.iter().map(|a| Arc::clone(&a.digest)).collect();
    let mut hits = retrieval::rank(&digests, q);
    through_label(analyses, q, &mut hits);
    for hit in hits {
        let all = &analyses[hit.doc].passages;
        let p = &all[hit.clause];
        if out.iter().any(|c| c.doc_id == p.doc_id && c.text == p.text) {
            continue;
        }
        // "A lost laptop must be reported within the same 1 hour": read with the clause
        // before it in its section, which says to whom and from when. "(c) the temporary
        // use lasts no more than 6 months": read with the lead it completes ("the Chief
        // Risk Officer may approve ..., provided that:").
        let before = lead_of(all, hit.clause)
            .or_else(|| {
                hit.clause.checked_sub(1).map(|k| &all[k]).filter(|b| {
                    refers_back(&p.text)
                        && section_of(b).is_some()
                        && section_of(b) == section_of(p)
                })
            })
            .filter(|b| !out.iter().any(|c| c.doc_id == b.doc_id && c.text == b.text));
        if let Some(b) = before {
            out.push(Passage {
                score: hit.score,
                ..b.clone()
            });
        }
        out.push(Passage {
            score: hit.score,
            ..p.clone()
        });
        if out.len() >= limit {
            break;
        }
    }
    out
}

/// A passage's section heading without its clause number ("Reporting an incident" of
/// "§3.2 Reporting an incident").
fn section_of(p: &Passage) -> Option<&str> {
    let h = p.heading.as_deref()?;
    Some(match h.split_once(' ') {
        Some((number, rest)) if number.starts_with('§') => rest,
        _ => h,
    })
}

/// How many clauses before a list item its lead may be (the items before it between).
const LIST_ITEMS_BACK: usize = 12;

/// The lead a list item completes: the clause before it in its section that ends with a
/// colon, for an item that starts in lower case ("c) the temporary use lasts no more than
/// 6 months" of "8.1 ... the Chief Risk Officer may approve ..., provided that:").
fn lead_of(all: &[Passage], k: usize) -> Option<&Passage> {
    let p = all.get(k)?;
    let item = p.text.trim_start().chars().next()?.is_lowercase();
    if !item || section_of(p).is_none() {
        return None;
    }
    all[k.saturating_sub(LIST_ITEMS_BACK)..k]
        .iter()
        .rev()
        .take_while(|b| section_of(b) == section_of(p))
        .find(|b| b.text.trim_end().ends_with(':'))
}

/// Whether a clause leans on the one before it for what it means ("within the same 1
/// hour", "This must be done ...", "Such a request ...").
fn refers_back(text: &str) -> bool {
    let lower = text.to_lowercase();
    let first = lower.split_whitespace().next().unwrap_or("");
    lower.contains(" the same ")
        && !lower.contains(" the same as ")
        && lower
            .split(" the same ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .is_some_and(|w| {
                w.chars().next().is_some_and(|c| c.is_ascii_digit())
                    || crate::docmodel::values::number_word(w).is_some()
                    || matches!(w, "deadline" | "period" | "time" | "way" | "process")
            })
        || matches!(first, "this" | "these" | "such" | "it" | "they")
}

/// How many passages each part of a request that asks several things brings first.
const PER_PART: usize = 2;

/// A request that asks several things ("Who signs it, and can they delegate?"): after the
/// best passage of the whole, the best passages of each part, looked up on its own, scored
/// as high as it, so that the answer to one part is not crowded out by the words of
/// another.
fn answer_each_part(
    text: &str,
    q: &Question,
    analyses: &[Arc<Analysis>],
    passages: &mut Vec<Passage>,
) {
    let parts = crate::question::parts(text);
    let Some(top) = passages
        .first()
        .map(|p| p.score)
        .filter(|_| parts.len() > 1)
    else {
        return;
    };
    // The best of the whole request stays first.
    let mut first: Vec<Passage> = passages.first().cloned().into_iter().collect();
    for part in &parts {
        let own = crate::question::read(part);
        let pq = Question {
            topic: own.topic,
            expects: own.expects,
            stated: own.stated,
            ..q.clone()
        };
        let found = best_clauses(analyses, &pq, PER_PART);
        let Some(best) = found.first().map(|p| p.score).filter(|s| *s > 0.0) else {
            continue;
        };
        for mut p in found {
            if first
                .iter()
                .any(|c| c.doc_id == p.doc_id && c.text == p.text)
            {
                continue;
            }
            p.score = top * p.score / best;
            first.push(p);
        }
    }
    passages.retain(|p| {
        !first
            .iter()
            .any(|c| c.doc_id == p.doc_id && c.text == p.text)
    });
    first.append(passages);
    first.sort_by(|a, b| b.score.total_cmp(&a.score));
    first.truncate(PASSAGES);
    *passages = first;
}

fn prepare(input: &Inputs<'_>) -> Prepared {
    if asks_for_library(input.question) {
        let mut passages: Vec<Passage> = input
            .entries
            .iter()
            .filter_map(|d| d.digest.opening.clone())
            .map(|mut p| {
                p.score = 1.0;
                p
            })
            .collect();
        number(&mut passages);
        let retrieval_confidence = if passages.is_empty() { 0.0 } else { 1.0 };
        return Prepared {
            passages,
            retrieval_confidence,
        };
    }
    let q = input.asked();
    let analyses = input.docs;
    let mut passages = best_clauses(analyses, &q, PASSAGES);
    answer_each_part(input.question, &q, analyses, &mut passages);
    tracing::trace!(
        topic = ?q.topic,
        expects = ?q.expects,
        context = ?q.context,
        best = ?passages.iter().take(4).map(|p| (p.score, &p.text)).collect::<Vec<_>>(),
        "question read and passages ranked"
    );
    let retrieval_confidence = passages.first().map_or(0.0, |p| p.score);
    if passages.is_empty() {
        // Nothing matches: the documents' openings, unranked, say what they are.
        passages = analyses
            .iter()
            .filter_map(|a| a.passages.first().cloned())
            .collect();
    }
    // The version next to each resolved document, on the same question: the one in force
    // after a superseded one; the one before the version in force, unless the user chose
    // this version (mentioned it, or named a version).
    let chosen = input.state.inference_source == Some(InferenceSource::Explicit)
        || crate::question::versions_asked(input.question)
            .iter()
            .any(|a| {
                matches!(
                    a,
                    crate::question::VersionAsk::Named(_) | crate::question::VersionAsk::Year(_)
                )
            });
    for d in input.entries {
        let e = input.versions.edition(&d.id);
        let next = e.and_then(|e| match (e.superseded_by, e.supersedes) {
            (Some(newer), _) => Some(newer),
            (None, Some(older)) if !chosen => Some(older),
            _ => None,
        });
        let Some(other) = next.filter(|o| !input.entries.iter().any(|x| x.id == o.id)) else {
            continue;
        };
        let Some(doc) = input.neighbours.iter().find(|x| x.doc.id == other.id) else {
            continue;
        };
        passages.extend(best_clauses(&[Arc::clone(doc)], &q, OTHER_VERSION));
    }
    number(&mut passages);
    Prepared {
        passages,
        retrieval_confidence,
    }
}

/// The `inquire` node.
///
/// # Errors
/// No calling user in the run's context; an LLM or storage failure.
pub async fn inquire(
    deps: Arc<PalAssistDeps>,
    state: Arc<AgentState>,
    ctx: NodeContext,
) -> Result<AgentStateUpdate, NodeError> {
    run(Action::Inquire, &deps, &state, &ctx, prepare).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::test_doc as doc;

    #[test]
    fn a_clause_that_leans_on_the_one_before_is_read_with_it() {
        let d = doc(
            "s",
            "Security Policy",
            "## 3. Reporting an incident\n\n3.1 Anyone who suspects an incident must report it to the SOC within 1 hour of becoming aware of it.\n\n3.2 A lost or stolen laptop must be reported within the same 1 hour, even outside working hours.\n\n## 4. Leavers\n\n4.1 A leaver's laptop must be returned on the last working day.",
        );
        let a = vec![crate::analysis::analysis(&d)];
        let q = crate::question::read(
            "I lost my work laptop last night. How quickly must I report it?",
        );
        let best = best_clauses(&a, &q, 3);
        let at = |t: &str| best.iter().position(|p| p.text.contains(t));
        assert!(at("the same 1 hour").is_some(), "{best:?}");
        assert_eq!(at("to the SOC").map(|k| k + 1), at("the same 1 hour"));
        assert!(!refers_back(
            "A leaver's laptop must be returned on the last working day."
        ));
    }

    #[test]
    fn each_question_of_a_request_that_asks_two_finds_its_passage() {
        let d = doc(
            "r",
            "Reporting Policy",
            "## 1. Purpose\n\n1.1 This policy sets out how the firm prepares, reviews, approves and submits regulatory returns, and corrects errors in submitted returns.\n\n## 2. Definitions\n\n2.1 **Material error**: an error in a submitted return that changes any reported line by more than 5%, or any error in a capital or liquidity ratio.\n\n## 3. Roles\n\n3.1 The Board Audit Committee approves this policy and receives a quarterly report on timeliness and errors.\n\n3.2 The Regulatory Reporting Committee, chaired by the Chief Financial Officer, meets monthly. It approves the Calendar and reviews every error and late submission.\n\n3.3 The Head of Regulatory Reporting owns the Calendar and the submission process.\n\n3.4 Each return has a Return Owner and each data feed a Data Owner, both named in the Calendar.\n\n## 4. Return Calendar and Sign-Off\n\n4.1 The main returns are:\n\n| Return | Frequency | Submission deadline | Sign-off |\n|---|---|---|---|\n| Capital adequacy return | Quarterly | 30 business days after quarter end | Chief Financial Officer |\n| Liquidity coverage return | Monthly | 15 business days after month end | Group Treasurer |\n| Complaints data return | Half-yearly | 30 business days after period end | Head of Complaints |\n\n4.2 Sign-off must be given in writing before the return is submitted.\n\n4.3 A signatory may delegate sign-off in writing in advance to a named deputy, except for the capital adequacy return and the annual financial statements, which may not be delegated.",
        );
        let a = vec![crate::analysis::analysis(&d)];
        let text = "Who has to put their name to the quarterly capital figures before they go to the regulator, and can they hand that job to a deputy?";
        let q = crate::question::read(text);
        let mut best = best_clauses(&a, &q, PASSAGES);
        answer_each_part(text, &q, &a, &mut best);
        let top = best[0].score;
        let near: Vec<&str> = best
            .iter()
            .filter(|p| p.score >= top * 0.8)
            .map(|p| p.text.as_str())
            .collect();
        assert!(near.iter().any(|t| t.contains("named deputy")), "{near:?}");
        assert!(
            near.iter().any(|t| t.contains("Chief Financial Officer")),
            "{near:?}"
        );
    }

    #[test]
    fn a_list_item_is_read_with_the_lead_it_completes() {
        let d = doc(
            "m",
            "Model Risk Policy",
            "## 8. Temporary use before validation\n\n8.1 Where there is an urgent business need, the Chief Risk Officer may approve use of a model before its initial validation is complete, provided that:\n\na) a conservative overlay of at least 10% is applied to the model's outputs;\nb) the model is recorded in the exceptions register; and\nc) the temporary use lasts no more than 6 months and is not renewed.\n\n8.2 Temporary use may not be approved for a Tier 1 model.",
        );
        let a = vec![crate::analysis::analysis(&d)];
        let q = crate::question::read(
            "For how long at most may a new scorecard be used before the validation is finished?",
        );
        let best = best_clauses(&a, &q, 3);
        let at = |t: &str| best.iter().position(|p| p.text.contains(t));
        let item = at("no more than 6 months").expect("the item that answers");
        assert_eq!(at("provided that:"), Some(item - 1), "{best:?}");
    }

    #[test]
    fn a_case_described_in_other_words_is_answered_by_the_rule_said_of_its_label() {
        assert_eq!(
            label("**Level 2 – Enhanced** (roles handling payments)").as_deref(),
            Some("level 2")
        );
        assert_eq!(label("Staff must complete the course."), None);
        let d = doc(
            "v",
            "Vetting Standard",
            "## 3. Screening levels\n\n3.1 **Level 2 – Enhanced** (roles handling client money, payments or privileged IT access): all Level 1 checks, plus a credit check covering the previous 6 years.\n\n## 7. Rescreening\n\n7.1 Level 2 and Level 3 staff are rescreened every 3 years.",
        );
        let a = vec![crate::analysis::analysis(&d)];
        let q = crate::question::read(
            "How often do we rescreen people in payments and privileged IT roles?",
        );
        let best = best_clauses(&a, &q, 3);
        assert!(best[0].text.contains("every 3 years"), "{best:?}");
    }
}
