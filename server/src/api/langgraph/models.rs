//! The LangGraph Agent Server API's bodies, as the official SDKs send and read them: typed,
//! so handlers read fields instead of probing JSON, and the OpenAPI document is generated
//! from them.

use palgraph::dynamic::DynSnapshot;
use palgraph::InterruptInfo;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::api::chat::OnDisconnect;
use crate::api::time::iso;
use crate::graphs::GraphEntry;
use crate::store::{IfExists, MultitaskStrategy, Run, RunState, Thread};

/// Drops `required`: responses trimmed with `select` may leave any field out.
fn all_optional(schema: &mut schemars::Schema) {
    schema.remove("required");
}

// ---------- requests ----------

/// `POST /assistants/search` and `/assistants/count`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct AssistantSearch {
    /// Only this graph's assistant.
    pub graph_id: Option<String>,
    /// Metadata entries that must match (assistants have `created_by: system`).
    pub metadata: Map<String, Value>,
    /// Page size (1 to 1000, default 10).
    pub limit: Option<usize>,
    /// Page offset.
    pub offset: Option<usize>,
    /// A part of the name.
    pub name: Option<String>,
    /// Only these fields of each assistant.
    pub select: Option<Vec<String>>,
    /// `assistant_id`, `graph_id`, `name`, `created_at` or `updated_at`.
    pub sort_by: Option<String>,
    /// `asc` or `desc`.
    pub sort_order: Option<String>,
}

/// `POST /assistants`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct CreateAssistant {
    /// The graph (required).
    pub graph_id: Option<String>,
    /// The assistant's id.
    pub assistant_id: Option<String>,
    /// `raise` (default) or `do_nothing`.
    pub if_exists: Option<String>,
}

/// One update of a superstep.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct SuperstepUpdate {
    /// The update's values.
    pub values: Value,
    /// A command (not supported).
    pub command: Option<Value>,
    /// The node the update is written as.
    pub as_node: Option<String>,
}

/// A superstep of updates applied when a thread is created.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Superstep {
    /// Its updates.
    pub updates: Vec<SuperstepUpdate>,
}

/// `POST /threads`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct CreateThread {
    /// Its id (a UUID; a new one when absent).
    pub thread_id: Option<String>,
    /// Metadata.
    pub metadata: Option<Map<String, Value>>,
    /// What to do when the id exists.
    pub if_exists: Option<IfExists>,
    /// The graph whose state it will hold.
    pub graph_id: Option<String>,
    /// Updates to apply at once.
    pub supersteps: Option<Vec<Superstep>>,
    /// Accepted, not applied.
    pub ttl: Option<Value>,
}

/// `POST /threads/search` and `/threads/count`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct SearchThreads {
    /// Metadata entries that must match.
    pub metadata: Map<String, Value>,
    /// `idle`, `busy`, `interrupted` or `error`.
    pub status: Option<String>,
    /// Only these thread ids.
    pub ids: Option<Vec<String>>,
    /// Page size (1 to 1000, default 10).
    pub limit: Option<i64>,
    /// Page offset.
    pub offset: Option<i64>,
    /// State values that must match.
    pub values: Option<Map<String, Value>>,
    /// `thread_id`, `status`, `created_at`, `updated_at` or `state_updated_at`.
    pub sort_by: Option<String>,
    /// `asc` or `desc`.
    pub sort_order: Option<String>,
    /// Only these fields of each thread.
    pub select: Option<Vec<String>>,
    /// Not supported (422 when given).
    pub extract: Option<Map<String, Value>>,
}

/// `PATCH /threads/{id}`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct PatchThread {
    /// Entries merged into the thread's metadata.
    pub metadata: Map<String, Value>,
    /// Accepted, not applied.
    pub ttl: Option<Value>,
}

/// `POST /threads/prune`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct PruneThreads {
    /// The threads.
    pub thread_ids: Vec<String>,
    /// `delete` (default) or `keep_latest`.
    pub strategy: Option<String>,
}

/// `POST /threads/{id}/state/checkpoint`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct StateAt {
    /// A checkpoint config (`checkpoint_id`, `checkpoint_ns`).
    pub checkpoint: Option<Map<String, Value>>,
    /// A checkpoint id.
    pub checkpoint_id: Option<String>,
}

/// `POST /threads/{id}/state`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct UpdateState {
    /// The update (JSON of the state's update type).
    pub values: Value,
    /// Written as if this node had.
    pub as_node: Option<String>,
    /// A checkpoint config to update from.
    pub checkpoint: Option<Map<String, Value>>,
    /// A checkpoint id to update from.
    pub checkpoint_id: Option<String>,
}

