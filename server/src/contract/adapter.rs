//! What makes a graph a chat graph: how a chat request becomes its input, and how its
//! state and prompts become the chat contract's events. A graph registered with a
//! [`ChatAdapter`] is served on `/chat` with every guarantee of the contract (background
//! runs, reconnect, cancel, idempotency, 409); the rest is the server's.
//!
//! [`MessagesChat`] adapts any graph whose state keeps a `messages` list of the engine's
//! messages: a turn adds the user's message, the answer is the last AI message, a prompt is
//! the interrupt's payload.

use palgraph::InterruptInfo;
use serde_json::{json, Map, Value};

use super::models::{HistoryMessage, ResumeValue};

/// A chat turn as the adapter sees it: the message, and the request's other fields (the
/// graph's own, e.g. PalAssist's `tiptap_json`, `tagged_doc_ids`, `action`).
#[derive(Clone, Copy, Debug)]
pub struct TurnRequest<'a> {
    /// The user's message.
    pub message: &'a str,
    /// The request's fields beyond the contract's envelope.
    pub fields: &'a Map<String, Value>,
}

/// How a graph speaks the chat contract.
pub trait ChatAdapter: Send + Sync + 'static {
    /// The graph's input for a new turn (JSON of its state's update); an `Err` is a 422
    /// with that message.
    fn turn_input(&self, turn: TurnRequest<'_>) -> Result<Value, String>;

    /// The JSON schema of the graph's own request fields (merged into `POST /chat`'s
    /// request schema in the OpenAPI document).
    fn turn_schema(&self) -> schemars::Schema {
        schemars::json_schema!({"type": "object"})
    }

    /// The value a prompt's answer resumes the graph with (`type: "cancel"`: null).
    fn resume_value(&self, resume: &ResumeValue) -> Value {
        if resume.kind == "cancel" {
            Value::Null
        } else {
            resume.value.clone()
        }
    }

    /// Whether `resume` answers the prompt that waits (`pending`): an `Err` is a 422 with
    /// that message, and the prompt stays pending. By default the chat contract's rule
    /// ([`check_prompt_answer`]).
    fn check_resume(&self, resume: &ResumeValue, pending: &InterruptInfo) -> Result<(), String> {
        check_prompt_answer(resume, &pending.value)
    }

    /// The `response` event of a completed run, from its final state.
    fn response(&self, values: &Value) -> Value;

    /// The fields of the final state [`ChatAdapter::response`] reads, when it reads only
    /// these: then only they are read and built, not the whole state (whose conversation
    /// history grows with every turn). `None` (the default): the whole state.
    fn response_fields(&self) -> Option<&'static [&'static str]> {
        None
    }

    /// The `interrupt` event of a pending interrupt (the contract's prompt).
    fn prompt(&self, interrupt: &InterruptInfo) -> Value {
        let mut v = match &interrupt.value {
            Value::Object(m) => Value::Object(m.clone()),
            other => json!({"interrupt_type": "text_input", "message": other, "options": []}),
        };
        if let Some(m) = v.as_object_mut() {
            // A payload that is also an Agent Inbox `HumanInterrupt` (for agent-chat-ui)
            // keeps only the chat contract's fields here.
            if m.contains_key("action_request") && m.contains_key("interrupt_type") {
                for k in ["action_request", "config", "description"] {
                    m.remove(k);
                }
            }
            m.insert("type".into(), "interrupt".into());
            m.insert("interrupt_id".into(), interrupt.id.clone().into());
            m.entry("options").or_insert(json!([]));
        }
        v
    }

    /// The page's panels this graph's requests and prompts need (PalAssist: `documents`
    /// and `document_sets`, served by its own routes); none by default, so the page shows
    /// a plain conversation.
    fn panels(&self) -> Vec<String> {
        Vec::new()
    }

    /// A new message arrived while `interrupt` waited: record the abandoned prompt in the
    /// new turn's `input` (the default records nothing).
    fn abandon_prompt(&self, _input: &mut Value, _interrupt: &InterruptInfo) {}

    /// The conversation, oldest first, from the state.
    fn history(&self, values: &Value) -> Vec<HistoryMessage> {
        messages_history(values)
    }

    /// What a run that failed after streaming part of an answer leaves on its thread: the
    /// update applied to the state its turn started from (`base`), where the next turn
    /// starts. By default the turn's messages (those of the failed state `failed` that `base`
    /// lacks) and the partial answer as an AI message (see [`messages_failed_turn`]); `None`
    /// keeps nothing, so the thread reads as it did before the turn.
    fn failed_turn(&self, failed: &Value, base: &Value, answer: &PartialAnswer) -> Option<Value> {
        messages_failed_turn(failed, base, answer)
    }
}

