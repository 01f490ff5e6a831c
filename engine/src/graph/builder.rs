//! [`StateGraph`]: the builder a graph author uses.

use std::future::Future;
use std::sync::Arc;

use crate::context::NodeContext;
use crate::metric::KeyCache;
use crate::node::{erase_node, Command, NodeError, NodeFn, RetryPolicy};
use crate::node_cache::CachePolicy;
use crate::run::NodeSet;
use crate::send;
use crate::state::State;

use super::compile::{compile, CompiledGraph};
use super::GraphError;

/// The name of the graph's entry point.
pub const START: &str = "__start__";
/// The name of the graph's end.
pub const END: &str = "__end__";

/// Where a router sends the graph: node names (or [`END`]) and [`Send`](crate::send::Send)(crate::send::Send)s, each of which
/// starts its own task with its own input (see [`crate::send`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Targets {
    /// Nodes to run next.
    pub nodes: Vec<String>,
    /// Tasks to start next, one per send.
    pub sends: Vec<send::Send>,
}

impl Targets {
    /// These nodes.
    pub fn nodes<I, T>(names: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        Targets {
            nodes: names.into_iter().map(Into::into).collect(),
            sends: Vec::new(),
        }
    }

    /// The same targets and one more send.
    #[must_use]
    pub fn send(mut self, send: send::Send) -> Self {
        self.sends.push(send);
        self
    }
}

impl From<&str> for Targets {
    fn from(s: &str) -> Self {
        Targets::nodes([s])
    }
}

impl From<String> for Targets {
    fn from(s: String) -> Self {
        Targets::nodes([s])
    }
}

impl From<Vec<String>> for Targets {
    fn from(v: Vec<String>) -> Self {
        Targets::nodes(v)
    }
}

impl From<Vec<&str>> for Targets {
    fn from(v: Vec<&str>) -> Self {
        Targets::nodes(v)
    }
}

impl<const N: usize> From<[&str; N]> for Targets {
    fn from(v: [&str; N]) -> Self {
        Targets::nodes(v)
    }
}

impl From<send::Send> for Targets {
    fn from(s: send::Send) -> Self {
        Targets::default().send(s)
    }
}

impl From<Vec<send::Send>> for Targets {
    fn from(sends: Vec<send::Send>) -> Self {
        Targets {
            nodes: Vec::new(),
            sends,
        }
    }
}

pub(crate) type RouterFn<S> = Arc<dyn Fn(&S) -> Targets + Send + Sync>;

/// Seconds a node's task took (a cached result is not counted), by node: a histogram
/// through the [`metrics`] facade, its key built once per node ([`NodeSpec::seconds_key`]).
static NODE_SECONDS: KeyCache = KeyCache::new("palgraph_node_duration_seconds");

pub(crate) struct NodeSpec<S: State> {
    pub(crate) name: String,
    pub(crate) func: NodeFn<S>,
    pub(crate) status: Option<String>,
    /// The node reports its status line itself (`ctx.status`): `NodeStarted` carries none.
    pub(crate) reports_status: bool,
    pub(crate) retry: RetryPolicy,
    pub(crate) destinations: Vec<String>,
    /// Runs only once no other task is due (see [`NodeBuilder::defer`]).
    pub(crate) defer: bool,
    /// Caches the node's results (see [`NodeBuilder::cache`]).
    pub(crate) cache: Option<CachePolicy<S>>,
    /// The subgraph the node runs, when it is a subgraph node (see [`super::subgraph`]).
    pub(crate) subgraph: Option<Arc<dyn super::subgraph::SubgraphHandle>>,
    /// Its key of the node duration histogram (built once, not at every task).
    pub(crate) seconds_key: metrics::Key,
}

pub(crate) struct RouterSpec<S: State> {
    pub(crate) source: String,
    pub(crate) func: RouterFn<S>,
    pub(crate) targets: Vec<String>,
}