/// `POST /threads/{id}/history`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct HistoryQuery {
    /// At most this many (1 to 1000, default 10).
    pub limit: Option<usize>,
    /// Only checkpoints older than this one (an id or a config).
    pub before: Option<Value>,
    /// Metadata entries that must match.
    pub metadata: Option<Map<String, Value>>,
    /// A checkpoint config (`checkpoint_ns` of a subgraph: none).
    pub checkpoint: Option<Map<String, Value>>,
    /// Only these fields of each state.
    pub select: Option<Vec<String>>,
}

/// A run's command.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct CommandBody {
    /// Answers pending interrupts: one value, or an object of interrupt id to value.
    pub resume: Option<Value>,
    /// An update of the state.
    pub update: Option<Value>,
    /// Node names (or `Send`s naming a node) to run next.
    pub goto: Option<Value>,
}

/// `POST /threads/{id}/runs[/stream|/wait]` and the stateless `/runs...`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct CreateRun {
    /// The assistant (or graph) to run (required).
    pub assistant_id: Option<String>,
    /// The input: an update of the state starting a new turn.
    pub input: Option<Value>,
    /// A command instead of input.
    pub command: Option<CommandBody>,
    /// Fork from this checkpoint config.
    pub checkpoint: Option<Map<String, Value>>,
    /// Fork from this checkpoint.
    pub checkpoint_id: Option<String>,
    /// `recursion_limit`, `configurable.checkpoint_id`.
    pub config: Option<Value>,
    /// Run-scoped context for nodes.
    pub context: Option<Map<String, Value>>,
    /// Metadata of the run.
    pub metadata: Option<Map<String, Value>>,
    /// A stream mode or a list of them.
    pub stream_mode: Option<Value>,
    /// Accepted (graphs here have no subgraphs).
    pub stream_subgraphs: Option<bool>,
    /// Implied: every run can be rejoined.
    pub stream_resumable: Option<bool>,
    /// What to do when the thread is busy (default `reject`).
    pub multitask_strategy: Option<MultitaskStrategy>,
    /// `reject` (default) or `create`.
    pub if_not_exists: Option<String>,
    /// What a disconnect does to the run.
    pub on_disconnect: Option<OnDisconnect>,
    /// A stateless run's thread: `delete` (default) or `keep`.
    pub on_completion: Option<String>,
    /// Not supported (422 when given).
    pub interrupt_before: Option<Value>,
    /// Not supported (422 when given).
    pub interrupt_after: Option<Value>,
    /// Not supported (422 when given).
    pub after_seconds: Option<f64>,
    /// Not supported (422 when given).
    pub webhook: Option<String>,
    /// Accepted, not applied (every step is durable).
    pub durability: Option<String>,
    /// Accepted, not applied.
    pub checkpoint_during: Option<bool>,
    /// Accepted, not applied.
    pub strict_resume: Option<bool>,
}

/// `POST /runs/cancel`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct CancelMany {
    /// The thread of `run_ids`.
    pub thread_id: Option<String>,
    /// The runs.
    pub run_ids: Option<Vec<String>>,
    /// Instead: every `pending`, `running` or `all` active run of the caller.
    pub status: Option<String>,
}

// ---------- query parameters (documented; read as sent, see `common::Params`) ----------

/// `GET /threads/{id}/runs`.
#[derive(Deserialize, JsonSchema)]
pub struct ListRunsParams {
    /// Page size (1 to 1000, default 10).
    pub limit: Option<i64>,
    /// Page offset.
    pub offset: Option<i64>,
    /// Only runs with this status.
    pub status: Option<String>,
    /// Only these fields of each run (comma-separated or repeated).
    pub select: Option<String>,
}

/// `GET /threads/{id}/history`.
#[derive(Deserialize, JsonSchema)]
pub struct HistoryParams {
    /// At most this many (1 to 1000, default 10).
    pub limit: Option<usize>,
    /// Only checkpoints older than this one.
    pub before: Option<String>,
}

/// `GET /threads/{id}/runs/{run_id}/join`.
#[derive(Deserialize, JsonSchema)]
pub struct JoinParams {
    /// Cancel the run when the client leaves.
    pub cancel_on_disconnect: Option<bool>,
}

/// Joining a run's stream.
#[derive(Deserialize, JsonSchema)]
pub struct JoinStreamParams {
    /// Stream modes (default: the run's own), comma-separated or repeated.
    pub stream_mode: Option<String>,
    /// Cancel the run when the client leaves.
    pub cancel_on_disconnect: Option<bool>,
}

