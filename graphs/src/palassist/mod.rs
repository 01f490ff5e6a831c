//! PalAssist, the document assistant, as a graph: the nodes of `palgraph_nodes` wired with
//! the engine's builder.
//!
//! ```text
//! START -+-> intent_resolver -+-> doc_resolver -+-> validate_inputs -+-> summarize -+
//!        |          |         |                 |                    +-> inquire   -+
//!        +---(explicit action)+                 |                    +-> compare   -+-> format_response -> END
//!                   |                           |                    +-> audit     -+
//!                   +------------------(cancelled at a prompt)-------+--------------+
//! ```
//!
//! A request with an explicit `action` goes from START straight to `doc_resolver`: no
//! intent classification, no `intent_resolver` status. A message asking PalAssist to
//! remember, list or forget something ("remember that ...", "what do you remember?",
//! "forget that ...") goes to `memory` (see `palgraph_nodes::memory`), which answers from
//! the user's long-term store and ends the turn. Every node streams one status line
//! per run: the engine streams it as the node starts, except for `doc_resolver` (which
//! reports it when done, with `docs_found`) and the actions (which report it as they start,
//! with `web_query` only when they really search the web); see `reports_status` in the
//! engine's node builder. The actions retry a broken LLM stream once
//! ([`actions::retry_policy`]).
//!
//! A turn is `RunInput::Turn(turn_input(chat_turn))`, run with the calling user in the
//! context (`RunConfig::new(thread).context("user_id", user)`). When a node asks the user
//! (a PalAssist prompt), the run ends `Interrupted` with the prompt's payload; resume it
//! with the chosen option's value, typed text, or null to cancel.

pub mod chat;
pub mod document_sets;
pub mod documents;
mod web;

use std::sync::Arc;

use palgraph::{CompiledGraph, GraphError, StateGraph, END, START};
use palgraph_nodes::actions::{self, audit, compare, inquire, summarize};
use palgraph_nodes::doc_resolver::doc_resolver;
use palgraph_nodes::documents::Limits;
use palgraph_nodes::format_response::format_response;
use palgraph_nodes::intent_resolver::intent_resolver;
use palgraph_nodes::llm::Llm;
use palgraph_nodes::memory::{memory, memory_request};
use palgraph_nodes::validate_inputs::validate_inputs;
use palgraph_server::{GraphEntry, ServerBuilder};

pub use palgraph_nodes::{
    turn_input, Action, AgentState, AgentStateUpdate, ChatTurn, PalAssistDeps,
};

/// The graph's registered name.
pub const NAME: &str = "palassist";

/// Where a turn starts: at `doc_resolver` when the request names its action, at
/// `intent_resolver` otherwise. (A resume re-enters the node that asked, not START.)
fn entry(s: &AgentState) -> &'static str {
    if s.action.is_some() {
        "doc_resolver"
    } else if memory_request(s.current_message()).is_some() {
        "memory"
    } else {
        "intent_resolver"
    }
}

/// Where `intent_resolver` and `doc_resolver` go next: on, or straight to
/// `format_response` when the user cancelled a prompt.
fn after_resolution(next: &'static str) -> impl Fn(&AgentState) -> &'static str {
    move |s: &AgentState| if s.cancelled { "format_response" } else { next }
}

fn route_action(s: &AgentState) -> &'static str {
    if s.cancelled {
        return "format_response";
    }
    s.action.unwrap_or(Action::Inquire).as_str()
}

