//! An OpenAI-compatible chat-completions server for tests, speaking the real HTTP wire
//! format: `POST /v1/chat/completions` answers, in the order scripted, with a
//! `chat.completion` JSON body, a `text/event-stream` of `chat.completion.chunk`s ending in
//! a usage chunk and `data: [DONE]`, a stream cut before the model finished (no
//! `finish_reason`, no `[DONE]`: the body ends, or the connection breaks), a stream whose
//! server sends no `finish_reason` at all, an error event inside a stream, an error status
//! with OpenAI's error body (429, 500, 400), or silence. It records every request (headers and JSON body). It binds
//! 127.0.0.1:0. Instead of a script, a responder may compute each answer from the request
//! (a stand-in model that answers any number of calls).

#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use futures_util::stream::{self, StreamExt};
use serde_json::{json, Value};

/// One scripted answer.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A `chat.completion` whose message content is `content`.
    Completion {
        content: String,
        prompt_tokens: u32,
        completion_tokens: u32,
    },
    /// A stream of content deltas, then (after `stall`, if any, forever) a usage chunk.
    Stream {
        deltas: Vec<String>,
        prompt_tokens: u32,
        completion_tokens: u32,
        stall_after: Option<usize>,
    },
    /// The start of a stream of content deltas, then the stream stops before the model
    /// finished: no finish_reason, no usage, no `data: [DONE]`. The body ends cleanly, or,
    /// with `abort`, the connection breaks mid-body.
    Truncated { deltas: Vec<String>, abort: bool },
    /// A stream of content deltas, then the usage chunk and `data: [DONE]` with no
    /// `finish_reason` anywhere (as some OpenAI-compatible servers send).
    StreamWithoutFinishReason { deltas: Vec<String> },
    /// A stream of content deltas, then an error event (`data: {"error": {...}}`, as the
    /// upstream sends when it fails mid-answer), and the body ends.
    StreamError { deltas: Vec<String>, error: Value },
    /// An error status with OpenAI's error body.
    Error { status: u16, message: String },
    /// No answer for this long.
    Silence(Duration),
    /// A 429 that says the account is out of quota.
    OutOfQuota,
}

/// A request the server got.
#[derive(Clone, Debug)]
pub struct Received {
    pub authorization: Option<String>,
    pub body: Value,
}

/// Computes a reply from a request's JSON body.
pub type Responder = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<Reply>>,
    received: Mutex<Vec<Received>>,
    responder: Option<Responder>,
}

/// A running fake server.
pub struct FakeOpenAi {
    /// `http://127.0.0.1:<port>/v1`
    pub base_url: String,
    script: Arc<Script>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeOpenAi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeOpenAi {
    /// Starts a server that answers with `replies` in order.
    pub async fn start(replies: Vec<Reply>) -> Self {
        Self::serve(Script {
            replies: Mutex::new(replies.into()),
            ..Script::default()
        })
        .await
    }

    /// Starts a server that answers every request with what `responder` computes from it.
    pub async fn responding(responder: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> Self {
        Self::serve(Script {
            responder: Some(Arc::new(responder)),
            ..Script::default()
        })
        .await
    }

    /// A stand-in for PalAssist's model: every structured call decides to inquire (no
    /// documents named; 100 prompt and 10 completion tokens), every answer streams
    /// `deltas` (300 and 12 tokens).
    pub async fn inquiring(deltas: &[&str]) -> Self {
        let deltas: Vec<String> = deltas.iter().map(|d| d.to_string()).collect();
        Self::responding(move |body| {
            if body["stream"] == true {
                return Reply::Stream {
                    deltas: deltas.clone(),
                    prompt_tokens: 300,
                    completion_tokens: 12,
                    stall_after: None,
                };
            }
            let content = match body["response_format"]["json_schema"]["name"].as_str() {
                Some("intent_decision") => json!({
                    "action": "inquire", "requested_actions": ["inquire"], "confidence": 0.95,
                    "enable_web_search": false, "multi_action_detected": false,
                    "reasoning": "a question"
                }),
                _ => json!({
                    "doc_ids": [], "confidence": 0.0, "unresolved_names": [], "reasoning": "none"
                }),
            };
            Reply::Completion {
                content: content.to_string(),
                prompt_tokens: 100,
                completion_tokens: 10,
            }
        })
        .await
    }

    async fn serve(script: Script) -> Self {
        let script = Arc::new(script);
        let app = Router::new()
            .route("/v1/chat/completions", post(completions))
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeOpenAi {
            base_url: format!("http://{addr}/v1"),
            script,
            task,
        }
    }

    /// The requests so far.
    pub fn received(&self) -> Vec<Received> {
        self.script.received.lock().unwrap().clone()
    }
}

const CREATED: u64 = 1_700_000_000;

fn chunk(model: &str, delta: Value, finish: Value, usage: Value, choices: bool) -> String {
    let choices = if choices {
        json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}])
    } else {
        json!([])
    };
    let body = json!({
        "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": CREATED,
        "model": model, "system_fingerprint": "fp_fake", "choices": choices, "usage": usage
    });
    format!("data: {body}\n\n")
}

