//! Deferred nodes (`defer()`), run on any checkpointer.

#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::Arc;

use palgraph::testkit::fixtures::*;
use palgraph::{
    Checkpointer, CompiledGraph, NodeContext, NodeError, NodeSet, RunConfig, RunInput, RunStatus,
    StateGraph, END, START,
};

/// LangGraph's asymmetric branches: `a -> b -> b_2 -> d` and `a -> c -> d`, with `d`
/// deferred (or not) and counting its runs.
fn branches(cp: Arc<dyn Checkpointer>, defer: bool) -> (CompiledGraph<TestState>, Counter) {
    let d = Counter::default();
    let d2 = d.clone();
    let mut g = StateGraph::<TestState>::new();
    for n in ["a", "b", "b_2", "c"] {
        g.add_node(n, trail_node(n));
    }
    let node = g.add_node("d", move |_s: Arc<TestState>, _c: NodeContext| {
        let d = d2.clone();
        async move {
            d.bump();
            Ok::<_, NodeError>(Upd::default().log(vec!["d".into()]))
        }
    });
    if defer {
        node.defer();
    }
    g.add_edge(START, "a");
    g.add_edge("a", "b");
    g.add_edge("a", "c");
    g.add_edge("b", "b_2");
    g.add_edge("b_2", "d");
    g.add_edge("c", "d");
    g.add_edge("d", END);
    (build(g, cp), d)
}

pub async fn a_deferred_node_runs_once_after_every_branch(cp: Arc<dyn Checkpointer>) {
    let (g, d) = branches(cp.clone(), false);
    let out = ok(&g, RunConfig::new(thread()), say("go")).await;
    assert_eq!(d.get(), 2, "without defer, d runs once per branch");
    assert_eq!(out.state.log, vec!["a", "b", "c", "b_2", "d", "d"]);

    let (g, d) = branches(cp, true);
    let t = thread();
    let out = ok(&g, RunConfig::new(&t), say("go")).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(d.get(), 1, "deferred, d runs once");
    assert_eq!(out.state.log, vec!["a", "b", "c", "b_2", "d"]);
    let nexts: Vec<Vec<String>> = g
        .get_state_history(&t, &Default::default())
        .await
        .unwrap()
        .iter()
        .rev()
        .map(|s| s.next.clone())
        .collect();
    assert_eq!(
        nexts,
        vec![
            vec!["a"],
            vec!["b", "c"],
            vec!["b_2"],
            vec!["d"],
            Vec::<&str>::new()
        ],
        "d waits while b_2 is due"
    );
}

pub async fn a_waiting_deferred_node_survives_a_stop(cp: Arc<dyn Checkpointer>) {
    let (g, d) = branches(cp, true);
    let t = thread();
    // Stop before b_2: d waits in the checkpoint.
    let out = ok(
        &g,
        RunConfig::new(&t).interrupt_before(NodeSet::from(["b_2"])),
        say("go"),
    )
    .await;
    assert_eq!(out.status, RunStatus::Interrupted(Vec::new()));
    assert_eq!(d.get(), 0);
    assert_eq!(g.get_state(&t).await.unwrap().unwrap().next, vec!["b_2"]);
    // A later run (another instance, reading storage) runs b_2, then d once.
    let out = ok(&g, RunConfig::new(&t), RunInput::Continue).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(d.get(), 1);
    assert_eq!(out.state.log, vec!["a", "b", "c", "b_2", "d"]);
}
