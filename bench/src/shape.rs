//! The benchmark graph: PalAssist's shape with the same cheap stub nodes as the LangGraph
//! reference (`../shared/bench/langgraph/bench.py`): intent_resolver -> doc_resolver ->
//! validate_inputs -> {summarize | inquire | compare | audit} -> format_response -> END, the
//! action node appending one assistant message.

use std::collections::BTreeMap;
use std::sync::Arc;

use palgraph::{
    AddMessages, Checkpointer, CompiledGraph, MergeMap, Message, MessageKind, NodeContext,
    NodeError, RunInput, State, StateGraph, END, START,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The four actions.
pub const ACTIONS: [&str; 4] = ["summarize", "inquire", "compare", "audit"];

/// The reference's state fields (per-turn fields transient, as PalAssist declares them).
#[derive(Clone, Default, Debug, Serialize, Deserialize, State)]
pub struct BenchState {
    /// The conversation.
    #[state(reducer = AddMessages)]
    pub messages: Vec<Message>,
    /// The chosen action.
    #[state(transient)]
    pub action: String,
    /// Web search on or off.
    #[state(transient)]
    pub enable_web_search: bool,
    /// Documents resolved this turn.
    #[state(transient)]
    pub resolved_doc_ids: Vec<String>,
    /// The conversation's document registry.
    #[state(reducer = MergeMap)]
    pub conversation_docs: BTreeMap<String, Value>,
    /// The answer.
    #[state(transient)]
    pub response: String,
    /// Its citations.
    #[state(transient)]
    pub citations: Vec<Value>,
    /// Tokens used.
    #[state(transient)]
    pub tokens_used: u64,
}

fn last_human(s: &BenchState) -> &str {
    s.messages
        .iter()
        .rev()
        .find(|m| m.kind == MessageKind::Human)
        .map(|m| m.content.as_str())
        .unwrap_or("")
}

fn pick_ids(s: &BenchState) -> Vec<String> {
    let n = s.messages.len();
    vec![format!("doc-{}", n % 7), format!("doc-{}", (n + 3) % 7)]
}

/// Whether doc_resolver asks the user (the interrupt round trip variant).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Plain stubs.
    Plain,
    /// doc_resolver interrupts and waits for `{"doc_ids": [...]}`.
    AskForDocs,
}

/// Builds the graph on `cp`.
pub fn graph(cp: Arc<dyn Checkpointer>, variant: Variant) -> CompiledGraph<BenchState> {
    let mut g = StateGraph::<BenchState>::new();
    g.add_node(
        "intent_resolver",
        |s: Arc<BenchState>, _c: NodeContext| async move {
            let text = last_human(&s);
            let mut action = "inquire".to_string();
            if let Some(rest) = text.strip_prefix('/') {
                let cand = rest.split(' ').next().unwrap_or("");
                if ACTIONS.contains(&cand) {
                    action = cand.to_string();
                }
            }
            Ok::<_, NodeError>(BenchStateUpdate::default().action(action))
        },
    );
    g.add_node(
        "doc_resolver",
        move |s: Arc<BenchState>, ctx: NodeContext| async move {
            let ids = if variant == Variant::AskForDocs {
                let answer: Value = ctx.interrupt(json!({
                    "question": "Which documents should I use?",
                    "candidates": pick_ids(&s),
                }))?;
                answer["doc_ids"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|v| v.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default()
            } else {
                pick_ids(&s)
            };
            let turn = s.messages.len();
            let docs = ids
                .iter()
                .map(|d| {
                    (
                        d.clone(),
                        json!({"title": format!("Document {d}"), "last_turn": turn}),
                    )
                })
                .collect();
            Ok::<_, NodeError>(
                BenchStateUpdate::default()
                    .resolved_doc_ids(ids)
                    .conversation_docs(docs),
            )
        },
    );
    g.add_node(
        "validate_inputs",
        |s: Arc<BenchState>, _c: NodeContext| async move {
            let mut action = s.action.clone();
            if action == "compare" && s.resolved_doc_ids.len() < 2 {
                action = "inquire".into();
            }
            Ok::<_, NodeError>(BenchStateUpdate::default().action(action))
        },
    );
    for name in ACTIONS {
        g.add_node(
            name,
            move |s: Arc<BenchState>, _c: NodeContext| async move {
                let q: String = last_human(&s).chars().take(48).collect();
                let text = format!(
                    "[{name}] answer over {} document(s) for: {q}",
                    s.resolved_doc_ids.len()
                );
                let citations = s
                    .resolved_doc_ids
                    .iter()
                    .map(|d| json!({"doc_id": d, "page": 1}))
                    .collect();
                Ok::<_, NodeError>(
                    BenchStateUpdate::default()
                        .tokens_used(s.tokens_used + text.len() as u64 / 4)
                        .messages(vec![Message::ai(text.clone())])
                        .response(text)
                        .citations(citations),
                )
            },
        );
        g.add_edge(name, "format_response");
    }
    g.add_node(
        "format_response",
        |s: Arc<BenchState>, _c: NodeContext| async move {
            Ok::<_, NodeError>(
                BenchStateUpdate::default().response(format!("**{}**\n{}", s.action, s.response)),
            )
        },
    );
    g.add_edge(START, "intent_resolver");
    g.add_edge("intent_resolver", "doc_resolver");
    g.add_edge("doc_resolver", "validate_inputs");
    g.add_conditional_edges(
        "validate_inputs",
        |s: &BenchState| s.action.clone(),
        ACTIONS,
    );
    g.add_edge("format_response", END);
    g.compile()
        .expect("the benchmark graph is valid")
        .with_checkpointer(cp)
}

/// The input of turn `i` (as the reference's `turn_input`).
pub fn turn_input(i: usize) -> RunInput<BenchState> {
    let action = ACTIONS[i % ACTIONS.len()];
    RunInput::Turn(
        BenchStateUpdate::default()
            .messages(vec![Message::human(format!(
                "/{action} question {i}: what do the contract terms say?"
            ))])
            .enable_web_search(false),
    )
}
