//! An OTLP trace receiver for tests, speaking the real protocol: `POST /v1/traces` with an
//! `application/x-protobuf` `ExportTraceServiceRequest` (decoded with the
//! `opentelemetry-proto` crate's prost types), answered with an empty
//! `ExportTraceServiceResponse`. It binds 127.0.0.1:0 and keeps every span it got.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use prost::Message;

/// An attribute's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Other,
}

impl Attr {
    pub fn str(&self) -> Option<&str> {
        match self {
            Attr::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn int(&self) -> Option<i64> {
        match self {
            Attr::Int(i) => Some(*i),
            _ => None,
        }
    }
}

/// One span as it arrived.
#[derive(Clone, Debug)]
pub struct Span {
    /// Hex, 32 digits.
    pub trace_id: String,
    /// Hex, 16 digits.
    pub span_id: String,
    /// Hex, empty for a root span.
    pub parent_span_id: String,
    pub name: String,
    /// 2 = server, 3 = client (the OTLP enum), 1 = internal.
    pub kind: i32,
    pub attributes: BTreeMap<String, Attr>,
    /// The resource's attributes (`service.name`, ...).
    pub resource: BTreeMap<String, Attr>,
    /// The span links' span ids.
    pub links: Vec<String>,
}

impl Span {
    pub fn attr(&self, key: &str) -> Option<&Attr> {
        self.attributes.get(key)
    }

    pub fn attr_str(&self, key: &str) -> Option<&str> {
        self.attr(key).and_then(Attr::str)
    }
}

#[derive(Default)]
struct Inbox {
    spans: Mutex<Vec<Span>>,
    /// Export requests received, and whether each had the protobuf content type.
    requests: Mutex<Vec<bool>>,
}

/// A running receiver.
pub struct OtlpReceiver {
    /// `http://127.0.0.1:<port>`: the `OTEL_EXPORTER_OTLP_ENDPOINT` to give.
    pub endpoint: String,
    inbox: Arc<Inbox>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn attrs(kvs: &[KeyValue]) -> BTreeMap<String, Attr> {
    kvs.iter()
        .map(|kv| {
            let v = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(Any::StringValue(s)) => Attr::Str(s.clone()),
                Some(Any::IntValue(i)) => Attr::Int(*i),
                Some(Any::DoubleValue(f)) => Attr::Float(*f),
                Some(Any::BoolValue(b)) => Attr::Bool(*b),
                _ => Attr::Other,
            };
            (kv.key.clone(), v)
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

async fn traces(
    State(inbox): State<Arc<Inbox>>,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    let protobuf = headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v == "application/x-protobuf");
    inbox.requests.lock().unwrap().push(protobuf);
    let Ok(req) = ExportTraceServiceRequest::decode(body) else {
        return (StatusCode::BAD_REQUEST, Vec::new());
    };
    let mut out = Vec::new();
    for rs in req.resource_spans {
        let resource = rs
            .resource
            .as_ref()
            .map(|r| attrs(&r.attributes))
            .unwrap_or_default();
        for ss in rs.scope_spans {
            for s in ss.spans {
                out.push(Span {
                    trace_id: hex(&s.trace_id),
                    span_id: hex(&s.span_id),
                    parent_span_id: hex(&s.parent_span_id),
                    name: s.name,
                    kind: s.kind,
                    attributes: attrs(&s.attributes),
                    resource: resource.clone(),
                    links: s.links.iter().map(|l| hex(&l.span_id)).collect(),
                });
            }
        }
    }
    inbox.spans.lock().unwrap().extend(out);
    (
        StatusCode::OK,
        ExportTraceServiceResponse::default().encode_to_vec(),
    )
}

impl OtlpReceiver {
    pub async fn start() -> Self {
        let inbox = Arc::new(Inbox::default());
        let app = Router::new()
            .route("/v1/traces", post(traces))
            .with_state(inbox.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        OtlpReceiver {
            endpoint: format!("http://{addr}"),
            inbox,
            task,
        }
    }

    /// The spans so far.
    pub fn spans(&self) -> Vec<Span> {
        self.inbox.spans.lock().unwrap().clone()
    }

    /// How many export requests came, and whether all were `application/x-protobuf`.
    pub fn requests(&self) -> (usize, bool) {
        let r = self.inbox.requests.lock().unwrap();
        (r.len(), r.iter().all(|p| *p))
    }

    /// Waits until `done` holds for the spans received (the exporter sends in batches).
    pub async fn wait_for(&self, what: &str, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let spans = self.spans();
            if done(&spans) {
                return spans;
            }
            assert!(
                Instant::now() < until,
                "timed out waiting for {what}; got {} spans: {:?}",
                spans.len(),
                spans.iter().map(|s| &s.name).collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
