//! Graphs driven with JSON: [`DynGraph`] erases a graph's state type so a server can hold
//! many graphs in one registry and run them from request bodies.
//!
//! Inputs and updates are decoded into the state's update type (unknown fields are refused
//! with [`RunError::InvalidInput`]); states are returned as JSON. A run's input is one
//! serializable [`DynInput`] from an HTTP body to the executor: a server checks it once with
//! [`DynGraph::check_input`] (the rules the run applies), stores what that returns, and runs
//! it as it is.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::checkpoint::{Checkpointer, Fence, ListOptions};
use crate::graph::CompiledGraph;
use crate::history::{StateSnapshot, TaskState};
use crate::interrupt::{InterruptInfo, Resume};
use crate::node::Command;
use crate::run::{Breakpoint, RunConfig, RunError, RunInput, RunStatus};
use crate::state::{FieldInfo, State, StateError};
use crate::stream::EventSink;

/// What starts a run, in JSON: [`RunInput`] with the state's update as JSON.
///
/// Its JSON form (externally tagged, stable; what a server stores in its run rows):
///
/// | input | JSON |
/// |---|---|
/// | a new turn | `{"turn": <the state's update>}` |
/// | a resume with one value | `{"resume": {"value": <any JSON>}}` |
/// | a resume by interrupt id | `{"resume": {"by_id": {"<interrupt id>": <any JSON>}}}` |
/// | continue | `"continue"` |
/// | a command | `{"command": {"update": <the state's update>, "goto": ["node", ...], "sends": [{"node": "n", "arg": <any JSON>}, ...]}}` |
///
/// A command's `update`, `goto` and `sends` may each be left out (no update; follow the
/// pending tasks); unknown keys are refused.
///
/// ```
/// use palgraph::dynamic::DynInput;
/// use palgraph::Resume;
///
/// let input: DynInput = serde_json::from_str(r#"{"resume": {"value": "yes"}}"#)?;
/// assert_eq!(input, DynInput::Resume(Resume::Value("yes".into())));
/// assert_eq!(serde_json::to_string(&DynInput::Continue)?, r#""continue""#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum DynInput {
    /// A new turn with this input (the state's update, as JSON).
    Turn(Value),
    /// Resume pending interrupts.
    Resume(Resume),
    /// Continue from the checkpoint's pending tasks.
    Continue,
    /// Apply an update and/or go to nodes, then continue.
    Command {
        /// The update (JSON of the state's update type).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        update: Option<Value>,
        /// Nodes to run next.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        goto: Vec<String>,
        /// Tasks to start next, one per send, each with its own input (see [`crate::send`]).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        sends: Vec<crate::send::Send>,
    },
}

impl DynInput {
    /// The typed input: updates decoded into `S`'s update type.
    ///
    /// # Errors
    /// [`RunError::InvalidInput`] when an update does not fit `S`.
    pub fn typed<S: State>(&self) -> Result<RunInput<S>, RunError> {
        Ok(match self {
            DynInput::Turn(v) => RunInput::Turn(decode::<S>(v)?),
            DynInput::Resume(r) => RunInput::Resume(r.clone()),
            DynInput::Continue => RunInput::Continue,
            DynInput::Command {
                update,
                goto,
                sends,
            } => RunInput::Command(Command {
                update: update.as_ref().map(decode::<S>).transpose()?,
                goto: goto.clone(),
                sends: sends.clone(),
                parent: None,
            }),
        })
    }
}

/// How a run ended, with the state as JSON.
#[derive(Clone, Debug)]
pub struct DynOutcome {
    /// The status.
    pub status: RunStatus,
    /// The state at the latest checkpoint.
    pub values: Value,
    /// The latest checkpoint.
    pub checkpoint_id: Option<String>,
}