/// Builds a graph over the state `S`; [`StateGraph::compile`] checks it.
///
/// ```
/// # use palgraph::*;
/// # #[derive(Clone, Default, Debug, serde::Serialize, serde::Deserialize, State)]
/// # struct S { n: u32 }
/// async fn bump(state: std::sync::Arc<S>, _ctx: NodeContext) -> Result<SUpdate, NodeError> {
///     Ok(SUpdate::default().n(state.n + 1))
/// }
/// let mut g = StateGraph::<S>::new();
/// g.add_node("bump", bump).status("Counting...");
/// g.add_edge(START, "bump");
/// g.add_edge("bump", END);
/// let graph = g.compile().unwrap();
/// assert!(graph.mermaid().contains("bump"));
/// ```
pub struct StateGraph<S: State> {
    pub(crate) nodes: Vec<NodeSpec<S>>,
    pub(crate) edges: Vec<(String, String)>,
    pub(crate) joins: Vec<(Vec<String>, String)>,
    pub(crate) routers: Vec<RouterSpec<S>>,
    pub(crate) interrupt_before: Option<NodeSet>,
    pub(crate) interrupt_after: Option<NodeSet>,
}

impl<S: State> Default for StateGraph<S> {
    fn default() -> Self {
        StateGraph {
            nodes: Vec::new(),
            edges: Vec::new(),
            joins: Vec::new(),
            routers: Vec::new(),
            interrupt_before: None,
            interrupt_after: None,
        }
    }
}

/// Options of a node just added.
pub struct NodeBuilder<'a, S: State> {
    spec: &'a mut NodeSpec<S>,
}

impl<S: State> NodeBuilder<'_, S> {
    pub(super) fn spec_mut(&mut self) -> &mut NodeSpec<S> {
        self.spec
    }

    /// The human status line streamed when the node starts ("Finding documents...").
    pub fn status(self, line: impl Into<String>) -> Self {
        self.spec.status = Some(line.into());
        self
    }

    /// The node reports its status line itself, with [`NodeContext::status`] and the
    /// details only it knows (e.g. the documents it found, the web query it really runs):
    /// the engine does not stream the declared line when the node starts
    /// ([`Event::NodeStarted`](crate::Event::NodeStarted) carries `status: None`), so a
    /// consumer sees one status line for the node, not two. The declared line
    /// ([`NodeBuilder::status`]) is still the node's line in
    /// [`CompiledGraph::node_status`] and in `NodeFinished`.
    ///
    /// ```
    /// # use palgraph::*;
    /// # #[derive(Clone, Default, Debug, serde::Serialize, serde::Deserialize, State)]
    /// # struct S { n: u32 }
    /// async fn find(state: std::sync::Arc<S>, ctx: NodeContext) -> Result<SUpdate, NodeError> {
    ///     ctx.status("Finding documents...", serde_json::json!({"docs_found": []}));
    ///     Ok(SUpdate::default())
    /// }
    /// let mut g = StateGraph::<S>::new();
    /// g.add_node("find", find).status("Finding documents...").reports_status();
    /// # g.add_edge(START, "find");
    /// # g.add_edge("find", END);
    /// # g.compile().unwrap();
    /// ```
    pub fn reports_status(self) -> Self {
        self.spec.reports_status = true;
        self
    }

    /// The node's retry policy.
    pub fn retry(self, policy: RetryPolicy) -> Self {
        self.spec.retry = policy;
        self
    }

    /// Defers the node (LangGraph's `defer=True`): when it is due while other tasks are
    /// due too, it waits (recorded in the checkpoint) until a step plans nothing else, then
    /// runs once, however many branches led to it. For a node that collects asymmetric
    /// branches (`a -> b -> b2 -> d`, `a -> c -> d`): `d` runs once, after `b2`.
    pub fn defer(self) -> Self {
        self.spec.defer = true;
        self
    }

    /// Caches the node's results (see [`crate::node_cache`]): a task whose input has a
    /// stored result takes it instead of running.
    pub fn cache(self, policy: CachePolicy<S>) -> Self {
        self.spec.cache = Some(policy);
        self
    }

    /// Nodes this node may `goto` with a [`Command`] (checked by `compile` like edges).
    pub fn destinations<I, T>(self, targets: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        self.spec.destinations = targets.into_iter().map(Into::into).collect();
        self
    }
}

