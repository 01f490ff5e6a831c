//! The `palgraph` binary.
//!
//! `palgraph demo` runs the human-approval example graph in the terminal and prints every
//! event it streams, answering its prompts itself.

use std::io::Write;

use anyhow::Context;
use clap::{Parser, Subcommand};
use futures_util::StreamExt;
use palgraph::{Message, Resume, RunConfig, RunInput, RunStatus, StreamModes};
use palgraph_graphs::approval::{self, ApprovalStateUpdate};

#[derive(Parser)]
#[command(
    name = "palgraph",
    version,
    about = "A durable graph engine for LLM agents"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the human-approval example graph and print its events.
    Demo {
        /// What the draft is about.
        #[arg(default_value = "the quarterly compliance report")]
        topic: String,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command.unwrap_or(Command::Demo {
        topic: "the quarterly compliance report".into(),
    }) {
        Command::Demo { topic } => demo(topic).await,
    }
}

async fn demo(topic: String) -> anyhow::Result<()> {
    let graph = approval::graph().context("building the approval graph")?;
    let thread = "demo";
    let mut input =
        RunInput::Turn(ApprovalStateUpdate::default().messages(vec![Message::human(topic)]));
    let answers = [
        serde_json::json!({"approve": false, "note": "mention the deadline"}),
        serde_json::json!({"approve": true}),
    ];
    let mut out = std::io::stdout().lock();
    for answer in answers
        .iter()
        .chain(std::iter::once(&serde_json::Value::Null))
    {
        let mut stream = graph.stream(RunConfig::new(thread).stream_modes(StreamModes::ALL), input);
        while let Some(event) = stream.next().await {
            writeln!(out, "{}", serde_json::to_string(&event)?)?;
        }
        let outcome = stream.outcome().await?;
        match outcome.status {
            RunStatus::Interrupted(_) => {
                writeln!(out, "# answering the prompt with {answer}")?;
                input = RunInput::Resume(Resume::Value(answer.clone()));
            }
            _ => break,
        }
    }
    Ok(())
}
