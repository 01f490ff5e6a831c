//! `compile()`: checks a [`StateGraph`] with petgraph and builds the [`CompiledGraph`].

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::{Dfs, Reversed};

use crate::checkpoint::{Checkpointer, MemoryCheckpointer};
use crate::state::State;

use super::builder::{NodeSpec, RouterSpec, StateGraph, END, START};
use super::GraphError;

/// Where an edge leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Target {
    Node(usize),
    End,
}

pub(crate) struct Join {
    pub(crate) sources: Vec<usize>,
    pub(crate) target: Target,
}

/// The checked graph, shared by every run.
pub(crate) struct GraphInner<S: State> {
    pub(crate) nodes: Vec<NodeSpec<S>>,
    pub(crate) index: HashMap<String, usize>,
    pub(crate) start_edges: Vec<Target>,
    pub(crate) start_routers: Vec<RouterSpec<S>>,
    pub(crate) edges: Vec<Vec<Target>>,
    pub(crate) routers: Vec<Vec<RouterSpec<S>>>,
    pub(crate) joins: Vec<Join>,
    /// The graph's breakpoints (a run's config may replace them).
    pub(crate) interrupt_before: Option<crate::run::NodeSet>,
    pub(crate) interrupt_after: Option<crate::run::NodeSet>,
    default_json: OnceLock<Vec<String>>,
    mermaid: String,
}

impl<S: State> GraphInner<S> {
    pub(crate) fn target(&self, name: &str) -> Option<Target> {
        if name == END {
            Some(Target::End)
        } else {
            self.index.get(name).map(|i| Target::Node(*i))
        }
    }

    /// The JSON of every field's declared default, computed once.
    pub(crate) fn default_json(&self) -> &[String] {
        self.default_json.get_or_init(|| {
            (0..S::FIELDS.len())
                .map(|i| S::default_field_json(i).unwrap_or_else(|_| "null".into()))
                .collect()
        })
    }
}

/// A checked graph bound to a checkpointer: run it with [`CompiledGraph::invoke`] or
/// [`CompiledGraph::stream`]; read and edit its threads' history. Cheap to clone.
pub struct CompiledGraph<S: State> {
    pub(crate) graph: Arc<GraphInner<S>>,
    pub(crate) cache: Arc<crate::run::cache::StateCache<S>>,
    pub(crate) checkpointer: Arc<dyn Checkpointer>,
    pub(crate) recursion_limit: usize,
    pub(crate) cancel_grace: Duration,
    pub(crate) max_concurrency: usize,
    pub(crate) max_sends_per_step: usize,
    pub(crate) store: Option<Arc<dyn crate::store::Store>>,
}

impl<S: State> Clone for CompiledGraph<S> {
    fn clone(&self) -> Self {
        CompiledGraph {
            graph: self.graph.clone(),
            cache: self.cache.clone(),
            checkpointer: self.checkpointer.clone(),
            recursion_limit: self.recursion_limit,
            cancel_grace: self.cancel_grace,
            max_concurrency: self.max_concurrency,
            max_sends_per_step: self.max_sends_per_step,
            store: self.store.clone(),
        }
    }
}

/// How many threads' latest states a compiled graph caches by default.
pub const DEFAULT_STATE_CACHE: usize = 1024;

/// The default recursion limit: steps a run may take before it fails.
pub const DEFAULT_RECURSION_LIMIT: usize = 25;

/// How many tasks of one step run at once by default; the step's other tasks wait for a
/// free place (see [`CompiledGraph::with_max_concurrency`]).
pub const DEFAULT_MAX_CONCURRENCY: usize = 64;

/// How many tasks one step may plan by default before the run fails with
/// [`RunError::SendLimit`](crate::RunError::SendLimit) (see
/// [`CompiledGraph::with_max_sends_per_step`]).
pub const DEFAULT_MAX_SENDS_PER_STEP: usize = 10_000;

impl<S: State> CompiledGraph<S> {
    /// The same graph storing its checkpoints in `checkpointer`.
    #[must_use]
    pub fn with_checkpointer(mut self, checkpointer: Arc<dyn Checkpointer>) -> Self {
        self.checkpointer = checkpointer;
        self.cache = Arc::new(crate::run::cache::StateCache::new(self.cache_capacity()));
        self
    }

