//! Engine behaviour, run on any checkpointer.

#![allow(missing_docs, clippy::unwrap_used, clippy::type_complexity)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::json;

use palgraph::testkit::fixtures::*;
use palgraph::{
    Checkpointer, Command, Event, ListOptions, Message, NodeContext, NodeError, RunConfig,
    RunError, RunInput, RunStatus, StateGraph, StreamModes, END, START,
};
pub async fn transient_fields_reset_and_persistent_fields_survive_three_turns(
    cp: Arc<dyn Checkpointer>,
) {
    let seen: Arc<Mutex<Vec<(Option<String>, Vec<String>, f64)>>> = Default::default();
    let seen2 = seen.clone();
    let mut g = StateGraph::<TestState>::new();
    g.add_node("work", move |s: Arc<TestState>, _c: NodeContext| {
        let seen = seen2.clone();
        async move {
            seen.lock()
                .unwrap()
                .push((s.action.clone(), s.trail.clone(), s.confidence));
            let n = s
                .messages
                .iter()
                .filter(|m| m.kind == palgraph::MessageKind::Human)
                .count();
            Ok::<_, NodeError>(
                Upd::default()
                    .action(Some(format!("turn{n}")))
                    .trail(vec![format!("t{n}")])
                    .confidence(0.9)
                    .registry(BTreeMap::from([(format!("doc{n}"), format!("id{n}"))]))
                    .log(vec![format!("log{n}")])
                    .best(n as u32 * 10)
                    .counter(s.counter + 1)
                    .messages(vec![Message::ai(format!("reply{n}"))]),
            )
        }
    });
    g.add_edge(START, "work");
    g.add_edge("work", END);
    let g = build(g, cp);
    let t = thread();
    for i in 1..=3 {
        let out = ok(&g, RunConfig::new(&t), say(&format!("hi {i}"))).await;
        assert_eq!(out.status, RunStatus::Completed);
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    for (action, trail, conf) in &seen {
        assert_eq!(
            action, &None,
            "transient overwrite field reset at each new turn"
        );
        assert!(
            trail.is_empty(),
            "transient append field reset at each new turn"
        );
        assert_eq!(*conf, 0.5, "transient field reset to its declared default");
    }
    let s = g.get_state(&t).await.unwrap().unwrap().values;
    assert_eq!(
        s.registry.len(),
        3,
        "merge-map registry survives every turn"
    );
    assert_eq!(s.log, vec!["log1", "log2", "log3"]);
    assert_eq!(s.counter, 3);
    assert_eq!(s.best, 30);
    assert_eq!(s.messages.len(), 6);
    assert_eq!(s.action.as_deref(), Some("turn3"));
    assert_eq!(s.trail, vec!["t3"]);
    assert_eq!(s.confidence, 0.9);
}
pub async fn add_messages_replaces_by_id_and_removes(cp: Arc<dyn Checkpointer>) {
    let mut g = StateGraph::<TestState>::new();
    g.add_node("reply", |s: Arc<TestState>, _c: NodeContext| async move {
        let last = s.messages.last().unwrap().content.clone();
        let upd = if last == "edit" {
            let first_human = s.messages[0].id.clone().unwrap();
            vec![
                Message::ai("edited").with_id("a1"),
                Message::remove(first_human),
            ]
        } else {
            vec![Message::ai("original").with_id("a1")]
        };
        Ok::<_, NodeError>(Upd::default().messages(upd))
    });
    g.add_edge(START, "reply");
    g.add_edge("reply", END);
    let g = build(g, cp);
    let t = thread();
    let out = ok(&g, RunConfig::new(&t), say("hello")).await;
    assert_eq!(contents(&out.state.messages), vec!["hello", "original"]);
    assert!(
        out.state
            .messages
            .iter()
            .all(|m| m.id.as_deref().is_some_and(|i| !i.is_empty())),
        "ids assigned"
    );
    let out = ok(&g, RunConfig::new(&t), say("edit")).await;
    assert_eq!(
        contents(&out.state.messages),
        vec!["edited", "edit"],
        "a1 replaced in place, hello removed"
    );
    let stored = g.get_state(&t).await.unwrap().unwrap().values;
    assert_eq!(
        stored.messages, out.state.messages,
        "storage rebuilds the same list, ids included"
    );
}

pub async fn parallel_branches_merge_the_same_way_every_time(cp: Arc<dyn Checkpointer>) {
    let mut g = StateGraph::<TestState>::new();
    for (name, delay) in [("right", 7u64), ("left", 1), ("middle", 4)] {
        g.add_node(
            name,
            move |_s: Arc<TestState>, _c: NodeContext| async move {
                // Finish in varying orders.
                let jitter = (uuid::Uuid::new_v4().as_u128() % 5) as u64;
                tokio::time::sleep(Duration::from_millis(delay + jitter)).await;
                Ok::<_, NodeError>(
                    Upd::default()
                        .log(vec![name.to_string()])
                        .trail(vec![name.to_string()]),
                )
            },
        );
        g.add_edge(START, name);
        g.add_edge(name, "after");
    }
    g.add_node("after", trail_node("after"));
    g.add_edge("after", END);
    let g = build(g, cp);
    for _ in 0..8 {
        let out = ok(&g, RunConfig::new(thread()), say("go")).await;
        assert_eq!(
            out.state.log,
            vec!["right", "left", "middle", "after"],
            "declaration order, not finishing order"
        );
    }
}

pub async fn recursion_limit_is_a_typed_error(cp: Arc<dyn Checkpointer>) {
    let mut g = StateGraph::<TestState>::new();
    g.add_node("spin", |s: Arc<TestState>, _c: NodeContext| async move {
        Ok::<_, NodeError>(Upd::default().counter(s.counter + 1))
    });
    g.add_edge(START, "spin");
    g.add_conditional_edges("spin", |_s: &TestState| "spin", ["spin", END]);
    let g = build(g, cp);
    let t = thread();
    let err = g
        .invoke(RunConfig::new(&t).recursion_limit(5), say("loop"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, RunError::RecursionLimit { limit: 5 }),
        "{err}"
    );
    assert!(err.to_string().contains("recursion limit of 5"));
    let snap = g.get_state(&t).await.unwrap().unwrap();
    assert_eq!(
        snap.values.counter, 5,
        "the five steps taken are checkpointed"
    );
}

pub async fn fork_from_old_checkpoint_leaves_history_intact(cp: Arc<dyn Checkpointer>) {
    let calls = Counter::default();
    let c2 = calls.clone();
    let mut g = StateGraph::<TestState>::new();
    g.add_node("echo", move |s: Arc<TestState>, _c: NodeContext| {
        let c = c2.clone();
        async move {
            c.bump();
            let last = s.messages.last().unwrap().content.clone();
            Ok::<_, NodeError>(Upd::default().messages(vec![Message::ai(format!("echo {last}"))]))
        }
    });
    g.add_edge(START, "echo");
    g.add_edge("echo", END);
    let g = build(g, cp.clone());
    let t = thread();
    let mut ends = Vec::new();
    for i in 1..=3 {
        ends.push(
            ok(&g, RunConfig::new(&t), say(&format!("m{i}")))
                .await
                .checkpoint_id
                .unwrap(),
        );
    }
    let history_before: Vec<String> = cp
        .list(&t, &ListOptions::default())
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.checkpoint_id)
        .collect();
    assert_eq!(history_before.len(), 6);

    // A new turn from the end of turn 1 forms a new branch.
    let out = ok(&g, RunConfig::new(&t).from_checkpoint(&ends[0]), say("alt")).await;
    assert_eq!(
        contents(&out.state.messages),
        vec!["m1", "echo m1", "alt", "echo alt"]
    );
    let history_after: Vec<String> = cp
        .list(&t, &ListOptions::default())
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.checkpoint_id)
        .collect();
    for id in &history_before {
        assert!(history_after.contains(id), "old checkpoint {id} kept");
    }
    let old = g.get_state_at(&t, Some(&ends[2])).await.unwrap().unwrap();
    assert_eq!(
        old.values.messages.len(),
        6,
        "the original branch still reads as before"
    );

    // Replaying from an old checkpoint re-executes its nodes on a fork.
    let input_of_turn2 = cp
        .list(
            &t,
            &ListOptions {
                filter: Some(serde_json::Map::from_iter([(
                    "source".into(),
                    json!("input"),
                )])),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .into_iter()
        .find(|r| {
            history_before.contains(&r.checkpoint_id) && r.metadata.get("turn") == Some(&json!(2))
        })
        .unwrap();
    let before_calls = calls.get();
    let out = ok(
        &g,
        RunConfig::new(&t).from_checkpoint(&input_of_turn2.checkpoint_id),
        RunInput::Continue,
    )
    .await;
    assert_eq!(calls.get(), before_calls + 1);
    assert_eq!(
        contents(&out.state.messages),
        vec!["m1", "echo m1", "m2", "echo m2"]
    );
    let fork = cp
        .list(
            &t,
            &ListOptions {
                filter: Some(serde_json::Map::from_iter([(
                    "source".into(),
                    json!("fork"),
                )])),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(fork.len(), 1);
    assert_eq!(
        fork[0].parent_id.as_deref(),
        Some(input_of_turn2.checkpoint_id.as_str())
    );
}

/// A new turn from a turn's `input` checkpoint replaces that input (LangGraph's edit of a
/// message, the thread's first included): it applies to the state the old input was applied
/// to, in a child of that input checkpoint; the original branch reads as before.
pub async fn a_turn_from_an_input_checkpoint_replaces_its_input(cp: Arc<dyn Checkpointer>) {
    let mut g = StateGraph::<TestState>::new();
    g.add_node("echo", |s: Arc<TestState>, _c: NodeContext| async move {
        let last = s.messages.last().unwrap().content.clone();
        Ok::<_, NodeError>(Upd::default().messages(vec![Message::ai(format!("echo {last}"))]))
    });
    g.add_edge(START, "echo");
    g.add_edge("echo", END);
    let g = build(g, cp.clone());
    let t = thread();
    ok(&g, RunConfig::new(&t), say("m1")).await;
    let end = ok(&g, RunConfig::new(&t), say("m2"))
        .await
        .checkpoint_id
        .unwrap();
    let inputs = |turn: u64| {
        let cp = cp.clone();
        let t = t.clone();
        async move {
            cp.list(
                &t,
                &ListOptions {
                    filter: Some(serde_json::Map::from_iter([(
                        "source".into(),
                        json!("input"),
                    )])),
                    ..Default::default()
                },
            )
            .await
            .unwrap()
            .into_iter()
            .filter(|r| r.metadata.get("turn") == Some(&json!(turn)))
            .collect::<Vec<_>>()
        }
    };
    let first = inputs(1).await.pop().unwrap();
    let second = inputs(2).await.pop().unwrap();

    // Editing the first message: nothing before it.
    let out = ok(
        &g,
        RunConfig::new(&t).from_checkpoint(&first.checkpoint_id),
        say("alt"),
    )
    .await;
    assert_eq!(contents(&out.state.messages), vec!["alt", "echo alt"]);
    let edited = inputs(1)
        .await
        .into_iter()
        .find(|r| r.checkpoint_id != first.checkpoint_id)
        .unwrap();
    assert_eq!(
        edited.parent_id.as_deref(),
        Some(first.checkpoint_id.as_str())
    );
    assert_eq!(edited.metadata.get("turn_base"), None, "its base: nothing");

    // Editing the second: the first exchange stays.
    let out = ok(
        &g,
        RunConfig::new(&t).from_checkpoint(&second.checkpoint_id),
        say("b"),
    )
    .await;
    assert_eq!(
        contents(&out.state.messages),
        vec!["m1", "echo m1", "b", "echo b"]
    );
    // A later turn on the edited branch builds on it.
    let out = ok(&g, RunConfig::new(&t), say("c")).await;
    assert_eq!(
        contents(&out.state.messages),
        vec!["m1", "echo m1", "b", "echo b", "c", "echo c"]
    );
    let old = g.get_state_at(&t, Some(&end)).await.unwrap().unwrap();
    assert_eq!(
        contents(&old.values.messages),
        vec!["m1", "echo m1", "m2", "echo m2"],
        "the original branch reads as before"
    );
}

pub async fn event_order_for_a_five_node_graph(cp: Arc<dyn Checkpointer>) {
    let g = linear(&["n1", "n2", "n3", "n4", "n5"], cp);
    let mut stream = g.stream(
        RunConfig::new(thread()).stream_modes(StreamModes::ALL),
        say("go"),
    );
    let mut events = Vec::new();
    while let Some(e) = stream.next().await {
        events.push(e);
    }
    stream.outcome().await.unwrap();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=events.len() as u64).collect::<Vec<_>>(),
        "seq counts 1, 2, 3, ..."
    );
    let events: Vec<Event> = events.into_iter().map(|e| e.event).collect();
    let mut expected = vec!["run_started", "values", "checkpoint"];
    for _ in 0..5 {
        expected.extend(["node_started", "node_finished", "values", "checkpoint"]);
    }
    expected.push("completed");
    assert_eq!(kinds(&events), expected);
    let nodes: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::NodeStarted { node, status, .. } => {
                assert_eq!(
                    status.as_deref(),
                    Some(format!("Running {node}...").as_str())
                );
                Some(node.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(nodes, vec!["n1", "n2", "n3", "n4", "n5"]);
    match &events[events.len() - 2] {
        Event::Checkpoint { next, step, .. } => {
            assert!(next.is_empty());
            assert_eq!(*step, 4);
        }
        other => panic!("unexpected {other:?}"),
    }
    // Default modes: updates only among structural events.
    let mut stream = g.stream(RunConfig::new(thread()), say("go"));
    let mut events = Vec::new();
    while let Some(e) = stream.next().await {
        events.push(e.event);
    }
    let mut expected = vec!["run_started"];
    expected.extend(["node_finished"; 5]);
    expected.push("completed");
    assert_eq!(kinds(&events), expected);
}

pub async fn conflicting_overwrites_in_one_step_fail(cp: Arc<dyn Checkpointer>) {
    let mut g = StateGraph::<TestState>::new();
    for (n, v) in [("p1", 1u32), ("p2", 2)] {
        g.add_node(n, move |_s: Arc<TestState>, _c: NodeContext| async move {
            Ok::<_, NodeError>(Upd::default().counter(v).log(vec![n.to_string()]))
        });
        g.add_edge(START, n);
        g.add_edge(n, END);
    }
    let g = build(g, cp);
    let t = thread();
    let err = g.invoke(RunConfig::new(&t), say("go")).await.unwrap_err();
    assert!(
        matches!(&err, RunError::ConflictingWrites { field, nodes } if field == "counter" && nodes == &vec!["p1".to_string(), "p2".to_string()]),
        "{err}"
    );
    assert_eq!(g.get_state(&t).await.unwrap().unwrap().values.counter, 0);
}

pub async fn command_goto_overrides_edges(cp: Arc<dyn Checkpointer>) {
    let mut g = StateGraph::<TestState>::new();
    g.add_node("a", |_s: Arc<TestState>, _c: NodeContext| async move {
        Ok::<_, NodeError>(Command::with_update(Upd::default().log(vec!["a".into()])).goto("c"))
    })
    .destinations(["c"]);
    g.add_node("b", trail_node("b"));
    g.add_node("c", trail_node("c"));
    g.add_edge(START, "a");
    g.add_edge("a", "b");
    g.add_edge("b", END);
    g.add_edge("c", END);
    let g = build(g, cp);
    let out = ok(&g, RunConfig::new(thread()), say("go")).await;
    assert_eq!(out.state.log, vec!["a", "c"]);
}

pub async fn update_state_as_node_plans_its_successors(cp: Arc<dyn Checkpointer>) {
    let g = linear(&["a", "b", "c"], cp);
    let t = thread();
    ok(&g, RunConfig::new(&t), say("go")).await;
    let before = g.get_state(&t).await.unwrap().unwrap();
    let err = g
        .update_state(&t, None, Upd::default().counter(1), Some("zzz"))
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::UnknownNode(_)));
    assert_eq!(
        g.get_state(&t).await.unwrap().unwrap().checkpoint_id,
        before.checkpoint_id
    );
    let id = g
        .update_state(
            &t,
            None,
            Upd::default().counter(42).log(vec!["edit".into()]),
            Some("a"),
        )
        .await
        .unwrap();
    let snap = g.get_state(&t).await.unwrap().unwrap();
    assert_eq!(snap.checkpoint_id, id);
    assert_eq!(snap.next, vec!["b"]);
    assert_eq!(snap.values.counter, 42);
    assert_eq!(snap.metadata.get("source"), Some(&json!("update")));
    let out = ok(&g, RunConfig::new(&t), RunInput::Continue).await;
    assert_eq!(out.state.log, vec!["a", "b", "c", "edit", "b", "c"]);
}

pub async fn join_waits_for_every_source(cp: Arc<dyn Checkpointer>) {
    let z = Counter::default();
    let z2 = z.clone();
    let mut g = StateGraph::<TestState>::new();
    g.add_node("x", trail_node("x"));
    g.add_node("x2", trail_node("x2"));
    g.add_node("y", trail_node("y"));
    g.add_node("z", move |_s: Arc<TestState>, _c: NodeContext| {
        let z = z2.clone();
        async move {
            z.bump();
            Ok::<_, NodeError>(Upd::default().log(vec!["z".into()]))
        }
    });
    g.add_edge(START, "x");
    g.add_edge(START, "y");
    g.add_edge("x", "x2");
    g.add_join(["x2", "y"], "z");
    g.add_edge("z", END);
    let g = build(g, cp);
    let out = ok(&g, RunConfig::new(thread()), say("go")).await;
    assert_eq!(out.state.log, vec!["x", "y", "x2", "z"]);
    assert_eq!(z.get(), 1);
    assert!(g.mermaid().contains("x2 & y --> z"));
}

pub async fn state_cache_follows_writes_of_other_instances(cp: Arc<dyn Checkpointer>) {
    let echo = |cp: Arc<dyn Checkpointer>| {
        let mut g = StateGraph::<TestState>::new();
        g.add_node("echo", |s: Arc<TestState>, _c: NodeContext| async move {
            let last = s.messages.last().unwrap().content.clone();
            Ok::<_, NodeError>(
                Upd::default()
                    .messages(vec![Message::ai(format!("echo {last}"))])
                    .counter(s.counter + 1),
            )
        });
        g.add_edge(START, "echo");
        g.add_edge("echo", END);
        // Two "replicas" with their state caches on.
        g.compile().unwrap().with_checkpointer(cp)
    };
    let (a, b) = (echo(cp.clone()), echo(cp.clone()));
    let t = thread();
    ok(&a, RunConfig::new(&t), say("1")).await;
    ok(&b, RunConfig::new(&t), say("2")).await;
    let out = ok(&a, RunConfig::new(&t), say("3")).await;
    assert_eq!(
        contents(&out.state.messages),
        vec!["1", "echo 1", "2", "echo 2", "3", "echo 3"],
        "a saw b's turn"
    );
    assert_eq!(out.state.counter, 3);
    b.update_state(&t, None, Upd::default().counter(10), None)
        .await
        .unwrap();
    assert_eq!(a.get_state(&t).await.unwrap().unwrap().values.counter, 10);
    let out = ok(&a, RunConfig::new(&t), say("4")).await;
    assert_eq!(out.state.counter, 11);
    let uncached = echo(cp).with_state_cache(0);
    assert_eq!(
        *uncached.get_state(&t).await.unwrap().unwrap().values,
        *out.state,
        "the cache agrees with storage"
    );
}

/// A new turn reads storage only when what the engine bet on (a new thread, or the cached
/// head) turns out wrong; a wrong bet costs a reload, never a wrong state.
pub async fn a_turn_reads_storage_only_when_its_bet_is_wrong(cp: Arc<dyn Checkpointer>) {
    use palgraph::testkit::counting::Counting;
    let counting = Arc::new(Counting::new(cp));
    let reads = || counting.snapshot().2;
    let cached = |cp: Arc<dyn Checkpointer>| linear(&["a", "b"], cp).with_state_cache(16);
    let a = cached(counting.clone());
    let t = thread();
    ok(&a, RunConfig::new(&t), say("1")).await;
    assert_eq!(reads(), 0, "a new thread's first turn reads nothing");
    ok(&a, RunConfig::new(&t), say("2")).await;
    assert_eq!(reads(), 0, "the next turn starts from the cached head");
    // Another instance (an empty cache) bets the thread is new, loses, and reloads.
    let b = cached(counting.clone());
    let out = ok(&b, RunConfig::new(&t), say("3")).await;
    assert!(reads() >= 1, "the lost bet is followed by a read");
    assert_eq!(contents(&out.state.messages), vec!["1", "2", "3"]);
    assert_eq!(out.state.log, vec!["a", "b", "a", "b", "a", "b"]);
    // `a`'s cached head is stale now: its bet loses too, and it sees b's turn.
    let before = reads();
    let out = ok(&a, RunConfig::new(&t), say("4")).await;
    assert!(reads() > before);
    assert_eq!(contents(&out.state.messages), vec!["1", "2", "3", "4"]);
    assert_eq!(out.state.log.len(), 8, "every turn ran a and b once");
    let history = counting.list(&t, &ListOptions::default()).await.unwrap();
    assert_eq!(
        history.len(),
        4 * 3,
        "each turn saved input, a, b; a lost bet saved nothing"
    );
}

/// The values at a run's last checkpoint are read from memory when the state cache holds
/// that checkpoint, and from storage (the same values) when it does not.
pub async fn the_values_a_run_completed_with_need_no_read(cp: Arc<dyn Checkpointer>) {
    use palgraph::testkit::counting::Counting;
    let counting = Arc::new(Counting::new(cp));
    let reads = || counting.snapshot().2;
    let g = linear(&["a", "b"], counting.clone()).with_state_cache(16);
    let t = thread();
    let out = ok(&g, RunConfig::new(&t), say("1")).await;
    let id = out
        .checkpoint_id
        .clone()
        .expect("the run saved checkpoints");
    let before = reads();
    let values = g.get_values_at(&t, &id).await.unwrap().expect("values");
    assert_eq!(reads(), before, "served from the state cache");
    assert_eq!(*values, *out.state);
    // Another instance, whose cache is empty, reads the same values from storage.
    let other = linear(&["a", "b"], counting.clone()).with_state_cache(16);
    let stored = other
        .get_values_at(&t, &id)
        .await
        .unwrap()
        .expect("stored values");
    assert!(reads() > before, "read from storage");
    assert_eq!(*stored, *out.state);
    // An earlier checkpoint is not the cached one: read, and its own values.
    let first = counting.list(&t, &ListOptions::default()).await.unwrap();
    let input = first.last().expect("the input checkpoint");
    let at_input = g
        .get_values_at(&t, &input.checkpoint_id)
        .await
        .unwrap()
        .expect("the input checkpoint's values");
    assert_eq!(contents(&at_input.messages), vec!["1"]);
    assert!(
        at_input.log.is_empty(),
        "no node had run at the input checkpoint"
    );
    assert!(g
        .get_values_at(&t, "no-such-checkpoint")
        .await
        .unwrap()
        .is_none());
}
