//! The PalAssist test harness shared by `palassist.rs` and `palassist_prompts.rs`: the real
//! graph on a SQLite file (checkpoints and documents), the samples, and the offline LLM
//! wrapped in a call counter; and the checks on prompts and answers.

#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;

use palgraph::checkpoint::SqliteCheckpointer;
use palgraph::{CompiledGraph, MessageKind, Resume, RunConfig, RunInput, RunOutcome, RunStatus};
use palgraph_graphs::palassist::{self, turn_input, Action, AgentState, ChatTurn, PalAssistDeps};
use palgraph_nodes::llm::{CountingLlm, LlmCalls, OfflineLlm};
use palgraph_nodes::{seed_samples, DocumentStore, SqliteDocumentStore};
use serde_json::{json, Value};

pub(crate) const USER: &str = "alice";

pub(crate) struct Harness {
    pub(crate) graph: CompiledGraph<AgentState>,
    pub(crate) llm: Arc<CountingLlm>,
    pub(crate) docs: Arc<SqliteDocumentStore>,
    pub(crate) path: std::path::PathBuf,
}

impl Drop for Harness {
    fn drop(&mut self) {
        palgraph::testkit::backends::remove_sqlite_files(&self.path);
    }
}

pub(crate) async fn harness() -> Harness {
    let path = palgraph::testkit::backends::temp_db_path();
    let pool = palgraph::db::open_sqlite(&path).await.unwrap();
    let docs = Arc::new(SqliteDocumentStore::open(pool.clone()).await.unwrap());
    seed_samples(docs.as_ref(), USER).await.unwrap();
    let llm = Arc::new(CountingLlm::new(Arc::new(OfflineLlm::new())));
    let graph = palassist::graph(PalAssistDeps::new(llm.clone(), docs.clone()))
        .unwrap()
        .with_checkpointer(Arc::new(SqliteCheckpointer::new(pool)));
    Harness {
        graph,
        llm,
        docs,
        path,
    }
}

pub(crate) fn config(thread: &str) -> RunConfig {
    RunConfig::new(thread).context("user_id", USER)
}

impl Harness {
    pub(crate) async fn send(&self, thread: &str, turn: ChatTurn) -> RunOutcome<AgentState> {
        self.graph
            .invoke(config(thread), RunInput::Turn(turn_input(turn)))
            .await
            .unwrap()
    }

    pub(crate) async fn say(&self, thread: &str, message: &str) -> RunOutcome<AgentState> {
        self.send(
            thread,
            ChatTurn {
                message: message.into(),
                ..Default::default()
            },
        )
        .await
    }

    pub(crate) async fn resume(&self, thread: &str, value: Value) -> RunOutcome<AgentState> {
        self.graph
            .invoke(config(thread), RunInput::Resume(Resume::Value(value)))
            .await
            .unwrap()
    }

    /// (id, title) of the sample whose title starts with `prefix`.
    pub(crate) async fn doc(&self, prefix: &str) -> (String, String) {
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

    /// A turn mentioning `docs` in TipTap JSON (nested in a paragraph), after `text`.
    pub(crate) async fn mention(&self, text: &str, prefixes: &[&str]) -> ChatTurn {
        let mut nodes = vec![json!({"type": "text", "text": text})];
        let mut message = text.to_string();
        for p in prefixes {
            let (id, title) = self.doc(p).await;
            nodes.push(json!({"type": "mention", "attrs": {"id": id, "label": title}}));
            message.push_str(&format!(" @{title}"));
        }
        ChatTurn {
            message,
            tiptap_json: Some(
                json!({"type": "doc", "content": [{"type": "paragraph", "content": nodes}]}),
            ),
            ..Default::default()
        }
    }

    pub(crate) fn calls(&self) -> LlmCalls {
        self.llm.calls()
    }
}

/// The single pending prompt's payload.
pub(crate) fn prompt(out: &RunOutcome<AgentState>) -> &Value {
    let pending = out.interrupts();
    assert_eq!(
        pending.len(),
        1,
        "expected one prompt, got {:?}",
        out.status
    );
    &pending[0].value
}

/// The ids of a prompt's options (what a button sends back).
pub(crate) fn option_values(p: &Value) -> Vec<&str> {
    p["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect()
}

pub(crate) fn assert_answered(out: &RunOutcome<AgentState>, action: Action) {
    assert_eq!(out.status, RunStatus::Completed, "{:?}", out.status);
    assert_eq!(out.state.action, Some(action));
    assert!(!out.state.cancelled);
    let last = out.state.messages.last().unwrap();
    assert_eq!(last.kind, MessageKind::Ai);
    assert_eq!(last.content, out.state.response);
    assert_eq!(last.metadata["action"], action.as_str());
    assert!(
        !out.state.citations.is_empty(),
        "no citations: {}",
        out.state.response
    );
    assert_eq!(last.metadata["citations"], json!(out.state.citations));
}

pub(crate) fn prompt_records(state: &AgentState) -> Vec<&palgraph::Message> {
    state
        .messages
        .iter()
        .filter(|m| m.metadata.get("kind") == Some(&json!("palassist_prompt")))
        .collect()
}
