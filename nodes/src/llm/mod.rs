//! The LLM PalAssist's nodes call: one trait, [`Llm`], with three jobs (classify the
//! intent, resolve document references, answer from passages), and its implementations:
//!
//! - [`OpenAiLlm`]: any OpenAI-compatible chat-completions server through async-openai
//!   (`OPENAI_API_KEY`, `OPENAI_BASE_URL`, a model per task), with structured outputs
//!   from schemars schemas, streaming, retries on 429 and timeouts, token usage and cost;
//! - [`OfflineLlm`]: a deterministic resolver (keywords, references and strsim) and
//!   extractive answers, so PalAssist runs and its tests pass with no network;
//! - [`CountingLlm`]: wraps another and counts its calls.
//!
//! [`from_env`] picks the OpenAI client when `OPENAI_API_KEY` is set, the offline one
//! otherwise. Nodes call every method inside the engine's durable `ctx.step`, so a resume
//! never repeats (nor pays for) a call.

mod actions;
mod config;
mod counting;
mod offline;
mod openai;
mod pricing;
mod prompts;
mod schema;
mod span;

use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use futures_util::Stream;
use palgraph::metric::{self, KeyCache};
use palgraph::{ErrorKind, NodeError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::passages::Passage;
use crate::state::{Action, AnsweredBy, DocRef};
use crate::versions::{Edition, Replacement};

pub(crate) use actions::requested_actions;
pub use config::{default_retry, OpenAiConfig, TaskModels, DEFAULT_MODEL};
pub use counting::{CountingLlm, LlmCalls};
pub use offline::{OfflineLlm, OFFLINE_MODEL};
pub use openai::OpenAiLlm;
pub use pricing::Prices;
pub use schema::strict_schema;

/// What an LLM call is for (each task may use its own model).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LlmTask {
    /// Classifying the intent.
    Intent,
    /// Resolving document references.
    DocResolution,
    /// Summarizing.
    Summarize,
    /// Answering a question.
    Inquire,
    /// Comparing.
    Compare,
    /// Auditing.
    Audit,
}

impl LlmTask {
    /// The task that answers `action`.
    pub fn for_action(action: Action) -> LlmTask {
        match action {
            Action::Summarize => LlmTask::Summarize,
            Action::Inquire => LlmTask::Inquire,
            Action::Compare => LlmTask::Compare,
            Action::Audit => LlmTask::Audit,
        }
    }
}

/// Tokens models used, by model and direction (a counter).
pub const LLM_TOKENS: &str = "palgraph_llm_tokens_total";
/// What each model call cost in USD, by model (a histogram: `_sum` is the total).
pub const LLM_CALL_COST: &str = "palgraph_llm_call_cost_usd";

/// Tokens a call used and what they cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// The model that answered (`offline` for the offline resolver).
    pub model: String,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Cost in USD (0 when the model's price is unknown, and offline).
    pub cost_usd: f64,
}

impl Usage {
    /// Prompt plus completion tokens.
    pub fn total_tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }

    /// Counts one model call's usage in the process's metrics (the [`metrics`] facade; a
    /// no-op unless a recorder is installed, as `palgraph serve` does):
    /// `palgraph_llm_tokens_total{model, direction="input"|"output"}` and
    /// `palgraph_llm_call_cost_usd{model}`, a histogram of each call's cost whose `_sum` is
    /// the total spent.
    pub fn record(&self) {
        // The keys are built once per model, not at every call.
        static TOKENS: KeyCache = KeyCache::new(LLM_TOKENS);
        static COST: KeyCache = KeyCache::new(LLM_CALL_COST);
        let model = self.model.as_str();
        metric::counter(
            &TOKENS.key(&[("model", model), ("direction", "input")]),
            self.prompt_tokens,
        );
        metric::counter(
            &TOKENS.key(&[("model", model), ("direction", "output")]),
            self.completion_tokens,
        );
        metric::histogram(&COST.key(&[("model", model)]), self.cost_usd);
    }

    /// Reports the call this usage is of to the engine ([`palgraph::observe`]): recorded
    /// on the task running it, with the time since `started`; nothing outside a node.
    pub(crate) fn observe(&self, started: std::time::Instant) {
        palgraph::observe::llm_call(palgraph::observe::LlmCall {
            model: self.model.clone(),
            input_tokens: self.prompt_tokens,
            output_tokens: self.completion_tokens,
            cost_usd: self.cost_usd,
            duration_ms: started.elapsed().as_secs_f64() * 1000.0,
        });
    }

    /// Adds another call's usage to this one.
    pub fn add(&mut self, other: &Usage) {
        if self.model.is_empty() {
            self.model.clone_from(&other.model);
        }
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(other.completion_tokens);
        self.cost_usd += other.cost_usd;
    }
}

