//! The request bodies and query parameters of the LangGraph Agent Server API.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use palgraph::NodeSet;

use super::run_fields::{Goto, RunConfigBody, StreamModes};
use crate::contract::OnDisconnect;
use crate::store::{IfExists, MultitaskStrategy};

/// `POST /assistants/search` and `/assistants/count`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct AssistantSearch {
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
pub(crate) struct CreateAssistant {
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
pub(crate) struct SuperstepUpdate {
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
pub(crate) struct Superstep {
    /// Its updates.
    pub updates: Vec<SuperstepUpdate>,
}

/// `POST /threads`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct CreateThread {
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
    /// Its time to live: minutes after its last change, or `{"strategy": "delete" |
    /// "keep_latest", "ttl": minutes}` (see `thread_ttl`).
    pub ttl: Option<Value>,
}

/// `POST /threads/search` and `/threads/count`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct SearchThreads {
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
pub(crate) struct PatchThread {
    /// Entries merged into the thread's metadata.
    pub metadata: Map<String, Value>,
    /// Its time to live: minutes after its last change, or `{"strategy": "delete" |
    /// "keep_latest", "ttl": minutes}` (see `thread_ttl`).
    pub ttl: Option<Value>,
}

/// `POST /threads/prune`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct PruneThreads {
    /// The threads.
    pub thread_ids: Vec<String>,
    /// `delete` (default) or `keep_latest`.
    pub strategy: Option<String>,
}

/// `POST /threads/{id}/state/checkpoint`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct StateAt {
    /// A checkpoint config (`checkpoint_id`, `checkpoint_ns`: a subgraph's namespace).
    pub checkpoint: Option<Map<String, Value>>,
    /// A checkpoint id.
    pub checkpoint_id: Option<String>,
    /// Include each subgraph task's own state.
    pub subgraphs: Option<bool>,
}

/// `GET /assistants/{id}/subgraphs[/{namespace}]`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[expect(
    dead_code,
    reason = "documents the query for `Params`, which reads it by name"
)]
pub(crate) struct SubgraphParams {
    /// Also list the subgraphs of subgraphs.
    pub recurse: Option<bool>,
}

/// `GET /threads/{id}/state[/{checkpoint_id}]`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[expect(
    dead_code,
    reason = "documents the query for `Params`, which reads it by name"
)]
pub(crate) struct StateParams {
    /// Include each subgraph task's own state (`tasks[].state`).
    pub subgraphs: Option<bool>,
}

/// `POST /threads/{id}/state`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct UpdateState {
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
pub(crate) struct HistoryQuery {
    /// At most this many (1 to 1000, default 10).
    pub limit: Option<usize>,
    /// Only checkpoints older than this one (an id or a config).
    pub before: Option<Value>,
    /// Metadata entries that must match.
    pub metadata: Option<Map<String, Value>>,
    /// A checkpoint config (`checkpoint_ns`: a subgraph's history).
    pub checkpoint: Option<Map<String, Value>>,
    /// Only these fields of each state.
    pub select: Option<Vec<String>>,
}

/// A run's command.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct CommandBody {
    /// Answers pending interrupts: one value, or an object of interrupt id to value.
    pub resume: Option<Value>,
    /// An update of the state.
    pub update: Option<Value>,
    /// Node names and `Send`s (`{"node": .., "input": ..}`: a task of that node with its
    /// own input) to run next.
    #[schemars(with = "Option<super::run_fields::GotoSchema>")]
    pub goto: Option<Goto>,
}

/// `POST /threads/{id}/runs[/stream|/wait]` and the stateless `/runs...`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct CreateRun {
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
    /// `recursion_limit`, `max_concurrency` (positive integers), `configurable.checkpoint_id`
    /// (fork from it); the rest is kept with the run.
    pub config: Option<RunConfigBody>,
    /// Run-scoped context for nodes.
    pub context: Option<Map<String, Value>>,
    /// Metadata of the run.
    pub metadata: Option<Map<String, Value>>,
    /// A stream mode or a list of them (default `values`).
    #[schemars(with = "Option<super::run_fields::StreamModesSchema>")]
    pub stream_mode: Option<StreamModes>,
    /// Stream subgraphs' events too, as `<mode>|<namespace>` events.
    pub stream_subgraphs: Option<bool>,
    /// Implied: every run can be rejoined.
    pub stream_resumable: Option<bool>,
    /// What to do when the thread is busy (default `reject`).
    pub multitask_strategy: Option<MultitaskStrategy>,
    /// A thread that does not exist: `reject` (404, the default) or `create`.
    pub if_not_exists: Option<IfNotExists>,
    /// What a disconnect does to the run.
    pub on_disconnect: Option<OnDisconnect>,
    /// A stateless run's thread: `delete` (the default) or `keep`.
    pub on_completion: Option<OnCompletion>,
    /// Breakpoints: stop before these nodes run (`"*"` or a list of node names; `[]`: none
    /// for this run; absent: the graph's own).
    #[schemars(with = "Option<super::run_fields::BreakpointsSchema>")]
    pub interrupt_before: Option<NodeSet>,
    /// Breakpoints: stop after these nodes ran (as `interrupt_before`).
    #[schemars(with = "Option<super::run_fields::BreakpointsSchema>")]
    pub interrupt_after: Option<NodeSet>,
    /// Not supported (422 when given).
    pub after_seconds: Option<f64>,
    /// Not supported (422 when given).
    pub webhook: Option<String>,
    /// When each step's checkpoint is stored: `sync` (before the next step; the default),
    /// `async` (while it runs); `exit` is served as `async` (every step stays durable).
    pub durability: Option<DurabilityMode>,
    /// Accepted, not applied.
    pub checkpoint_during: Option<bool>,
    /// Accepted, not applied.
    pub strict_resume: Option<bool>,
}

