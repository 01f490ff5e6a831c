//! A run's input, run on any checkpointer: [`DynInput`]'s JSON form, and
//! `check_input`, which refuses exactly what a run refuses (the same variant, the same
//! message), changes nothing, and normalizes LangGraph's resume form.

#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use palgraph::dynamic::{DynGraph, DynInput};
use palgraph::stream::NullSink;
use palgraph::testkit::fixtures::*;
use palgraph::{
    Checkpointer, CompiledGraph, ListOptions, NodeContext, NodeError, Resume, RunConfig, RunError,
    RunStatus, StateGraph, END, START,
};

/// `prep -> ask`: `ask` interrupts unless the last message is "skip", and logs the answer's
/// JSON.
fn single(cp: Arc<dyn Checkpointer>) -> CompiledGraph<TestState> {
    let mut g = StateGraph::<TestState>::new();
    g.add_node("prep", trail_node("prep"));
    g.add_node("ask", |s: Arc<TestState>, ctx: NodeContext| async move {
        if s.messages.last().is_some_and(|m| m.content == "skip") {
            return Ok::<_, NodeError>(Upd::default().log(vec!["skipped".into()]));
        }
        let answer: Value = ctx.interrupt("ask?")?;
        Ok(Upd::default().log(vec![format!("ask:{answer}")]))
    });
    g.add_edge(START, "prep");
    g.add_edge("prep", "ask");
    g.add_edge("ask", END);
    build(g, cp)
}

/// `p1` and `p2` in parallel, each interrupting; each logs its answer's JSON.
fn pair(cp: Arc<dyn Checkpointer>) -> CompiledGraph<TestState> {
    let mut g = StateGraph::<TestState>::new();
    for name in ["p1", "p2"] {
        g.add_node(
            name,
            move |_s: Arc<TestState>, ctx: NodeContext| async move {
                let answer: Value = ctx.interrupt(format!("{name}?"))?;
                Ok::<_, NodeError>(Upd::default().log(vec![format!("{name}:{answer}")]))
            },
        );
        g.add_edge(START, name);
        g.add_edge(name, END);
    }
    build(g, cp)
}

fn turn(text: &str) -> DynInput {
    DynInput::Turn(json!({"messages": [{"type": "human", "content": text}]}))
}

/// A thread's checkpoints and every pending write: what a refusal must leave as it was.
async fn footprint(cp: &Arc<dyn Checkpointer>, t: &str) -> (Vec<String>, usize) {
    let ids: Vec<String> = cp
        .list(t, &ListOptions::default())
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.checkpoint_id)
        .collect();
    let mut writes = 0;
    for id in &ids {
        writes += cp.get(t, Some(id)).await.unwrap().unwrap().writes.len();
    }
    (ids, writes)
}

/// Checks `input`, then runs it: both are refused with the same error, and neither
/// changes the thread. Returns the error.
async fn refused_alike(
    g: &dyn DynGraph,
    cp: &Arc<dyn Checkpointer>,
    t: &str,
    checkpoint_id: Option<&str>,
    input: DynInput,
) -> RunError {
    let before = footprint(cp, t).await;
    let checked = g
        .check_input(t, checkpoint_id, input.clone())
        .await
        .expect_err("check_input refuses");
    assert_eq!(
        footprint(cp, t).await,
        before,
        "check_input changes nothing"
    );
    let mut cfg = RunConfig::new(t);
    cfg.checkpoint_id = checkpoint_id.map(str::to_string);
    let ran = g
        .run(cfg, input.clone(), Arc::new(NullSink))
        .await
        .expect_err("the run refuses too");
    assert_eq!(
        std::mem::discriminant(&checked),
        std::mem::discriminant(&ran),
        "{input:?}: check_input said {checked:?}, the run said {ran:?}"
    );
    assert_eq!(checked.to_string(), ran.to_string());
    assert!(checked.is_refusal(), "{checked:?}");
    assert_eq!(
        footprint(cp, t).await,
        before,
        "the refused run changed nothing"
    );
    checked
}