/// A structured answer and what it cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reply<T> {
    /// The answer.
    pub value: T,
    /// Its usage.
    pub usage: Usage,
}

/// Who wrote a line of the conversation given to the LLM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChatRole {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// A line of recent conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatLine {
    /// Who wrote it.
    pub role: ChatRole,
    /// What was written.
    pub content: String,
}

/// Classify a message's intent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntentRequest {
    /// The user's message.
    pub message: String,
    /// Recent conversation (empty on the first pass; the last 5 messages on the second).
    pub history: Vec<ChatLine>,
}

/// The intent classifier's structured output (its JSON schema is generated by schemars).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IntentDecision {
    /// The action to run.
    pub action: Action,
    /// Every action the message asks for, in the order it asks.
    pub requested_actions: Vec<Action>,
    /// How sure the classifier is (0..1).
    pub confidence: f64,
    /// The answer needs current information from the web.
    pub enable_web_search: bool,
    /// The message asks for more than one of summarize, compare, audit.
    pub multi_action_detected: bool,
    /// Why, in a sentence.
    pub reasoning: String,
}

/// Resolve the documents a message refers to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DocRequest {
    /// The user's message (mentions removed).
    pub message: String,
    /// Documents already discussed in the conversation.
    pub registry: Vec<DocRef>,
    /// Recent conversation (empty when a registry title appears in the message).
    pub history: Vec<ChatLine>,
}

/// The doc resolver's structured output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DocResolution {
    /// Registry documents the message refers to.
    pub doc_ids: Vec<String>,
    /// How sure the resolver is of them (0..1; 0 when the message refers to none).
    pub confidence: f64,
    /// Names of documents the message refers to that are not in the registry.
    pub unresolved_names: Vec<String>,
    /// Why, in a sentence.
    pub reasoning: String,
}

/// Answer a request from passages of the resolved documents.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnswerRequest {
    /// What to do.
    pub action: Action,
    /// The user's message (mentions removed).
    pub question: String,
    /// The documents in play, in order.
    pub documents: Vec<DocRef>,
    /// Versions among the user's documents that concern these: a newer document that
    /// replaces an older one (answers prefer the newer and say so).
    pub versions: Vec<Replacement>,
    /// Every document whose passages are given (those in play, and other versions of
    /// them), with its version and whether it is in force.
    #[serde(default)]
    pub editions: Vec<Edition>,
    /// Their passages the answer may use, numbered for citation (`[n]`); for inquire and
    /// audit, ranked best first. A question's passages include the matching passages of
    /// the other versions of the documents in play, so an answer can say what an older
    /// version said.
    pub passages: Vec<Passage>,
    /// How well the passages match the request (0..1), for the answer's confidence.
    pub retrieval_confidence: f64,
    /// The text to audit (audit only).
    pub audit_text: Option<String>,
    /// The web query, when web search is on.
    pub web_search_query: Option<String>,
    /// Recent conversation.
    pub history: Vec<ChatLine>,
}

