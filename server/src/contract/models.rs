//! The chat contract's request and response bodies.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::store::MultitaskStrategy;

/// What a client may do when it disconnects from a run's stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnDisconnect {
    /// The run goes on (the default): results are kept, the stream can be joined again.
    #[default]
    Continue,
    /// The run is cancelled (reason `disconnect`).
    Cancel,
}

/// `POST /chat`: the contract's envelope; the chat graph's own fields (PalAssist's
/// `tiptap_json`, `tagged_doc_ids`, `tagged_set_ids`, `action`, `enable_web_search`) are
/// read by its adapter.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ChatRequest {
    /// The user's message (plain text).
    pub message: String,
    /// The conversation (a UUID); a new one when absent.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The chat graph (a graph or assistant id, see `GET /chat/graphs`) of a new thread;
    /// the default chat graph when absent. On an existing thread it must name the thread's
    /// graph (409 `graph_mismatch` otherwise): a thread keeps the graph it started with.
    #[serde(default)]
    pub graph_id: Option<String>,
    /// A client turn id: a retried POST with the same id returns the same run.
    #[serde(default)]
    pub client_turn_id: Option<String>,
    /// What to do when the thread is busy (default: reject with 409).
    #[serde(default)]
    pub multitask_strategy: Option<MultitaskStrategy>,
    /// What a disconnect does to the run (default: continue).
    #[serde(default)]
    pub on_disconnect: Option<OnDisconnect>,
    /// The chat graph's own fields.
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

/// A resume value.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ResumeValue {
    /// `action_choice`, `doc_choice`, `text_input`, or `cancel`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The chosen value (an action, a document id, "all", free text); ignored for cancel.
    #[serde(default)]
    pub value: Value,
}

/// `POST /chat/resume`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ResumeRequest {
    /// The conversation.
    pub thread_id: String,
    /// The answer.
    pub resume_value: ResumeValue,
    /// What a disconnect does to the run (default: continue).
    #[serde(default)]
    pub on_disconnect: Option<OnDisconnect>,
}

/// One message of `GET /chat/history`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct HistoryMessage {
    /// Its id.
    pub id: String,
    /// `user` or `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
    /// Citations, prompt records, `interrupted`, ...
    pub metadata: Value,
}

/// `GET /chat/history/{thread_id}`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct History {
    /// The conversation.
    pub thread_id: String,
    /// Its messages, oldest first (no system messages).
    pub messages: Vec<HistoryMessage>,
    /// The prompt waiting for an answer, as the `interrupt` event shows it.
    pub pending_interrupt: Option<Value>,
}

/// `POST /threads/{thread_id}/cancel`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Cancelled {
    /// The thread.
    pub thread_id: String,
    /// The runs asked to stop.
    pub cancelled: Vec<String>,
    /// Whether they have all stopped (`false`, with status 202: still stopping after the
    /// endpoint's wait).
    pub stopped: bool,
}

/// `GET /chat/graphs`: the graphs served on `/chat`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ChatGraphs {
    /// Every chat graph, the default first.
    pub graphs: Vec<ChatGraph>,
}

/// One graph served on `/chat`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ChatGraph {
    /// The graph's id (`graph_id` of `POST /chat`).
    pub graph_id: String,
    /// Its assistant's id on the LangGraph API.
    pub assistant_id: String,
    /// What it does.
    pub description: String,
    /// Whether a new thread without `graph_id` goes to it.
    pub default: bool,
    /// The page's panels its requests and prompts need (PalAssist: `documents`,
    /// `document_sets`); a page shows no others.
    pub panels: Vec<String>,
}