pub async fn check_input_refuses_what_a_run_refuses_and_changes_nothing(cp: Arc<dyn Checkpointer>) {
    let single_graph = single(cp.clone());
    let pair_graph = pair(cp.clone());
    let single: &dyn DynGraph = &single_graph;
    let pair: &dyn DynGraph = &pair_graph;
    let (t_new, t_done, t_one, t_two) = (thread(), thread(), thread(), thread());
    let done = ok(&single_graph, RunConfig::new(&t_done), say("skip")).await;
    assert_eq!(done.status, RunStatus::Completed);
    let done_head = done.checkpoint_id.clone().unwrap();
    let done_first = footprint(&cp, &t_done).await.0.last().cloned().unwrap();
    let one = ok(&single_graph, RunConfig::new(&t_one), say("ask")).await;
    assert_eq!(one.interrupts().len(), 1);
    let one_first = footprint(&cp, &t_one).await.0.last().cloned().unwrap();
    assert_ne!(Some(&one_first), one.checkpoint_id.as_ref());
    let two = ok(&pair_graph, RunConfig::new(&t_two), say("go")).await;
    let ids: Vec<String> = two.interrupts().iter().map(|i| i.id.clone()).collect();
    assert_eq!(ids.len(), 2);
    let value = |v: Value| DynInput::Resume(Resume::Value(v));

    let err = refused_alike(single, &cp, &t_new, None, value(json!(1))).await;
    assert!(matches!(err, RunError::NothingToResume { .. }), "{err}");
    let err = refused_alike(single, &cp, &t_done, None, value(json!(1))).await;
    assert!(matches!(err, RunError::NothingToResume { .. }), "{err}");
    let err = refused_alike(pair, &cp, &t_two, None, value(json!("x"))).await;
    assert!(
        matches!(&err, RunError::AmbiguousResume { pending } if pending.len() == 2),
        "{err}"
    );
    let not_all_pending = value(json!({ids[0].clone(): "a", "nope": "b"}));
    let err = refused_alike(pair, &cp, &t_two, None, not_all_pending).await;
    assert!(
        matches!(err, RunError::AmbiguousResume { .. }),
        "an object with a key that is not pending is one value: {err}"
    );
    let by_unknown_id = DynInput::Resume(Resume::ById(BTreeMap::from([(
        "nope".to_string(),
        json!(1),
    )])));
    let err = refused_alike(pair, &cp, &t_two, None, by_unknown_id).await;
    assert!(matches!(err, RunError::UnknownInterrupt { ref id } if id == "nope"));
    let err = refused_alike(single, &cp, &t_one, Some(&one_first), value(json!("x"))).await;
    assert!(matches!(err, RunError::ResumeNotAtHead { .. }), "{err}");
    for input in [value(json!("x")), turn("hi"), DynInput::Continue] {
        let err = refused_alike(single, &cp, &t_one, Some("no-such-checkpoint"), input).await;
        assert!(matches!(err, RunError::UnknownCheckpoint { .. }), "{err}");
    }
    for bad in [json!({"nope": 1}), json!({"counter": "many"})] {
        let err = refused_alike(single, &cp, &t_done, None, DynInput::Turn(bad)).await;
        assert!(matches!(err, RunError::InvalidInput(_)), "{err}");
    }
    let bad_update = DynInput::Command {
        update: Some(json!({"nope": 1})),
        goto: vec![],
        sends: vec![],
    };
    let err = refused_alike(single, &cp, &t_done, None, bad_update).await;
    assert!(matches!(err, RunError::InvalidInput(_)), "{err}");
    let nowhere = DynInput::Command {
        update: None,
        goto: vec!["nowhere".into()],
        sends: vec![],
    };
    let err = refused_alike(single, &cp, &t_done, None, nowhere.clone()).await;
    assert!(matches!(err, RunError::UnknownNode(ref n) if n == "nowhere"));
    let err = refused_alike(single, &cp, &t_done, Some(&done_first), nowhere).await;
    assert!(
        matches!(err, RunError::UnknownNode(_)),
        "refused before the fork is written: {err}"
    );
    let send_nowhere = DynInput::Command {
        update: None,
        goto: vec![],
        sends: vec![palgraph::send::Send::new("nowhere", 1)],
    };
    let err = refused_alike(single, &cp, &t_done, None, send_nowhere).await;
    assert!(
        matches!(err, RunError::UnknownNode(ref n) if n == "nowhere"),
        "{err}"
    );

    // What check_input accepts, it returns as it is (nothing to normalize), writing nothing,
    // and the run takes it.
    let accepted = [
        (single, &t_new, None, turn("hi")),
        (
            single,
            &t_done,
            Some(done_head.as_str()),
            DynInput::Continue,
        ),
        (
            single,
            &t_done,
            Some(done_first.as_str()),
            DynInput::Command {
                update: Some(json!({"counter": 7})),
                goto: vec!["ask".into()],
                sends: vec![],
            },
        ),
        (single, &t_one, None, value(json!("yes"))),
        (
            pair,
            &t_two,
            None,
            DynInput::Resume(Resume::ById(BTreeMap::from([(ids[1].clone(), json!("b"))]))),
        ),
    ];
    for (g, t, checkpoint_id, input) in accepted {
        let before = footprint(&cp, t).await;
        let checked = g.check_input(t, checkpoint_id, input.clone()).await;
        assert_eq!(checked.as_ref().ok(), Some(&input), "{checked:?}");
        assert_eq!(
            footprint(&cp, t).await,
            before,
            "check_input changes nothing"
        );
        let mut cfg = RunConfig::new(t.as_str());
        cfg.checkpoint_id = checkpoint_id.map(str::to_string);
        let out = g.run(cfg, input.clone(), Arc::new(NullSink)).await;
        assert!(out.is_ok(), "{input:?} runs: {out:?}");
    }
}