/// A piece of a streamed answer.
#[derive(Clone, Debug, PartialEq)]
pub enum AnswerChunk {
    /// More text.
    Text(String),
    /// The answer's usage (usually last).
    Usage(Usage),
    /// The model finished writing, and why (the OpenAI `finish_reason`: `stop`, `length`,
    /// `content_filter`, ...). A stream that ends without it ended normally only when its
    /// LLM does not report one (the offline model).
    Finished(String),
}

/// A streamed answer.
pub type AnswerStream = Pin<Box<dyn Stream<Item = Result<AnswerChunk, LlmError>> + Send>>;

/// Why an LLM call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// HTTP 429 on every attempt.
    #[error(
        "the LLM service is rate limiting requests (HTTP 429) after {attempts} attempts: {message}"
    )]
    RateLimited {
        /// Attempts made.
        attempts: u32,
        /// The service's message.
        message: String,
    },
    /// No answer in time on every attempt.
    #[error("the LLM service did not answer in time ({attempts} attempts)")]
    Timeout {
        /// Attempts made.
        attempts: u32,
    },
    /// The service answered with an error.
    #[error("the LLM service failed with HTTP {status}: {message}")]
    Api {
        /// The HTTP status.
        status: u16,
        /// The service's message.
        message: String,
    },
    /// The service could not be reached, or the connection broke.
    #[error("cannot reach the LLM service: {0}")]
    Transport(String),
    /// A streamed answer ended before the model finished (no `finish_reason`, no usage
    /// chunk): the connection broke mid-answer. The text so far is incomplete.
    #[error("the LLM's answer stream ended before the model finished, after {chars} characters (no finish_reason and no final usage chunk): the connection broke mid-answer")]
    Truncated {
        /// How many characters of text arrived.
        chars: usize,
    },
    /// The service sent an error inside a stream that had started (`data: {"error":
    /// {...}}`).
    #[error("the LLM service failed mid-answer: {message}{}", kind.as_deref().map(|k| format!(" ({k})")).unwrap_or_default())]
    Upstream {
        /// The service's message.
        message: String,
        /// The error's `type` (or `code`), when it gave one.
        kind: Option<String>,
    },
    /// The answer did not fit the expected structure.
    #[error("the LLM's answer does not fit the expected format: {0}")]
    BadOutput(String),
    /// The client is misconfigured.
    #[error("LLM configuration: {0}")]
    Config(String),
}

impl LlmError {
    /// Whether trying again later may succeed (rate limits, timeouts, 5xx, broken
    /// connections).
    pub fn is_transient(&self) -> bool {
        match self {
            LlmError::RateLimited { .. }
            | LlmError::Timeout { .. }
            | LlmError::Transport(_)
            | LlmError::Truncated { .. } => true,
            LlmError::Api { status, .. } => *status >= 500,
            LlmError::Upstream { kind, .. } => kind.as_deref().is_some_and(|k| {
                matches!(
                    k,
                    "server_error" | "overloaded_error" | "rate_limit_exceeded" | "timeout"
                ) || k.contains("overloaded")
                    || k.contains("unavailable")
            }),
            LlmError::BadOutput(_) | LlmError::Config(_) => false,
        }
    }

    /// The node error for this failure: retryable when transient, fatal otherwise.
    pub fn into_node_error(self) -> NodeError {
        let kind = if self.is_transient() {
            ErrorKind::Retryable
        } else {
            ErrorKind::Fatal
        };
        NodeError::from_error(kind, self)
    }
}

/// The LLM PalAssist's nodes use.
#[async_trait]
pub trait Llm: Send + Sync {
    /// What it is, for logs ("offline", "openai gpt-4o-mini at https://...").
    fn describe(&self) -> String;

    /// Classifies a message's intent.
    ///
    /// # Errors
    /// An [`LlmError`].
    async fn classify_intent(
        &self,
        request: &IntentRequest,
    ) -> Result<Reply<IntentDecision>, LlmError>;

