//! A run's engine events as LangGraph SSE events, for the stream modes a client asked for:
//! the translator keeps what later events need (the latest values, each message's streamed
//! text, each node's step).

use std::collections::{BTreeMap, HashMap, HashSet};

use palgraph::Event;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::models::{CheckpointRef, Interrupt};
use crate::api::time::iso;
use crate::api::AppState;
use crate::store::Run;

/// LangGraph's stream modes (`tools` and `lifecycle` produce nothing here: palgraph graphs
/// have no LangChain tools).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Mode {
    /// The whole state after each step.
    Values,
    /// Messages as they are written (`messages/partial`, `messages/complete`).
    Messages,
    /// Message chunks with their metadata (`[chunk, metadata]`).
    MessagesTuple,
    /// Each node's update.
    Updates,
    /// Custom events and status lines.
    Custom,
    /// Tasks starting and finishing.
    Tasks,
    /// Checkpoints as they are written.
    Checkpoints,
    /// Everything (tasks, results, checkpoints).
    Debug,
    /// LangChain-style events (a subset).
    Events,
    /// Nothing here.
    Tools,
    /// Nothing here.
    Lifecycle,
}

impl Mode {
    /// Its wire name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Mode::Values => "values",
            Mode::Messages => "messages",
            Mode::MessagesTuple => "messages-tuple",
            Mode::Updates => "updates",
            Mode::Custom => "custom",
            Mode::Tasks => "tasks",
            Mode::Checkpoints => "checkpoints",
            Mode::Debug => "debug",
            Mode::Events => "events",
            Mode::Tools => "tools",
            Mode::Lifecycle => "lifecycle",
        }
    }

    /// Every mode.
    pub(crate) const ALL: [Mode; 11] = [
        Mode::Values,
        Mode::Messages,
        Mode::MessagesTuple,
        Mode::Updates,
        Mode::Custom,
        Mode::Tasks,
        Mode::Checkpoints,
        Mode::Debug,
        Mode::Events,
        Mode::Tools,
        Mode::Lifecycle,
    ];

    /// The mode named `name`.
    pub(crate) fn parse(name: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.as_str() == name)
    }

    /// The engine events this mode needs: what the run produces and stores is what its
    /// client asked for (the book's `docs/src/operations/retention.md`).
    pub(crate) fn engine_modes(self) -> &'static [palgraph::StreamMode] {
        use palgraph::StreamMode as E;
        match self {
            Mode::Values => &[E::Values],
            Mode::Updates => &[E::Updates],
            // Task starts carry their input (the state before the step).
            Mode::Tasks => &[E::Tasks, E::Updates, E::Values],
            // Chunks carry their node's step (node starts); complete messages come from
            // the node's update.
            Mode::Messages | Mode::MessagesTuple => &[E::Messages, E::Tasks, E::Updates],
            // Declared status lines come with node starts.
            Mode::Custom => &[E::Custom, E::Tasks],
            Mode::Checkpoints => &[E::Checkpoints, E::Values],
            Mode::Debug | Mode::Events => &[E::Debug, E::Values],
            Mode::Tools | Mode::Lifecycle => &[],
        }
    }
}

fn ai_chunk(id: &str, content: &str) -> Value {
    json!({
        "type": "AIMessageChunk", "content": content, "id": id, "name": null,
        "additional_kwargs": {}, "response_metadata": {},
        "tool_calls": [], "tool_call_chunks": [], "invalid_tool_calls": [],
    })
}

/// Turns a run's engine events into LangGraph SSE events for the requested modes, keeping
/// what later events need (the latest state, streamed message text, node steps).
pub(crate) struct Translator {
    run_id: String,
    thread_id: String,
    graph_id: String,
    modes: Vec<Mode>,
    partial: HashMap<String, String>,
    /// Text sent in `messages-tuple` chunks, per message; after a reset, the text sent
    /// before it, which the replayed deltas must get past before anything is sent again.
    tuple_sent: HashMap<String, String>,
    tuple_replay: HashMap<String, (String, String)>,
    streamed: HashSet<String>,
    node_step: HashMap<String, i64>,
    values: Option<Value>,
    parent_checkpoint: Option<String>,
    /// The subgraph namespace this translator's events come from (`""`: the run's graph).
    ns: String,
    /// Whether subgraphs' events are sent (`stream_subgraphs`), as `<mode>|<namespace>`.
    subgraphs: bool,
    /// One translator per subgraph namespace seen.
    subs: HashMap<String, Translator>,
}