pub async fn a_resume_keyed_by_interrupt_ids_is_normalized_and_runs(cp: Arc<dyn Checkpointer>) {
    let pair_graph = pair(cp.clone());
    let single_graph = single(cp.clone());
    let pair: &dyn DynGraph = &pair_graph;
    let single: &dyn DynGraph = &single_graph;
    let ids_of = |out: &palgraph::RunOutcome<TestState>| -> Vec<(String, String)> {
        out.interrupts()
            .iter()
            .map(|i| (i.node.clone(), i.id.clone()))
            .collect()
    };

    // Two pending interrupts answered with one object keyed by their ids (LangGraph's form).
    let t = thread();
    let ids = ids_of(&ok(&pair_graph, RunConfig::new(&t), say("go")).await);
    let keyed = json!({ids[0].1.clone(): "A", ids[1].1.clone(): "B"});
    let checked = pair
        .check_input(&t, None, DynInput::Resume(Resume::Value(keyed.clone())))
        .await
        .unwrap();
    let DynInput::Resume(Resume::ById(map)) = &checked else {
        panic!("normalized to by-id: {checked:?}")
    };
    assert_eq!(map.len(), 2);
    assert_eq!(map.get(&ids[0].1), Some(&json!("A")));
    let out = pair
        .run(RunConfig::new(&t), checked, Arc::new(NullSink))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    let log = pair_graph
        .get_state(&t)
        .await
        .unwrap()
        .unwrap()
        .values
        .log
        .clone();
    let expect = |node: &str, v: &str| format!("{node}:\"{v}\"");
    assert_eq!(
        log,
        vec![expect(&ids[0].0, "A"), expect(&ids[1].0, "B")],
        "each interrupt got its own value"
    );

    // The run applies the same rule to an input nobody checked.
    let t = thread();
    let ids = ids_of(&ok(&pair_graph, RunConfig::new(&t), say("go")).await);
    let keyed = json!({ids[0].1.clone(): "A", ids[1].1.clone(): "B"});
    let out = pair
        .run(
            RunConfig::new(&t),
            DynInput::Resume(Resume::Value(keyed)),
            Arc::new(NullSink),
        )
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed);

    // One pending interrupt: keyed by its id, the value is the answer; keyed by anything
    // else, the object is the answer.
    let t = thread();
    let ids = ids_of(&ok(&single_graph, RunConfig::new(&t), say("ask")).await);
    let checked = single
        .check_input(
            &t,
            None,
            DynInput::Resume(Resume::Value(json!({ids[0].1.clone(): "x"}))),
        )
        .await
        .unwrap();
    assert!(matches!(checked, DynInput::Resume(Resume::ById(_))));
    single
        .run(RunConfig::new(&t), checked, Arc::new(NullSink))
        .await
        .unwrap();
    let log = single_graph
        .get_state(&t)
        .await
        .unwrap()
        .unwrap()
        .values
        .log
        .clone();
    assert_eq!(log.last().map(String::as_str), Some("ask:\"x\""));
    let t = thread();
    ok(&single_graph, RunConfig::new(&t), say("ask")).await;
    let plain = DynInput::Resume(Resume::Value(json!({"choice": "x"})));
    let checked = single.check_input(&t, None, plain.clone()).await.unwrap();
    assert_eq!(
        checked, plain,
        "not keyed by pending ids: left as one value"
    );
    single
        .run(RunConfig::new(&t), checked, Arc::new(NullSink))
        .await
        .unwrap();
    let log = single_graph
        .get_state(&t)
        .await
        .unwrap()
        .unwrap()
        .values
        .log
        .clone();
    assert_eq!(
        log.last().map(String::as_str),
        Some(r#"ask:{"choice":"x"}"#)
    );
}