    /// Resolves the registry documents a message refers to, and names it gives that are
    /// not in the registry.
    ///
    /// # Errors
    /// An [`LlmError`].
    async fn resolve_documents(
        &self,
        request: &DocRequest,
    ) -> Result<Reply<DocResolution>, LlmError>;

    /// Answers from passages, as a stream of text (with `[n]` citation markers) and usage.
    ///
    /// # Errors
    /// An [`LlmError`] before the stream starts; later failures arrive in the stream.
    async fn answer(&self, request: &AnswerRequest) -> Result<AnswerStream, LlmError>;

    /// Whether a call costs nothing and the same request always gets the same reply (the
    /// offline model): its results are then kept as memo steps
    /// ([`palgraph::NodeContext::memo`]), stored only when a node suspends, rather than
    /// recorded before each call returns (a call that is repeated after a crash costs
    /// nothing and says the same).
    fn is_local(&self) -> bool {
        false
    }

    /// Whether an answer with a web query really searches the web (a web-search model is
    /// configured). When it does not, PalAssist shows no web query and no "Searching the
    /// web" line: the answer relies on the documents and says so.
    fn searches_web(&self) -> bool {
        false
    }

    /// What answers `request`: a language model by name (the default: [`Llm::describe`]),
    /// or the offline extractive model.
    fn answered_by(&self, request: &AnswerRequest) -> AnsweredBy {
        let _ = request;
        AnsweredBy::model(self.describe())
    }
}

/// The LLM the environment configures: [`OpenAiLlm`] when `OPENAI_API_KEY` is set (see
/// [`OpenAiConfig::from_lookup`] for the other variables), [`OfflineLlm`] otherwise.
///
/// # Errors
/// When the OpenAI client cannot be built from the configuration.
pub fn from_env() -> Result<Arc<dyn Llm>, LlmError> {
    from_lookup(|key| std::env::var(key).ok())
}

/// Like [`from_env`], reading variables through `lookup`.
///
/// # Errors
/// When the OpenAI client cannot be built from the configuration.
pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Arc<dyn Llm>, LlmError> {
    let pace = lookup("PALASSIST_OFFLINE_PACE_MS")
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    match OpenAiConfig::from_lookup(lookup) {
        Some(config) => Ok(Arc::new(OpenAiLlm::new(config)?)),
        None => Ok(Arc::new(
            OfflineLlm::new().with_pace(std::time::Duration::from_millis(pace)),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_key_means_offline() {
        let llm = from_lookup(|_| None).unwrap();
        assert_eq!(llm.describe(), "offline");
        let llm = from_lookup(|k| (k == "OPENAI_API_KEY").then(|| "  ".to_string())).unwrap();
        assert_eq!(llm.describe(), "offline");
    }

    #[test]
    fn a_key_means_openai_with_the_base_url() {
        let llm = from_lookup(|k| match k {
            "OPENAI_API_KEY" => Some("sk-test".into()),
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:9/v1".into()),
            _ => None,
        })
        .unwrap();
        let d = llm.describe();
        assert!(d.starts_with("openai"), "{d}");
        assert!(d.contains("127.0.0.1:9"), "{d}");
    }

    #[test]
    fn a_truncated_stream_is_a_retryable_transport_failure() {
        let e = LlmError::Truncated { chars: 12 };
        assert!(e.is_transient());
        assert!(e.to_string().contains("ended before the model finished"));
        assert!(e.into_node_error().is_retryable());
    }

    #[test]
    fn transient_errors_become_retryable_node_errors() {
        let e = LlmError::RateLimited {
            attempts: 3,
            message: "slow down".into(),
        };
        assert!(e.into_node_error().is_retryable());
        let e = LlmError::Api {
            status: 400,
            message: "bad".into(),
        };
        assert!(!e.into_node_error().is_retryable());
    }
}