async fn completions(
    State(script): State<Arc<Script>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    script.received.lock().unwrap().push(Received {
        authorization: headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        body: body.clone(),
    });
    let model = body["model"].as_str().unwrap_or("unknown").to_string();
    let scripted = script.replies.lock().unwrap().pop_front();
    let reply = scripted.or_else(|| script.responder.as_ref().map(|f| f(&body)));
    match reply {
        None => (StatusCode::INTERNAL_SERVER_ERROR, "script exhausted").into_response(),
        Some(Reply::Error { status, message }) => {
            let kind = if status == 429 {
                "requests"
            } else {
                "server_error"
            };
            let code = if status == 429 {
                json!("rate_limit_exceeded")
            } else {
                Value::Null
            };
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let body =
                json!({"error": {"message": message, "type": kind, "param": null, "code": code}});
            (
                status,
                [("content-type", "application/json")],
                body.to_string(),
            )
                .into_response()
        }
        Some(Reply::OutOfQuota) => {
            let body = json!({"error": {"message": "You exceeded your current quota.", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}});
            (
                StatusCode::TOO_MANY_REQUESTS,
                [("content-type", "application/json")],
                body.to_string(),
            )
                .into_response()
        }
        Some(Reply::Silence(d)) => {
            tokio::time::sleep(d).await;
            (StatusCode::GATEWAY_TIMEOUT, "late").into_response()
        }
        Some(Reply::Completion {
            content,
            prompt_tokens,
            completion_tokens,
        }) => {
            let body = json!({
                "id": "chatcmpl-fake", "object": "chat.completion", "created": CREATED,
                "model": model, "system_fingerprint": "fp_fake",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": null, "annotations": []}, "logprobs": null, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens},
                "service_tier": "default"
            });
            (
                StatusCode::OK,
                [("content-type", "application/json")],
                body.to_string(),
            )
                .into_response()
        }
        Some(Reply::StreamWithoutFinishReason { deltas }) => {
            let mut events = opening(&model, &deltas);
            events.push(chunk(
                &model,
                Value::Null,
                Value::Null,
                json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}),
                false,
            ));
            events.push("data: [DONE]\n\n".to_string());
            event_stream(events)
        }
        Some(Reply::StreamError { deltas, error }) => {
            let mut events = opening(&model, &deltas);
            events.push(format!("data: {}\n\n", json!({ "error": error })));
            event_stream(events)
        }
        Some(Reply::Truncated { deltas, abort }) => {
            let mut events = vec![chunk(
                &model,
                json!({"role": "assistant", "content": "", "refusal": null}),
                Value::Null,
                Value::Null,
                true,
            )];
            for d in &deltas {
                events.push(chunk(
                    &model,
                    json!({"content": d}),
                    Value::Null,
                    Value::Null,
                    true,
                ));
            }
            let body = stream::iter(events)
                .then(|e| async move {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    Ok::<_, std::io::Error>(Bytes::from(e))
                })
                .chain(stream::iter(abort.then(|| {
                    Err(std::io::Error::new(
                        std::io::ErrorKind::ConnectionReset,
                        "the upstream connection broke",
                    ))
                })));
            Response::builder()
                .status(StatusCode::OK)
                .header("content-type", "text/event-stream")
                .header("cache-control", "no-cache")
                .body(Body::from_stream(body))
                .unwrap()
        }
        Some(Reply::Stream {
            deltas,
            prompt_tokens,
            completion_tokens,
            stall_after,
        }) => {
            let mut events = vec![chunk(
                &model,
                json!({"role": "assistant", "content": "", "refusal": null}),
                Value::Null,
                Value::Null,
                true,
            )];
            for d in &deltas {
                events.push(chunk(
                    &model,
                    json!({"content": d}),
                    Value::Null,
                    Value::Null,
                    true,
                ));
            }
            events.push(chunk(&model, json!({}), json!("stop"), Value::Null, true));
            events.push(chunk(
                &model,
                Value::Null,
                Value::Null,
                json!({"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens}),
                false,
            ));
            events.push("data: [DONE]\n\n".to_string());
            let stall_at = stall_after.map(|n| n + 1);
            let body =
                stream::iter(events.into_iter().enumerate()).then(move |(i, e)| async move {
                    if Some(i) == stall_at {
                        futures_util::future::pending::<()>().await;
                    }
                    // Each event is its own write, as a real server flushes them.
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    Ok::<_, Infallible>(Bytes::from(e))
                });
            Response::builder()
                .status(StatusCode::OK)
                .header("content-type", "text/event-stream")
                .header("cache-control", "no-cache")
                .body(Body::from_stream(body))
                .unwrap()
        }
    }
}

/// The first chunk of a streamed answer (the role) and one chunk per delta.
fn opening(model: &str, deltas: &[String]) -> Vec<String> {
    let mut events = vec![chunk(
        model,
        json!({"role": "assistant", "content": "", "refusal": null}),
        Value::Null,
        Value::Null,
        true,
    )];
    for d in deltas {
        events.push(chunk(
            model,
            json!({"content": d}),
            Value::Null,
            Value::Null,
            true,
        ));
    }
    events
}

/// A `text/event-stream` response of `events`, each written on its own.
fn event_stream(events: Vec<String>) -> Response {
    let body = stream::iter(events).then(|e| async move {
        tokio::time::sleep(Duration::from_millis(2)).await;
        Ok::<_, Infallible>(Bytes::from(e))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from_stream(body))
        .unwrap()
}
