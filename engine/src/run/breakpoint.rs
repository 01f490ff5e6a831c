//! Breakpoints: LangGraph's `interrupt_before` / `interrupt_after`.
//!
//! A graph compiled with [`StateGraph::interrupt_before`](crate::StateGraph::interrupt_before)
//! (or run with [`RunConfig::interrupt_before`](crate::RunConfig::interrupt_before), which
//! replaces the graph's list for that run) stops before running any of the named nodes; with
//! `interrupt_after`, after a step in which one of them ran. The run ends with
//! [`RunStatus::Interrupted`](crate::RunStatus::Interrupted) and *no* interrupt payloads; the
//! thread's `next` names the nodes due. [`RunInput::Continue`](crate::RunInput::Continue)
//! (LangGraph's `invoke(None)`) runs on from there, and `update_state` may edit the state
//! in between.
//!
//! The stop is recorded in the checkpoint it happened at (its plan's [`Breakpoint`], with
//! the run that stopped there), written in the same put as the checkpoint itself. So a
//! restart keeps it: a retry of the *same* run (a worker that died after the stop) stops
//! there again at once, while the next run continues past it. A breakpoint only fires on
//! tasks a run planned itself: a run that continues from a checkpoint runs its due tasks,
//! even when they are breakpoint nodes (so a breakpoint never fires again on every resume).

use std::collections::HashMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::graph::GraphInner;
use crate::state::State;

use super::plan::TaskPlan;
use super::RunError;

/// The nodes a breakpoint list names: every node (`"*"` in JSON) or the listed ones (a JSON
/// array of names).
///
/// ```
/// use palgraph::run::NodeSet;
/// let all: NodeSet = serde_json::from_str(r#""*""#)?;
/// assert!(all.contains("anything"));
/// let some: NodeSet = serde_json::from_str(r#"["review"]"#)?;
/// assert!(some.contains("review") && !some.contains("draft"));
/// assert_eq!(serde_json::to_string(&some)?, r#"["review"]"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeSet {
    /// Every node.
    All,
    /// The named nodes.
    Nodes(Vec<String>),
}

impl NodeSet {
    /// The named nodes.
    pub fn nodes<I, T>(names: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        NodeSet::Nodes(names.into_iter().map(Into::into).collect())
    }

    /// Whether `node` is in the set.
    pub fn contains(&self, node: &str) -> bool {
        match self {
            NodeSet::All => true,
            NodeSet::Nodes(n) => n.iter().any(|x| x == node),
        }
    }

    /// Whether the set names no node.
    pub fn is_empty(&self) -> bool {
        matches!(self, NodeSet::Nodes(n) if n.is_empty())
    }

    /// The first name that is not a node of `graph`, if any.
    pub(crate) fn unknown<S: State>(&self, graph: &GraphInner<S>) -> Option<&str> {
        self.unknown_in(&graph.index)
    }

    /// The first name that is not a key of `index` (node name -> position), if any.
    pub(crate) fn unknown_in(&self, index: &HashMap<String, usize>) -> Option<&str> {
        match self {
            NodeSet::All => None,
            NodeSet::Nodes(n) => n
                .iter()
                .find(|x| !index.contains_key(x.as_str()))
                .map(String::as_str),
        }
    }
}

impl<T: Into<String>> FromIterator<T> for NodeSet {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        NodeSet::nodes(iter)
    }
}

impl<const N: usize> From<[&str; N]> for NodeSet {
    fn from(v: [&str; N]) -> Self {
        NodeSet::nodes(v)
    }
}

impl From<Vec<String>> for NodeSet {
    fn from(v: Vec<String>) -> Self {
        NodeSet::Nodes(v)
    }
}

impl From<Vec<&str>> for NodeSet {
    fn from(v: Vec<&str>) -> Self {
        NodeSet::nodes(v)
    }
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum NodeSetRepr {
    All(String),
    Nodes(Vec<String>),
}

impl Serialize for NodeSet {
    fn serialize<Z: Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        match self {
            NodeSet::All => NodeSetRepr::All("*".into()),
            NodeSet::Nodes(n) => NodeSetRepr::Nodes(n.clone()),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for NodeSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match NodeSetRepr::deserialize(d)? {
            NodeSetRepr::All(s) if s == "*" => Ok(NodeSet::All),
            NodeSetRepr::All(s) => Err(serde::de::Error::custom(format!(
                "expected \"*\" or a list of node names, not \"{s}\""
            ))),
            NodeSetRepr::Nodes(n) => Ok(NodeSet::Nodes(n)),
        }
    }
}

/// Whether a breakpoint stopped the graph before its nodes ran or after.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakpointWhen {
    /// Before the nodes ran: they are the checkpoint's `next`.
    Before,
    /// After the nodes ran (their step is applied and checkpointed).
    After,
}

/// A breakpoint a run stopped at, as recorded in the checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Breakpoint {
    /// Before or after.
    pub when: BreakpointWhen,
    /// The breakpoint nodes that made it fire.
    pub nodes: Vec<String>,
    /// The run that stopped there (a retry of it stops there again; another run goes on).
    pub run_id: String,
}

/// The breakpoint that fires for `tasks` (the nodes about to run, or the nodes that just
/// ran), if any of them is in `set`.
pub(crate) fn fire(
    set: Option<&NodeSet>,
    when: BreakpointWhen,
    tasks: &[TaskPlan],
    run_id: &str,
) -> Option<Breakpoint> {
    let set = set?;
    let mut nodes: Vec<String> = Vec::new();
    for t in tasks {
        if set.contains(&t.node) && !nodes.contains(&t.node) {
            nodes.push(t.node.clone());
        }
    }
    (!nodes.is_empty()).then(|| Breakpoint {
        when,
        nodes,
        run_id: run_id.to_string(),
    })
}

/// Refuses a breakpoint list that names a node the graph does not have.
pub(crate) fn check<S: State>(
    graph: &GraphInner<S>,
    set: Option<&NodeSet>,
) -> Result<(), RunError> {
    match set.and_then(|s| s.unknown(graph)) {
        Some(name) => Err(RunError::UnknownNode(name.to_string())),
        None => Ok(()),
    }
}
