//! Breakpoints (`interrupt_before` / `interrupt_after`), run on any checkpointer.

#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::Arc;

use futures_util::StreamExt;

use palgraph::testkit::fixtures::*;
use palgraph::{
    BreakpointWhen, Checkpointer, Event, GraphError, NodeContext, NodeError, NodeSet, RunConfig,
    RunError, RunInput, RunStatus, StateGraph, END, START,
};

/// `a -> b -> c`, each node counting its runs and logging its name.
fn counted(
    cp: Arc<dyn Checkpointer>,
    before: Option<NodeSet>,
) -> (palgraph::CompiledGraph<TestState>, [Counter; 3]) {
    let counters = [Counter::default(), Counter::default(), Counter::default()];
    let mut g = StateGraph::<TestState>::new();
    for (name, c) in ["a", "b", "c"].into_iter().zip(counters.clone()) {
        g.add_node(name, move |_s: Arc<TestState>, _c: NodeContext| {
            let c = c.clone();
            async move {
                c.bump();
                Ok::<_, NodeError>(Upd::default().log(vec![name.to_string()]))
            }
        });
    }
    g.add_edge(START, "a");
    g.add_sequence(["a", "b", "c"]);
    g.add_edge("c", END);
    if let Some(b) = before {
        g.interrupt_before(b);
    }
    (build(g, cp), counters)
}

pub async fn interrupt_before_stops_with_next_set_and_continue_runs_on(cp: Arc<dyn Checkpointer>) {
    let (g, [a, b, c]) = counted(cp, Some(NodeSet::from(["b"])));
    let t = thread();
    let mut stream = g.stream(RunConfig::new(&t), say("go"));
    let mut events = Vec::new();
    while let Some(e) = stream.next().await {
        events.push(e.event);
    }
    let out = stream.outcome().await.unwrap();
    assert_eq!(out.status, RunStatus::Interrupted(Vec::new()));
    assert!(
        matches!(events.last(), Some(Event::Interrupted { interrupts }) if interrupts.is_empty()),
        "the terminal event is an interrupt with no payload: {:?}",
        events.last()
    );
    assert_eq!(out.state.log, vec!["a"]);
    assert_eq!((a.get(), b.get(), c.get()), (1, 0, 0), "b has not run");
    let snap = g.get_state(&t).await.unwrap().unwrap();
    assert_eq!(snap.next, vec!["b"]);
    assert!(snap.interrupts.is_empty());
    let bp = snap
        .breakpoint
        .expect("the stop is recorded in the checkpoint");
    assert_eq!(bp.when, BreakpointWhen::Before);
    assert_eq!(bp.nodes, vec!["b"]);
    assert_eq!(bp.run_id, out.run_id);

    // Continue (LangGraph's `invoke(None)`): b runs, the breakpoint does not fire again.
    let out = ok(&g, RunConfig::new(&t), RunInput::Continue).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.state.log, vec!["a", "b", "c"]);
    assert_eq!((a.get(), b.get(), c.get()), (1, 1, 1));
    let snap = g.get_state(&t).await.unwrap().unwrap();
    assert!(snap.next.is_empty());
    assert_eq!(snap.breakpoint, None);

    // The next turn stops before b again.
    let out = ok(&g, RunConfig::new(&t), say("again")).await;
    assert_eq!(out.status, RunStatus::Interrupted(Vec::new()));
    assert_eq!(b.get(), 1);

    // "*" stops before the entry node, at the turn's input checkpoint.
    let t2 = thread();
    let out = ok(
        &g,
        RunConfig::new(&t2).interrupt_before(NodeSet::All),
        say("go"),
    )
    .await;
    assert_eq!(out.status, RunStatus::Interrupted(Vec::new()));
    assert!(out.state.log.is_empty());
    let snap = g.get_state(&t2).await.unwrap().unwrap();
    assert_eq!(snap.next, vec!["a"]);
    assert_eq!(snap.metadata.get("source"), Some(&"input".into()));
}

pub async fn interrupt_after_stops_and_update_state_between_is_kept(cp: Arc<dyn Checkpointer>) {
    let (g, [a, b, _]) = counted(cp, None);
    let t = thread();
    let cfg = || RunConfig::new(&t).interrupt_after(["a"]);
    let out = ok(&g, cfg(), say("go")).await;
    assert_eq!(out.status, RunStatus::Interrupted(Vec::new()));
    assert_eq!(out.state.log, vec!["a"], "a's step is applied");
    let snap = g.get_state(&t).await.unwrap().unwrap();
    assert_eq!(snap.next, vec!["b"]);
    let bp = snap.breakpoint.unwrap();
    assert_eq!(
        (bp.when, bp.nodes),
        (BreakpointWhen::After, vec!["a".into()])
    );

    // An edit between: kept, and the thread still waits at b.
    g.update_state(&t, None, Upd::default().counter(7), None)
        .await
        .unwrap();
    let snap = g.get_state(&t).await.unwrap().unwrap();
    assert_eq!(snap.next, vec!["b"]);
    assert_eq!(snap.values.counter, 7);

    let out = ok(&g, cfg(), RunInput::Continue).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.state.log, vec!["a", "b", "c"]);
    assert_eq!(out.state.counter, 7);
    assert_eq!((a.get(), b.get()), (1, 1));
}

pub async fn a_retry_of_the_stopped_run_stops_again_and_bad_names_are_refused(
    cp: Arc<dyn Checkpointer>,
) {
    let (g, [_, b, _]) = counted(cp.clone(), Some(NodeSet::from(["b"])));
    let t = thread();
    ok(&g, RunConfig::new(&t).run_id("r1"), say("go")).await;
    let head = cp.head(&t).await.unwrap();
    // The same run tried again (its worker died after the stop): it stops there at once.
    let out = ok(&g, RunConfig::new(&t).run_id("r1"), RunInput::Continue).await;
    assert_eq!(out.status, RunStatus::Interrupted(Vec::new()));
    assert_eq!(b.get(), 0);
    assert_eq!(cp.head(&t).await.unwrap(), head, "nothing written");

    // A breakpoint list naming a node the graph does not have: refused, nothing written.
    let err = g
        .invoke(
            RunConfig::new(&t).interrupt_after(["nope"]),
            RunInput::Continue,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, RunError::UnknownNode(ref n) if n == "nope"),
        "{err}"
    );
    assert!(err.is_refusal());
    assert_eq!(cp.head(&t).await.unwrap(), head);
    let mut bad = StateGraph::<TestState>::new();
    bad.add_node("a", trail_node("a"));
    bad.add_edge(START, "a");
    bad.add_edge("a", END);
    bad.interrupt_before(["zzz"]);
    assert!(matches!(
        bad.compile().err(),
        Some(GraphError::UnknownNode { ref name, .. }) if name == "zzz"
    ));

    // Another run goes on past it.
    let out = ok(&g, RunConfig::new(&t).run_id("r2"), RunInput::Continue).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(b.get(), 1);
}
