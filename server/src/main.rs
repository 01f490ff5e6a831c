//! The `palgraph` binary.
//!
//! - `palgraph` / `palgraph serve`: the server (embedded SQLite file by default, Postgres
//!   with `DATABASE_URL`), on <http://127.0.0.1:8123>;
//! - `palgraph migrate`: applies the database migrations and exits;
//! - `palgraph demo`: runs the human-approval example graph in the terminal.

use std::io::Write;

use anyhow::Context;
use clap::{Parser, Subcommand};
use futures_util::StreamExt;
use palgraph::{Message, Resume, RunConfig, RunInput, RunStatus, StreamModes};
use palgraph_graphs::approval::{self, ApprovalStateUpdate};
use palgraph_server::app::{shutdown_signal, Database, ServeConfig, Server};

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    /// Serve the API and the chat page (the default).
    Serve(ServeConfig),
    /// Apply the database migrations and exit.
    Migrate(ServeConfig),
    /// Run the human-approval example graph and print its events.
    Demo {
        /// What the draft is about.
        #[arg(default_value = "the quarterly compliance report")]
        topic: String,
    },
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // A setting or start-up error: say what is wrong, not where in the code.
            eprintln!("palgraph: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let command = match cli.command {
        Some(c) => c,
        None => Command::Serve(ServeConfig::parse_from_env()),
    };
    rt.block_on(async move {
        match command {
            Command::Serve(cfg) => serve(cfg).await,
            Command::Migrate(cfg) => {
                Database::open(&cfg).await?;
                println!("migrations applied");
                Ok(())
            }
            Command::Demo { topic } => demo(topic).await,
        }
    })
}

trait FromEnv {
    fn parse_from_env() -> Self;
}

impl FromEnv for ServeConfig {
    fn parse_from_env() -> Self {
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            cfg: ServeConfig,
        }
        Wrapper::parse_from(["palgraph"]).cfg
    }
}

async fn serve(cfg: ServeConfig) -> anyhow::Result<()> {
    let (server, listener) = Server::bind(&cfg).await?;
    println!("palgraph listening on http://{}", server.addr);
    let _ = std::io::stdout().flush();
    server.serve(listener, shutdown_signal()).await
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
