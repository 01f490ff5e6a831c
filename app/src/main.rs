//! The `palgraph` binary: PalAssist and the example graphs, served the way any program
//! serves its own graphs with `palgraph_server::Server::builder()`.
//!
//! - `palgraph` / `palgraph serve`: the server (embedded SQLite file by default, Postgres
//!   with `DATABASE_URL`), on <http://127.0.0.1:8123>;
//! - `palgraph migrate`: applies the database migrations and exits;
//! - `palgraph demo`: runs the human-approval example graph in the terminal.

mod fault;

use std::io::Write;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};
use futures_util::StreamExt;
use palgraph::{Message, Resume, RunConfig, RunInput, RunStatus, StreamModes};
use palgraph_graphs::approval::{self, ApprovalStateUpdate};
use palgraph_graphs::{chat, essay, fanout, jokes, palassist, streaming, supervisor};
use palgraph_nodes::documents::Limits;
use palgraph_server::{Database, GraphEntry, MessagesChat, ServeConfig, Server, ServerBuilder};

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
    // Logs to stderr; traces over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set. Declared
    // before the runtime, so the last spans are sent after the runtime has stopped.
    let _telemetry = palgraph_server::telemetry::init()
        .context("setting up logs and traces (OTEL_* variables)")?;
    let cli = Cli::parse();
    let command = match cli.command {
        None => Command::Serve(ServeConfig::from_env()?),
        Some(c) => c,
    };
    let rt = match &command {
        Command::Serve(cfg) | Command::Migrate(cfg) => cfg.runtime(),
        Command::Demo { .. } => tokio::runtime::Runtime::new(),
    }
    .context("starting the async runtime")?;
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

/// PalAssist (the default chat graph) and the example graphs; the fault-test graph with
/// `PALGRAPH_FAULT_GRAPH=1`.
fn graphs(builder: ServerBuilder, limits: Limits) -> anyhow::Result<ServerBuilder> {
    let llm =
        palgraph_nodes::llm::from_env().context("configuring the LLM (OPENAI_* variables)")?;
    let mut b = palassist::register_with_limits(builder, llm, limits)
        .chat_graph_with(
            "approval",
            "Drafts a text and asks a person to approve it (human in the loop)",
            approval::graph()?,
            chat::ReviewChat,
        )
        .chat_graph(
            "fanout",
            "Three reviewers in parallel, one summary (fan-out / fan-in)",
            fanout::graph()?,
        )
        .chat_graph_with(
            "essay",
            "A workflow written as one function: outline, ask for a tone, write (functional API)",
            essay::graph()?,
            chat::EssayChat,
        )
        .chat_graph_with(
            "jokes",
            "Map-reduce: a joke per subject of a topic, sent in parallel, then the best (Send)",
            jokes::graph()?,
            chat::JokesChat,
        )
        .chat_graph_with(
            "supervisor",
            "A supervisor with two sub-agent subgraphs: a researcher, then a writer who asks before publishing",
            supervisor::graph()?,
            chat::ReviewChat,
        )
        .graph("streaming", |ctx| {
            let graph = streaming::graph()?.with_checkpointer(ctx.checkpointer.clone());
            Ok(GraphEntry::new(
                "streaming",
                "Answers word by word, streaming each word; stops cleanly when cancelled",
                Arc::new(graph),
            )
            .chat(Arc::new(MessagesChat)))
        });
    if std::env::var("PALGRAPH_FAULT_GRAPH").is_ok_and(|v| v == "1") {
        b = b
            .extension(fault::Ledger)
            .graph("ledger", |ctx| {
                let graph = fault::graph(ctx.database.clone(), ctx.checkpointer.clone())?;
                Ok(GraphEntry::new(
                    "ledger",
                    "Fault-test graph: three durable side effects recorded in ledger_effects",
                    Arc::new(graph),
                ))
            })
            .graph("ledger_map", |ctx| {
                let graph = fault::map_graph(ctx.database.clone(), ctx.checkpointer.clone())?;
                Ok(GraphEntry::new(
                    "ledger_map",
                    "Fault-test graph: 50 mapped Send tasks, each a durable side effect",
                    Arc::new(graph),
                ))
            })
            .graph("ledger_sub", |ctx| {
                let graph = fault::sub_graph(ctx.database.clone(), ctx.checkpointer.clone())?;
                Ok(GraphEntry::new(
                    "ledger_sub",
                    "Fault-test graph: a durable side effect, then two inside a subgraph",
                    Arc::new(graph),
                ))
            });
    }
    if let Some(config) =
        palgraph_nodes::embeddings::EmbeddingsConfig::from_lookup(|k| std::env::var(k).ok())
    {
        tracing::info!(model = %config.model, "the long-term store searches by meaning");
        let embedder = palgraph_nodes::embeddings::OpenAiEmbedder::new(config)
            .context("configuring embeddings (PALGRAPH_EMBEDDINGS_* variables)")?;
        let mut index = palgraph::store::IndexConfig::new(Arc::new(embedder));
        if let Ok(fields) = std::env::var("PALGRAPH_STORE_INDEX_FIELDS") {
            let fields: Vec<String> = fields
                .split(',')
                .map(|f| f.trim().to_string())
                .filter(|f| !f.is_empty())
                .collect();
            if !fields.is_empty() {
                index = index.fields(fields);
            }
        }
        b = b.store_index(index);
    }
    Ok(b)
}

async fn serve(cfg: ServeConfig) -> anyhow::Result<()> {
    let limits = Limits {
        max_bytes: usize::try_from(cfg.max_document_bytes).unwrap_or(usize::MAX),
        max_documents: usize::try_from(cfg.max_documents).unwrap_or(usize::MAX),
    };
    graphs(Server::builder().config(cfg), limits)?
        .serve_from_env()
        .await?;
    Ok(())
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
