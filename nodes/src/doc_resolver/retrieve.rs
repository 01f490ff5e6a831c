//! A request that names no document: the documents whose sentences answer it best
//! ([`crate::retrieval`]), among the versions in force (a superseded version answers only
//! when the request asks for the old one). When two documents of different families
//! answer about equally well, the request is ambiguous: the user is asked which one. When
//! none answers well, the one nearest to answering is taken, for the answer to show what
//! comes nearest and say that nothing answers in those words.

use std::sync::Arc;

use crate::library::Entry;
use crate::question::{Question, VersionAsk};
use crate::retrieval::digest::Digest;
use crate::retrieval::rank_answers;
use crate::state::DocRef;
use crate::text::terms;
use crate::versions::Versions;

/// A document must answer at least this well to be taken.
pub(super) const RETRIEVAL_MIN: f64 = 0.3;
/// Below that, the document nearest to answering is still taken down to this, for the
/// answer to show what comes nearest (and say that nothing answers in those words).
const NEAREST_MIN: f64 = 0.15;
/// Documents within this share of the best are taken too.
const NEAR_BEST: f64 = 0.7;
/// At most this many documents come from retrieval.
const RETRIEVAL_MAX: usize = 3;
/// Two documents that both answer at least this well ...
const BOTH_ANSWER: f64 = 0.55;
/// ... and the second within this share of the first: the request could mean either.
const TIE: f64 = 0.92;

/// A practice's sentence must have this many words to be read as a fact.
const FACT_WORDS: usize = 4;
/// The family a practice is about answers its facts this much better than any other.
const FACTS_LEAD: f64 = 1.3;

/// What retrieval found.
pub(super) enum Retrieved {
    /// These documents, with how well they answer.
    Docs(Vec<(DocRef, f64)>),
    /// Documents of several families that answer equally well.
    Ambiguous(Vec<DocRef>),
    /// Nothing answers.
    Nothing,
}

/// The documents of `docs` in force (a superseded version answers only when asked for).
fn in_force<'a>(docs: &'a [Entry], versions: &Versions) -> Vec<&'a Entry> {
    docs.iter()
        .filter(|d| !versions.is_superseded(&d.id))
        .collect()
}

/// The digests of `docs`, in order.
fn digests(docs: &[&Entry]) -> Vec<Arc<Digest>> {
    docs.iter().map(|d| Arc::clone(&d.digest)).collect()
}

/// A document in force, or the version of its family the request asks for: the one before
/// it ("the old policy"), or the one a version or year names when the request names one
/// ("under version 1.4, who approved ..."; a family without it keeps the one in force).
fn as_asked(d: DocRef, versions: &Versions, asks: &[VersionAsk]) -> DocRef {
    if asks.iter().any(|a| matches!(a, VersionAsk::Previous)) {
        return versions.previous(&d.id).unwrap_or(d);
    }
    let named: Vec<&VersionAsk> = asks
        .iter()
        .filter(|a| matches!(a, VersionAsk::Named(_) | VersionAsk::Year(_)))
        .collect();
    match named.as_slice() {
        [one] => versions.asked(&d.id, Some(one)).unwrap_or(d),
        _ => d,
    }
}

