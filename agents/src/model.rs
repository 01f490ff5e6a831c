//! The chat model an agent calls: [`ChatModel`], what it is asked ([`ModelRequest`]) and
//! what it answers ([`ModelTurn`]), and [`ScriptedModel`], an offline model for tests and
//! for running without an API key.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use palgraph::Message;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool the model may call: its name, what it does, and the JSON schema of its arguments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: String,
    /// What it does (the model reads this).
    pub description: String,
    /// The JSON schema of its arguments (an object).
    pub parameters: Value,
}

/// One tool call the model asked for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id (a tool message answers it by this id).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// Its arguments.
    pub args: Value,
}

/// What the model is asked: the conversation (the engine's messages; an AI message's tool
/// calls are in its `metadata.tool_calls`, a tool message names its call in
/// `metadata.tool_call_id`) and the tools it may call.
#[derive(Clone, Copy, Debug)]
pub struct ModelRequest<'a> {
    /// The system prompt, if any.
    pub system: Option<&'a str>,
    /// The conversation, oldest first.
    pub messages: &'a [Message],
    /// The tools.
    pub tools: &'a [ToolSpec],
}

/// What the model answered: text, tool calls, or both.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelTurn {
    /// The text.
    pub content: String,
    /// The tool calls (run in parallel before the model is asked again).
    pub tool_calls: Vec<ToolCall>,
}

impl ModelTurn {
    /// A final answer.
    pub fn text(content: impl Into<String>) -> Self {
        ModelTurn {
            content: content.into(),
            tool_calls: Vec::new(),
        }
    }

    /// A turn calling `name` with `args` (more calls with [`ModelTurn::and_call`]).
    pub fn call(name: impl Into<String>, args: Value) -> Self {
        ModelTurn::default().and_call(name, args)
    }

    /// The same turn with one more tool call (ids `call_0`, `call_1`, ...).
    #[must_use]
    pub fn and_call(mut self, name: impl Into<String>, args: Value) -> Self {
        let id = format!("call_{}", self.tool_calls.len());
        self.tool_calls.push(ToolCall {
            id,
            name: name.into(),
            args,
        });
        self
    }
}

/// Why a model call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// A failure worth retrying (a timeout, a 429 or 5xx, a broken connection).
    #[error("the model is unavailable: {0}")]
    Transient(String),
    /// A failure a retry will not fix (a bad request, a refused key, an answer that does
    /// not parse).
    #[error("the model call failed: {0}")]
    Fatal(String),
    /// The settings are wrong (e.g. a key a header cannot carry).
    #[error("the model is misconfigured: {0}")]
    Config(String),
}

/// Receives the answer's text as it streams.
pub type TokenSink<'a> = &'a (dyn Fn(&str) + Send + Sync);

/// A chat model with tool calling.
#[async_trait]
pub trait ChatModel: Send + Sync + 'static {
    /// Answers `request`, passing the answer's text to `on_token` as it is produced.
    ///
    /// # Errors
    /// [`ModelError`]: transient ones are retried by the agent's retry policy.
    async fn complete(
        &self,
        request: ModelRequest<'_>,
        on_token: TokenSink<'_>,
    ) -> Result<ModelTurn, ModelError>;
}

type Script = dyn Fn(&ModelRequest<'_>) -> Result<ModelTurn, ModelError> + Send + Sync;

/// An offline model: its answers come from a function of the request (or a fixed list,
/// one per call), and it streams their text word by word. What agents run on without an
/// API key, and what their tests run on.
#[derive(Clone)]
pub struct ScriptedModel {
    script: Arc<Script>,
    calls: Arc<AtomicUsize>,
}

impl std::fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("calls", &self.calls())
            .finish_non_exhaustive()
    }
}

impl ScriptedModel {
    /// A model answering with `script(request)`.
    pub fn from_fn(
        script: impl Fn(&ModelRequest<'_>) -> Result<ModelTurn, ModelError> + Send + Sync + 'static,
    ) -> Self {
        ScriptedModel {
            script: Arc::new(script),
            calls: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// A model answering the `n`-th call with `turns[n]` (the last one once they run out).
    pub fn turns(turns: Vec<ModelTurn>) -> Self {
        let next = AtomicUsize::new(0);
        Self::from_fn(move |_| {
            let n = next.fetch_add(1, Ordering::SeqCst);
            turns
                .get(n)
                .or_else(|| turns.last())
                .cloned()
                .ok_or_else(|| ModelError::Fatal("the script has no turns".into()))
        })
    }

    /// How many times it was called.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl ChatModel for ScriptedModel {
    async fn complete(
        &self,
        request: ModelRequest<'_>,
        on_token: TokenSink<'_>,
    ) -> Result<ModelTurn, ModelError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        // Reported to the engine like any model call (free, and as fast as a function).
        palgraph::observe::llm_call(palgraph::observe::LlmCall {
            model: "scripted".into(),
            ..Default::default()
        });
        let turn = (self.script)(&request)?;
        for (i, word) in turn.content.split(' ').enumerate() {
            if i == 0 {
                on_token(word);
            } else {
                on_token(&format!(" {word}"));
            }
        }
        Ok(turn)
    }
}

/// The text of the last human message of `messages` (what a scripted model usually reads).
pub fn last_human(messages: &[Message]) -> &str {
    messages
        .iter()
        .rev()
        .find(|m| m.kind == palgraph::MessageKind::Human)
        .map_or("", |m| m.content.as_str())
}
