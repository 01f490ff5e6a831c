//! Tagged document sets (`tagged_set_ids`, and set mentions in the TipTap JSON): each of
//! the user's sets puts every document it holds in scope, as if each were mentioned. A set
//! that is not the user's (unknown, or someone else's) and an empty set each add a notice
//! instead of silently adding nothing.

use palgraph::{NodeContext, NodeError};

use super::Found;
use crate::deps::PalAssistDeps;
use crate::documents::MAX_SETS;
use crate::durable::document_sets;
use crate::state::InferenceSource;

/// What set resolution adds to: the documents found, the labels to leave out of the request
/// text, the notices, the names that found nothing.
pub(super) struct Resolution<'a> {
    pub(super) found: &'a mut Found,
    pub(super) labels: &'a mut Vec<String>,
    pub(super) notices: &'a mut Vec<String>,
    pub(super) unresolved: &'a mut Vec<String>,
}

/// Resolves the tagged sets `(id, label)` (mentions first, then `tagged_set_ids`), each id
/// once, at most [`MAX_SETS`] of them.
pub(super) async fn resolve(
    deps: &PalAssistDeps,
    ctx: &NodeContext,
    owner: &str,
    mut tagged: Vec<(String, Option<String>)>,
    out: &mut Resolution<'_>,
) -> Result<(), NodeError> {
    let mut seen = std::collections::HashSet::new();
    tagged.retain(|(id, _)| seen.insert(id.clone()));
    if tagged.is_empty() {
        return Ok(());
    }
    if tagged.len() > MAX_SETS {
        out.notices.push(format!(
            "You tagged {} document sets; I used the first {MAX_SETS}.",
            tagged.len()
        ));
        tagged.truncate(MAX_SETS);
    }
    let ids: Vec<String> = tagged.iter().map(|(id, _)| id.clone()).collect();
    let sets = document_sets(deps, ctx, owner, &ids).await?;
    for ((id, label), set) in tagged.into_iter().zip(sets) {
        out.labels.extend(label.clone());
        let Some(set) = set else {
            let name = label.unwrap_or(id);
            out.notices.push(format!(
                "\"{name}\" is not among your document sets, so I left it out."
            ));
            out.unresolved.push(name);
            continue;
        };
        out.labels.push(set.name.clone());
        if set.documents.is_empty() {
            out.notices.push(format!(
                "The document set \"{}\" holds no documents, so it added nothing.",
                set.name
            ));
            continue;
        }
        for d in &set.documents {
            out.found.add(d, 1.0, InferenceSource::Explicit);
        }
    }
    Ok(())
}
