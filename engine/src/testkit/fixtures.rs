//! A state with one field of every kind, and helpers the cases share.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::{
    AddMessages, Append, Checkpointer, CompiledGraph, Event, MergeMap, Message, NodeContext,
    NodeError, RunConfig, RunInput, RunOutcome, State, StateGraph, END, START,
};

/// Keeps the larger value (a custom reducer fn).
pub fn keep_max(current: &mut u32, update: u32) {
    *current = (*current).max(update);
}

fn half() -> f64 {
    0.5
}

/// A state with a field of every reducer and lifetime.
#[derive(Clone, Default, Debug, PartialEq, Serialize, Deserialize, State)]
pub struct TestState {
    /// Conversation (add_messages, persistent).
    #[state(reducer = AddMessages)]
    pub messages: Vec<Message>,
    /// A registry that only grows (merge-map, persistent).
    #[state(reducer = MergeMap)]
    pub registry: BTreeMap<String, String>,
    /// An append-only log (append, persistent).
    #[state(reducer = Append)]
    pub log: Vec<String>,
    /// A per-turn choice (overwrite, transient).
    #[state(transient)]
    pub action: Option<String>,
    /// A per-turn trail (append, transient).
    #[state(transient, reducer = Append)]
    pub trail: Vec<String>,
    /// A per-turn score with a declared default of 0.5 (overwrite, transient).
    #[state(transient, default = half)]
    pub confidence: f64,
    /// The best score seen (custom reducer, persistent).
    #[state(reduce_with = keep_max)]
    pub best: u32,
    /// A plain persistent counter (overwrite).
    pub counter: u32,
}

/// Shorthand for the update type.
pub type Upd = TestStateUpdate;

/// A call counter shared with nodes.
#[derive(Clone, Default, Debug)]
pub struct Counter(pub Arc<AtomicUsize>);

impl Counter {
    /// Adds one and returns the new count.
    pub fn bump(&self) -> usize {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// The count.
    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A node that appends its name to the trail and the log.
pub fn trail_node(
    name: &'static str,
) -> impl Fn(Arc<TestState>, NodeContext) -> std::future::Ready<Result<Upd, NodeError>>
       + Send
       + Sync
       + 'static {
    move |_s, _c| {
        std::future::ready(Ok(Upd::default()
            .trail(vec![name.to_string()])
            .log(vec![name.to_string()])))
    }
}

/// A linear graph `a -> b -> ... -> END` of trail nodes.
pub fn linear(names: &[&'static str], cp: Arc<dyn Checkpointer>) -> CompiledGraph<TestState> {
    let mut g = StateGraph::<TestState>::new();
    for n in names {
        g.add_node(*n, trail_node(n))
            .status(format!("Running {n}..."));
    }
    g.add_edge(START, names[0]);
    g.add_sequence(names.iter().copied());
    g.add_edge(names[names.len() - 1], END);
    build(g, cp)
}

/// Compiles a graph on `cp` with the state cache off, so every read goes to storage (the
/// suite tests the checkpointer, not the cache).
pub fn build(g: StateGraph<TestState>, cp: Arc<dyn Checkpointer>) -> CompiledGraph<TestState> {
    g.compile()
        .expect("valid graph")
        .with_checkpointer(cp)
        .with_state_cache(0)
}

/// A new turn with one user message.
pub fn say(text: &str) -> RunInput<TestState> {
    RunInput::Turn(Upd::default().messages(vec![Message::human(text)]))
}

/// A unique thread id.
pub fn thread() -> String {
    format!("t-{}", uuid::Uuid::new_v4())
}

/// Runs and expects no error.
pub async fn ok<S: State>(
    g: &CompiledGraph<S>,
    cfg: RunConfig,
    input: RunInput<S>,
) -> RunOutcome<S> {
    match g.invoke(cfg, input).await {
        Ok(o) => o,
        Err(e) => panic!("run failed: {e}"),
    }
}

/// The events' type names, in order.
pub fn kinds(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            serde_json::to_value(e)
                .ok()
                .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string))
                .unwrap_or_default()
        })
        .collect()
}

/// Messages' contents.
pub fn contents(messages: &[Message]) -> Vec<String> {
    messages.iter().map(|m| m.content.clone()).collect()
}

/// END, re-exported for cases.
pub const THE_END: &str = END;

/// The value of one series (a metric's name with its labels, as Prometheus renders them,
/// e.g. `palgraph_group_commit_batch_size_sum{kind="threads"}`) in rendered Prometheus
/// text; `None` when the series is not there.
pub fn rendered_metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| {
            l.strip_prefix(series)
                .is_some_and(|rest| rest.starts_with(' '))
        })
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}
