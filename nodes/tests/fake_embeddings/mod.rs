//! An OpenAI-compatible embeddings server for tests, speaking the real wire format:
//! `POST /v1/embeddings` with `{model, input: string | [string], dimensions?}` answers
//! `{object: "list", data: [{object: "embedding", index, embedding}], model, usage}`. The
//! vectors mean something: words of one concept (coffee, dogs, the seaside, programming)
//! point one way, so texts about one concept are close by cosine with no word in common.
//! Scripted error statuses (OpenAI's error body) are answered first, one a request. It
//! records every request. It binds 127.0.0.1:0.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

/// Words by concept; a vector has one dimension per concept and one for other words.
pub const CONCEPTS: &[&[&str]] = &[
    &[
        "coffee",
        "espresso",
        "latte",
        "roast",
        "caffeine",
        "cappuccino",
    ],
    &["dog", "dogs", "puppy", "canine", "terrier"],
    &["beach", "sea", "ocean", "holiday", "lisbon", "seaside"],
    &["python", "rust", "code", "programming"],
];

/// The vector of a text.
pub fn vector(text: &str) -> Vec<f32> {
    let mut v = vec![0.0_f32; CONCEPTS.len() + 1];
    for w in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let w = w.to_lowercase();
        match CONCEPTS.iter().position(|c| c.contains(&w.as_str())) {
            Some(i) => v[i] += 1.0,
            None => v[CONCEPTS.len()] += 0.1,
        }
    }
    v
}

/// A request the server got.
#[derive(Clone, Debug)]
pub struct Received {
    pub authorization: Option<String>,
    pub body: Value,
}

#[derive(Default)]
struct Script {
    errors: Mutex<VecDeque<u16>>,
    received: Mutex<Vec<Received>>,
}

/// A running fake server.
pub struct FakeEmbeddings {
    /// `http://127.0.0.1:<port>/v1`
    pub base_url: String,
    script: Arc<Script>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeEmbeddings {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeEmbeddings {
    /// Starts a server that first answers these error statuses, one a request.
    pub async fn start(errors: Vec<u16>) -> Self {
        let script = Arc::new(Script {
            errors: Mutex::new(errors.into()),
            ..Script::default()
        });
        let app = Router::new()
            .route("/v1/embeddings", post(embeddings))
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeEmbeddings {
            base_url: format!("http://{addr}/v1"),
            script,
            task,
        }
    }

    /// Queues more error answers.
    pub fn fail_next(&self, statuses: &[u16]) {
        self.script.errors.lock().unwrap().extend(statuses);
    }

    /// The requests so far.
    pub fn received(&self) -> Vec<Received> {
        self.script.received.lock().unwrap().clone()
    }
}

async fn embeddings(
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
    if let Some(status) = script.errors.lock().unwrap().pop_front() {
        let kind = if status == 429 {
            "rate_limit_exceeded"
        } else {
            "invalid_request_error"
        };
        let error = json!({"error": {"message": format!("scripted {status}"), "type": kind, "param": null, "code": null}});
        return (StatusCode::from_u16(status).unwrap(), Json(error)).into_response();
    }
    let inputs: Vec<String> = match &body["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => {
            let error = json!({"error": {"message": "input must be a string or a list of strings", "type": "invalid_request_error", "param": "input", "code": null}});
            return (StatusCode::BAD_REQUEST, Json(error)).into_response();
        }
    };
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": vector(t)}))
        .collect();
    let tokens: usize = inputs.iter().map(|t| t.split_whitespace().count()).sum();
    Json(json!({
        "object": "list",
        "data": data,
        "model": body["model"],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens}
    }))
    .into_response()
}
