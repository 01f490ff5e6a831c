//! Planning: which tasks are due next, stored in each checkpoint as its plan.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::graph::{GraphInner, RouterSpec, Target, END};
use crate::state::State;

use super::RunError;

/// A task due in the next step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TaskPlan {
    pub(crate) node: String,
    pub(crate) id: String,
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
    /// The breakpoint a run stopped at, at this checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) paused: Option<super::breakpoint::Breakpoint>,
}

impl Plan {
    pub(crate) fn next_nodes(&self) -> Vec<String> {
        self.tasks.iter().map(|t| t.node.clone()).collect()
    }
}

/// New tasks for the given nodes (in node declaration order).
pub(crate) fn tasks_for<S: State>(
    graph: &GraphInner<S>,
    targets: &BTreeSet<Target>,
) -> Vec<TaskPlan> {
    targets
        .iter()
        .filter_map(|t| match t {
            Target::Node(i) => Some(TaskPlan {
                node: graph.nodes[*i].name.clone(),
                id: uuid::Uuid::new_v4().to_string(),
            }),
            Target::End => None,
        })
        .collect()
}

fn route<S: State>(
    source: &str,
    routers: &[RouterSpec<S>],
    graph: &GraphInner<S>,
    state: &S,
    out: &mut BTreeSet<Target>,
) -> Result<(), RunError> {
    for r in routers {
        for name in (r.func)(state).0 {
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
            out.insert(t);
        }
    }
    Ok(())
}

/// The entry targets: START's edges and routers, evaluated on the input state.
pub(crate) fn entry<S: State>(
    graph: &GraphInner<S>,
    state: &S,
) -> Result<BTreeSet<Target>, RunError> {
    let mut out: BTreeSet<Target> = graph.start_edges.iter().copied().collect();
    route("__start__", &graph.start_routers, graph, state, &mut out)?;
    Ok(out)
}

/// The targets after a step in which `finished` ran (in task order); `gotos` holds each
/// task's goto (empty: follow the node's edges). Updates join barriers in `barriers`.
pub(crate) fn successors<S: State>(
    graph: &GraphInner<S>,
    state: &S,
    finished: &[(String, Vec<String>)],
    barriers: &mut BTreeMap<String, Vec<String>>,
) -> Result<BTreeSet<Target>, RunError> {
    let mut out = BTreeSet::new();
    for (node, goto) in finished {
        let Some(&i) = graph.index.get(node.as_str()) else {
            return Err(RunError::UnknownNode(node.clone()));
        };
        if !goto.is_empty() {
            for g in goto {
                let t = graph.target(g).ok_or_else(|| RunError::BadRoute {
                    node: node.clone(),
                    target: g.clone(),
                })?;
                out.insert(t);
            }
        } else {
            out.extend(graph.edges[i].iter().copied());
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
                out.insert(join.target);
            }
        }
    }
    Ok(out)
}
