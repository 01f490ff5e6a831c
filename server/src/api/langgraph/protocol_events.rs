//! `POST /threads/{id}/stream/events`: the thread-centric event stream of the v3 streaming
//! protocol (`client.threads.stream()`, `RemoteGraph.astream_events(version="v3")`).
//!
//! The stream follows the thread's runs one after another and sends each engine event as
//! protocol events `{type: "event", event_id, seq, method, params: {namespace, timestamp,
//! data}}` on the channels asked for (`values`, `updates`, `messages`, `custom[:name]`,
//! `lifecycle`, `input`, `checkpoints`; palgraph graphs have no subgraphs and no LangChain
//! tools, so every event is at the root namespace `[]` and `tools`/`tasks` stay quiet).
//!
//! `seq` orders a thread's events across its runs: `thread_seq * 10^9 + event seq * 1000 +
//! n` (the run's position on its thread, the engine event's position in the run, the index
//! of the protocol event made from it), so `since` resumes after any event. Without
//! `since` the stream starts with the runs that are active, then follows new ones. A run
//! that already ended is replayed only when it is the thread's latest run, a protocol
//! command started it, and either no stream without `since` has carried it yet or a stream
//! that carried it is still connected (the rule of the `replay` module). The JS SDK opens
//! its stream right after the `run.start` that made the thread, when a short run may
//! already be over, and re-opens it (a wider filter, a new subscription such as
//! `thread.messages`) while the old one is still up, each time expecting the run's history
//! from the start; a Python SDK session on a thread that ran before opens its lifecycle
//! watcher before its `run.start`, after the earlier session closed its streams, and must
//! not take the earlier run's end for the end of the run it is about to start.
//! (langgraph-api replays every run it still keeps, which trips the second case.) What was
//! carried is known to this process only: a stream opened on another replica replays what
//! is active and follows new runs.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::response::sse::Event as SseEvent;
use axum::response::Response;
use futures_util::StreamExt;
use palgraph::Event;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::common::ThreadPath;
use crate::api::admission::own_thread;
use crate::api::error::{ApiError, ApiResult};
use crate::api::extract::ApiJson;
use crate::api::sse::sse_response;
use crate::api::AppState;
use crate::auth::User;
use crate::store::Run;

mod replay;

/// The safety-net re-check of an idle stream (new runs wake it).
const THREAD_RECHECK: Duration = Duration::from_secs(30);
const RUN_SPAN: u64 = 1_000_000_000;

/// The runs protocol commands started that a stream may still replay (see [`replay`]).
static REPLAYS: LazyLock<Mutex<replay::Registry>> = LazyLock::new(Default::default);

/// Notes a run a protocol command started (see the module docs).
pub(crate) fn started_by_command(run_id: &str) {
    if let Ok(mut r) = REPLAYS.lock() {
        r.started(run_id, crate::store::now_ms());
    }
}

/// Whether a stream opened now without `since` replays this ended run.
fn replays(run_id: &str) -> bool {
    REPLAYS
        .lock()
        .is_ok_and(|r| r.replays(run_id, crate::store::now_ms()))
}

/// Marks a stream without `since` as carrying a run until the guard drops.
fn carry(run_id: &str) -> replay::Carrier<'static> {
    replay::Carrier::new(&REPLAYS, run_id)
}

/// The channels a client may ask for.
const CHANNELS: [&str; 9] = [
    "values",
    "updates",
    "messages",
    "tools",
    "lifecycle",
    "input",
    "checkpoints",
    "tasks",
    "custom",
];

/// What a protocol event stream carries.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub(crate) struct EventStreamRequest {
    /// `values`, `updates`, `messages`, `tools`, `lifecycle`, `input`, `checkpoints`,
    /// `tasks`, `custom` or `custom:<name>`.
    #[serde(default)]
    channels: Vec<String>,
    /// Namespace prefixes (palgraph's events are all at the root, `[]`).
    #[serde(default)]
    namespaces: Option<Vec<Vec<String>>>,
    /// How deep below a prefix (accepted; every event is at the root).
    #[serde(default)]
    #[allow(dead_code)]
    depth: Option<u64>,
    /// Replay the events after this `seq`.
    #[serde(default)]
    since: Option<u64>,
}

