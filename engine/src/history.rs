//! A thread's history: the state at any checkpoint, the list of checkpoints, and edits
//! (`update_state`) that write a new checkpoint as if a node had written it.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::checkpoint::{ListOptions, LoadedCheckpoint};
use crate::dynamic::DynSnapshot;
use crate::graph::CompiledGraph;
use crate::interrupt::InterruptInfo;
use crate::run::cursor::Cursor;
use crate::run::{update_state, Breakpoint, RunError};
use crate::state::State;

/// A task due at a checkpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskState {
    /// The task's id.
    pub id: String,
    /// The node it runs.
    pub name: String,
    /// Its unanswered interrupts.
    pub interrupts: Vec<InterruptInfo>,
    /// Its error, if it failed.
    pub error: Option<String>,
    /// Whether it finished (its result waits in the pending writes).
    pub done: bool,
    /// A subgraph task's namespace, `"node:task_id"` (LangGraph's `checkpoint_ns`); `None`
    /// for other nodes.
    pub namespace: Option<String>,
    /// A subgraph task's own state, filled by
    /// [`CompiledGraph::get_state_with_subgraphs`] (`None` otherwise, or before it started).
    pub state: Option<Box<DynSnapshot>>,
}

/// A thread's state at one checkpoint.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct StateSnapshot<S: State> {
    /// The state.
    pub values: Arc<S>,
    /// The nodes due next (empty: the graph ended).
    pub next: Vec<String>,
    /// The checkpoint.
    pub checkpoint_id: String,
    /// Its parent.
    pub parent_checkpoint_id: Option<String>,
    /// Its metadata (`source`, `step`, `run_id`, `turn`, ...).
    pub metadata: Map<String, Value>,
    /// When it was written (ms since the epoch).
    pub created_at_ms: i64,
    /// The tasks due, with their interrupts and errors.
    pub tasks: Vec<TaskState>,
    /// Every unanswered interrupt.
    pub interrupts: Vec<InterruptInfo>,
    /// The breakpoint a run stopped at here, if one did (see [`crate::run::breakpoint`]).
    pub breakpoint: Option<Breakpoint>,
}

impl<S: State> StateSnapshot<S> {
    fn from_loaded(loaded: LoadedCheckpoint) -> Result<Self, RunError> {
        Self::from_cursor(Cursor::load(loaded)?)
    }

    fn from_cursor(cur: Cursor<S>) -> Result<Self, RunError> {
        let Some(record) = cur.record.clone() else {
            return Err(RunError::UnknownCheckpoint {
                thread_id: String::new(),
                checkpoint_id: String::new(),
            });
        };
        let interrupts = cur.pending_interrupts();
        let tasks = cur
            .plan
            .tasks
            .iter()
            .map(|t| {
                let w = cur.writes.get(&t.id);
                TaskState {
                    id: t.id.clone(),
                    name: t.node.clone(),
                    interrupts: interrupts
                        .iter()
                        .filter(|i| i.task_id == t.id)
                        .cloned()
                        .collect(),
                    error: w.and_then(|w| w.error.clone()),
                    done: w.is_some_and(|w| w.result.is_some()),
                    namespace: None,
                    state: None,
                }
            })
            .collect();
        Ok(StateSnapshot {
            values: cur.state.clone(),
            next: cur.plan.next_nodes(),
            checkpoint_id: record.checkpoint_id,
            parent_checkpoint_id: record.parent_id,
            metadata: record.metadata,
            created_at_ms: record.created_at_ms,
            tasks,
            interrupts,
            breakpoint: cur.plan.paused.clone(),
        })
    }
}

impl<S: State> CompiledGraph<S> {
    /// The state at the thread's latest checkpoint (`None`: a thread with no checkpoint).
    ///
    /// # Errors
    /// Storage errors, or stored state that does not fit `S`.
    pub async fn get_state(&self, thread_id: &str) -> Result<Option<StateSnapshot<S>>, RunError> {
        self.get_state_at(thread_id, None).await
    }

    /// The state at a given checkpoint (the latest when `checkpoint_id` is `None`).
    ///
    /// # Errors
    /// Storage errors, or stored state that does not fit `S`.
    pub async fn get_state_at(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<StateSnapshot<S>>, RunError> {
        let Some(meta) = self
            .checkpointer
            .get_without_values(thread_id, checkpoint_id)
            .await?
        else {
            return Ok(None);
        };
        let snap = if let Some(state) = self.cache.peek(thread_id, &meta.record.checkpoint_id) {
            StateSnapshot::from_cursor(Cursor::with_state(meta, state)?)?
        } else {
            match self
                .checkpointer
                .get(thread_id, Some(&meta.record.checkpoint_id))
                .await?
            {
                Some(l) => StateSnapshot::from_loaded(l)?,
                None => return Ok(None),
            }
        };
        Ok(Some(self.marked(snap)))
    }

    /// The state at checkpoint `checkpoint_id` of the thread, values only: from the state
    /// cache when it holds that very checkpoint (a checkpoint's state never changes, so no
    /// read is needed: a chat answer read as its run completes costs no statement), else
    /// read as [`CompiledGraph::get_state_at`] reads it.
    ///
    /// # Errors
    /// Storage errors, or stored state that does not fit `S`.
    pub async fn get_values_at(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
    ) -> Result<Option<Arc<S>>, RunError> {
        if let Some(state) = self.cache.peek(thread_id, checkpoint_id) {
            return Ok(Some(state));
        }
        Ok(self
            .get_state_at(thread_id, Some(checkpoint_id))
            .await?
            .map(|s| s.values))
    }

    fn marked(&self, mut snap: StateSnapshot<S>) -> StateSnapshot<S> {
        self.mark_subgraph_tasks(&mut snap.tasks);
        snap
    }

    /// The thread's checkpoints with their states, newest first.
    ///
    /// # Errors
    /// Storage errors, or stored state that does not fit `S`.
    pub async fn get_state_history(
        &self,
        thread_id: &str,
        options: &ListOptions,
    ) -> Result<Vec<StateSnapshot<S>>, RunError> {
        let records = self.checkpointer.list(thread_id, options).await?;
        let mut out = Vec::with_capacity(records.len());
        for r in records {
            if let Some(l) = self
                .checkpointer
                .get(thread_id, Some(&r.checkpoint_id))
                .await?
            {
                out.push(self.marked(StateSnapshot::from_loaded(l)?));
            }
        }
        Ok(out)
    }

    /// Writes a new checkpoint with `update` applied through the reducers as if `as_node`
    /// had returned it; the next tasks are that node's successors. With `as_node: None`
    /// the pending tasks stay due. Based on `checkpoint_id` (default: the latest), so an
    /// edit of an old checkpoint forks the thread; the old history stays. Returns the new
    /// checkpoint's id.
    ///
    /// # Errors
    /// An unknown node or checkpoint, a refused update, storage errors.
    pub async fn update_state(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
        update: S::Update,
        as_node: Option<&str>,
    ) -> Result<String, RunError> {
        update_state(self, thread_id, checkpoint_id, Some(update), as_node).await
    }
}