impl<S: State> StateGraph<S> {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a node: an async function (or closure) of the state and a [`NodeContext`] that
    /// returns the state's update or a [`Command`].
    pub fn add_node<F, Fut, O>(&mut self, name: impl Into<String>, f: F) -> NodeBuilder<'_, S>
    where
        F: Fn(Arc<S>, NodeContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, NodeError>> + Send + 'static,
        O: Into<Command<S>> + 'static,
    {
        let name = name.into();
        self.nodes.push(NodeSpec {
            seconds_key: NODE_SECONDS.key(&[("node", &name)]),
            name,
            func: erase_node(f),
            status: None,
            reports_status: false,
            retry: RetryPolicy::default(),
            destinations: Vec::new(),
            defer: false,
            cache: None,
            subgraph: None,
        });
        let last = self.nodes.len() - 1;
        NodeBuilder {
            spec: &mut self.nodes[last],
        }
    }

    /// Adds an edge: after `from` runs, `to` runs. Several edges out of one node fan out to
    /// parallel branches; `from` may be [`START`], `to` may be [`END`].
    pub fn add_edge(&mut self, from: impl Into<String>, to: impl Into<String>) -> &mut Self {
        self.edges.push((from.into(), to.into()));
        self
    }

    /// Adds a join: `to` runs once after every node in `from` has run.
    pub fn add_join<I, T>(&mut self, from: I, to: impl Into<String>) -> &mut Self
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        self.joins
            .push((from.into_iter().map(Into::into).collect(), to.into()));
        self
    }

    /// Adds a conditional edge: after `from` runs, `router` picks the next node(s) among the
    /// declared `targets` (a router returning anything else fails the run). It may also
    /// return [`Send`](crate::send::Send)(crate::send::Send)s to declared targets, one task each (map-reduce; see [`crate::send`]).
    pub fn add_conditional_edges<R, T, I, N>(
        &mut self,
        from: impl Into<String>,
        router: R,
        targets: I,
    ) -> &mut Self
    where
        R: Fn(&S) -> T + Send + Sync + 'static,
        T: Into<Targets>,
        I: IntoIterator<Item = N>,
        N: Into<String>,
    {
        self.routers.push(RouterSpec {
            source: from.into(),
            func: Arc::new(move |s| router(s).into()),
            targets: targets.into_iter().map(Into::into).collect(),
        });
        self
    }

    /// Adds edges that run the nodes one after the other.
    pub fn add_sequence<I, T>(&mut self, nodes: I) -> &mut Self
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        let names: Vec<String> = nodes.into_iter().map(Into::into).collect();
        for pair in names.windows(2) {
            self.edges.push((pair[0].clone(), pair[1].clone()));
        }
        self
    }

    /// Breakpoints: every run stops before these nodes run, unless its
    /// [`RunConfig::interrupt_before`](crate::RunConfig::interrupt_before) says otherwise
    /// (see [`crate::run::breakpoint`]). `compile` refuses a name that is not a node.
    pub fn interrupt_before(&mut self, nodes: impl Into<NodeSet>) -> &mut Self {
        self.interrupt_before = Some(nodes.into());
        self
    }

    /// Breakpoints: every run stops after a step in which one of these nodes ran, unless
    /// its [`RunConfig::interrupt_after`](crate::RunConfig::interrupt_after) says otherwise.
    pub fn interrupt_after(&mut self, nodes: impl Into<NodeSet>) -> &mut Self {
        self.interrupt_after = Some(nodes.into());
        self
    }

    /// Checks the graph and compiles it (with an in-memory checkpointer; see
    /// [`CompiledGraph::with_checkpointer`]).
    ///
    /// # Errors
    /// A [`GraphError`] naming the fault: an unknown or duplicate node, a node unreachable
    /// from START or with no path to END, an undeclared router target, no entry point.
    pub fn compile(self) -> Result<CompiledGraph<S>, GraphError> {
        compile(self)
    }
}