impl Translator {
    pub(crate) fn new(run: &Run, modes: Vec<Mode>) -> Self {
        let subgraphs = run
            .kwargs
            .get("api")
            .and_then(|a| a.get("stream_subgraphs"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Translator {
            run_id: run.run_id.clone(),
            thread_id: run.thread_id.clone(),
            graph_id: run.graph_id.clone(),
            modes,
            partial: HashMap::new(),
            tuple_sent: HashMap::new(),
            tuple_replay: HashMap::new(),
            streamed: HashSet::new(),
            node_step: HashMap::new(),
            values: None,
            parent_checkpoint: None,
            ns: String::new(),
            subgraphs,
            subs: HashMap::new(),
        }
    }

    /// A translator for the events of subgraph namespace `ns`.
    fn for_subgraph(&self, ns: &str) -> Self {
        Translator {
            run_id: self.run_id.clone(),
            thread_id: self.thread_id.clone(),
            graph_id: self.graph_id.clone(),
            modes: self.modes.clone(),
            partial: HashMap::new(),
            tuple_sent: HashMap::new(),
            tuple_replay: HashMap::new(),
            streamed: HashSet::new(),
            node_step: HashMap::new(),
            values: None,
            parent_checkpoint: None,
            ns: ns.to_string(),
            subgraphs: false,
            subs: HashMap::new(),
        }
    }

    /// A subgraph's event, as LangGraph's server streams it with `stream_subgraphs`: the
    /// event its graph's own stream would have, named `<name>|<namespace>`.
    async fn translate_nested(
        &mut self,
        state: &AppState,
        namespace: &[String],
        event: &Event,
    ) -> Vec<(String, Value)> {
        if !self.subgraphs || namespace.is_empty() {
            return Vec::new();
        }
        let ns = namespace.join("|");
        let mut sub = match self.subs.remove(&ns) {
            Some(t) => t,
            None => self.for_subgraph(&ns),
        };
        let out = Box::pin(sub.translate(state, event)).await;
        self.subs.insert(ns.clone(), sub);
        out.into_iter()
            .map(|(name, data)| (format!("{name}|{ns}"), data))
            .collect()
    }

    fn want(&self, m: Mode) -> bool {
        self.modes.contains(&m)
    }

    /// The `messages-tuple` chunk to send for a delta: after a reset, nothing while the
    /// replayed text is still a beginning of what this client has, then only what goes
    /// beyond it (a replay that says something else is sent as it comes).
    fn tuple_chunk(&mut self, message_id: &str, delta: &str) -> Option<String> {
        let chunk = match self.tuple_replay.get_mut(message_id) {
            Some((had, again)) => {
                again.push_str(delta);
                if had.starts_with(again.as_str()) {
                    return None;
                }
                let chunk = match again.strip_prefix(had.as_str()) {
                    Some(beyond) => beyond.to_string(),
                    None => delta.to_string(),
                };
                let again = std::mem::take(again);
                self.tuple_replay.remove(message_id);
                self.tuple_sent.insert(message_id.to_string(), again);
                return Some(chunk);
            }
            None => delta.to_string(),
        };
        self.tuple_sent
            .entry(message_id.to_string())
            .or_default()
            .push_str(delta);
        Some(chunk)
    }

    fn meta(&self, node: &str) -> Value {
        json!({
            "langgraph_node": node,
            "langgraph_step": self.node_step.get(node),
            "langgraph_triggers": [format!("branch:to:{node}")],
            "langgraph_path": ["__pregel_pull", node],
            "langgraph_checkpoint_ns": self.ns,
            "checkpoint_ns": self.ns,
            "run_id": self.run_id,
            "thread_id": self.thread_id,
            "graph_id": self.graph_id,
            "tags": [],
        })
    }

    fn debug(&self, kind: &str, step: i64, payload: Value) -> (String, Value) {
        (
            "debug".into(),
            json!({"type": kind, "step": step, "timestamp": iso(crate::store::now_ms()), "payload": payload}),
        )
    }

    /// A task's payload (built only when wanted) as a `tasks` event and a `debug` event of
    /// `kind`, for the modes the client asked for.
    fn push_task(
        &self,
        out: &mut Vec<(String, Value)>,
        kind: &str,
        step: i64,
        payload: impl FnOnce() -> Value,
    ) {
        let (tasks, debug) = (self.want(Mode::Tasks), self.want(Mode::Debug));
        if !tasks && !debug {
            return;
        }
        let payload = payload();
        if tasks {
            out.push(("tasks".into(), payload.clone()));
        }
        if debug {
            out.push(self.debug(kind, step, payload));
        }
    }

    fn lc_event(&self, event: &str, name: &str, run_id: &str, node: &str, data: Value) -> Value {
        json!({
            "event": event, "name": name, "run_id": run_id, "parent_ids": [self.run_id],
            "tags": [], "metadata": self.meta(node), "data": data,
        })
    }

    /// The SSE events (name, data) an engine event becomes.
    pub(crate) async fn translate(
        &mut self,
        state: &AppState,
        event: &Event,
    ) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        match event {
            Event::Subgraph { namespace, event } => {
                return self.translate_nested(state, namespace, event).await;
            }
            Event::RunStarted { .. } if self.want(Mode::Events) => {
                let mut e =
                    self.lc_event("on_chain_start", &self.graph_id, &self.run_id, "", json!({}));
                e["parent_ids"] = json!([]);
                out.push(("events".into(), e));
            }
            Event::NodeStarted {
                node,
                task_id,
                step,
                status,
            } => {
                self.node_step.insert(node.clone(), *step);
                if let (true, Some(line)) = (self.want(Mode::Custom), status) {
                    out.push((
                        "custom".into(),
                        json!({"type": "status", "node": node, "message": line}),
                    ));
                }
                self.push_task(&mut out, "task", *step, || {
                    json!({"id": task_id, "name": node, "input": self.values, "triggers": [format!("branch:to:{node}")]})
                });
                if self.want(Mode::Events) {
                    out.push((
                        "events".into(),
                        self.lc_event("on_chain_start", node, task_id, node, json!({"input": self.values})),
                    ));
                }
            }
            Event::NodeFinished {
                node,
                task_id,
                step,
                update,
                cached,
                ..
            } => {
                if self.want(Mode::Updates) {
                    let mut chunk = json!({ node.clone(): update });
                    // A node cache hit, as LangGraph marks it.
                    if *cached {
                        chunk["__metadata__"] = json!({"cached": true});
                    }
                    out.push(("updates".into(), chunk));
                }
                self.push_task(&mut out, "task_result", *step, || {
                    json!({"id": task_id, "name": node, "error": null, "interrupts": [], "result": update})
                });
                let messages = match update.get("messages").and_then(Value::as_array) {
                    Some(list) if self.want(Mode::MessagesTuple) || self.want(Mode::Messages) => {
                        list.as_slice()
                    }
                    _ => &[],
                };
                for m in messages.iter().filter(|m| m.is_object()) {
                    let id = m.get("id").and_then(Value::as_str).unwrap_or_default();
                    let streamed = self.streamed.contains(id);
                    if self.want(Mode::MessagesTuple) && !streamed {
                        out.push(("messages".into(), json!([m, self.meta(node)])));
                    }
                    if self.want(Mode::Messages) {
                        if !streamed && !id.is_empty() {
                            out.push((
                                "messages/metadata".into(),
                                json!({ id: {"metadata": self.meta(node)} }),
                            ));
                        }
                        out.push(("messages/complete".into(), json!([m])));
                    }
                }
                if self.want(Mode::Events) {
                    out.push((
                        "events".into(),
                        self.lc_event("on_chain_end", node, task_id, node, json!({"output": update})),
                    ));
                }
            }
            Event::Values { values, .. } => {
                self.values = Some(values.clone());
                if self.want(Mode::Values) {
                    out.push(("values".into(), values.clone()));
                }
            }
            Event::Checkpoint {
                checkpoint_id,
                step,
                source,
                next,
            } => {
                if self.want(Mode::Checkpoints) || self.want(Mode::Debug) {
                    let payload = json!({
                        "config": {"configurable": CheckpointRef::in_ns(&self.thread_id, &self.ns, checkpoint_id)},
                        "parent_config": self.parent_checkpoint.as_deref().map(|p| json!({"configurable": CheckpointRef::in_ns(&self.thread_id, &self.ns, p)})),
                        "values": self.values.clone().unwrap_or_else(|| json!({})),
                        "metadata": {"source": source, "step": step, "run_id": self.run_id, "thread_id": self.thread_id},
                        "next": next,
                        "tasks": next.iter().map(|n| json!({"id": null, "name": n, "interrupts": [], "state": null})).collect::<Vec<_>>(),
                    });
                    if self.want(Mode::Checkpoints) {
                        out.push(("checkpoints".into(), payload.clone()));
                    }
                    if self.want(Mode::Debug) {
                        out.push(self.debug("checkpoint", *step, payload));
                    }
                }
                self.parent_checkpoint = Some(checkpoint_id.clone());
            }
            Event::MessageDelta {
                node,
                message_id,
                delta,
            } => {
                self.streamed.insert(message_id.clone());
                if self.want(Mode::MessagesTuple) {
                    if let Some(chunk) = self.tuple_chunk(message_id, delta) {
                        out.push((
                            "messages".into(),
                            json!([ai_chunk(message_id, &chunk), self.meta(node)]),
                        ));
                    }
                }
                if self.want(Mode::Messages) {
                    let first = !self.partial.contains_key(message_id);
                    if first {
                        out.push((
                            "messages/metadata".into(),
                            json!({ message_id.clone(): {"metadata": self.meta(node)} }),
                        ));
                    }
                    let text = self.partial.entry(message_id.clone()).or_default();
                    text.push_str(delta);
                    let text = text.clone();
                    let mut m = ai_chunk(message_id, &text);
                    m["type"] = json!("ai");
                    out.push(("messages/partial".into(), json!([m])));
                }
                if self.want(Mode::Events) {
                    out.push((
                        "events".into(),
                        self.lc_event(
                            "on_chat_model_stream",
                            node,
                            message_id,
                            node,
                            json!({"chunk": ai_chunk(message_id, delta)}),
                        ),
                    ));
                }
            }
            Event::MessageReset { message_id, .. } => {
                // `messages` sends the whole text so far: start it again. Chunks of
                // `messages-tuple` are concatenated by clients: hold back the replayed text
                // until it goes beyond what this client has.
                self.partial.remove(message_id);
                if let Some(sent) = self.tuple_sent.remove(message_id) {
                    self.tuple_replay
                        .insert(message_id.clone(), (sent, String::new()));
                }
            }
            Event::Custom { node, value } => {
                if self.want(Mode::Custom) {
                    out.push(("custom".into(), value.clone()));
                }
                if self.want(Mode::Events) {
                    out.push((
                        "events".into(),
                        self.lc_event("on_custom_event", "custom", &self.run_id, node, value.clone()),
                    ));
                }
            }
            Event::Status {
                node,
                message,
                details,
            } if self.want(Mode::Custom) => {
                let mut v = json!({"type": "status", "node": node, "message": message});
                if let (Some(o), Some(d)) = (v.as_object_mut(), details.as_object()) {
                    for (k, x) in d {
                        o.insert(k.clone(), x.clone());
                    }
                }
                out.push(("custom".into(), v));
            }
            // A breakpoint (no payload): LangGraph streams `{"__interrupt__": []}` as an
            // update, and nothing else.
            Event::Interrupted { interrupts } if interrupts.is_empty() => {
                let update = ("updates".to_string(), json!({"__interrupt__": []}));
                out.extend(self.want(Mode::Updates).then_some(update));
            }
            Event::Interrupted { interrupts } => {
                let list: Vec<Value> = interrupts.iter().map(|i| json!(Interrupt::from(i))).collect();
                if self.want(Mode::Values) {
                    let mut values = match self.values.clone() {
                        Some(v) => v,
                        None => match state.graphs.find(&self.graph_id) {
                            Some(g) => g
                                .graph
                                .state(&self.thread_id, None)
                                .await
                                .ok()
                                .flatten()
                                .map(|s| s.values)
                                .unwrap_or_else(|| json!({})),
                            None => json!({}),
                        },
                    };
                    if let Some(o) = values.as_object_mut() {
                        o.insert("__interrupt__".into(), Value::Array(list.clone()));
                    }
                    out.push(("values".into(), values));
                }
                if self.want(Mode::Updates) {
                    out.push(("updates".into(), json!({"__interrupt__": list})));
                }
                if self.want(Mode::Tasks) || self.want(Mode::Debug) {
                    let mut by_task: BTreeMap<(String, String), Vec<Value>> = BTreeMap::new();
                    for i in interrupts {
                        by_task
                            .entry((i.task_id.clone(), i.node.clone()))
                            .or_default()
                            .push(json!(Interrupt::from(i)));
                    }
                    for ((task, node), list) in by_task {
                        let step = self.node_step.get(&node).copied().unwrap_or(-1);
                        self.push_task(&mut out, "task_result", step, || {
                            json!({"id": task, "name": node, "error": null, "interrupts": list, "result": {}})
                        });
                    }
                }
            }
            Event::Completed { .. } if self.want(Mode::Events) => {
                let mut e = self.lc_event(
                    "on_chain_end",
                    &self.graph_id,
                    &self.run_id,
                    "",
                    json!({"output": self.values}),
                );
                e["parent_ids"] = json!([]);
                out.push(("events".into(), e));
            }
            Event::Failed { node, error } => out.push((
                "error".into(),
                json!({"error": if node.is_some() { "NodeError" } else { "RunError" }, "message": error}),
            )),
            _ => {}
        }
        out
    }
}