/// The chat contract's rule for answering a prompt whose payload is `prompt`: `cancel`
/// answers any prompt; otherwise `type` must be the prompt's `interrupt_type`, a
/// `text_input` is answered with a string (or null), and a prompt with options with one of
/// their `id`s. A payload that is not a contract prompt (no `interrupt_type`) takes any
/// answer.
pub fn check_prompt_answer(resume: &ResumeValue, prompt: &Value) -> Result<(), String> {
    if resume.kind == "cancel" {
        return Ok(());
    }
    let Some(kind) = prompt.get("interrupt_type").and_then(Value::as_str) else {
        return Ok(());
    };
    if resume.kind != kind {
        return Err(format!(
            "the pending prompt is a `{kind}`: answer it with `type: \"{kind}\"` (or `type: \"cancel\"`), not `{}`",
            resume.kind
        ));
    }
    let ids: Vec<&str> = prompt
        .get("options")
        .and_then(Value::as_array)
        .map(|o| {
            o.iter()
                .filter_map(|o| o.get("id").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    match &resume.value {
        Value::String(v) if ids.is_empty() || ids.contains(&v.as_str()) => Ok(()),
        Value::Null if ids.is_empty() => Ok(()),
        other if ids.is_empty() => Err(format!(
            "a `{kind}` prompt is answered with a string, not {other}"
        )),
        other => Err(format!(
            "{other} is not an option of the pending `{kind}` prompt: answer with one of {}",
            ids.iter()
                .map(|i| format!("\"{i}\""))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The answer a run had streamed when it stopped.
#[derive(Clone, Debug)]
pub struct PartialAnswer {
    /// The message's id.
    pub message_id: String,
    /// The text streamed so far.
    pub text: String,
    /// The contract's metadata of a stopped answer: `interrupted: true`,
    /// `interrupted_reason`, `stream_run_id`, `client_turn_id`, `finished_reason`, `error`.
    pub metadata: Map<String, Value>,
}

/// [`ChatAdapter::failed_turn`] for a state that keeps `messages`: the messages the failed
/// turn added, then the partial answer (replacing a message of the same id).
pub fn messages_failed_turn(failed: &Value, base: &Value, answer: &PartialAnswer) -> Option<Value> {
    let ids = |v: &Value| -> Vec<String> {
        v.get("messages")
            .and_then(Value::as_array)
            .map(|ms| {
                ms.iter()
                    .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let before = ids(base);
    let mut messages: Vec<Value> = failed
        .get("messages")?
        .as_array()?
        .iter()
        .filter(|m| {
            m.get("id")
                .and_then(Value::as_str)
                .is_none_or(|id| !before.iter().any(|b| b == id) && id != answer.message_id)
        })
        .cloned()
        .collect();
    messages.push(json!({
        "type": "ai",
        "id": answer.message_id,
        "content": answer.text,
        "metadata": answer.metadata,
    }));
    Some(json!({ "messages": messages }))
}

/// The history of a state's `messages` (the engine's messages): users' and the assistant's,
/// without system and tool messages.
pub fn messages_history(values: &Value) -> Vec<HistoryMessage> {
    values
        .get("messages")
        .and_then(Value::as_array)
        .map(|msgs| {
            msgs.iter()
                .filter_map(|m| {
                    let role = match m.get("type").and_then(Value::as_str)? {
                        "human" => "user",
                        "ai" => "assistant",
                        _ => return None,
                    };
                    let text = |k: &str| {
                        m.get(k)
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string()
                    };
                    // Content blocks (attachments) show as their text here.
                    let content = match m.get("content") {
                        Some(Value::Array(blocks)) => palgraph::blocks_text(blocks),
                        _ => text("content"),
                    };
                    Some(HistoryMessage {
                        id: text("id"),
                        role: role.into(),
                        content,
                        metadata: m.get("metadata").cloned().unwrap_or(json!({})),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The chat contract for a graph whose state keeps `messages`.
#[derive(Clone, Copy, Debug, Default)]
pub struct MessagesChat;

impl ChatAdapter for MessagesChat {
    /// The user's message, and the request's other fields as the graph's own (checked
    /// against its state at admission: an unknown field is a 422).
    fn turn_input(&self, turn: TurnRequest<'_>) -> Result<Value, String> {
        let mut input = turn.fields.clone();
        input.insert(
            "messages".into(),
            json!([{"type": "human", "content": turn.message}]),
        );
        Ok(Value::Object(input))
    }

    fn response(&self, values: &Value) -> Value {
        let answer = values
            .get("messages")
            .and_then(Value::as_array)
            .and_then(|m| m.iter().rev().find(|m| m["type"] == "ai"))
            .and_then(|m| m.get("content"))
            .cloned()
            .unwrap_or_else(|| json!(""));
        json!({"type": "response", "response": answer, "citations": []})
    }
}