/// `POST /threads/{id}/stream/events`.
pub(crate) async fn stream_events(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id: id }): Path<ThreadPath>,
    ApiJson(req): ApiJson<EventStreamRequest>,
) -> ApiResult<Response> {
    own_thread(&state, &user, &id).await?;
    if let Some(bad) = req
        .channels
        .iter()
        .find(|c| !CHANNELS.contains(&c.as_str()) && !c.starts_with("custom:"))
    {
        return Err(ApiError::Invalid(format!(
            "unknown channel `{bad}`; one of {}, or custom:<name>",
            CHANNELS.join(", ")
        )));
    }
    let root = req
        .namespaces
        .as_ref()
        .is_none_or(|ns| ns.is_empty() || ns.iter().any(Vec::is_empty));
    let filter = Filter {
        channels: req.channels.into_iter().collect(),
        root,
    };
    // Decided before the response goes out: the JS SDK closes the stream this one replaces
    // once this one is ready, and with it the carrier that lets this one replay the run.
    let mut done: HashSet<String> = HashSet::new();
    // The run this stream carries: only the thread's latest run is ever replayed, so a
    // stream that moves on to the next run lets go of the one before.
    let mut carried: Option<replay::Carrier<'static>> = None;
    if req.since.is_none() {
        // Newest first: only the thread's latest run, if it ended, may be replayed; an ended
        // run before it never is.
        let mut runs = (state.store.list_runs(&id, 50, 0).await)
            .map_err(ApiError::from)?
            .into_iter();
        if let Some(latest) = runs.next().filter(|r| r.status.is_final()) {
            if replays(&latest.run_id) {
                carried = Some(carry(&latest.run_id));
            } else {
                done.insert(latest.run_id);
            }
        }
        done.extend(runs.filter(|r| r.status.is_final()).map(|r| r.run_id));
    }
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<SseEvent, Infallible>>(64);
    let st = state.clone();
    tokio::spawn(async move {
        let news = st.runs.threads.guard(&id);
        loop {
            if tx.is_closed() || st.shutdown.is_cancelled() {
                break;
            }
            let woken = news.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let mut candidates = st.store.active_runs(&id).await.unwrap_or_default();
            candidates.extend(st.store.list_runs(&id, 50, 0).await.unwrap_or_default());
            candidates.retain(|r| !done.contains(&r.run_id) && wanted(r, req.since));
            candidates.sort_by_key(|r| r.thread_seq);
            let Some(run) = candidates.into_iter().next() else {
                tokio::select! {
                    _ = woken => {}
                    _ = tokio::time::sleep(THREAD_RECHECK) => {}
                    _ = tx.closed() => break,
                    _ = st.shutdown.cancelled() => break,
                }
                continue;
            };
            done.insert(run.run_id.clone());
            let carrying = carried.as_ref().and_then(replay::Carrier::run);
            if req.since.is_none() && carrying != Some(run.run_id.as_str()) {
                carried = Some(carry(&run.run_id));
            }
            if !follow(&st, &run, &filter, req.since, &tx).await {
                break;
            }
        }
    });
    let events = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
    Ok(sse_response(&state, events, &[]))
}

/// Whether a run has events after `since` (without `since`, every run not left out when
/// the stream opened does).
fn wanted(r: &Run, since: Option<u64>) -> bool {
    since.is_none_or(|s| (r.thread_seq.max(0) as u64 + 1) * RUN_SPAN > s + 1)
}

/// Streams one run's events; false when the client left.
async fn follow(
    st: &AppState,
    run: &Run,
    filter: &Filter,
    since: Option<u64>,
    tx: &tokio::sync::mpsc::Sender<Result<SseEvent, Infallible>>,
) -> bool {
    let base = run.thread_seq.max(0) as u64 * RUN_SPAN;
    let mut tr = Translator::new(&run.graph_id);
    let mut events = Box::pin(st.runs.watch(&run.run_id, 0));
    while let Some(e) = events.next().await {
        for (i, (method, data)) in tr.translate(&e.event).into_iter().enumerate() {
            let seq = base + e.seq * 1000 + i as u64;
            if since.is_some_and(|s| seq <= s) || !filter.matches(&method, &data) {
                continue;
            }
            let body = json!({
                "type": "event",
                "event_id": seq.to_string(),
                "seq": seq,
                "method": method,
                "params": {"namespace": [], "timestamp": crate::store::now_ms(), "data": data},
            });
            let sse = SseEvent::default()
                .id(seq.to_string())
                .event(method)
                .data(body.to_string());
            if tx.send(Ok(sse)).await.is_err() {
                return false;
            }
        }
    }
    true
}

