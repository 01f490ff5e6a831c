//! Planning: which tasks are due next, stored in each checkpoint as its plan.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::graph::{GraphInner, RouterSpec, Target, END};
use crate::send::Send;
use crate::state::State;

use super::RunError;

/// The source [`RunError::SendLimit`] names for a command's sends.
pub(crate) const INPUT_SOURCE: &str = "__input__";

/// Fails when `planned` tasks for one step are over `limit`.
pub(crate) fn check_task_count(source: &str, planned: usize, limit: usize) -> Result<(), RunError> {
    if planned > limit {
        return Err(RunError::SendLimit {
            source_name: source.to_string(),
            planned,
            limit,
        });
    }
    Ok(())
}

impl NextTargets {
    /// How many tasks these targets plan (END is no task).
    pub(crate) fn task_count(&self) -> usize {
        self.nodes
            .iter()
            .filter(|t| matches!(t, Target::Node(_)))
            .count()
            + self.sends.len()
    }
}

/// What planned a step's tasks, for [`RunError::SendLimit`]: the distinct nodes that
/// finished, in order.
pub(crate) fn planners(finished: &[Finished]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for f in finished {
        if !names.contains(&f.node.as_str()) {
            names.push(&f.node);
        }
    }
    names.join(", ")
}

/// A task due in the next step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TaskPlan {
    pub(crate) node: String,
    pub(crate) id: String,
    /// The task's own input, when a [`Send`] started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) arg: Option<serde_json::Value>,
}

/// What comes next: nodes (from edges, routers, joins, goto) and sends.
#[derive(Debug, Default)]
pub(crate) struct NextTargets {
    pub(crate) nodes: BTreeSet<Target>,
    pub(crate) sends: Vec<Send>,
}

/// A task that finished in a step: its node, and where it said to go (empty: its edges).
pub(crate) struct Finished {
    pub(crate) node: String,
    pub(crate) goto: Vec<String>,
    pub(crate) sends: Vec<Send>,
}

/// Bytes of deltas written since a field's last snapshot, and that snapshot's size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DeltaCounter {
    pub(crate) since: u64,
    pub(crate) snapshot: u64,
}

/// What a checkpoint stores beyond field versions: the tasks due next, the state of join
/// barriers, and per-field delta counters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Plan {
    #[serde(default)]
    pub(crate) tasks: Vec<TaskPlan>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) barriers: BTreeMap<String, Vec<String>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) counters: BTreeMap<String, DeltaCounter>,
    /// Deferred tasks waiting until nothing else is due.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) deferred: Vec<TaskPlan>,
    /// The breakpoint a run stopped at, at this checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) paused: Option<super::breakpoint::Breakpoint>,
}

impl Plan {
    pub(crate) fn next_nodes(&self) -> Vec<String> {
        self.tasks.iter().map(|t| t.node.clone()).collect()
    }
}

/// New tasks: the nodes (in node declaration order), then one per send (in order).
pub(crate) fn tasks_for<S: State>(graph: &GraphInner<S>, next: &NextTargets) -> Vec<TaskPlan> {
    let nodes = next.nodes.iter().filter_map(|t| match t {
        Target::Node(i) => Some(TaskPlan {
            node: graph.nodes[*i].name.clone(),
            id: uuid::Uuid::new_v4().to_string(),
            arg: None,
        }),
        Target::End => None,
    });
    let sends = next.sends.iter().map(|s| TaskPlan {
        node: s.node.clone(),
        id: uuid::Uuid::new_v4().to_string(),
        arg: Some(s.arg.clone()),
    });
    nodes.chain(sends).collect()
}

