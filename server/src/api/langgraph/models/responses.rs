//! The response bodies of the LangGraph Agent Server API.

use palgraph::dynamic::DynSnapshot;
use palgraph::InterruptInfo;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::api::time::iso;
use crate::graphs::GraphEntry;
use crate::store::{Run, RunState, Thread};

/// Drops `required`: responses trimmed with `select` may leave any field out.
fn all_optional(schema: &mut schemars::Schema) {
    schema.remove("required");
}

/// `GET /info`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct Info {
    /// palgraph's version.
    pub version: String,
    /// Always null.
    pub langgraph_py_version: Option<String>,
    /// Features.
    pub flags: Value,
    /// The host.
    pub host: Value,
}

/// An assistant (one per graph).
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(transform = all_optional)]
pub(crate) struct Assistant {
    /// Its id.
    pub assistant_id: String,
    /// Its graph.
    pub graph_id: String,
    /// Its name (the graph's).
    pub name: String,
    /// What it does.
    pub description: String,
    /// Always `{}`.
    pub config: Value,
    /// Always `{}`.
    pub context: Value,
    /// `{created_by: system}`.
    pub metadata: Value,
    /// Always 1.
    pub version: i64,
    /// Created.
    pub created_at: String,
    /// Updated.
    pub updated_at: String,
}

impl Assistant {
    /// The default assistant of a graph.
    pub(crate) fn of(e: &GraphEntry) -> Self {
        Assistant {
            assistant_id: e.assistant_id.clone(),
            graph_id: e.graph_id.clone(),
            name: e.graph_id.clone(),
            description: e.description.clone(),
            config: json!({}),
            context: json!({}),
            metadata: json!({"created_by": "system"}),
            version: 1,
            created_at: iso(0),
            updated_at: iso(0),
        }
    }
}

/// An interrupt as the API shows it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct Interrupt {
    /// The node's payload.
    pub value: Value,
    /// Its id.
    pub id: String,
    /// The JSON Schema of the value that answers it, when the graph declares one (absent
    /// otherwise, as on the official server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<Value>,
}

impl From<&InterruptInfo> for Interrupt {
    fn from(i: &InterruptInfo) -> Self {
        Interrupt {
            value: i.value.clone(),
            id: i.id.clone(),
            response_schema: i.response_schema.clone(),
        }
    }
}

/// A thread with its current values and interrupts.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(transform = all_optional)]
pub(crate) struct ThreadOut {
    /// Its id.
    pub thread_id: String,
    /// Created.
    pub created_at: String,
    /// Updated.
    pub updated_at: String,
    /// When its state last changed.
    pub state_updated_at: String,
    /// Metadata (`graph_id`, `assistant_id`, ...).
    pub metadata: Value,
    /// `idle`, `busy`, `interrupted` or `error`.
    pub status: String,
    /// Always `{}`.
    pub config: Value,
    /// The state's values (`{}` before the first run).
    pub values: Value,
    /// Pending interrupts by task id.
    pub interrupts: Map<String, Value>,
}

impl ThreadOut {
    /// A thread and its latest state.
    pub(crate) fn of(t: &Thread, snap: Option<&DynSnapshot>) -> Self {
        let mut interrupts = Map::new();
        for i in snap.map(|s| s.interrupts.as_slice()).unwrap_or_default() {
            let list = interrupts
                .entry(i.task_id.clone())
                .or_insert_with(|| json!([]));
            if let Some(a) = list.as_array_mut() {
                a.push(json!(Interrupt::from(i)));
            }
        }
        ThreadOut {
            thread_id: t.thread_id.clone(),
            created_at: iso(t.created_at_ms),
            updated_at: iso(t.updated_at_ms),
            state_updated_at: iso(snap.map(|s| s.created_at_ms).unwrap_or(t.updated_at_ms)),
            metadata: t.metadata.clone(),
            status: t.status.clone(),
            config: json!({}),
            values: snap.map(|s| s.values.clone()).unwrap_or_else(|| json!({})),
            interrupts,
        }
    }
}

