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
//! task, so a re-entry of the node never starts the subgraph again nor repeats a resume; a
//! subgraph stopped by a crash before its start was recorded is continued where it stopped,
//! its finished nodes and durable steps not run again.
//! The subgraph's own breakpoints do not apply inside a parent.
//!
//! **Seeing inside.** [`CompiledGraph::get_state_with_subgraphs`] fills each due subgraph
//! task's [`TaskState::state`](crate::TaskState::state) with the subgraph's own state
//! (LangGraph's `get_state(subgraphs=True)`), nested subgraphs included; every subgraph task
//! names its [`TaskState::namespace`](crate::TaskState::namespace) (`"node:task_id"`,
//! LangGraph's `checkpoint_ns`). While a subgraph runs, its step events reach the parent's
//! stream as [`Event::Subgraph`] tagged with that namespace (LangGraph's
//! `stream(subgraphs=True)`).

use std::sync::Arc;

use serde_json::Value;

use crate::checkpoint::Checkpointer;
use crate::context::NodeContext;
use crate::dynamic::DynGraph;
use crate::history::TaskState;
use crate::interrupt::Resume;
use crate::node::{Command, NodeError};

use super::parent::ParentCommand;
use crate::run::{NodeSet, RunConfig, RunError, RunInput, RunStatus};
use crate::state::State;
use crate::stream::{Emitter, Event, EventSink, RunEvent};

use super::builder::{NodeBuilder, StateGraph};
use super::compile::CompiledGraph;

/// The thread a subgraph node's run is stored under: `"{parent thread}|{node}:{task id}"`.
pub fn namespace(parent_thread: &str, node: &str, task_id: &str) -> String {
    format!("{parent_thread}|{}", task_namespace(node, task_id))
}

/// A subgraph task's namespace under its parent: `"{node}:{task id}"` (LangGraph's
/// `checkpoint_ns` of the task).
pub fn task_namespace(node: &str, task_id: &str) -> String {
    format!("{node}:{task_id}")
}

/// The graph and the thread that hold the checkpoints of namespace `ns` (LangGraph's
/// `checkpoint_ns`: `"node:task_id"`, nested ones joined with `|`) of `thread_id` in
/// `graph`; `None` when a part does not name a subgraph node of the graph it is in. An empty
/// `ns` is the graph itself.
pub fn resolve(
    graph: Arc<dyn DynGraph>,
    thread_id: &str,
    ns: &str,
) -> Option<(Arc<dyn DynGraph>, String)> {
    let mut g = graph;
    let mut thread = thread_id.to_string();
    for part in ns.split('|').filter(|p| !p.is_empty()) {
        let (node, task) = part.split_once(':')?;
        if task.is_empty() || task.contains(':') {
            return None;
        }
        g = g.subgraph(node)?;
        thread = namespace(&thread, node, task);
    }
    Some((g, thread))
}

/// A subgraph as its parent holds it, whatever its state type.
pub(crate) trait SubgraphHandle: Send + Sync {
    /// The subgraph storing its checkpoints in `checkpointer` (its parent's).
    fn bind(&self, checkpointer: Arc<dyn Checkpointer>) -> Arc<dyn DynGraph>;
}

impl<S2: State> SubgraphHandle for CompiledGraph<S2> {
    fn bind(&self, checkpointer: Arc<dyn Checkpointer>) -> Arc<dyn DynGraph> {
        Arc::new(
            self.clone()
                .with_checkpointer(checkpointer)
                .with_state_cache(0),
        )
    }
}

impl<S: State> CompiledGraph<S> {
    /// The graph's subgraph nodes, in declaration order, each bound to this graph's
    /// checkpointer.
    pub fn subgraphs(&self) -> Vec<(String, Arc<dyn DynGraph>)> {
        self.graph
            .nodes
            .iter()
            .filter_map(|n| {
                let sub = n.subgraph.as_ref()?;
                Some((n.name.clone(), sub.bind(self.checkpointer.clone())))
            })
            .collect()
    }

