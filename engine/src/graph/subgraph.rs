//! Subgraphs: a compiled graph used as a node of another graph.
//!
//! [`StateGraph::add_subgraph`] adds a node that maps the parent's state to the subgraph's
//! input, runs the subgraph as a new turn, and maps its final state back to the parent's
//! update. The subgraph's checkpoints are stored in the parent's checkpointer under its own
//! *namespace*: the thread `"{parent thread}|{node}:{task id}"` (see [`namespace`]), so each
//! invocation starts fresh, as a LangGraph subgraph does by default, and its history can be
//! read with the subgraph's `get_state` on that thread.
//!
//! An interrupt inside the subgraph suspends the parent node with the same payload; a resume
//! of the parent is passed on to the subgraph (by interrupt id), which continues where it
//! stopped. Starting the subgraph and every resume of it are durable steps of the parent's
//! task, so a re-entry of the node never starts the subgraph again nor repeats a resume.
//! The subgraph's own breakpoints do not apply inside a parent; its events are not streamed.

use std::sync::Arc;

use serde_json::Value;

use crate::context::NodeContext;
use crate::interrupt::Resume;
use crate::node::NodeError;
use crate::run::{NodeSet, RunConfig, RunError, RunInput, RunStatus};
use crate::state::State;

use super::builder::{NodeBuilder, StateGraph};
use super::compile::CompiledGraph;

/// The thread a subgraph node's run is stored under: `"{parent thread}|{node}:{task id}"`.
pub fn namespace(parent_thread: &str, node: &str, task_id: &str) -> String {
    format!("{parent_thread}|{node}:{task_id}")
}

impl<S: State> StateGraph<S> {
    /// Adds `sub` as the node `name`: `input` maps this graph's state to the subgraph's
    /// input, `output` maps the subgraph's final state to this graph's update (see
    /// [`crate::graph::subgraph`]).
    pub fn add_subgraph<S2, I, O>(
        &mut self,
        name: impl Into<String>,
        sub: CompiledGraph<S2>,
        input: I,
        output: O,
    ) -> NodeBuilder<'_, S>
    where
        S2: State,
        I: Fn(&S) -> S2::Update + Send + Sync + 'static,
        O: Fn(&S2) -> S::Update + Send + Sync + 'static,
    {
        let input = Arc::new(input);
        let output = Arc::new(output);
        self.add_node(name, move |state: Arc<S>, ctx: NodeContext| {
            let (sub, input, output) = (sub.clone(), input.clone(), output.clone());
            async move {
                let turn = input(&state);
                let final_state = run_subgraph(&sub, &ctx, turn).await?;
                Ok::<_, NodeError>(crate::node::Command::<S>::with_update(output(&final_state)))
            }
        })
    }
}

/// A subgraph's run, as recorded in its parent task's durable steps.
#[derive(serde::Serialize, serde::Deserialize)]
struct Ran {
    completed: bool,
}

/// Runs (or continues) the subgraph for the task `ctx` and returns its final state.
async fn run_subgraph<S2: State>(
    sub: &CompiledGraph<S2>,
    ctx: &NodeContext,
    turn: S2::Update,
) -> Result<Arc<S2>, NodeError> {
    let run = &ctx.inner.run;
    let g = sub
        .clone()
        .with_checkpointer(run.checkpointer.clone())
        .with_state_cache(0);
    let thread = namespace(&run.thread_id, ctx.node(), ctx.task_id());
    let config = || {
        let mut cfg = RunConfig::new(&thread)
            .run_id(&run.run_id)
            .cancel(run.cancel.clone())
            .interrupt_before(NodeSet::Nodes(Vec::new()))
            .interrupt_after(NodeSet::Nodes(Vec::new()));
        cfg.context = run.context.clone();
        cfg.store = run.store.clone();
        cfg
    };
    let mut ran: Ran = ctx
        .step("subgraph", async {
            let out = g.invoke(config(), RunInput::Turn(turn)).await;
            ran_of(out)
        })
        .await?;
    while !ran.completed {
        let pending = g
            .get_state(&thread)
            .await
            .map_err(sub_error)?
            .map(|s| s.interrupts)
            .unwrap_or_default();
        let Some(first) = pending.into_iter().next() else {
            break;
        };
        let answer: Value = ctx.interrupt(&first.value)?;
        ran = ctx
            .step("subgraph_resume", async {
                let resume = Resume::ById([(first.id.clone(), answer)].into_iter().collect());
                ran_of(g.invoke(config(), RunInput::Resume(resume)).await)
            })
            .await?;
    }
    let snap = g.get_state(&thread).await.map_err(sub_error)?;
    Ok(snap.map(|s| s.values).unwrap_or_default())
}

fn ran_of<S2: State>(out: Result<crate::RunOutcome<S2>, RunError>) -> Result<Ran, NodeError> {
    match out.map_err(sub_error)?.status {
        RunStatus::Completed => Ok(Ran { completed: true }),
        RunStatus::Interrupted(_) => Ok(Ran { completed: false }),
        RunStatus::Cancelled(_) => Err(NodeError::cancelled()),
    }
}

fn sub_error(e: RunError) -> NodeError {
    let kind = if e.is_transient() {
        crate::ErrorKind::Unavailable
    } else {
        crate::ErrorKind::Fatal
    };
    NodeError::fatal(format!("subgraph failed: {e}")).with_kind(kind)
}