/// A run's status in the Agent Server's words: a run that stopped at an interrupt (or a
/// breakpoint) did what was asked, so it is `success` (its thread is `interrupted`); a
/// cancelled run is `interrupted`.
pub(crate) fn api_status(s: RunState) -> &'static str {
    match s {
        RunState::Interrupted => "success",
        RunState::Cancelled => "interrupted",
        other => other.as_str(),
    }
}

/// A run.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(transform = all_optional)]
pub(crate) struct RunOut {
    /// Its id.
    pub run_id: String,
    /// Its thread.
    pub thread_id: String,
    /// Its assistant.
    pub assistant_id: String,
    /// Created.
    pub created_at: String,
    /// Updated.
    pub updated_at: String,
    /// `pending`, `running`, `success` (also when it stopped at an interrupt), `error` or
    /// `interrupted` (cancelled).
    pub status: String,
    /// Metadata.
    pub metadata: Value,
    /// What it runs.
    pub kwargs: Value,
    /// Its multitask strategy.
    pub multitask_strategy: String,
    /// Why it was cancelled.
    pub cancel_reason: Option<String>,
}

impl From<&Run> for RunOut {
    fn from(r: &Run) -> Self {
        RunOut {
            run_id: r.run_id.clone(),
            thread_id: r.thread_id.clone(),
            assistant_id: r.assistant_id.clone(),
            created_at: iso(r.created_at_ms),
            updated_at: iso(r.updated_at_ms),
            status: api_status(r.status).to_string(),
            metadata: r.metadata.clone(),
            kwargs: r.kwargs.clone(),
            multitask_strategy: r.multitask_strategy.as_str().to_string(),
            cancel_reason: r.cancel_reason.clone(),
        }
    }
}

/// A checkpoint's config.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct CheckpointRef {
    /// The thread.
    pub thread_id: String,
    /// The subgraph namespace (`""`: the graph itself; `"node:task_id"`, nested ones
    /// joined with `|`).
    pub checkpoint_ns: String,
    /// The checkpoint.
    pub checkpoint_id: String,
    /// Always null.
    pub checkpoint_map: Option<Value>,
}

impl CheckpointRef {
    /// The config of checkpoint `id` of `thread_id`.
    pub(crate) fn new(thread_id: &str, id: &str) -> Self {
        Self::in_ns(thread_id, "", id)
    }

    /// The config of checkpoint `id` of the subgraph namespace `ns` of `thread_id`.
    pub(crate) fn in_ns(thread_id: &str, ns: &str, id: &str) -> Self {
        CheckpointRef {
            thread_id: thread_id.to_string(),
            checkpoint_ns: ns.to_string(),
            checkpoint_id: id.to_string(),
            checkpoint_map: None,
        }
    }
}

/// A task due at a checkpoint.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct TaskOut {
    /// Its id.
    pub id: String,
    /// Its node.
    pub name: String,
    /// `["__pregel_pull", node]`.
    pub path: Vec<String>,
    /// Its error, if it failed.
    pub error: Option<String>,
    /// Its interrupts.
    pub interrupts: Vec<Interrupt>,
    /// Always null.
    pub checkpoint: Option<Value>,
    /// A subgraph task's state (a `ThreadState`, with `subgraphs=true`) or its config
    /// (`{"configurable": {thread_id, checkpoint_ns}}`); null for other tasks.
    pub state: Option<Value>,
    /// Always null.
    pub result: Option<Value>,
}

/// A `ThreadState`: the state at a checkpoint.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(transform = all_optional)]
pub(crate) struct ThreadState {
    /// The state.
    pub values: Value,
    /// Nodes due next.
    pub next: Vec<String>,
    /// Tasks due next.
    pub tasks: Vec<TaskOut>,
    /// Its checkpoint (null before the first run).
    pub checkpoint: Option<CheckpointRef>,
    /// The checkpoint's metadata.
    pub metadata: Map<String, Value>,
    /// When it was written.
    pub created_at: Option<String>,
    /// The checkpoint it was derived from.
    pub parent_checkpoint: Option<CheckpointRef>,
    /// Pending interrupts.
    pub interrupts: Vec<Interrupt>,
    /// Its checkpoint's id.
    pub checkpoint_id: Option<String>,
    /// Its parent's id.
    pub parent_checkpoint_id: Option<String>,
}