pub async fn every_dyn_input_round_trips_through_json(cp: Arc<dyn Checkpointer>) {
    let forms = [
        (
            turn("hi"),
            json!({"turn": {"messages": [{"type": "human", "content": "hi"}]}}),
        ),
        (
            DynInput::Resume(Resume::Value(json!("yes"))),
            json!({"resume": {"value": "yes"}}),
        ),
        (
            DynInput::Resume(Resume::Value(Value::Null)),
            json!({"resume": {"value": null}}),
        ),
        (
            DynInput::Resume(Resume::ById(BTreeMap::from([("abc".into(), json!(1))]))),
            json!({"resume": {"by_id": {"abc": 1}}}),
        ),
        (DynInput::Continue, json!("continue")),
        (
            DynInput::Command {
                update: Some(json!({"counter": 1})),
                goto: vec!["ask".into()],
                sends: vec![],
            },
            json!({"command": {"update": {"counter": 1}, "goto": ["ask"]}}),
        ),
        (
            DynInput::Command {
                update: None,
                goto: vec![],
                sends: vec![palgraph::send::Send::new("ask", "x")],
            },
            json!({"command": {"sends": [{"node": "ask", "arg": "x"}]}}),
        ),
        (
            DynInput::Command {
                update: None,
                goto: vec![],
                sends: vec![],
            },
            json!({"command": {}}),
        ),
    ];
    for (input, expected) in &forms {
        assert_eq!(&serde_json::to_value(input).unwrap(), expected);
        let back: DynInput = serde_json::from_value(expected.clone()).unwrap();
        assert_eq!(&back, input);
        let text = serde_json::to_string(input).unwrap();
        assert_eq!(&serde_json::from_str::<DynInput>(&text).unwrap(), input);
    }
    for bad in [
        json!({"command": {"goto": ["ask"], "resume": 1}}),
        json!({"turns": {}}),
        json!({"resume": {"values": 1}}),
        json!("pause"),
    ] {
        assert!(
            serde_json::from_value::<DynInput>(bad.clone()).is_err(),
            "{bad} is refused"
        );
    }

    // Inputs read back from JSON run as the originals would.
    let g = single(cp);
    let dyn_g: &dyn DynGraph = &g;
    let t = thread();
    let read = |v: Value| serde_json::from_value::<DynInput>(v).unwrap();
    let out = dyn_g
        .run(
            RunConfig::new(&t),
            read(forms[0].1.clone()),
            Arc::new(NullSink),
        )
        .await
        .unwrap();
    assert_eq!(out.status.clone(), {
        let s = g.get_state(&t).await.unwrap().unwrap();
        RunStatus::Interrupted(s.interrupts)
    });
    let out = dyn_g
        .run(
            RunConfig::new(&t),
            read(forms[1].1.clone()),
            Arc::new(NullSink),
        )
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    let out = dyn_g
        .run(
            RunConfig::new(&t),
            read(forms[5].1.clone()),
            Arc::new(NullSink),
        )
        .await
        .unwrap();
    assert!(matches!(out.status, RunStatus::Interrupted(_)), "goto ask");
    assert_eq!(out.values["counter"], json!(1));
    // Only the status: the same run, without the final state as JSON.
    let status = dyn_g
        .run_to_status(
            RunConfig::new(&t),
            read(json!({"resume": {"value": "again"}})),
            Arc::new(NullSink),
        )
        .await
        .unwrap();
    assert_eq!(status, RunStatus::Completed);
    let out = dyn_g
        .run(
            RunConfig::new(&t),
            read(forms[4].1.clone()),
            Arc::new(NullSink),
        )
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed, "continue at the end");
    assert_eq!(
        g.get_state(&t).await.unwrap().unwrap().values.log,
        vec!["prep", "ask:\"yes\"", "ask:\"again\""]
    );
}