/// A thread's state at one checkpoint, as JSON.
#[derive(Clone, Debug, PartialEq)]
pub struct DynSnapshot {
    /// The state.
    pub values: Value,
    /// Nodes due next.
    pub next: Vec<String>,
    /// The checkpoint.
    pub checkpoint_id: String,
    /// Its parent.
    pub parent_checkpoint_id: Option<String>,
    /// Its metadata.
    pub metadata: Map<String, Value>,
    /// When it was written (ms since the epoch).
    pub created_at_ms: i64,
    /// Tasks due, with interrupts and errors.
    pub tasks: Vec<TaskState>,
    /// Unanswered interrupts.
    pub interrupts: Vec<InterruptInfo>,
    /// The breakpoint a run stopped at here, if one did.
    pub breakpoint: Option<Breakpoint>,
}

/// A graph whose state is handled as JSON.
#[async_trait]
pub trait DynGraph: Send + Sync {
    /// The state's fields.
    fn fields(&self) -> &'static [FieldInfo];
    /// Node names in declaration order.
    fn nodes(&self) -> Vec<String>;
    /// A node's declared status line.
    fn node_status(&self, node: &str) -> Option<String>;
    /// The graph as Mermaid.
    fn mermaid(&self) -> String;
    /// The JSON schema of the state's values ([`State::json_schema`]).
    fn state_schema(&self) -> Value {
        crate::schema::fields_schema("State", self.fields(), false)
    }
    /// The JSON schema of a turn's input, the state's update
    /// ([`State::update_json_schema`]).
    fn update_schema(&self) -> Value {
        crate::schema::fields_schema("State", self.fields(), true)
    }
    /// The checkpointer.
    fn checkpointer(&self) -> Arc<dyn Checkpointer>;
    /// The graph's subgraph nodes and their graphs, bound to this graph's checkpointer
    /// (see [`crate::graph::subgraph`]).
    fn subgraphs(&self) -> Vec<(String, Arc<dyn DynGraph>)> {
        Vec::new()
    }
    /// The subgraph node `node` runs, if it is one.
    fn subgraph(&self, node: &str) -> Option<Arc<dyn DynGraph>> {
        self.subgraphs()
            .into_iter()
            .find_map(|(n, g)| (n == node).then_some(g))
    }
    /// [`DynGraph::state`] with each due subgraph task's own state in
    /// [`TaskState::state`] (see [`CompiledGraph::get_state_with_subgraphs`]).
    ///
    /// # Errors
    /// Storage errors, or stored state that does not fit a state type.
    async fn state_with_subgraphs(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<DynSnapshot>, RunError> {
        self.state(thread_id, checkpoint_id).await
    }
    /// Checks `input` for a run on `thread_id` (from `checkpoint_id`, else the latest
    /// checkpoint) by the rules the run applies, without running or writing anything, and
    /// returns it as the run will take it (a resume keyed by interrupt ids becomes
    /// [`Resume::ById`]). See [`CompiledGraph::check_input`].
    ///
    /// # Errors
    /// [`RunError::InvalidInput`] when an update does not fit the state; the refusals of
    /// [`CompiledGraph::check_input`]; storage errors.
    async fn check_input(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
        input: DynInput,
    ) -> Result<DynInput, RunError>;
    /// Runs, sending events to `sink`.
    async fn run(
        &self,
        config: RunConfig,
        input: DynInput,
        sink: Arc<dyn EventSink>,
    ) -> Result<DynOutcome, RunError>;
    /// Runs like [`DynGraph::run`] and returns only how the run ended: the final state is
    /// not turned into JSON (a server reads it from the checkpoint when a client asks).
    async fn run_to_status(
        &self,
        config: RunConfig,
        input: DynInput,
        sink: Arc<dyn EventSink>,
    ) -> Result<RunStatus, RunError> {
        self.run(config, input, sink).await.map(|o| o.status)
    }
    /// The state at a checkpoint (the latest when `None`).
    async fn state(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<DynSnapshot>, RunError>;
    /// The interrupts pending at the thread's head (none when it has no checkpoint), without
    /// the state's values built as JSON: what a caller that only asks whether the thread
    /// waits at a prompt needs, at a cost that does not grow with the conversation.
    ///
    /// # Errors
    /// Storage errors, or stored state that does not fit a state type.
    async fn pending_interrupts(&self, thread_id: &str) -> Result<Vec<InterruptInfo>, RunError> {
        Ok(self
            .state(thread_id, None)
            .await?
            .map(|s| s.interrupts)
            .unwrap_or_default())
    }
    /// The state's values at checkpoint `checkpoint_id` (a checkpoint's state never
    /// changes: a graph may answer from memory; see [`CompiledGraph::get_values_at`]).
    ///
    /// # Errors
    /// Storage errors, or stored state that does not fit a state type.
    async fn values_at(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
    ) -> Result<Option<Value>, RunError> {
        Ok(self
            .state(thread_id, Some(checkpoint_id))
            .await?
            .map(|s| s.values))
    }
    /// [`DynGraph::values_at`] with only the named fields (names that are not fields of
    /// the state are left out): what a caller that reads a few fields of a long state (a
    /// conversation's whole history, say) needs, without the rest built.
    ///
    /// # Errors
    /// Storage errors, or stored state that does not fit a state type.
    async fn fields_at(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
        fields: &[&str],
    ) -> Result<Option<Value>, RunError> {
        Ok(self
            .values_at(thread_id, checkpoint_id)
            .await?
            .map(|v| match v {
                Value::Object(mut all) => Value::Object(
                    fields
                        .iter()
                        .filter_map(|f| all.remove(*f).map(|x| ((*f).to_string(), x)))
                        .collect(),
                ),
                other => other,
            }))
    }
    /// History, newest first.
    async fn history(
        &self,
        thread_id: &str,
        options: &ListOptions,
    ) -> Result<Vec<DynSnapshot>, RunError>;
    /// `update_state` with a JSON update.
    async fn update_state(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
        values: Value,
        as_node: Option<&str>,
    ) -> Result<String, RunError>;
    /// Forgets a thread's cached state (after deleting or rewriting its storage).
    fn forget(&self, thread_id: &str);
    /// Records a run's failure on its thread (see [`CompiledGraph::record_failure`]).
    async fn record_failure(
        &self,
        thread_id: &str,
        run_id: &str,
        node: Option<&str>,
        message: &str,
        fence: Option<&Fence>,
    ) -> Result<bool, RunError>;
    /// Settles a failed turn with a JSON update (see [`CompiledGraph::settle_failed_turn`]).
    async fn settle_failed_turn(
        &self,
        thread_id: &str,
        run_id: &str,
        update: Value,
        fence: Option<&Fence>,
    ) -> Result<Option<String>, RunError>;
}

fn decode<S: State>(v: &Value) -> Result<S::Update, RunError> {
    <S::Update as Deserialize>::deserialize(v).map_err(|e| RunError::InvalidInput(e.to_string()))
}

fn snapshot<S: State>(s: StateSnapshot<S>) -> DynSnapshot {
    DynSnapshot {
        values: serde_json::to_value(&*s.values).unwrap_or(Value::Null),
        next: s.next,
        checkpoint_id: s.checkpoint_id,
        parent_checkpoint_id: s.parent_checkpoint_id,
        metadata: s.metadata,
        created_at_ms: s.created_at_ms,
        tasks: s.tasks,
        interrupts: s.interrupts,
        breakpoint: s.breakpoint,
    }
}

#[async_trait]
impl<S: State> DynGraph for CompiledGraph<S> {
    fn fields(&self) -> &'static [FieldInfo] {
        S::FIELDS
    }

    fn state_schema(&self) -> Value {
        S::json_schema()
    }

    fn update_schema(&self) -> Value {
        S::update_json_schema()
    }

    fn nodes(&self) -> Vec<String> {
        self.node_names().into_iter().map(str::to_string).collect()
    }

    fn node_status(&self, node: &str) -> Option<String> {
        CompiledGraph::node_status(self, node).map(str::to_string)
    }

    fn mermaid(&self) -> String {
        CompiledGraph::mermaid(self).to_string()
    }

    fn checkpointer(&self) -> Arc<dyn Checkpointer> {
        CompiledGraph::checkpointer(self).clone()
    }

    fn subgraphs(&self) -> Vec<(String, Arc<dyn DynGraph>)> {
        CompiledGraph::subgraphs(self)
    }

    fn subgraph(&self, node: &str) -> Option<Arc<dyn DynGraph>> {
        CompiledGraph::subgraph(self, node)
    }

    async fn state_with_subgraphs(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<DynSnapshot>, RunError> {
        Ok(self
            .get_state_with_subgraphs(thread_id, checkpoint_id)
            .await?
            .map(snapshot))
    }

    async fn check_input(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
        input: DynInput,
    ) -> Result<DynInput, RunError> {
        let typed = input.typed::<S>()?;
        let checked = CompiledGraph::check_input(self, thread_id, checkpoint_id, typed).await?;
        Ok(match (input, checked) {
            (DynInput::Resume(_), RunInput::Resume(normalized)) => DynInput::Resume(normalized),
            (input, _) => input,
        })
    }

    async fn run(
        &self,
        config: RunConfig,
        input: DynInput,
        sink: Arc<dyn EventSink>,
    ) -> Result<DynOutcome, RunError> {
        let input = input.typed::<S>()?;
        let out = CompiledGraph::run(self, config, input, sink).await?;
        Ok(DynOutcome {
            values: serde_json::to_value(&*out.state).unwrap_or(Value::Null),
            status: out.status,
            checkpoint_id: out.checkpoint_id,
        })
    }

    async fn run_to_status(
        &self,
        config: RunConfig,
        input: DynInput,
        sink: Arc<dyn EventSink>,
    ) -> Result<RunStatus, RunError> {
        let input = input.typed::<S>()?;
        Ok(CompiledGraph::run(self, config, input, sink).await?.status)
    }

    async fn state(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<DynSnapshot>, RunError> {
        Ok(self
            .get_state_at(thread_id, checkpoint_id)
            .await?
            .map(snapshot))
    }

    async fn pending_interrupts(&self, thread_id: &str) -> Result<Vec<InterruptInfo>, RunError> {
        Ok(self
            .get_state_at(thread_id, None)
            .await?
            .map(|s| s.interrupts)
            .unwrap_or_default())
    }

    async fn values_at(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
    ) -> Result<Option<Value>, RunError> {
        Ok(self
            .get_values_at(thread_id, checkpoint_id)
            .await?
            .map(|v| serde_json::to_value(&*v).unwrap_or(Value::Null)))
    }

    async fn fields_at(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
        fields: &[&str],
    ) -> Result<Option<Value>, RunError> {
        let Some(state) = self.get_values_at(thread_id, checkpoint_id).await? else {
            return Ok(None);
        };
        let mut out = Map::new();
        for name in fields {
            let Some(idx) = S::field_index(name) else {
                continue;
            };
            let raw = state.field_raw(idx).map_err(StateError::Encode)?;
            let value = serde_json::from_str(raw.get()).map_err(StateError::Encode)?;
            out.insert((*name).to_string(), value);
        }
        Ok(Some(Value::Object(out)))
    }

    async fn history(
        &self,
        thread_id: &str,
        options: &ListOptions,
    ) -> Result<Vec<DynSnapshot>, RunError> {
        Ok(self
            .get_state_history(thread_id, options)
            .await?
            .into_iter()
            .map(snapshot)
            .collect())
    }

    async fn update_state(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
        values: Value,
        as_node: Option<&str>,
    ) -> Result<String, RunError> {
        let update = decode::<S>(&values)?;
        CompiledGraph::update_state(self, thread_id, checkpoint_id, update, as_node).await
    }

    fn forget(&self, thread_id: &str) {
        self.forget_cached(thread_id);
    }

    async fn record_failure(
        &self,
        thread_id: &str,
        run_id: &str,
        node: Option<&str>,
        message: &str,
        fence: Option<&Fence>,
    ) -> Result<bool, RunError> {
        CompiledGraph::record_failure(self, thread_id, run_id, node, message, fence).await
    }

    async fn settle_failed_turn(
        &self,
        thread_id: &str,
        run_id: &str,
        update: Value,
        fence: Option<&Fence>,
    ) -> Result<Option<String>, RunError> {
        CompiledGraph::settle_failed_turn(self, thread_id, run_id, decode::<S>(&update)?, fence)
            .await
    }
}