/// The channels and namespaces a stream asked for.
struct Filter {
    channels: HashSet<String>,
    root: bool,
}

impl Filter {
    fn matches(&self, method: &str, data: &Value) -> bool {
        if !self.root {
            return false;
        }
        let channel = match method {
            "input.requested" => "input",
            m => m,
        };
        if self.channels.contains(channel) {
            return true;
        }
        channel == "custom"
            && data
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| self.channels.contains(&format!("custom:{n}")))
    }
}

/// Turns a run's engine events into protocol events (method, data), keeping the text of
/// the messages being written so each ends with its whole content.
struct Translator {
    graph: String,
    /// Messages started and not finished: id -> (node, text so far).
    open: HashMap<String, (String, String)>,
}

impl Translator {
    fn new(graph: &str) -> Self {
        Translator {
            graph: graph.to_string(),
            open: HashMap::new(),
        }
    }

    fn lifecycle(&self, event: &str, extra: Value) -> (String, Value) {
        let mut data = json!({"event": event, "graph_name": self.graph});
        if let (Some(d), Value::Object(x)) = (data.as_object_mut(), extra) {
            d.extend(x);
        }
        ("lifecycle".into(), data)
    }

    /// Finishes the open messages (of `node`, or all).
    fn finish(&mut self, node: Option<&str>, out: &mut Vec<(String, Value)>) {
        let ids: Vec<String> = self
            .open
            .iter()
            .filter(|(_, (n, _))| node.is_none_or(|x| x == n))
            .map(|(id, _)| id.clone())
            .collect();
        for id in ids {
            if let Some((_, text)) = self.open.remove(&id) {
                out.push(("messages".into(), json!({"event": "content-block-finish", "index": 0, "content": {"type": "text", "text": text}, "id": id})));
                out.push((
                    "messages".into(),
                    json!({"event": "message-finish", "id": id}),
                ));
            }
        }
    }

