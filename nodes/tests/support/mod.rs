//! Shared by the node tests: a seeded in-memory document store, an offline LLM wrapped in
//! a counter, LLMs that record or script their answers, and graphs of one node (or a node
//! and `format_response`) to run a node through the real engine.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::future::Future;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use palgraph::{
    CompiledGraph, NodeContext, NodeError, Resume, RunConfig, RunInput, RunOutcome, StateGraph,
    END, START,
};
use palgraph_nodes::llm::{
    AnswerRequest, AnswerStream, CountingLlm, DocRequest, DocResolution, IntentDecision,
    IntentRequest, Llm, LlmError, OfflineLlm, Reply,
};
use palgraph_nodes::{
    seed_samples, AgentState, AgentStateUpdate, DocumentStore, MemoryDocumentStore, PalAssistDeps,
};
use serde_json::{json, Value};

pub const USER: &str = "alice";

pub struct Kit {
    pub docs: Arc<MemoryDocumentStore>,
    pub llm: Arc<CountingLlm>,
    pub deps: PalAssistDeps,
}

/// Samples for alice, the offline LLM behind a counter.
pub async fn kit() -> Kit {
    kit_with(Arc::new(OfflineLlm::new())).await
}

/// Samples for alice, `llm` behind a counter.
pub async fn kit_with(llm: Arc<dyn Llm>) -> Kit {
    let docs = Arc::new(MemoryDocumentStore::new());
    seed_samples(docs.as_ref(), USER).await.unwrap();
    let llm = Arc::new(CountingLlm::new(llm));
    let deps = PalAssistDeps::new(llm.clone(), docs.clone());
    Kit { docs, llm, deps }
}

impl Kit {
    /// (id, title) of the sample whose title starts with `prefix`.
    pub async fn doc(&self, prefix: &str) -> (String, String) {
        let d = self
            .docs
            .titles(USER)
            .await
            .unwrap()
            .into_iter()
            .find(|d| d.title.starts_with(prefix))
            .unwrap();
        (d.id, d.title)
    }
}

/// A graph of one node.
pub fn single<F, Fut>(name: &str, node: F, deps: &PalAssistDeps) -> CompiledGraph<AgentState>
where
    F: Fn(Arc<PalAssistDeps>, Arc<AgentState>, NodeContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<AgentStateUpdate, NodeError>> + Send + 'static,
{
    let deps = Arc::new(deps.clone());
    let mut g = StateGraph::<AgentState>::new();
    g.add_node(name, move |s, c| node(deps.clone(), s, c));
    g.add_edge(START, name);
    g.add_edge(name, END);
    g.compile().unwrap()
}

/// A graph of a node followed by `format_response`.
pub fn then_format<F, Fut>(name: &str, node: F, deps: &PalAssistDeps) -> CompiledGraph<AgentState>
where
    F: Fn(Arc<PalAssistDeps>, Arc<AgentState>, NodeContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<AgentStateUpdate, NodeError>> + Send + 'static,
{
    let deps = Arc::new(deps.clone());
    let d = deps.clone();
    let mut g = StateGraph::<AgentState>::new();
    g.add_node(name, move |s, c| node(d.clone(), s, c));
    let d = deps.clone();
    g.add_node("format_response", move |s, c| {
        palgraph_nodes::format_response::format_response(d.clone(), s, c)
    });
    g.add_edge(START, name);
    g.add_edge(name, "format_response");
    g.add_edge("format_response", END);
    g.compile().unwrap()
}

pub fn config(thread: &str) -> RunConfig {
    RunConfig::new(thread).context("user_id", USER)
}

pub async fn run(
    graph: &CompiledGraph<AgentState>,
    thread: &str,
    input: AgentStateUpdate,
) -> RunOutcome<AgentState> {
    graph
        .invoke(config(thread), RunInput::Turn(input))
        .await
        .unwrap()
}

pub async fn resume(
    graph: &CompiledGraph<AgentState>,
    thread: &str,
    value: Value,
) -> RunOutcome<AgentState> {
    graph
        .invoke(config(thread), RunInput::Resume(Resume::Value(value)))
        .await
        .unwrap()
}

/// A turn with `message` as the human message.
pub fn said(message: &str) -> AgentStateUpdate {
    AgentStateUpdate::default().messages(vec![palgraph::Message::human(message)])
}

/// TipTap JSON with `mentions` (id, label) nested two levels deep.
pub fn tiptap(text: &str, mentions: &[(&str, &str)]) -> Value {
    let mut nodes = vec![json!({"type": "text", "text": text})];
    for (id, label) in mentions {
        nodes.push(json!({"type": "mention", "attrs": {"id": id, "label": label}}));
    }
    json!({"type": "doc", "content": [{"type": "blockquote", "content": [{"type": "paragraph", "content": nodes}]}]})
}

/// The single pending prompt.
pub fn prompt(out: &RunOutcome<AgentState>) -> Value {
    let pending = out.interrupts();
    assert_eq!(pending.len(), 1, "expected a prompt, got {:?}", out.status);
    pending[0].value.clone()
}

/// The offline LLM, recording the requests it gets.
#[derive(Default)]
pub struct RecordingLlm {
    pub intents: Mutex<Vec<IntentRequest>>,
    pub docs: Mutex<Vec<DocRequest>>,
    pub answers: Mutex<Vec<AnswerRequest>>,
}

#[async_trait]
impl Llm for RecordingLlm {
    fn describe(&self) -> String {
        "recording".into()
    }
    async fn classify_intent(&self, r: &IntentRequest) -> Result<Reply<IntentDecision>, LlmError> {
        self.intents.lock().unwrap().push(r.clone());
        OfflineLlm::new().classify_intent(r).await
    }
    async fn resolve_documents(&self, r: &DocRequest) -> Result<Reply<DocResolution>, LlmError> {
        self.docs.lock().unwrap().push(r.clone());
        OfflineLlm::new().resolve_documents(r).await
    }
    async fn answer(&self, r: &AnswerRequest) -> Result<AnswerStream, LlmError> {
        self.answers.lock().unwrap().push(r.clone());
        OfflineLlm::new().answer(r).await
    }
}

/// An LLM whose intent decisions are scripted (in order); documents and answers offline.
pub struct ScriptedIntent(pub Mutex<Vec<IntentDecision>>);

#[async_trait]
impl Llm for ScriptedIntent {
    fn describe(&self) -> String {
        "scripted".into()
    }
    async fn classify_intent(&self, _: &IntentRequest) -> Result<Reply<IntentDecision>, LlmError> {
        let mut script = self.0.lock().unwrap();
        let value = script.remove(0);
        Ok(Reply {
            value,
            usage: palgraph_nodes::llm::Usage {
                model: "scripted".into(),
                prompt_tokens: 10,
                completion_tokens: 5,
                cost_usd: 0.001,
            },
        })
    }
    async fn resolve_documents(&self, r: &DocRequest) -> Result<Reply<DocResolution>, LlmError> {
        OfflineLlm::new().resolve_documents(r).await
    }
    async fn answer(&self, r: &AnswerRequest) -> Result<AnswerStream, LlmError> {
        OfflineLlm::new().answer(r).await
    }
}
