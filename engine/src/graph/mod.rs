//! Graphs: the [`StateGraph`] builder, the checks `compile()` makes, and the
//! [`CompiledGraph`] that runs.

mod builder;
mod compile;
pub mod parent;
pub mod subgraph;

pub(crate) use builder::RouterSpec;
pub use builder::{NodeBuilder, StateGraph, Targets, END, START};
pub use compile::{
    CompiledGraph, DEFAULT_MAX_CONCURRENCY, DEFAULT_MAX_SENDS_PER_STEP, DEFAULT_RECURSION_LIMIT,
    DEFAULT_STATE_CACHE,
};
pub(crate) use compile::{GraphInner, Target};

/// Why `compile()` refused a graph. Each message names the fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// No nodes at all.
    #[error("the graph has no nodes; add at least one with add_node")]
    EmptyGraph,
    /// Two nodes with one name.
    #[error("duplicate node `{0}`: node names must be unique")]
    DuplicateNode(String),
    /// A node named START, END or "".
    #[error("`{0}` is a reserved name and cannot be a node")]
    ReservedName(String),
    /// An edge names a node that does not exist.
    #[error("{context}: unknown node `{name}`")]
    UnknownNode {
        /// The missing name.
        name: String,
        /// Which edge named it.
        context: String,
    },
    /// A router declares a target that is not a node.
    #[error("conditional edge from `{from}` declares target `{target}`, which is not a node of the graph")]
    UndeclaredTarget {
        /// The router's source node.
        from: String,
        /// The bad target.
        target: String,
    },
    /// A router with no targets.
    #[error("conditional edge from `{0}` declares no targets")]
    NoRouterTargets(String),
    /// Nothing leaves START.
    #[error("the graph has no entry point: add an edge from START")]
    NoEntry,
    /// A node no path from START reaches.
    #[error("node `{0}` is unreachable from START")]
    Unreachable(String),
    /// A node from which END cannot be reached.
    #[error("node `{0}` has no path to END")]
    NoPathToEnd(String),
    /// An edge into START.
    #[error("{0}: START cannot be the target of an edge")]
    EdgeIntoStart(String),
    /// An edge out of END.
    #[error("{0}: END cannot be the source of an edge")]
    EdgeFromEnd(String),
}
