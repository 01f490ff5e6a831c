//! A workflow with parallel branches and a join, served with `palgraph-server` through
//! public API only: a text is prepared, checked by three reviewers at once (spelling,
//! length, tone), and the join writes one verdict once all three have answered.
//!
//! ```text
//! START -> prepare -> { spelling, length, tone } -> verdict -> END
//! ```
//!
//! It declares its input (`{text}`), output (`{findings, verdict}`) and context
//! (`{strict}`) types, which `/assistants/review/schemas` and `/openapi.json` publish and
//! the server checks (422).
//!
//!     cargo run -p workflow    # then: POST /runs/wait {"assistant_id": "review", "input": {"text": "..."}}

use std::sync::Arc;

use palgraph::{Append, GraphError, NodeContext, NodeError, State, StateGraph, END, START};
use palgraph_server::{GraphEntry, Server};
use serde::{Deserialize, Serialize};

/// A text under review.
#[derive(Clone, Default, Debug, Serialize, Deserialize, State)]
struct Review {
    /// The text to review.
    text: String,
    /// What each reviewer found, in the reviewers' declaration order.
    #[state(reducer = Append)]
    findings: Vec<String>,
    /// The verdict: "accepted" or "changes requested".
    verdict: Option<String>,
}

/// What a run takes.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct ReviewInput {
    /// The text to review.
    text: String,
}

/// What a run returns.
#[derive(Serialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct ReviewOutput {
    /// What each reviewer found.
    findings: Vec<String>,
    /// The verdict.
    verdict: Option<String>,
}

/// How a run reviews.
#[derive(Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct ReviewContext {
    /// Any finding requests changes (default: only two or more).
    #[serde(default)]
    strict: bool,
}

type Out = Result<ReviewUpdate, NodeError>;

async fn prepare(s: Arc<Review>, _: NodeContext) -> Out {
    Ok(ReviewUpdate::default().text(s.text.split_whitespace().collect::<Vec<_>>().join(" ")))
}

async fn spelling(s: Arc<Review>, _: NodeContext) -> Out {
    let typos = ["teh", "recieve", "definately"];
    let found: Vec<&str> = s
        .text
        .split(' ')
        .filter(|w| typos.contains(&w.to_lowercase().as_str()))
        .collect();
    Ok(ReviewUpdate::default().findings(match found.as_slice() {
        [] => vec![],
        f => vec![format!("spelling: {}", f.join(", "))],
    }))
}

async fn length(s: Arc<Review>, _: NodeContext) -> Out {
    let n = s.text.split(' ').count();
    Ok(ReviewUpdate::default().findings(if n > 30 {
        vec![format!("length: {n} words")]
    } else {
        vec![]
    }))
}

async fn tone(s: Arc<Review>, _: NodeContext) -> Out {
    let shouting = s.text.contains('!')
        || s.text
            .split(' ')
            .any(|w| w.len() > 2 && w == w.to_uppercase());
    Ok(ReviewUpdate::default().findings(if shouting {
        vec!["tone: shouting".into()]
    } else {
        vec![]
    }))
}

async fn verdict(s: Arc<Review>, ctx: NodeContext) -> Out {
    let strict = ctx
        .context()
        .get("strict")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    let limit = if strict { 1 } else { 2 };
    let v = if s.findings.len() >= limit {
        "changes requested"
    } else {
        "accepted"
    };
    Ok(ReviewUpdate::default().verdict(Some(v.into())))
}

fn graph() -> Result<palgraph::CompiledGraph<Review>, GraphError> {
    let mut g = StateGraph::<Review>::new();
    g.add_node("prepare", prepare);
    g.add_node("spelling", spelling)
        .status("Checking spelling...");
    g.add_node("length", length).status("Checking length...");
    g.add_node("tone", tone).status("Checking tone...");
    g.add_node("verdict", verdict);
    g.add_edge(START, "prepare");
    for branch in ["spelling", "length", "tone"] {
        g.add_edge("prepare", branch);
    }
    g.add_join(["spelling", "length", "tone"], "verdict");
    g.add_edge("verdict", END);
    g.compile()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Logs to stderr, and traces to an OTLP collector when OTEL_EXPORTER_OTLP_ENDPOINT is set.
    let _telemetry = palgraph_server::telemetry::Telemetry::new()
        .service_name("workflow")
        .init()?;
    let graph = graph()?;
    Server::builder()
        .graph("review", move |ctx| {
            let graph = graph.with_checkpointer(ctx.checkpointer.clone());
            Ok(GraphEntry::new(
                "review",
                "Three reviewers in parallel, one verdict",
                Arc::new(graph),
            )
            .input::<ReviewInput>()
            .output::<ReviewOutput>()
            .context::<ReviewContext>())
        })
        .serve_from_env()
        .await?;
    Ok(())
}