    /// The subgraph run by node `node`, if it is a subgraph node.
    pub fn subgraph(&self, node: &str) -> Option<Arc<dyn DynGraph>> {
        let i = *self.graph.index.get(node)?;
        let sub = self.graph.nodes[i].subgraph.as_ref()?;
        Some(sub.bind(self.checkpointer.clone()))
    }

    /// Names the namespace of every subgraph task of `tasks`.
    pub(crate) fn mark_subgraph_tasks(&self, tasks: &mut [TaskState]) {
        for t in tasks {
            let is_sub = self
                .graph
                .index
                .get(&t.name)
                .is_some_and(|i| self.graph.nodes[*i].subgraph.is_some());
            if is_sub {
                t.namespace = Some(task_namespace(&t.name, &t.id));
            }
        }
    }

    /// [`CompiledGraph::get_state_at`] with each due subgraph task's own state in
    /// [`TaskState::state`] (nested subgraphs too), as LangGraph's
    /// `get_state(subgraphs=True)`. A subgraph task that has not started yet has none.
    ///
    /// # Errors
    /// Storage errors, or stored state that does not fit its graph's state type.
    pub async fn get_state_with_subgraphs(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<crate::StateSnapshot<S>>, RunError> {
        let Some(mut snap) = self.get_state_at(thread_id, checkpoint_id).await? else {
            return Ok(None);
        };
        fill_subgraph_states(self, thread_id, &mut snap.tasks).await?;
        Ok(Some(snap))
    }
}

/// Fills the state of every subgraph task of `tasks` (tasks of `graph`'s thread `thread_id`).
pub(crate) async fn fill_subgraph_states<S: State>(
    graph: &CompiledGraph<S>,
    thread_id: &str,
    tasks: &mut [TaskState],
) -> Result<(), RunError> {
    for t in tasks.iter_mut() {
        let Some(sub) = graph.subgraph(&t.name) else {
            continue;
        };
        let inner = namespace(thread_id, &t.name, &t.id);
        t.state = sub.state_with_subgraphs(&inner, None).await?.map(Box::new);
    }
    Ok(())
}

/// Passes a subgraph's step events up to its parent's stream, tagged with its namespace.
struct NestedSink {
    parent: Arc<Emitter>,
    namespace: String,
}

impl EventSink for NestedSink {
    fn send(&self, event: RunEvent) {
        let (mut namespace, event) = match event.event {
            Event::Subgraph { namespace, event } => (namespace, event),
            e if e.mode().is_some() => (Vec::new(), Box::new(e)),
            _ => return,
        };
        namespace.insert(0, self.namespace.clone());
        self.parent
            .emit_with(|| Event::Subgraph { namespace, event });
    }

    fn is_active(&self) -> bool {
        self.parent.is_active()
    }

    fn wants(&self, mode: crate::StreamMode) -> bool {
        self.parent.wants(mode)
    }
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
        let handle: Arc<dyn SubgraphHandle> = Arc::new(sub.clone());
        let mut node = self.add_node(name, move |state: Arc<S>, ctx: NodeContext| {
            let (sub, input, output) = (sub.clone(), input.clone(), output.clone());
            async move {
                let turn = input(&state);
                match run_subgraph(&sub, &ctx, turn).await? {
                    Finished::State(s) => Ok(Command::<S>::with_update(output(&s))),
                    Finished::Parent(p) => parent_command::<S>(p),
                }
            }
        });
        node.spec_mut().subgraph = Some(handle);
        node
    }
}

/// A subgraph's run, as recorded in its parent task's durable steps.
#[derive(serde::Serialize, serde::Deserialize)]
struct Ran {
    completed: bool,
    /// A node of the subgraph sent this command to the parent (the subgraph stopped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parent: Option<ParentCommand>,
}

/// How a subgraph's run ended.
enum Finished<S2> {
    /// At its end, with this state.
    State(Arc<S2>),
    /// A node sent a command to the parent.
    Parent(ParentCommand),
}