/// Builds PalAssist over `deps`.
///
/// # Errors
/// Never for this graph; the signature is the builder's.
pub fn graph(deps: PalAssistDeps) -> Result<CompiledGraph<AgentState>, GraphError> {
    let deps = Arc::new(deps);
    let mut g = StateGraph::<AgentState>::new();
    macro_rules! node {
        ($name:literal, $f:path, $status:literal) => {{
            let d = deps.clone();
            g.add_node($name, move |s, c| $f(d.clone(), s, c))
                .status($status)
        }};
    }
    node!("intent_resolver", intent_resolver, "Clarifying intent...");
    node!("doc_resolver", doc_resolver, "Finding documents...").reports_status();
    node!("validate_inputs", validate_inputs, "Validating request...");
    node!("summarize", summarize, "Summarizing documents...")
        .reports_status()
        .retry(actions::retry_policy());
    node!("inquire", inquire, "Researching your question...")
        .reports_status()
        .retry(actions::retry_policy());
    node!("compare", compare, "Comparing documents...")
        .reports_status()
        .retry(actions::retry_policy());
    node!("audit", audit, "Auditing against regulations...")
        .reports_status()
        .retry(actions::retry_policy());
    node!("format_response", format_response, "Formatting response...");
    node!("memory", memory, "Checking my memory...");

    g.add_conditional_edges(START, entry, ["intent_resolver", "doc_resolver", "memory"]);
    g.add_edge("memory", END);
    g.add_conditional_edges(
        "intent_resolver",
        after_resolution("doc_resolver"),
        ["doc_resolver", "format_response"],
    );
    g.add_conditional_edges(
        "doc_resolver",
        after_resolution("validate_inputs"),
        ["validate_inputs", "format_response"],
    );
    let actions: Vec<&str> = Action::ALL.iter().map(|a| a.as_str()).collect();
    let mut targets = actions.clone();
    targets.push("format_response");
    g.add_conditional_edges("validate_inputs", route_action, targets);
    for a in actions {
        g.add_edge(a, "format_response");
    }
    g.add_edge("format_response", END);
    g.compile()
}

/// What PalAssist is, for the assistant list.
pub const DESCRIPTION: &str =
    "PalAssist: answers compliance questions from your documents, asking when unsure";

/// Registers PalAssist on a server: the graph on the server's checkpointer, answering with
/// `llm` over the documents on the server's database; its chat adapter (the default chat
/// graph); its document routes and, for the local user, the sample documents.
pub fn register(builder: ServerBuilder, llm: Arc<dyn Llm>) -> ServerBuilder {
    register_with_limits(builder, llm, Limits::default())
}

/// [`register`], with these limits on each user's documents (their size and count).
pub fn register_with_limits(
    builder: ServerBuilder,
    llm: Arc<dyn Llm>,
    limits: Limits,
) -> ServerBuilder {
    let docs = documents::Documents::with_limits(limits);
    builder
        .extension(docs.clone())
        .graph(NAME, move |ctx| {
            let deps = PalAssistDeps::new(llm, docs.store(&ctx.database));
            let graph = graph(deps)?.with_checkpointer(ctx.checkpointer.clone());
            let state = schemars::schema_for!(AgentState).to_value();
            let mut input = state.clone();
            if let Some(o) = input.as_object_mut() {
                o.remove("required");
            }
            Ok(GraphEntry::new(NAME, DESCRIPTION, Arc::new(graph))
                .schemas(state, input)
                .chat(Arc::new(chat::PalAssistChat)))
        })
        .default_chat(NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use palgraph_nodes::documents::MemoryDocumentStore;
    use palgraph_nodes::llm::OfflineLlm;

    #[test]
    fn status_lines_are_the_seed_lines() {
        let deps = PalAssistDeps::new(
            Arc::new(OfflineLlm::new()),
            Arc::new(MemoryDocumentStore::new()),
        );
        let g = graph(deps).unwrap();
        for (node, line) in [
            ("intent_resolver", "Clarifying intent..."),
            ("doc_resolver", "Finding documents..."),
            ("validate_inputs", "Validating request..."),
            ("summarize", "Summarizing documents..."),
            ("inquire", "Researching your question..."),
            ("compare", "Comparing documents..."),
            ("audit", "Auditing against regulations..."),
            ("format_response", "Formatting response..."),
            ("memory", "Checking my memory..."),
        ] {
            assert_eq!(g.node_status(node), Some(line), "{node}");
        }
        // The lines the nodes report themselves are the declared ones.
        assert_eq!(
            g.node_status("doc_resolver"),
            Some(palgraph_nodes::doc_resolver::STATUS)
        );
        for a in Action::ALL {
            assert_eq!(g.node_status(a.as_str()), Some(a.status_line()));
        }
        assert!(g.mermaid().contains("validate_inputs"));
    }
}
