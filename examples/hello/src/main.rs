//! Echo: the smallest served palgraph graph.

use std::sync::Arc;

use palgraph::{AddMessages, Message, NodeContext, NodeError, State, StateGraph, END, START};
use palgraph_server::Server;
use serde::{Deserialize, Serialize};

/// A conversation with an echo.
#[derive(Clone, Default, Debug, Serialize, Deserialize, State)]
struct Chat {
    /// What the user and the echo said.
    #[state(reducer = AddMessages)]
    messages: Vec<Message>,
}

async fn echo(state: Arc<Chat>, _ctx: NodeContext) -> Result<ChatUpdate, NodeError> {
    let said = state.messages.last().map_or("", |m| m.content.as_str());
    Ok(ChatUpdate::default().messages(vec![Message::ai(format!("You said: {said}"))]))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Logs, and traces to an OTLP collector when OTEL_EXPORTER_OTLP_ENDPOINT is set.
    let _telemetry = palgraph_server::telemetry::init()?;
    let mut graph = StateGraph::<Chat>::new();
    graph.add_node("echo", echo);
    graph.add_edge(START, "echo");
    graph.add_edge("echo", END);
    Server::builder()
        .chat_graph("echo", "Says back what you said", graph.compile()?)
        .serve_from_env()
        .await?;
    Ok(())
}
