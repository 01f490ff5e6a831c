//! A human-approval graph: `draft` writes a text, `review` asks a person with
//! `interrupt` whether to publish it, and routes to `publish` or back to `draft` with the
//! reviewer's note. The draft goes through `ctx.step`, so a resume never writes it twice.
//!
//! ```text
//! START -> draft -> review -(approved)-> publish -> END
//!                     \--(rejected)--> draft
//! ```

use std::sync::Arc;

use palgraph::{
    AddMessages, CompiledGraph, GraphError, Message, NodeContext, NodeError, State, StateGraph,
    END, START,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The approval graph's state.
#[derive(Clone, Default, Debug, Serialize, Deserialize, State)]
pub struct ApprovalState {
    /// The conversation.
    #[state(reducer = AddMessages)]
    pub messages: Vec<Message>,
    /// The current draft.
    #[state(transient)]
    pub draft: String,
    /// How many drafts this turn took.
    #[state(transient)]
    pub revisions: u32,
    /// The reviewer's decision.
    #[state(transient)]
    pub approved: Option<bool>,
    /// The reviewer's note when they reject.
    #[state(transient)]
    pub note: Option<String>,
}

/// What the reviewer answers (its JSON Schema is the interrupt's `response_schema`).
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Decision {
    /// Publish it?
    pub approve: bool,
    /// What to change (when not approved).
    #[serde(default)]
    pub note: Option<String>,
}

async fn draft(
    state: Arc<ApprovalState>,
    ctx: NodeContext,
) -> Result<ApprovalStateUpdate, NodeError> {
    let topic = state
        .messages
        .iter()
        .rev()
        .find(|m| m.kind == palgraph::MessageKind::Human)
        .map(|m| m.content.clone())
        .unwrap_or_default();
    let revision = state.revisions + 1;
    let note = state.note.clone();
    let text = ctx
        .step("write", async move {
            let mut text = format!("Draft {revision} about \"{topic}\".");
            if let Some(n) = note {
                text.push_str(&format!(" Revised for: {n}."));
            }
            Ok::<_, NodeError>(text)
        })
        .await?;
    Ok(ApprovalStateUpdate::default()
        .draft(text)
        .revisions(revision))
}

async fn review(
    state: Arc<ApprovalState>,
    ctx: NodeContext,
) -> Result<ApprovalStateUpdate, NodeError> {
    let decision: Decision = ctx.interrupt_expecting(json!({
        "question": "Publish this draft?",
        "draft": state.draft,
    }))?;
    Ok(ApprovalStateUpdate::default()
        .approved(Some(decision.approve))
        .note(decision.note))
}

async fn publish(
    state: Arc<ApprovalState>,
    _ctx: NodeContext,
) -> Result<ApprovalStateUpdate, NodeError> {
    Ok(ApprovalStateUpdate::default()
        .messages(vec![Message::ai(format!("Published: {}", state.draft))]))
}

/// Builds the approval graph.
///
/// # Errors
/// Never for this graph; the signature is the builder's.
pub fn graph() -> Result<CompiledGraph<ApprovalState>, GraphError> {
    let mut g = StateGraph::<ApprovalState>::new();
    g.add_node("draft", draft).status("Drafting...");
    g.add_node("review", review)
        .status("Waiting for approval...");
    g.add_node("publish", publish).status("Publishing...");
    g.add_edge(START, "draft");
    g.add_edge("draft", "review");
    g.add_conditional_edges(
        "review",
        |s: &ApprovalState| {
            if s.approved == Some(true) {
                "publish"
            } else {
                "draft"
            }
        },
        ["publish", "draft"],
    );
    g.add_edge("publish", END);
    g.compile()
}

#[cfg(test)]
mod tests {
    use super::*;
    use palgraph::{Resume, RunConfig, RunInput, RunStatus};

    #[tokio::test]
    async fn rejected_draft_is_revised_then_published() {
        let g = graph().unwrap();
        let turn = ApprovalStateUpdate::default().messages(vec![Message::human("the launch")]);
        let out = g
            .invoke(RunConfig::new("a"), RunInput::Turn(turn))
            .await
            .unwrap();
        assert_eq!(
            out.interrupts()[0].value["draft"],
            "Draft 1 about \"the launch\"."
        );
        let no = Resume::value(json!({"approve": false, "note": "shorter"}));
        let out = g
            .invoke(RunConfig::new("a"), RunInput::Resume(no))
            .await
            .unwrap();
        assert_eq!(
            out.interrupts()[0].value["draft"],
            "Draft 2 about \"the launch\". Revised for: shorter."
        );
        let yes = Resume::value(json!({"approve": true}));
        let out = g
            .invoke(RunConfig::new("a"), RunInput::Resume(yes))
            .await
            .unwrap();
        assert_eq!(out.status, RunStatus::Completed);
        assert_eq!(
            out.state.messages.last().unwrap().content,
            "Published: Draft 2 about \"the launch\". Revised for: shorter."
        );
        assert_eq!(out.state.revisions, 2);
    }
}
