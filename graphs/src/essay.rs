//! A workflow written as one function (the functional API, LangGraph's `@entrypoint`):
//! outline the topic (a durable step), ask a person for a tone (an interrupt), write the
//! essay (a durable step). Served like any graph: a run's input is `{"input": "<topic>"}`
//! and the essay lands in the state's `output`, with the number of essays this thread got.

use palgraph::entrypoint::{entrypoint, Call, FlowState};
use palgraph::{CompiledGraph, GraphError, NodeContext, NodeError};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// What the workflow returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Essay {
    /// The essay.
    pub text: String,
    /// How many essays the thread got, this one included (from the previous result).
    pub count: u32,
}

async fn essay(call: Call<String, Essay>, ctx: NodeContext) -> Result<Essay, NodeError> {
    let topic = call.input;
    let outline = ctx
        .step("outline", async {
            Ok::<_, NodeError>(format!("1. what {topic} are; 2. why they matter"))
        })
        .await?;
    let tone: String = ctx.interrupt(json!({"question": "Which tone?", "outline": outline}))?;
    let text = ctx
        .step("write", async {
            Ok::<_, NodeError>(format!("A {tone} essay on {topic}: {outline}."))
        })
        .await?;
    Ok(Essay {
        text,
        count: call.previous.map_or(1, |p| p.count + 1),
    })
}

/// Builds the essay workflow.
///
/// # Errors
/// Never for this workflow; the signature is the builder's.
pub fn graph() -> Result<CompiledGraph<FlowState>, GraphError> {
    entrypoint("essay", essay)
}

#[cfg(test)]
mod tests {
    use super::*;
    use palgraph::entrypoint::FlowStateUpdate;
    use palgraph::{Resume, RunConfig, RunInput};

    #[tokio::test]
    async fn asks_for_a_tone_then_writes() {
        let g = graph().unwrap();
        let input = FlowStateUpdate::call(&"tides").unwrap();
        let out = g
            .invoke(RunConfig::new("e"), RunInput::Turn(input))
            .await
            .unwrap();
        assert_eq!(out.interrupts()[0].value["question"], "Which tone?");
        let out = g
            .invoke(RunConfig::new("e"), RunInput::Resume(Resume::value("dry")))
            .await
            .unwrap();
        let essay: Essay = serde_json::from_value(out.state.output.clone().unwrap()).unwrap();
        assert_eq!(essay.count, 1);
        assert!(essay.text.starts_with("A dry essay on tides"));
    }
}
