//! Map-reduce, after LangGraph's joke generator: `generate_topics` lists three subjects for
//! the topic, a router sends each to `generate_joke` (one task per subject, its own input,
//! all in one step), and `best_joke` picks one. Jokes are written in a durable step, so a
//! resume or a crash never writes one twice. No model: the jokes are templates.
//!
//! ```text
//! START -> generate_topics -(Send per subject)-> generate_joke x N -> best_joke -> END
//! ```

use std::sync::Arc;

use palgraph::send::Send;
use palgraph::{
    Append, CompiledGraph, GraphError, NodeContext, NodeError, State, StateGraph, END, START,
};
use serde::{Deserialize, Serialize};

/// The joke generator's state.
#[derive(Clone, Default, Debug, Serialize, Deserialize, State)]
pub struct JokesState {
    /// What the jokes are about.
    pub topic: String,
    /// The subjects found for the topic this turn.
    #[state(transient)]
    pub subjects: Vec<String>,
    /// One joke per subject, in the order the subjects were sent.
    #[state(transient, reducer = Append)]
    pub jokes: Vec<String>,
    /// The joke picked.
    #[state(transient)]
    pub best: Option<String>,
}

/// What `generate_joke` gets: one subject.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JokeInput {
    /// The subject.
    pub subject: String,
}

async fn generate_topics(
    state: Arc<JokesState>,
    _ctx: NodeContext,
) -> Result<JokesStateUpdate, NodeError> {
    let t = &state.topic;
    Ok(JokesStateUpdate::default().subjects(vec![
        format!("{t} at work"),
        format!("{t} at home"),
        format!("{t} on holiday"),
    ]))
}

async fn generate_joke(
    _state: Arc<JokesState>,
    ctx: NodeContext,
) -> Result<JokesStateUpdate, NodeError> {
    let input: JokeInput = ctx.arg()?;
    let joke = ctx
        .step("write", async move {
            Ok::<_, NodeError>(format!("Why did the {} cross the road?", input.subject))
        })
        .await?;
    Ok(JokesStateUpdate::default().jokes(vec![joke]))
}

async fn best_joke(
    state: Arc<JokesState>,
    _ctx: NodeContext,
) -> Result<JokesStateUpdate, NodeError> {
    let best = state
        .jokes
        .iter()
        .fold(None::<&String>, |b, j| match b {
            Some(b) if b.len() >= j.len() => Some(b),
            _ => Some(j),
        })
        .cloned();
    Ok(JokesStateUpdate::default().best(best))
}

/// Builds the joke generator.
///
/// # Errors
/// Never for this graph; the signature is the builder's.
pub fn graph() -> Result<CompiledGraph<JokesState>, GraphError> {
    let mut g = StateGraph::<JokesState>::new();
    g.add_node("generate_topics", generate_topics);
    g.add_node("generate_joke", generate_joke);
    g.add_node("best_joke", best_joke);
    g.add_edge(START, "generate_topics");
    g.add_conditional_edges(
        "generate_topics",
        |s: &JokesState| {
            s.subjects
                .iter()
                .map(|x| Send::new("generate_joke", serde_json::json!({"subject": x})))
                .collect::<Vec<_>>()
        },
        ["generate_joke"],
    );
    g.add_edge("generate_joke", "best_joke");
    g.add_edge("best_joke", END);
    g.compile()
}

#[cfg(test)]
mod tests {
    use super::*;
    use palgraph::{Command, RunConfig, RunInput};

    #[tokio::test]
    async fn one_joke_per_subject_then_the_best() {
        let g = graph().unwrap();
        let out = g
            .invoke(
                RunConfig::new("j"),
                RunInput::Turn(JokesStateUpdate::default().topic("cats".into())),
            )
            .await
            .unwrap();
        assert_eq!(
            out.state.jokes,
            [
                "Why did the cats at work cross the road?",
                "Why did the cats at home cross the road?",
                "Why did the cats on holiday cross the road?"
            ]
        );
        assert_eq!(
            out.state.best.as_deref(),
            Some("Why did the cats on holiday cross the road?")
        );

        // A command may send too (LangGraph's Command(goto=Send(...))); on a new thread.
        let cmd = Command::new().send(Send::new(
            "generate_joke",
            serde_json::json!({"subject": "owls"}),
        ));
        let out = g
            .invoke(RunConfig::new("j2"), RunInput::Command(cmd))
            .await
            .unwrap();
        assert_eq!(out.state.jokes, ["Why did the owls cross the road?"]);
        assert_eq!(
            out.state.best.as_deref(),
            Some("Why did the owls cross the road?")
        );
    }
}