    /// The same graph giving its nodes a long-term store ([`NodeContext::store`](crate::NodeContext::store))
    /// when a run's config names none.
    #[must_use]
    pub fn with_store(mut self, store: Arc<dyn crate::store::Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// The same graph caching the latest state of up to `threads` threads in memory
    /// (default 1024; 0 turns the cache off). See `run::cache`.
    #[must_use]
    pub fn with_state_cache(mut self, threads: usize) -> Self {
        self.cache = Arc::new(crate::run::cache::StateCache::new(threads));
        self
    }

    fn cache_capacity(&self) -> usize {
        self.cache.capacity()
    }

    /// Drops the cached state of a thread (after changing its storage behind the engine's
    /// back, e.g. deleting or pruning it).
    pub fn forget_cached(&self, thread_id: &str) {
        self.cache.forget(thread_id);
    }

    /// The same graph with another default recursion limit (steps per run).
    #[must_use]
    pub fn with_recursion_limit(mut self, limit: usize) -> Self {
        self.recursion_limit = limit.max(1);
        self
    }

    /// How long nodes get to return after a cancel before they are dropped (default 2 s).
    #[must_use]
    pub fn with_cancel_grace(mut self, grace: Duration) -> Self {
        self.cancel_grace = grace;
        self
    }

    /// The same graph running at most `tasks` tasks of a step at once (default
    /// [`DEFAULT_MAX_CONCURRENCY`]; at least 1); a run's
    /// [`RunConfig::max_concurrency`](crate::RunConfig::max_concurrency) overrides it. The
    /// step's other tasks are not refused: each starts when one running finishes, so a
    /// fan-out of thousands holds a bounded number of tasks (and of storage writes) in
    /// flight and leaves the runtime to other runs. Tasks of one step must not wait on each
    /// other (LangGraph's `max_concurrency` has the same rule): one waiting for a task that
    /// has no place yet would wait for ever.
    #[must_use]
    pub fn with_max_concurrency(mut self, tasks: usize) -> Self {
        self.max_concurrency = tasks.max(1);
        self
    }

    /// The same graph failing a run whose step plans more than `tasks` tasks (nodes and
    /// [`Send`](crate::send::Send)s; default [`DEFAULT_MAX_SENDS_PER_STEP`]); a run's
    /// [`RunConfig::max_sends_per_step`](crate::RunConfig::max_sends_per_step) overrides
    /// it. A command whose sends are over it is refused before anything is written.
    #[must_use]
    pub fn with_max_sends_per_step(mut self, tasks: usize) -> Self {
        self.max_sends_per_step = tasks.max(1);
        self
    }

    /// The checkpointer.
    pub fn checkpointer(&self) -> &Arc<dyn Checkpointer> {
        &self.checkpointer
    }

    /// The node names, in declaration order.
    pub fn node_names(&self) -> Vec<&str> {
        self.graph.nodes.iter().map(|n| n.name.as_str()).collect()
    }

    /// A node's declared status line.
    pub fn node_status(&self, node: &str) -> Option<&str> {
        self.graph
            .index
            .get(node)
            .and_then(|i| self.graph.nodes[*i].status.as_deref())
    }

    /// The graph as a Mermaid flowchart (conditional edges dashed).
    pub fn mermaid(&self) -> &str {
        &self.graph.mermaid
    }
}

pub(crate) fn compile<S: State>(g: StateGraph<S>) -> Result<CompiledGraph<S>, GraphError> {
    if g.nodes.is_empty() {
        return Err(GraphError::EmptyGraph);
    }
    let mut index = HashMap::new();
    for (i, n) in g.nodes.iter().enumerate() {
        if n.name == START || n.name == END || n.name.is_empty() {
            return Err(GraphError::ReservedName(n.name.clone()));
        }
        if index.insert(n.name.clone(), i).is_some() {
            return Err(GraphError::DuplicateNode(n.name.clone()));
        }
    }

    // petgraph model: START, END, then the nodes.
    let mut pg: DiGraph<String, bool> = DiGraph::new();
    let start = pg.add_node(START.into());
    let end = pg.add_node(END.into());
    let ids: Vec<NodeIndex> = g
        .nodes
        .iter()
        .map(|n| pg.add_node(n.name.clone()))
        .collect();
    let source_of = |name: &str, ctx: &str| -> Result<NodeIndex, GraphError> {
        if name == START {
            Ok(start)
        } else if name == END {
            Err(GraphError::EdgeFromEnd(ctx.to_string()))
        } else {
            index
                .get(name)
                .map(|i| ids[*i])
                .ok_or_else(|| GraphError::UnknownNode {
                    name: name.to_string(),
                    context: ctx.to_string(),
                })
        }
    };
    let target_of = |name: &str, ctx: &str| -> Result<(NodeIndex, Target), GraphError> {
        if name == END {
            Ok((end, Target::End))
        } else if name == START {
            Err(GraphError::EdgeIntoStart(ctx.to_string()))
        } else {
            index
                .get(name)
                .map(|i| (ids[*i], Target::Node(*i)))
                .ok_or_else(|| GraphError::UnknownNode {
                    name: name.to_string(),
                    context: ctx.to_string(),
                })
        }
    };

    let n = g.nodes.len();
    let mut start_edges = Vec::new();
    let mut edges: Vec<Vec<Target>> = vec![Vec::new(); n];
    let mut mermaid_edges = Vec::new();
    for (from, to) in &g.edges {
        let ctx = format!("edge `{from}` -> `{to}`");
        let a = source_of(from, &ctx)?;
        let (b, t) = target_of(to, &ctx)?;
        pg.add_edge(a, b, false);
        mermaid_edges.push(format!("    {} --> {}", mid(from), mid(to)));
        match index.get(from.as_str()) {
            Some(i) => push_unique(&mut edges[*i], t),
            None => push_unique(&mut start_edges, t),
        }
    }
    let mut joins = Vec::new();
    for (sources, to) in &g.joins {
        let ctx = format!("join [{}] -> `{to}`", sources.join(", "));
        let (b, t) = target_of(to, &ctx)?;
        let mut srcs = Vec::new();
        for s in sources {
            let a = source_of(s, &ctx)?;
            if a == start {
                return Err(GraphError::UnknownNode {
                    name: START.into(),
                    context: ctx,
                });
            }
            pg.add_edge(a, b, false);
            srcs.push(index[s.as_str()]);
        }
        mermaid_edges.push(format!(
            "    {} --> {}",
            sources
                .iter()
                .map(|s| mid(s))
                .collect::<Vec<_>>()
                .join(" & "),
            mid(to)
        ));
        joins.push(Join {
            sources: srcs,
            target: t,
        });
    }
    let mut start_routers = Vec::new();
    let mut routers: Vec<Vec<RouterSpec<S>>> = (0..n).map(|_| Vec::new()).collect();
    for r in g.routers {
        let ctx = format!("conditional edge from `{}`", r.source);
        let a = source_of(&r.source, &ctx)?;
        if r.targets.is_empty() {
            return Err(GraphError::NoRouterTargets(r.source.clone()));
        }
        for t in &r.targets {
            let (b, _) = target_of(t, &ctx).map_err(|_| GraphError::UndeclaredTarget {
                from: r.source.clone(),
                target: t.clone(),
            })?;
            pg.add_edge(a, b, true);
            mermaid_edges.push(format!("    {} -.-> {}", mid(&r.source), mid(t)));
        }
        match index.get(r.source.as_str()) {
            Some(i) => routers[*i].push(r),
            None => start_routers.push(r),
        }
    }
    for (i, node) in g.nodes.iter().enumerate() {
        for d in &node.destinations {
            let ctx = format!("destinations of `{}`", node.name);
            let (b, _) = target_of(d, &ctx)?;
            pg.add_edge(ids[i], b, true);
            mermaid_edges.push(format!("    {} -.-> {}", mid(&node.name), mid(d)));
        }
    }

    for (what, set) in [
        ("interrupt_before", &g.interrupt_before),
        ("interrupt_after", &g.interrupt_after),
    ] {
        if let Some(name) = set.as_ref().and_then(|s| s.unknown_in(&index)) {
            return Err(GraphError::UnknownNode {
                name: name.to_string(),
                context: what.to_string(),
            });
        }
    }
    if pg.neighbors(start).next().is_none() {
        return Err(GraphError::NoEntry);
    }
    let mut seen = HashSet::new();
    let mut dfs = Dfs::new(&pg, start);
    while let Some(x) = dfs.next(&pg) {
        seen.insert(x);
    }
    if let Some(i) = ids.iter().position(|x| !seen.contains(x)) {
        return Err(GraphError::Unreachable(g.nodes[i].name.clone()));
    }
    let rev = Reversed(&pg);
    let mut back = HashSet::new();
    let mut dfs = Dfs::new(rev, end);
    while let Some(x) = dfs.next(rev) {
        back.insert(x);
    }
    if let Some(i) = ids.iter().position(|x| !back.contains(x)) {
        return Err(GraphError::NoPathToEnd(g.nodes[i].name.clone()));
    }

    let mut mermaid = String::from("flowchart TD\n    __start__([START])\n");
    for node in &g.nodes {
        mermaid.push_str(&format!(
            "    {}[\"{}\"]\n",
            mid(&node.name),
            node.name.replace('"', "'")
        ));
    }
    mermaid.push_str("    __end__([END])\n");
    for e in mermaid_edges {
        mermaid.push_str(&e);
        mermaid.push('\n');
    }

    Ok(CompiledGraph {
        graph: Arc::new(GraphInner {
            nodes: g.nodes,
            index,
            start_edges,
            start_routers,
            edges,
            routers,
            joins,
            interrupt_before: g.interrupt_before,
            interrupt_after: g.interrupt_after,
            default_json: OnceLock::new(),
            mermaid,
        }),
        checkpointer: Arc::new(MemoryCheckpointer::new()),
        cache: Arc::new(crate::run::cache::StateCache::new(DEFAULT_STATE_CACHE)),
        recursion_limit: DEFAULT_RECURSION_LIMIT,
        cancel_grace: Duration::from_secs(2),
        max_concurrency: DEFAULT_MAX_CONCURRENCY,
        max_sends_per_step: DEFAULT_MAX_SENDS_PER_STEP,
        store: None,
    })
}

fn push_unique(v: &mut Vec<Target>, t: Target) {
    if !v.contains(&t) {
        v.push(t);
    }
}

/// A Mermaid-safe node id.
fn mid(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