/// The parent's command from a subgraph node, as the parent's own command.
fn parent_command<S: State>(p: ParentCommand) -> Result<Command<S>, NodeError> {
    let update = p
        .update
        .map(|u| {
            <S::Update as serde::Deserialize>::deserialize(&u).map_err(|e| {
                NodeError::fatal(format!(
                    "a subgraph's command for its parent has an update that does not fit the parent's state: {e}"
                ))
            })
        })
        .transpose()?;
    Ok(Command {
        update,
        goto: p.goto,
        sends: p.sends,
        parent: None,
    })
}

/// Runs (or continues) the subgraph for the task `ctx` and returns how it ended.
async fn run_subgraph<S2: State>(
    sub: &CompiledGraph<S2>,
    ctx: &NodeContext,
    turn: S2::Update,
) -> Result<Finished<S2>, NodeError> {
    let run = &ctx.inner.run;
    let g = sub
        .clone()
        .with_checkpointer(run.checkpointer.clone())
        .with_state_cache(0);
    let thread = namespace(&run.thread_id, ctx.node(), ctx.task_id());
    let sink: Arc<dyn EventSink> = Arc::new(NestedSink {
        parent: run.emitter.clone(),
        namespace: task_namespace(ctx.node(), ctx.task_id()),
    });
    let config = || {
        let mut cfg = RunConfig::new(&thread)
            .run_id(&run.run_id)
            .cancel(run.cancel.clone())
            .interrupt_before(NodeSet::Nodes(Vec::new()))
            .interrupt_after(NodeSet::Nodes(Vec::new()));
        cfg.context = run.context.clone();
        cfg.stream_modes = run.emitter.modes;
        cfg.store = run.store.clone();
        cfg.durability = run.durability;
        cfg
    };
    // The namespace is this task's own: a checkpoint there was written by an earlier
    // attempt of this task that stopped (a crash, a lost lease) before its start was
    // recorded. Continue it rather than start again, so its finished nodes do not run twice.
    let earlier = g.get_state(&thread).await.map_err(sub_error)?;
    let mut ran: Ran = ctx
        .step("subgraph", async {
            let input = match earlier {
                None => RunInput::Turn(turn),
                Some(s) if !s.interrupts.is_empty() => {
                    return Ok(Ran {
                        completed: false,
                        parent: None,
                    })
                }
                Some(s) if s.next.is_empty() => {
                    return Ok(Ran {
                        completed: true,
                        parent: None,
                    })
                }
                Some(_) => RunInput::Continue,
            };
            ran_of(g.run(config(), input, sink.clone()).await)
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
                ran_of(
                    g.run(config(), RunInput::Resume(resume), sink.clone())
                        .await,
                )
            })
            .await?;
    }
    if let Some(p) = ran.parent {
        return Ok(Finished::Parent(p));
    }
    let snap = g.get_state(&thread).await.map_err(sub_error)?;
    Ok(Finished::State(snap.map(|s| s.values).unwrap_or_default()))
}

fn ran_of<S2: State>(out: Result<crate::RunOutcome<S2>, RunError>) -> Result<Ran, NodeError> {
    if let Err(RunError::Node { error, .. }) = &out {
        if let Some(p) = parent_of(error) {
            return Ok(Ran {
                completed: true,
                parent: Some(p),
            });
        }
    }
    let out = out.map_err(sub_error)?;
    match out.status {
        RunStatus::Completed => Ok(Ran {
            completed: true,
            parent: None,
        }),
        RunStatus::Interrupted(_) => Ok(Ran {
            completed: false,
            parent: None,
        }),
        RunStatus::Cancelled(_) => Err(NodeError::cancelled()),
    }
}

/// The command for the parent a node error carries, if it is one.
fn parent_of(error: &NodeError) -> Option<ParentCommand> {
    error
        .source()
        .and_then(|s| s.downcast_ref::<ParentCommand>())
        .cloned()
}

fn sub_error(e: RunError) -> NodeError {
    let kind = if e.is_transient() {
        crate::ErrorKind::Unavailable
    } else {
        crate::ErrorKind::Fatal
    };
    NodeError::fatal(format!("subgraph failed: {e}")).with_kind(kind)
}