/// What a run does when its thread does not exist.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum IfNotExists {
    /// 404.
    #[default]
    Reject,
    /// The thread is created.
    Create,
}

/// What becomes of a stateless run's thread when the run ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum OnCompletion {
    /// Deleted.
    #[default]
    Delete,
    /// Kept.
    Keep,
}

/// LangGraph's names of when a step's checkpoint is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum DurabilityMode {
    /// Before the next step begins.
    Sync,
    /// While the next step runs.
    Async,
    /// Only the last checkpoint (served as `async`: every step stays durable).
    Exit,
}

impl DurabilityMode {
    /// The engine's mode.
    pub(crate) fn engine(self) -> palgraph::Durability {
        match self {
            DurabilityMode::Sync => palgraph::Durability::Sync,
            DurabilityMode::Async | DurabilityMode::Exit => palgraph::Durability::Async,
        }
    }
}

/// `POST /runs/cancel`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct CancelMany {
    /// The thread of `run_ids`.
    pub thread_id: Option<String>,
    /// The runs.
    pub run_ids: Option<Vec<String>>,
    /// Instead: every `pending`, `running` or `all` active run of the caller.
    pub status: Option<String>,
}

// ---------- query parameters (documented; read as sent, see `common::Params`) ----------
//
// These types describe the parameters in the OpenAPI document only: their fields are read
// by name from the query as sent, so the compiler sees no reader.

/// `GET /threads/{id}/runs`.
#[derive(Deserialize, JsonSchema)]
#[expect(
    dead_code,
    reason = "documents the query for `Params`, which reads it by name"
)]
pub(crate) struct ListRunsParams {
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
#[expect(
    dead_code,
    reason = "documents the query for `Params`, which reads it by name"
)]
pub(crate) struct HistoryParams {
    /// At most this many (1 to 1000, default 10).
    pub limit: Option<usize>,
    /// Only checkpoints older than this one.
    pub before: Option<String>,
}

/// `GET /threads/{id}/runs/{run_id}/join`.
#[derive(Deserialize, JsonSchema)]
#[expect(
    dead_code,
    reason = "documents the query for `Params`, which reads it by name"
)]
pub(crate) struct JoinParams {
    /// Cancel the run when the client leaves.
    pub cancel_on_disconnect: Option<bool>,
}

/// Joining a run's stream.
#[derive(Deserialize, JsonSchema)]
#[expect(
    dead_code,
    reason = "documents the query for `Params`, which reads it by name"
)]
pub(crate) struct JoinStreamParams {
    /// Stream modes (default: the run's own), comma-separated or repeated.
    pub stream_mode: Option<String>,
    /// Cancel the run when the client leaves.
    pub cancel_on_disconnect: Option<bool>,
}

/// `POST /threads/{id}/runs/{run_id}/cancel`.
#[derive(Deserialize, JsonSchema)]
#[expect(
    dead_code,
    reason = "documents the query for `Params`, which reads it by name"
)]
pub(crate) struct CancelParams {
    /// Wait until the run has stopped, and return it.
    pub wait: Option<bool>,
    /// `interrupt` (keep what it did) or `rollback` (delete it and its checkpoints).
    pub action: Option<String>,
}

/// `POST /runs/cancel`.
#[derive(Deserialize, JsonSchema)]
#[expect(
    dead_code,
    reason = "documents the query for `Params`, which reads it by name"
)]
pub(crate) struct CancelManyParams {
    /// `interrupt` or `rollback`.
    pub action: Option<String>,
}

/// `GET /threads/{id}/stream`.
#[derive(Deserialize, JsonSchema)]
#[expect(
    dead_code,
    reason = "documents the query for `Params`, which reads it by name"
)]
pub(crate) struct ThreadStreamParams {
    /// `run_modes` (each run with its own modes, the default) or `state_update`.
    pub stream_mode: Option<String>,
}