/// `POST /threads/{id}/runs/{run_id}/cancel`.
#[derive(Deserialize, JsonSchema)]
pub struct CancelParams {
    /// Wait until the run has stopped, and return it.
    pub wait: Option<bool>,
    /// `interrupt` (keep what it did) or `rollback` (delete it and its checkpoints).
    pub action: Option<String>,
}

/// `POST /runs/cancel`.
#[derive(Deserialize, JsonSchema)]
pub struct CancelManyParams {
    /// `interrupt` or `rollback`.
    pub action: Option<String>,
}

/// `GET /threads/{id}/stream`.
#[derive(Deserialize, JsonSchema)]
pub struct ThreadStreamParams {
    /// `run_modes` (each run with its own modes, the default) or `state_update`.
    pub stream_mode: Option<String>,
}

// ---------- responses ----------

/// `GET /info`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Info {
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
pub struct Assistant {
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
    pub fn of(e: &GraphEntry) -> Self {
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
pub struct Interrupt {
    /// The node's payload.
    pub value: Value,
    /// Its id.
    pub id: String,
}

impl From<&InterruptInfo> for Interrupt {
    fn from(i: &InterruptInfo) -> Self {
        Interrupt {
            value: i.value.clone(),
            id: i.id.clone(),
        }
    }
}

/// A thread with its current values and interrupts.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(transform = all_optional)]
pub struct ThreadOut {
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
    pub fn of(t: &Thread, snap: Option<&DynSnapshot>) -> Self {
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

/// LangGraph's run statuses (a cancelled run is "interrupted").
pub fn api_status(s: RunState) -> &'static str {
    match s {
        RunState::Cancelled => "interrupted",
        other => other.as_str(),
    }
}

/// A run.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(transform = all_optional)]
pub struct RunOut {
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
    /// `pending`, `running`, `success`, `error` or `interrupted`.
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
pub struct CheckpointRef {
    /// The thread.
    pub thread_id: String,
    /// Always `""` (no subgraphs).
    pub checkpoint_ns: String,
    /// The checkpoint.
    pub checkpoint_id: String,
    /// Always null.
    pub checkpoint_map: Option<Value>,
}

impl CheckpointRef {
    /// The config of checkpoint `id` of `thread_id`.
    pub fn new(thread_id: &str, id: &str) -> Self {
        CheckpointRef {
            thread_id: thread_id.to_string(),
            checkpoint_ns: String::new(),
            checkpoint_id: id.to_string(),
            checkpoint_map: None,
        }
    }
}

/// A task due at a checkpoint.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct TaskOut {
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
    /// Always null.
    pub state: Option<Value>,
    /// Always null.
    pub result: Option<Value>,
}

/// A `ThreadState`: the state at a checkpoint.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(transform = all_optional)]
pub struct ThreadState {
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
    /// The state of a thread at a checkpoint.
    pub fn of(thread_id: &str, s: &DynSnapshot) -> Self {
        let mut metadata = s.metadata.clone();
        metadata
            .entry("thread_id")
            .or_insert_with(|| thread_id.into());
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
                    state: None,
                    result: None,
                })
                .collect(),
            checkpoint: Some(CheckpointRef::new(thread_id, &s.checkpoint_id)),
            metadata,
            created_at: Some(iso(s.created_at_ms)),
            parent_checkpoint: s
                .parent_checkpoint_id
                .as_deref()
                .map(|p| CheckpointRef::new(thread_id, p)),
            interrupts: s.interrupts.iter().map(Interrupt::from).collect(),
            checkpoint_id: Some(s.checkpoint_id.clone()),
            parent_checkpoint_id: s.parent_checkpoint_id.clone(),
        }
    }

    /// The state of a thread that has none yet.
    pub fn empty(thread_id: &str) -> Self {
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
pub struct GraphDrawing {
    /// `__start__`, each node, `__end__`.
    pub nodes: Vec<Value>,
    /// Edges (`conditional` for router targets).
    pub edges: Vec<Value>,
    /// The graph as Mermaid.
    pub mermaid: String,
}

/// `GET /assistants/{id}/schemas`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct AssistantSchemas {
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
pub struct Pruned {
    /// Threads pruned.
    pub pruned_count: usize,
}

/// `POST /threads/{id}/state`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct StateUpdated {
    /// The new checkpoint.
    pub checkpoint: CheckpointRef,
    /// The same, as LangGraph's `configurable`.
    pub configurable: CheckpointRef,
}
