//! A supervisor with two sub-agents, each a subgraph: `researcher` (its own state, two
//! steps) and `writer` (the [`approval`] graph, which asks a person before
//! it publishes). The supervisor sends the request to the researcher, then the research to
//! the writer, then ends; the writer's question suspends the whole graph and a resume of
//! the parent continues inside the writer. Built after LangGraph's multi-agent supervisor
//! example, without a model: who runs next is decided by what has reported back.
//!
//! ```text
//! START -> supervisor -(research missing)-> researcher [search -> summarize] -> supervisor
//!                     -(draft missing)----> writer [draft -> review -> publish] -> supervisor
//!                     -(both done)--------> END
//! ```

use std::sync::Arc;

use palgraph::{
    AddMessages, Append, CompiledGraph, GraphError, Message, MessageKind, NodeContext, NodeError,
    State, StateGraph, END, START,
};
use serde::{Deserialize, Serialize};

use crate::approval::{self, ApprovalState, ApprovalStateUpdate};

/// The supervisor's state.
#[derive(Clone, Default, Debug, Serialize, Deserialize, State)]
pub struct SupervisorState {
    /// The conversation: the request, and what each sub-agent reports.
    #[state(reducer = AddMessages)]
    pub messages: Vec<Message>,
    /// The sub-agents that reported back this turn.
    #[state(transient, reducer = Append)]
    pub done: Vec<String>,
    /// The researcher's notes this turn.
    #[state(transient, reducer = Append)]
    pub notes: Vec<String>,
}

/// The researcher's own state.
#[derive(Clone, Default, Debug, Serialize, Deserialize, State)]
pub struct ResearchState {
    /// What to research.
    pub topic: String,
    /// What it found.
    #[state(reducer = Append)]
    pub notes: Vec<String>,
}

/// The researcher sub-agent: `search`, then `summarize`.
///
/// # Errors
/// Never for this graph; the signature is the builder's.
pub fn researcher() -> Result<CompiledGraph<ResearchState>, GraphError> {
    let mut g = StateGraph::<ResearchState>::new();
    g.add_node(
        "search",
        |s: Arc<ResearchState>, ctx: NodeContext| async move {
            let found = ctx
                .step("search", async move {
                    Ok::<_, NodeError>(format!("three sources on {}", s.topic))
                })
                .await?;
            Ok::<_, NodeError>(ResearchStateUpdate::default().notes(vec![found]))
        },
    )
    .status("Searching...");
    g.add_node(
        "summarize",
        |s: Arc<ResearchState>, _ctx: NodeContext| async move {
            Ok::<_, NodeError>(
                ResearchStateUpdate::default().notes(vec![format!("summary of {}", s.topic)]),
            )
        },
    );
    g.add_edge(START, "search");
    g.add_edge("search", "summarize");
    g.add_edge("summarize", END);
    g.compile()
}

fn request(s: &SupervisorState) -> String {
    s.messages
        .iter()
        .rev()
        .find(|m| m.kind == MessageKind::Human)
        .map(|m| m.content.clone())
        .unwrap_or_default()
}

fn route(s: &SupervisorState) -> &'static str {
    if !s.done.iter().any(|d| d == "researcher") {
        "researcher"
    } else if !s.done.iter().any(|d| d == "writer") {
        "writer"
    } else {
        END
    }
}

/// Builds the supervisor graph.
///
/// # Errors
/// Never for this graph; the signature is the builder's.
pub fn graph() -> Result<CompiledGraph<SupervisorState>, GraphError> {
    let mut g = StateGraph::<SupervisorState>::new();
    g.add_node(
        "supervisor",
        |_s: Arc<SupervisorState>, _ctx: NodeContext| async move {
            Ok::<_, NodeError>(SupervisorStateUpdate::default())
        },
    );
    g.add_subgraph(
        "researcher",
        researcher()?,
        |s: &SupervisorState| ResearchStateUpdate::default().topic(request(s)),
        |r: &ResearchState| {
            SupervisorStateUpdate::default()
                .notes(r.notes.clone())
                .done(vec!["researcher".into()])
                .messages(vec![Message::ai(format!(
                    "Research: {}",
                    r.notes.join("; ")
                ))])
        },
    )
    .status("Researching...");
    g.add_subgraph(
        "writer",
        approval::graph()?,
        |s: &SupervisorState| {
            let brief = format!("{} ({})", request(s), s.notes.join("; "));
            ApprovalStateUpdate::default().messages(vec![Message::human(brief)])
        },
        |w: &ApprovalState| {
            let published = w
                .messages
                .iter()
                .rev()
                .find(|m| m.kind == MessageKind::Ai)
                .map(|m| m.content.clone())
                .unwrap_or_default();
            SupervisorStateUpdate::default()
                .done(vec!["writer".into()])
                .messages(vec![Message::ai(published)])
        },
    )
    .status("Writing...");
    g.add_edge(START, "supervisor");
    g.add_conditional_edges("supervisor", route, ["researcher", "writer", END]);
    g.add_edge("researcher", "supervisor");
    g.add_edge("writer", "supervisor");
    g.compile()
}

#[cfg(test)]
mod tests {
    use super::*;
    use palgraph::{Resume, RunConfig, RunInput, RunStatus};
    use serde_json::json;

    #[tokio::test]
    async fn the_supervisor_runs_both_agents_and_the_writer_asks_through_it() {
        let g = graph().unwrap();
        let turn = SupervisorStateUpdate::default().messages(vec![Message::human("tides")]);
        let out = g
            .invoke(RunConfig::new("s"), RunInput::Turn(turn))
            .await
            .unwrap();
        let asked = &out.interrupts()[0];
        assert_eq!(asked.node, "writer");
        assert_eq!(
            asked.value["draft"],
            "Draft 1 about \"tides (three sources on tides; summary of tides)\"."
        );
        let inside = g
            .get_state_with_subgraphs("s", None)
            .await
            .unwrap()
            .unwrap();
        let writer = inside.tasks[0].state.as_deref().unwrap();
        assert_eq!(writer.next, vec!["review"]);

        let out = g
            .invoke(
                RunConfig::new("s"),
                RunInput::Resume(Resume::value(json!({"approve": true}))),
            )
            .await
            .unwrap();
        assert_eq!(out.status, RunStatus::Completed);
        let said: Vec<&str> = out
            .state
            .messages
            .iter()
            .map(|m| m.content.as_str())
            .collect();
        assert_eq!(
            said,
            [
                "tides",
                "Research: three sources on tides; summary of tides",
                "Published: Draft 1 about \"tides (three sources on tides; summary of tides)\"."
            ]
        );
    }
}