    fn translate(&mut self, e: &Event) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        match e {
            Event::RunStarted { .. } => {
                out.push(self.lifecycle("started", json!({})));
                out.push(self.lifecycle("running", json!({})));
            }
            Event::Values { values, .. } => out.push(("values".into(), values.clone())),
            Event::NodeFinished { node, update, .. } => {
                self.finish(Some(node), &mut out);
                out.push(("updates".into(), json!({"node": node, "values": update})));
            }
            Event::Custom { node, value } => {
                let name = value.get("type").and_then(Value::as_str).unwrap_or(node);
                out.push((
                    "custom".into(),
                    json!({"name": name, "payload": value}),
                ));
            }
            Event::Status {
                node,
                message,
                details,
            } => out.push((
                "custom".into(),
                json!({"name": "status", "payload": {"node": node, "message": message, "details": details}}),
            )),
            Event::MessageDelta {
                node,
                message_id,
                delta,
            } => {
                if !self.open.contains_key(message_id) {
                    self.open
                        .insert(message_id.clone(), (node.clone(), String::new()));
                    out.push(("messages".into(), json!({"event": "message-start", "role": "ai", "id": message_id, "metadata": {"langgraph_node": node}})));
                    out.push(("messages".into(), json!({"event": "content-block-start", "index": 0, "content": {"type": "text", "text": ""}, "id": message_id})));
                }
                if let Some((_, text)) = self.open.get_mut(message_id) {
                    text.push_str(delta);
                }
                out.push(("messages".into(), json!({"event": "content-block-delta", "index": 0, "delta": {"type": "text-delta", "text": delta}, "id": message_id})));
            }
            Event::MessageReset { message_id, .. } => {
                if let Some((_, text)) = self.open.get_mut(message_id) {
                    text.clear();
                }
            }
            Event::Checkpoint {
                checkpoint_id,
                step,
                source,
                ..
            } => out.push((
                "checkpoints".into(),
                json!({"id": checkpoint_id, "step": step, "source": source}),
            )),
            Event::Interrupted { interrupts } => {
                self.finish(None, &mut out);
                for i in interrupts {
                    let mut data = json!({"interrupt_id": i.id, "payload": i.value, "value": i.value});
                    if let (Some(s), Some(d)) = (&i.response_schema, data.as_object_mut()) {
                        d.insert("response_schema".into(), s.clone());
                    }
                    out.push(("input.requested".into(), data));
                }
                out.push(self.lifecycle("interrupted", json!({})));
            }
            Event::Completed { checkpoint_id } => {
                self.finish(None, &mut out);
                let extra = match checkpoint_id {
                    Some(c) => json!({"checkpoint": {"id": c}}),
                    None => json!({}),
                };
                out.push(self.lifecycle("completed", extra));
            }
            Event::Failed { error, .. } => {
                self.finish(None, &mut out);
                out.push(self.lifecycle("failed", json!({"error": error})));
            }
            Event::Cancelled { reason } => {
                self.finish(None, &mut out);
                let why = serde_json::to_value(reason).unwrap_or(Value::Null);
                out.push(self.lifecycle(
                    "failed",
                    json!({"error": format!("the run was cancelled ({})", why.as_str().unwrap_or("cancelled"))}),
                ));
            }
            _ => {}
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn methods(out: &[(String, Value)]) -> Vec<String> {
        out.iter()
            .map(|(m, d)| match d.get("event").and_then(Value::as_str) {
                Some(e) => format!("{m}:{e}"),
                None => m.clone(),
            })
            .collect()
    }

    #[test]
    fn a_message_starts_streams_and_finishes_with_its_node() {
        let mut t = Translator::new("g");
        let delta = |d: &str| Event::MessageDelta {
            node: "write".into(),
            message_id: "m1".into(),
            delta: d.into(),
        };
        let first = t.translate(&delta("one"));
        assert_eq!(
            methods(&first),
            [
                "messages:message-start",
                "messages:content-block-start",
                "messages:content-block-delta"
            ]
        );
        assert_eq!(
            methods(&t.translate(&delta(" two"))),
            ["messages:content-block-delta"]
        );
        let end = t.translate(&Event::NodeFinished {
            node: "write".into(),
            task_id: "t".into(),
            step: 1,
            update: json!({"x": 1}),
            status: None,
            cached: false,
        });
        assert_eq!(
            methods(&end),
            [
                "messages:content-block-finish",
                "messages:message-finish",
                "updates"
            ]
        );
        assert_eq!(end[0].1["content"]["text"], "one two");
        assert_eq!(end[2].1, json!({"node": "write", "values": {"x": 1}}));
    }

    #[test]
    fn an_interrupt_asks_for_input_and_pauses() {
        let mut t = Translator::new("g");
        let info: palgraph::InterruptInfo = serde_json::from_value(json!({
            "id": "i1", "value": {"q": "?"}, "node": "n", "task_id": "t", "index": 0
        }))
        .unwrap();
        let out = t.translate(&Event::Interrupted {
            interrupts: vec![info],
        });
        assert_eq!(methods(&out), ["input.requested", "lifecycle:interrupted"]);
        assert_eq!(out[0].1["interrupt_id"], "i1");
        assert_eq!(out[0].1["payload"], json!({"q": "?"}));
    }

    #[test]
    fn filters_by_channel_and_custom_name() {
        let f = Filter {
            channels: [
                "lifecycle".to_string(),
                "input".into(),
                "custom:status".into(),
            ]
            .into_iter()
            .collect(),
            root: true,
        };
        assert!(f.matches("lifecycle", &json!({})));
        assert!(f.matches("input.requested", &json!({})));
        assert!(f.matches("custom", &json!({"name": "status"})));
        assert!(!f.matches("custom", &json!({"name": "other"})));
        assert!(!f.matches("values", &json!({})));
        let nested = Filter {
            channels: f.channels.clone(),
            root: false,
        };
        assert!(!nested.matches("lifecycle", &json!({})));
    }
}
