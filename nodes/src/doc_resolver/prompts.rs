//! What the node asks the user when a request does not settle its documents: which of
//! several candidates a reference means (an [`Ambiguity`], asked as a `doc_choice` prompt),
//! or which document an unknown name means (a `text_input` prompt that offers the user's
//! titles); and how a typed answer to either is read, matched again by title.

use std::collections::VecDeque;

use super::{names, Found};
use crate::question::versions_asked;
use crate::state::{DocRef, InferenceSource};
use crate::title_match::match_answer;

/// Several documents one reference could mean.
pub(super) struct Ambiguity {
    /// The question the prompt asks.
    pub(super) question: String,
    pub(super) candidates: Vec<DocRef>,
}

impl Ambiguity {
    /// Several documents a name fits.
    pub(super) fn named(name: &str, candidates: Vec<DocRef>) -> Self {
        Ambiguity {
            question: format!(
                "\"{name}\" could be several of your documents. Which one do you mean?"
            ),
            candidates,
        }
    }

    /// Several documents of the conversation a reference could mean.
    pub(super) fn discussed(candidates: Vec<DocRef>) -> Self {
        Ambiguity {
            question: "Which of these documents do you mean?".to_string(),
            candidates,
        }
    }

    /// Several documents that answer a request equally well.
    pub(super) fn answering(candidates: Vec<DocRef>) -> Self {
        Ambiguity {
            question: "Several of your documents answer this. Which one do you mean?".to_string(),
            candidates,
        }
    }
}

pub(super) fn titles(docs: &[DocRef]) -> String {
    docs.iter()
        .map(|d| format!("\"{}\"", d.title))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads a typed answer to a document prompt: one match is taken, several are asked
/// about, none is remembered as unknown.
pub(super) fn read_typed(
    answer: &str,
    library: &[DocRef],
    versions: &crate::versions::Versions,
    found: &mut Found,
    ambiguous: &mut VecDeque<Ambiguity>,
    unknown: &mut Vec<String>,
) {
    let groups = match_answer(answer, library);
    if groups.is_empty() {
        unknown.push(answer.to_string());
    }
    let asks = versions_asked(answer);
    for group in groups {
        match names::fit(&group, versions, &asks, false) {
            names::Fit::Found(docs) => {
                for (d, _) in docs {
                    found.add(&d, 1.0, InferenceSource::UserChoice);
                }
            }
            names::Fit::Ambiguous(candidates) => {
                ambiguous.push_front(Ambiguity::named(answer, candidates))
            }
            names::Fit::Unknown => unknown.push(answer.to_string()),
        }
    }
}
