//! The `format_response` node: closes the turn. The titles of the documents this turn
//! worked on are merged into the conversation's registry (`conversation_docs`, which only
//! grows), so a later message can say "that regulation". A turn that ended at a cancelled
//! prompt merges nothing: no action ran.

use std::collections::BTreeMap;
use std::sync::Arc;

use palgraph::{NodeContext, NodeError};

use crate::deps::{user_id, PalAssistDeps};
use crate::state::{AgentState, AgentStateUpdate};

/// The `format_response` node.
///
/// # Errors
/// No calling user in the run's context; a storage failure.
pub async fn format_response(
    deps: Arc<PalAssistDeps>,
    state: Arc<AgentState>,
    ctx: NodeContext,
) -> Result<AgentStateUpdate, NodeError> {
    let owner = user_id(&ctx)?;
    if state.cancelled || state.resolved_doc_ids.is_empty() {
        return Ok(AgentStateUpdate::default());
    }
    let library = deps.titles(&ctx, &owner).await?;
    let discussed: BTreeMap<String, String> = library
        .iter()
        .filter(|d| state.resolved_doc_ids.contains(&d.id))
        .map(|d| (d.title.clone(), d.id.clone()))
        .collect();
    if discussed.is_empty() {
        return Ok(AgentStateUpdate::default());
    }
    Ok(AgentStateUpdate::default().conversation_docs(discussed))
}
