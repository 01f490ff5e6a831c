//! [`OpenAiModel`]: a [`ChatModel`] over any OpenAI-compatible chat-completions server,
//! streaming (`stream: true`), with tool calling, through async-openai (the client
//! PalAssist's LLM uses too): its server-sent-event reader decodes UTF-8 across network
//! chunks, so a character split between two chunks arrives whole. Requests and chunks are
//! JSON values (async-openai's bring-your-own-types calls): the wire format is written
//! here once, for any server that speaks it. Retries are the agent's (its node's retry
//! policy), not the client's: async-openai's own retry layer is replaced by its plain
//! transport.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::ReqwestService;
use async_openai::Client;
use async_trait::async_trait;
use futures_util::StreamExt;
use palgraph::{Message, MessageKind};
use serde_json::{json, Value};
use tracing::Instrument;

use crate::agent::tool_calls;
use crate::model::{ChatModel, ModelError, ModelRequest, ModelTurn, TokenSink, ToolCall};

const OPENAI_BASE: &str = "https://api.openai.com/v1";

/// A chat model on an OpenAI-compatible server.
#[derive(Clone)]
pub struct OpenAiModel {
    client: Client<OpenAIConfig>,
    base: String,
    model: String,
}

impl std::fmt::Debug for OpenAiModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("base", &self.base)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl OpenAiModel {
    /// `model` on the server at `base_url` (default OpenAI's), authenticated with `api_key`.
    ///
    /// # Errors
    /// [`ModelError::Config`] when the key cannot be sent as a header or the HTTP client
    /// cannot be built.
    pub fn new(base_url: Option<&str>, api_key: &str, model: &str) -> Result<Self, ModelError> {
        reqwest::header::HeaderValue::from_str(&format!("Bearer {api_key}"))
            .map_err(|_| ModelError::Config("the API key cannot be sent as a header".into()))?;
        // reqwest is built without a bundled crypto provider; use ring (a no-op when the
        // process already chose one).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(Duration::from_secs(120))
            .build()
            .map_err(|e| ModelError::Config(format!("cannot build the HTTP client: {e}")))?;
        let base = base_url
            .unwrap_or(OPENAI_BASE)
            .trim_end_matches('/')
            .to_string();
        let config = OpenAIConfig::new()
            .with_api_base(base.clone())
            .with_api_key(api_key)
            .with_org_id("")
            .with_project_id("");
        let transport = ReqwestService::new(http.clone());
        Ok(OpenAiModel {
            client: Client::build(http, config).with_http_service(transport),
            base,
            model: model.to_string(),
        })
    }
}

/// The model the environment names: with `OPENAI_API_KEY`, `OPENAI_MODEL` (default
/// `gpt-4o-mini`) on `OPENAI_BASE_URL` (default OpenAI's); without a key, `offline()`.
///
/// # Errors
/// [`ModelError::Config`] from [`OpenAiModel::new`].
pub fn from_env(
    offline: impl FnOnce() -> Arc<dyn ChatModel>,
) -> Result<Arc<dyn ChatModel>, ModelError> {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    match var("OPENAI_API_KEY") {
        None => Ok(offline()),
        Some(key) => {
            let model = var("OPENAI_MODEL").unwrap_or_else(|| "gpt-4o-mini".into());
            Ok(Arc::new(OpenAiModel::new(
                var("OPENAI_BASE_URL").as_deref(),
                &key,
                &model,
            )?))
        }
    }
}

/// The chat-completions message of `m` (`None` for a removal marker).
fn wire_message(m: &Message) -> Option<Value> {
    Some(match m.kind {
        MessageKind::Human => json!({"role": "user", "content": m.content}),
        MessageKind::System => json!({"role": "system", "content": m.content}),
        MessageKind::Ai => {
            let calls = tool_calls(m);
            let mut v = json!({"role": "assistant", "content": m.content});
            if !calls.is_empty() {
                v["tool_calls"] = calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function",
                               "function": {"name": c.name, "arguments": c.args.to_string()}})
                    })
                    .collect();
            }
            v
        }
        MessageKind::Tool => json!({
            "role": "tool",
            "content": m.content,
            "tool_call_id": m.metadata.get("tool_call_id").cloned().unwrap_or_default(),
        }),
        // A removal marker, or a kind this model's wire format has no role for.
        _ => return None,
    })
}

/// A tool call being streamed.
#[derive(Default)]
struct Partial {
    id: String,
    name: String,
    arguments: String,
}

/// Sorts an async-openai error into what the agent can act on: a 429 (but not
/// `insufficient_quota`), a 5xx, a broken connection or a timeout is worth retrying.
fn model_error(e: OpenAIError) -> ModelError {
    match e {
        OpenAIError::ApiError(resp) => {
            let status = resp.status_code.as_u16();
            let text = format!("{status}: {}", resp.api_error);
            let quota = resp.api_error.r#type.as_deref() == Some("insufficient_quota")
                || resp.api_error.code.as_deref() == Some("insufficient_quota");
            if (status == 429 && !quota) || status >= 500 {
                ModelError::Transient(text)
            } else {
                ModelError::Fatal(text)
            }
        }
        OpenAIError::Reqwest(e) => ModelError::Transient(e.to_string()),
        OpenAIError::StreamError(e) => ModelError::Transient(e.to_string()),
        OpenAIError::JSONDeserialize(e, body) => ModelError::Fatal(format!(
            "a stream event does not parse: {e} in {}",
            body.chars().take(200).collect::<String>()
        )),
        OpenAIError::InvalidArgument(m) => ModelError::Config(m),
        other => ModelError::Fatal(other.to_string()),
    }
}