impl ThreadState {
    /// The state at a checkpoint of the subgraph namespace `ns` of a thread (`""`: the
    /// thread's graph itself); subgraph tasks carry their state when it was read, else
    /// their config.
    pub(crate) fn of_ns(thread_id: &str, ns: &str, s: &DynSnapshot) -> Self {
        let mut metadata = s.metadata.clone();
        metadata
            .entry("thread_id")
            .or_insert_with(|| thread_id.into());
        let task_state = |t: &palgraph::TaskState| {
            let task_ns = match (ns, &t.namespace) {
                (_, None) => return None,
                ("", Some(own)) => own.clone(),
                (outer, Some(own)) => format!("{outer}|{own}"),
            };
            Some(match &t.state {
                Some(sub) => json!(ThreadState::of_ns(thread_id, &task_ns, sub)),
                None => json!({"configurable": {"thread_id": thread_id, "checkpoint_ns": task_ns}}),
            })
        };
        ThreadState {
            values: s.values.clone(),
            next: s.next.clone(),
            tasks: s
                .tasks
                .iter()
                .map(|t| TaskOut {
                    id: t.id.clone(),
                    name: t.name.clone(),
                    path: vec!["__pregel_pull".into(), t.name.clone()],
                    error: t.error.clone(),
                    interrupts: t.interrupts.iter().map(Interrupt::from).collect(),
                    checkpoint: None,
                    state: task_state(t),
                    result: None,
                })
                .collect(),
            checkpoint: Some(CheckpointRef::in_ns(thread_id, ns, &s.checkpoint_id)),
            metadata,
            created_at: Some(iso(s.created_at_ms)),
            parent_checkpoint: s
                .parent_checkpoint_id
                .as_deref()
                .map(|p| CheckpointRef::in_ns(thread_id, ns, p)),
            interrupts: s.interrupts.iter().map(Interrupt::from).collect(),
            checkpoint_id: Some(s.checkpoint_id.clone()),
            parent_checkpoint_id: s.parent_checkpoint_id.clone(),
        }
    }

    /// The state of a thread that has none yet.
    pub(crate) fn empty(thread_id: &str) -> Self {
        ThreadState {
            values: json!({}),
            next: Vec::new(),
            tasks: Vec::new(),
            checkpoint: None,
            metadata: Map::from_iter([("thread_id".to_string(), thread_id.into())]),
            created_at: None,
            parent_checkpoint: None,
            interrupts: Vec::new(),
            checkpoint_id: None,
            parent_checkpoint_id: None,
        }
    }
}

/// `GET /assistants/{id}/graph`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct GraphDrawing {
    /// `__start__`, each node, `__end__`.
    pub nodes: Vec<Value>,
    /// Edges (`conditional` for router targets).
    pub edges: Vec<Value>,
    /// The graph as Mermaid.
    pub mermaid: String,
}

/// `GET /assistants/{id}/schemas`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct AssistantSchemas {
    /// The graph.
    pub graph_id: String,
    /// A run's input (an update of the state).
    pub input_schema: Value,
    /// The state after a run.
    pub output_schema: Value,
    /// The state.
    pub state_schema: Value,
    /// The run config.
    pub config_schema: Value,
    /// The run context.
    pub context_schema: Value,
}

/// `POST /threads/prune`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct Pruned {
    /// Threads pruned.
    pub pruned_count: usize,
}

/// `POST /threads/{id}/state`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct StateUpdated {
    /// The new checkpoint.
    pub checkpoint: CheckpointRef,
    /// The same, as LangGraph's `configurable`.
    pub configurable: CheckpointRef,
}
