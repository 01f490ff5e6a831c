//! A tool-calling agent with a side effect behind a person's approval, served with
//! `palgraph-server` through public API only.
//!
//! Two tools: `lookup_contact` (runs freely) and `send_email` (appends to the outbox file
//! `OUTBOX`, default `outbox.jsonl`, and runs only once someone approves it). With
//! `OPENAI_API_KEY` the agent runs on that model (`OPENAI_MODEL`, `OPENAI_BASE_URL`);
//! without one, on a scripted offline model that understands "email `<name>` that `<text>`".
//!
//!     cargo run -p tool-agent     # then: POST /chat {"message": "email Ann that the report is ready"}

use std::sync::Arc;

use palgraph::MessageKind;
use palgraph_agents::{tool, AgentBuilder, ModelRequest, ModelTurn, ScriptedModel, Tool};
use palgraph_server::Server;
use serde::Deserialize;
use serde_json::json;
use tokio::io::AsyncWriteExt;

/// Whom to look up.
#[derive(Deserialize, schemars::JsonSchema)]
struct Lookup {
    /// A first name, e.g. "Ann".
    name: String,
}

/// The mail to send.
#[derive(Deserialize, schemars::JsonSchema)]
struct Email {
    /// The address.
    to: String,
    /// The subject line.
    subject: String,
    /// The text.
    body: String,
}

fn tools() -> Vec<Arc<dyn Tool>> {
    let lookup = tool(
        "lookup_contact",
        "Finds a contact's email address",
        |a: Lookup| async move {
            match a.name.to_lowercase().as_str() {
                "ann" | "bob" => Ok(format!("{}@example.com", a.name.to_lowercase())),
                _ => Err(format!("no contact named {}", a.name)),
            }
        },
    );
    let send = tool("send_email", "Sends an email", |m: Email| async move {
        let outbox = std::env::var("OUTBOX").unwrap_or_else(|_| "outbox.jsonl".into());
        let line = json!({"to": m.to, "subject": m.subject, "body": m.body}).to_string() + "\n";
        let mut file = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(outbox)
            .await?;
        file.write_all(line.as_bytes()).await?;
        Ok::<_, std::io::Error>(format!("sent to {}", m.to))
    });
    vec![lookup, send]
}

/// The offline model: "email `<name>` that `<text>`" looks the name up, then sends the text.
fn offline(req: &ModelRequest<'_>) -> ModelTurn {
    let asked = palgraph_agents::last_human(req.messages);
    let (name, text) = asked
        .split_once(" that ")
        .map(|(head, text)| (head.split_whitespace().last().unwrap_or(""), text))
        .unwrap_or(("", asked));
    match req.messages.last() {
        Some(m) if m.kind == MessageKind::Tool && m.content.starts_with("Error") => {
            ModelTurn::text(format!("I could not do it: {}", m.content))
        }
        Some(m) if m.kind == MessageKind::Tool && m.name.as_deref() == Some("lookup_contact") => {
            ModelTurn::call(
                "send_email",
                json!({"to": m.content, "subject": "A note", "body": text}),
            )
        }
        Some(m) if m.kind == MessageKind::Tool => ModelTurn::text(format!("Done: {}.", m.content)),
        _ if name.is_empty() => {
            ModelTurn::text("Whom should I email, and what? Say: email Ann that ...")
        }
        _ => ModelTurn::call("lookup_contact", json!({"name": name})),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Logs to stderr, and traces to an OTLP collector when OTEL_EXPORTER_OTLP_ENDPOINT is set.
    let _telemetry = palgraph_server::telemetry::Telemetry::new()
        .service_name("tool-agent")
        .init()?;
    let model = palgraph_agents::from_env(|| Arc::new(ScriptedModel::from_fn(|r| Ok(offline(r)))))?;
    let agent = AgentBuilder::new(model)
        .system_prompt("You send emails for the user. Look contacts up first.")
        .tools(tools())
        .approve("send_email")
        .build()?;
    Server::builder()
        .chat_graph(
            "agent",
            "Looks contacts up and sends email, after you approve it",
            agent,
        )
        .serve_from_env()
        .await?;
    Ok(())
}