/// The documents of `docs` that answer `q` (see the module docs).
pub(super) fn retrieve(
    docs: &[Entry],
    versions: &Versions,
    q: &Question,
    asks: &[VersionAsk],
) -> Retrieved {
    let current = in_force(docs, versions);
    let answers = rank_answers(&digests(&current), q);
    let ranked: Vec<(usize, f64)> = answers.iter().map(|a| (a.doc, a.score)).collect();
    let Some(&(_, best)) = ranked.first() else {
        return Retrieved::Nothing;
    };
    if best < NEAREST_MIN {
        return Retrieved::Nothing;
    }
    if best < RETRIEVAL_MIN {
        let (i, s) = ranked[0];
        return Retrieved::Docs(vec![(current[i].doc_ref(), s)]);
    }
    let tied: Vec<DocRef> = ranked
        .iter()
        .take_while(|(_, s)| *s >= BOTH_ANSWER && *s >= best * TIE)
        .map(|(i, _)| current[*i].doc_ref())
        .collect();
    if tied.len() >= 2 {
        // The one whose title says what the request is about is the one it means ("how
        // long are transaction records kept?": the retention policy, not the AML policy
        // that also keeps them).
        let titled: Vec<&DocRef> = tied
            .iter()
            .filter(|d| terms(&d.title).iter().any(|t| q.topic.contains(t)))
            .collect();
        // A request that asks for a version ("in the newest version", "the old policy")
        // means a document that has versions.
        let versioned: Vec<&DocRef> = tied
            .iter()
            .filter(|d| !asks.is_empty() && versions.family(&d.id).len() > 1)
            .collect();
        // Documents that give the same figure answer alike: no need to ask which.
        let agree = !q.expects.is_empty() && {
            let first = &answers[0].values;
            !first.is_empty()
                && answers[1..tied.len()].iter().all(|a| {
                    a.values.len() == first.len()
                        && a.values.iter().zip(first).all(|(x, y)| x.same_as(y))
                })
        };
        if titled.len() != 1 && versioned.len() != 1 && !agree {
            // Each family as the request asks for it ("the 2023 expenses policy": each
            // family's 2023 version, not the one in force).
            return Retrieved::Ambiguous(
                tied.into_iter()
                    .take(RETRIEVAL_MAX)
                    .map(|d| as_asked(d, versions, asks))
                    .collect(),
            );
        }
    }
    let found = ranked
        .iter()
        .filter(|(_, s)| *s >= best * NEAR_BEST)
        .take(RETRIEVAL_MAX)
        .map(|(i, s)| (as_asked(current[*i].doc_ref(), versions, asks), *s))
        .collect();
    Retrieved::Docs(found)
}

/// The documents a described practice speaks to, fact by fact: each sentence of `text` is
/// a request of its own, every document's best answer to it counts for its family, and the
/// family that answers the practice best overall (by [`FACTS_LEAD`] over any other) is the
/// one it is about. A long practice shares too few of its words with any one sentence of a
/// document to be found whole.
pub(super) fn by_facts(
    docs: &[Entry],
    versions: &Versions,
    text: &str,
    asks: &[VersionAsk],
) -> Retrieved {
    let current = in_force(docs, versions);
    let ranked = digests(&current);
    // Per family: its document in force, the sum of its best scores, the facts it answers.
    let mut totals: Vec<(usize, f64, usize)> = Vec::new();
    for sentence in text.split(['.', '?', '!', ';', '\n']) {
        if sentence.split_whitespace().count() < FACT_WORDS {
            continue;
        }
        let q = crate::question::read(sentence);
        for a in rank_answers(&ranked, &q) {
            if a.score < NEAREST_MIN {
                continue;
            }
            match totals
                .iter_mut()
                .find(|t| versions.same_family(&current[t.0].id, &current[a.doc].id))
            {
                Some(t) => {
                    t.1 += a.score;
                    t.2 += 1;
                }
                None => totals.push((a.doc, a.score, 1)),
            }
        }
    }
    totals.sort_by(|a, b| b.1.total_cmp(&a.1));
    let Some(&(best, total, facts)) = totals.first() else {
        return Retrieved::Nothing;
    };
    let second = totals.get(1).map_or(0.0, |t| t.1);
    if facts >= 2 && total >= second * FACTS_LEAD {
        let d = as_asked(current[best].doc_ref(), versions, asks);
        return Retrieved::Docs(vec![(d, (total / facts as f64).min(1.0))]);
    }
    if facts < 2 {
        return Retrieved::Nothing;
    }
    Retrieved::Ambiguous(
        totals
            .iter()
            .take_while(|t| t.1 * FACTS_LEAD > total)
            .take(RETRIEVAL_MAX)
            .map(|t| current[t.0].doc_ref())
            .collect(),
    )
}
