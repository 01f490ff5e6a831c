//! A parallel fan-out / fan-in graph: three reviewers read the same text at once, each adds
//! its findings to an `Append` field, and `summarize` runs once after all of them (a join).
//! The findings always come out in the reviewers' declaration order, whichever finishes
//! first.
//!
//! ```text
//!         /-> legal ----\
//! START --+-> style ----+--> summarize -> END
//!         \-> numbers --/
//! ```

use std::sync::Arc;

use palgraph::{
    AddMessages, Append, CompiledGraph, GraphError, Message, NodeContext, NodeError, State,
    StateGraph, END, START,
};
use serde::{Deserialize, Serialize};

/// The fan-out graph's state.
#[derive(Clone, Default, Debug, Serialize, Deserialize, State)]
pub struct ReviewState {
    /// The conversation.
    #[state(reducer = AddMessages)]
    pub messages: Vec<Message>,
    /// Findings of this turn's reviewers.
    #[state(transient, reducer = Append)]
    pub findings: Vec<String>,
}

fn last_text(state: &ReviewState) -> String {
    state
        .messages
        .last()
        .map(|m| m.content.clone())
        .unwrap_or_default()
}

async fn legal(state: Arc<ReviewState>, _ctx: NodeContext) -> Result<ReviewStateUpdate, NodeError> {
    let t = last_text(&state).to_lowercase();
    let finding = if t.contains("guarantee") {
        "legal: \"guarantee\" is a promise; qualify it"
    } else {
        "legal: no issues"
    };
    Ok(ReviewStateUpdate::default().findings(vec![finding.to_string()]))
}

async fn style(state: Arc<ReviewState>, _ctx: NodeContext) -> Result<ReviewStateUpdate, NodeError> {
    let words = last_text(&state).split_whitespace().count();
    Ok(ReviewStateUpdate::default().findings(vec![format!("style: {words} words")]))
}

async fn numbers(
    state: Arc<ReviewState>,
    _ctx: NodeContext,
) -> Result<ReviewStateUpdate, NodeError> {
    let digits = last_text(&state)
        .chars()
        .filter(char::is_ascii_digit)
        .count();
    Ok(ReviewStateUpdate::default().findings(vec![format!("numbers: {digits} digits to check")]))
}

async fn summarize(
    state: Arc<ReviewState>,
    _ctx: NodeContext,
) -> Result<ReviewStateUpdate, NodeError> {
    Ok(ReviewStateUpdate::default().messages(vec![Message::ai(state.findings.join("\n"))]))
}

/// Builds the fan-out graph.
///
/// # Errors
/// Never for this graph; the signature is the builder's.
pub fn graph() -> Result<CompiledGraph<ReviewState>, GraphError> {
    let mut g = StateGraph::<ReviewState>::new();
    g.add_node("legal", legal)
        .status("Checking legal wording...");
    g.add_node("style", style).status("Checking style...");
    g.add_node("numbers", numbers).status("Checking numbers...");
    g.add_node("summarize", summarize).status("Summarizing...");
    for r in ["legal", "style", "numbers"] {
        g.add_edge(START, r);
    }
    g.add_join(["legal", "style", "numbers"], "summarize");
    g.add_edge("summarize", END);
    g.compile()
}

#[cfg(test)]
mod tests {
    use super::*;
    use palgraph::{RunConfig, RunInput};

    #[tokio::test]
    async fn reviewers_run_in_parallel_and_summary_runs_once_in_order() {
        let g = graph().unwrap();
        let turn = ReviewStateUpdate::default()
            .messages(vec![Message::human("We guarantee 99.9% uptime")]);
        let out = g
            .invoke(RunConfig::new("r"), RunInput::Turn(turn))
            .await
            .unwrap();
        assert_eq!(
            out.state.messages.last().unwrap().content,
            "legal: \"guarantee\" is a promise; qualify it\nstyle: 4 words\nnumbers: 3 digits to check"
        );
        let snap = g.get_state("r").await.unwrap().unwrap();
        assert_eq!(
            snap.metadata["step"], 1,
            "reviewers in step 0, summary in step 1"
        );
    }
}