impl OpenAiModel {
    /// Counts a call's tokens (`palgraph_llm_tokens_total{model, direction}`, through the
    /// [`metrics`] facade: a no-op unless a recorder is installed, as `palgraph serve` does).
    fn record_usage(&self, usage: &serde_json::Map<String, Value>) {
        let model = self.model.clone();
        for (field, direction) in [("prompt_tokens", "input"), ("completion_tokens", "output")] {
            if let Some(n) = usage.get(field).and_then(Value::as_u64) {
                metrics::counter!("palgraph_llm_tokens_total", "model" => model.clone(), "direction" => direction)
                    .increment(n);
            }
        }
    }
}

#[async_trait]
impl ChatModel for OpenAiModel {
    async fn complete(
        &self,
        request: ModelRequest<'_>,
        on_token: TokenSink<'_>,
    ) -> Result<ModelTurn, ModelError> {
        // The OpenTelemetry GenAI conventions: `chat {model}` with the models and tokens.
        let span = tracing::info_span!(
            "chat",
            otel.name = %format_args!("chat {}", self.model),
            otel.kind = "client",
            otel.status_code = tracing::field::Empty,
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = "openai",
            gen_ai.request.model = %self.model,
            gen_ai.response.model = tracing::field::Empty,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
        );
        self.stream_turn(request, on_token, &span)
            .instrument(span.clone())
            .await
            .inspect_err(|_| {
                span.record("otel.status_code", "error");
            })
    }
}

impl OpenAiModel {
    /// One streamed chat completion, its model and usage recorded on `span`.
    async fn stream_turn(
        &self,
        request: ModelRequest<'_>,
        on_token: TokenSink<'_>,
        span: &tracing::Span,
    ) -> Result<ModelTurn, ModelError> {
        let mut messages: Vec<Value> = request
            .system
            .map(|s| json!({"role": "system", "content": s}))
            .into_iter()
            .collect();
        messages.extend(request.messages.iter().filter_map(wire_message));
        let mut body = json!({
            "model": self.model,
            "messages": messages,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        let started = std::time::Instant::now();
        let mut usage = (0, 0);
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters}})
                })
                .collect();
        }
        let mut stream = self
            .client
            .chat()
            .create_stream_byot::<Value, Value>(body)
            .await
            .map_err(model_error)?;
        let mut content = String::new();
        let mut calls: BTreeMap<u64, Partial> = BTreeMap::new();
        // The model finished: a `finish_reason` arrived, or the usage chunk a server sends
        // once the model's last token is out.
        let mut finished = false;
        while let Some(event) = stream.next().await {
            let event = event.map_err(model_error)?;
            if let Some(error) = event.get("error") {
                return Err(ModelError::Transient(format!(
                    "the server ended the stream: {error}"
                )));
            }
            if let Some(model) = event["model"].as_str() {
                span.record("gen_ai.response.model", model);
            }
            if let Some(u) = event["usage"].as_object() {
                finished = true;
                self.record_usage(u);
                for (key, field) in [
                    ("prompt_tokens", "gen_ai.usage.input_tokens"),
                    ("completion_tokens", "gen_ai.usage.output_tokens"),
                ] {
                    // As i64: OpenTelemetry has no unsigned integers.
                    if let Some(n) = u.get(key).and_then(Value::as_i64) {
                        span.record(field, n);
                    }
                }
                usage = (
                    u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
                    u.get("completion_tokens")
                        .and_then(Value::as_u64)
                        .unwrap_or(0),
                );
            }
            let Some(choice) = event["choices"].get(0) else {
                continue;
            };
            if choice["finish_reason"].is_string() {
                finished = true;
            }
            let delta = &choice["delta"];
            if let Some(t) = delta["content"].as_str().filter(|t| !t.is_empty()) {
                on_token(t);
                content.push_str(t);
            }
            for c in delta["tool_calls"].as_array().into_iter().flatten() {
                let p = calls.entry(c["index"].as_u64().unwrap_or(0)).or_default();
                if let Some(id) = c["id"].as_str() {
                    p.id.push_str(id);
                }
                if let Some(n) = c["function"]["name"].as_str() {
                    p.name.push_str(n);
                }
                if let Some(a) = c["function"]["arguments"].as_str() {
                    p.arguments.push_str(a);
                }
            }
        }
        palgraph::observe::llm_call(palgraph::observe::LlmCall {
            model: self.model.clone(),
            input_tokens: usage.0,
            output_tokens: usage.1,
            cost_usd: 0.0,
            duration_ms: started.elapsed().as_secs_f64() * 1000.0,
        });
        if !finished {
            return Err(ModelError::Transient(
                "the stream ended before the model finished".into(),
            ));
        }
        let tool_calls = calls
            .into_values()
            .map(|p| ToolCall {
                args: serde_json::from_str(&p.arguments)
                    .unwrap_or_else(|_| Value::String(p.arguments.clone())),
                id: p.id,
                name: p.name,
            })
            .collect();
        Ok(ModelTurn {
            content,
            tool_calls,
        })
    }
}
