//! The composed shapes, with the same stub nodes as the LangGraph reference's section `i`
//! (`../shared/bench/langgraph/bench.py`):
//!
//! - `send100`: `fan` sends one `work` task per item (100), each returning `2 * i` into an
//!   appended list, then `reduce` sums them: one map-reduce turn;
//! - `sub2`: `start -> outer -> finish`, where `outer` is a subgraph `prep -> inner` and
//!   `inner` a subgraph `a -> b`; every node appends one letter to `trail`: a two-level
//!   subgraph turn.

use std::sync::Arc;

use palgraph::send::Send;
use palgraph::{
    Append, Checkpointer, CompiledGraph, NodeContext, NodeError, RunInput, State, StateGraph, END,
    START,
};
use serde::{Deserialize, Serialize};

/// The map-reduce shape's state.
#[derive(Clone, Default, Debug, Serialize, Deserialize, State)]
pub struct FanState {
    /// How many items to send.
    pub n: u32,
    /// One result per item, in send order.
    #[state(reducer = Append)]
    pub results: Vec<u64>,
    /// Their sum.
    pub total: u64,
}

/// The map-reduce graph on `cp`.
pub fn send_graph(cp: Arc<dyn Checkpointer>) -> CompiledGraph<FanState> {
    let mut g = StateGraph::<FanState>::new();
    g.add_node("fan", |_s: Arc<FanState>, _c: NodeContext| async move {
        Ok::<_, NodeError>(FanStateUpdate::default())
    });
    g.add_node("work", |_s: Arc<FanState>, c: NodeContext| async move {
        let i: u64 = c.arg::<serde_json::Value>()?["i"].as_u64().unwrap_or(0);
        Ok::<_, NodeError>(FanStateUpdate::default().results(vec![2 * i]))
    });
    g.add_node("reduce", |s: Arc<FanState>, _c: NodeContext| async move {
        Ok::<_, NodeError>(FanStateUpdate::default().total(s.results.iter().sum()))
    });
    g.add_edge(START, "fan");
    g.add_conditional_edges(
        "fan",
        |s: &FanState| {
            (0..s.n)
                .map(|i| Send::new("work", serde_json::json!({ "i": i })))
                .collect::<Vec<_>>()
        },
        ["work"],
    );
    g.add_edge("work", "reduce");
    g.add_edge("reduce", END);
    g.compile()
        .expect("the map-reduce shape compiles")
        .with_checkpointer(cp)
}

/// A map-reduce turn's input: `n` items.
pub fn send_input(n: u32) -> RunInput<FanState> {
    RunInput::Turn(FanStateUpdate::default().n(n))
}

/// The subgraph shape's state (the same at every level).
#[derive(Clone, Default, Debug, Serialize, Deserialize, State)]
pub struct SubState {
    /// What the turn is about.
    pub topic: String,
    /// One letter per node that ran.
    pub trail: String,
}

fn letter(
    l: &'static str,
) -> impl Fn(Arc<SubState>, NodeContext) -> std::future::Ready<Result<SubStateUpdate, NodeError>>
       + std::marker::Send
       + Sync
       + 'static {
    move |s, _c| {
        std::future::ready(Ok(
            SubStateUpdate::default().trail(format!("{}{l}", s.trail))
        ))
    }
}

fn nest(g: &mut StateGraph<SubState>, name: &str, sub: CompiledGraph<SubState>) {
    g.add_subgraph(
        name,
        sub,
        |s: &SubState| {
            SubStateUpdate::default()
                .topic(s.topic.clone())
                .trail(s.trail.clone())
        },
        |s: &SubState| SubStateUpdate::default().trail(s.trail.clone()),
    );
}

/// The two-level subgraph graph on `cp`.
pub fn sub_graph(cp: Arc<dyn Checkpointer>) -> CompiledGraph<SubState> {
    let mut inner = StateGraph::<SubState>::new();
    inner.add_node("a", letter("a"));
    inner.add_node("b", letter("b"));
    inner.add_edge(START, "a");
    inner.add_edge("a", "b");
    inner.add_edge("b", END);
    let inner = inner.compile().expect("inner compiles");
    let mut outer = StateGraph::<SubState>::new();
    outer.add_node("prep", letter("p"));
    nest(&mut outer, "inner", inner);
    outer.add_edge(START, "prep");
    outer.add_edge("prep", "inner");
    outer.add_edge("inner", END);
    let outer = outer.compile().expect("outer compiles");
    let mut g = StateGraph::<SubState>::new();
    g.add_node("start", letter("s"));
    nest(&mut g, "outer", outer);
    g.add_node("finish", letter("f"));
    g.add_edge(START, "start");
    g.add_edge("start", "outer");
    g.add_edge("outer", "finish");
    g.add_edge("finish", END);
    g.compile()
        .expect("the subgraph shape compiles")
        .with_checkpointer(cp)
}

/// A subgraph turn's input.
pub fn sub_input(i: usize) -> RunInput<SubState> {
    RunInput::Turn(
        SubStateUpdate::default()
            .topic(format!("topic {i}"))
            .trail(String::new()),
    )
}