/// Splits the planned tasks into those due now and deferred ones (nodes built with
/// `defer()`): deferred tasks join `carried` (the ones already waiting; a node waits once,
/// a send's task each time) and are only due when nothing else is. Returns (due, waiting).
pub(crate) fn schedule<S: State>(
    graph: &GraphInner<S>,
    carried: Vec<TaskPlan>,
    planned: Vec<TaskPlan>,
) -> (Vec<TaskPlan>, Vec<TaskPlan>) {
    let deferred = |t: &TaskPlan| {
        graph
            .index
            .get(t.node.as_str())
            .is_some_and(|i| graph.nodes[*i].defer)
    };
    let (later, now): (Vec<TaskPlan>, Vec<TaskPlan>) = planned.into_iter().partition(deferred);
    let mut waiting = carried;
    for t in later {
        let again = t.arg.is_none() && waiting.iter().any(|w| w.node == t.node && w.arg.is_none());
        if !again {
            waiting.push(t);
        }
    }
    if now.is_empty() {
        (waiting, Vec::new())
    } else {
        (now, waiting)
    }
}

/// Checks a send's target: a node of the graph (not END), among `allowed` when given.
fn check_send<S: State>(
    source: &str,
    send: &Send,
    graph: &GraphInner<S>,
    allowed: Option<&[String]>,
) -> Result<(), RunError> {
    let declared = allowed.is_none_or(|a| a.iter().any(|t| t == &send.node));
    if !declared || !graph.index.contains_key(send.node.as_str()) {
        return Err(RunError::BadRoute {
            node: source.to_string(),
            target: send.node.clone(),
        });
    }
    Ok(())
}

fn route<S: State>(
    source: &str,
    routers: &[RouterSpec<S>],
    graph: &GraphInner<S>,
    state: &S,
    out: &mut NextTargets,
) -> Result<(), RunError> {
    for r in routers {
        let targets = (r.func)(state);
        for name in targets.nodes {
            if !r.targets.iter().any(|t| t == &name) {
                return Err(RunError::BadRoute {
                    node: source.to_string(),
                    target: name,
                });
            }
            let t = graph.target(&name).ok_or_else(|| RunError::BadRoute {
                node: source.to_string(),
                target: name.clone(),
            })?;
            out.nodes.insert(t);
        }
        for send in targets.sends {
            check_send(source, &send, graph, Some(&r.targets))?;
            out.sends.push(send);
        }
    }
    Ok(())
}

/// The entry targets: START's edges and routers, evaluated on the input state.
pub(crate) fn entry<S: State>(graph: &GraphInner<S>, state: &S) -> Result<NextTargets, RunError> {
    let mut out = NextTargets {
        nodes: graph.start_edges.iter().copied().collect(),
        sends: Vec::new(),
    };
    route("__start__", &graph.start_routers, graph, state, &mut out)?;
    Ok(out)
}

/// The targets after a step in which `finished` ran (in task order). Updates join barriers
/// in `barriers`.
pub(crate) fn successors<S: State>(
    graph: &GraphInner<S>,
    state: &S,
    finished: &[Finished],
    barriers: &mut BTreeMap<String, Vec<String>>,
) -> Result<NextTargets, RunError> {
    let mut out = NextTargets::default();
    for f in finished {
        let node = &f.node;
        let Some(&i) = graph.index.get(node.as_str()) else {
            return Err(RunError::UnknownNode(node.clone()));
        };
        if !f.goto.is_empty() || !f.sends.is_empty() {
            for g in &f.goto {
                let t = graph.target(g).ok_or_else(|| RunError::BadRoute {
                    node: node.clone(),
                    target: g.clone(),
                })?;
                out.nodes.insert(t);
            }
            for send in &f.sends {
                check_send(node, send, graph, None)?;
                out.sends.push(send.clone());
            }
        } else {
            out.nodes.extend(graph.edges[i].iter().copied());
            route(node, &graph.routers[i], graph, state, &mut out)?;
        }
        for join in &graph.joins {
            if !join.sources.contains(&i) {
                continue;
            }
            let key = match join.target {
                Target::Node(t) => graph.nodes[t].name.clone(),
                Target::End => END.to_string(),
            };
            let seen = barriers.entry(key.clone()).or_default();
            if !seen.contains(node) {
                seen.push(node.clone());
            }
            if join
                .sources
                .iter()
                .all(|s| seen.contains(&graph.nodes[*s].name))
            {
                barriers.remove(&key);
                out.nodes.insert(join.target);
            }
        }
    }
    Ok(out)
}
