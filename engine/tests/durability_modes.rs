//! Durability modes: with [`Durability::Async`] a step's checkpoint is stored
//! while the next step runs. These tests hold it to what [`Durability::Sync`] gives: the same
//! events in the same order, no write of a step stored before the checkpoint it belongs to,
//! and a checkpoint that fails to store stops the step that started on it, drops what that
//! step emitted and fails the run with the checkpoint's error.

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use palgraph::checkpoint::CheckpointError;
use palgraph::testkit::fixtures::{build, kinds, say, thread, TestState, Upd};
use palgraph::testkit::paced::Paced;
use palgraph::{
    Checkpointer, Durability, Event, MemoryCheckpointer, NodeContext, NodeError, Resume, RunConfig,
    RunError, RunInput, StateGraph, StreamModes, END, START,
};

type Log = Arc<Mutex<Vec<String>>>;

fn note(log: &Log, line: String) {
    log.lock().unwrap().push(line);
}

fn lines(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

/// `a -> b -> (p1 | p2) -> z`: `b` reports a status and emits a custom event; every node
/// logs that it ran.
fn fan_graph(cp: Arc<dyn Checkpointer>, log: Log) -> palgraph::CompiledGraph<TestState> {
    let mut g = StateGraph::<TestState>::new();
    for name in ["a", "b", "p1", "p2", "z"] {
        let log = log.clone();
        g.add_node(name, move |_s: Arc<TestState>, ctx: NodeContext| {
            let log = log.clone();
            async move {
                note(&log, format!("ran {name}"));
                if name == "b" {
                    ctx.status("thinking", serde_json::json!({"n": 1}));
                    ctx.emit(serde_json::json!({"from": "b"}));
                }
                Ok::<_, NodeError>(Upd::default().log(vec![name.to_string()]))
            }
        });
    }
    g.add_edge(START, "a");
    g.add_edge("a", "b");
    g.add_edge("b", "p1");
    g.add_edge("b", "p2");
    g.add_join(["p1", "p2"], "z");
    g.add_edge("z", END);
    build(g, cp)
}

/// The events of a run, without their ids, and its outcome.
async fn events_of(
    g: &palgraph::CompiledGraph<TestState>,
    cfg: RunConfig,
    input: RunInput<TestState>,
) -> (
    Vec<Event>,
    Result<palgraph::RunOutcome<TestState>, RunError>,
) {
    let mut stream = g.stream(cfg.stream_modes(StreamModes::ALL), input);
    let mut events = Vec::new();
    while let Some(e) = stream.next().await {
        events.push(e.event);
    }
    (events, stream.outcome().await)
}

/// What a listener can compare across two runs: each event's kind and node, what a
/// node's update and a step's values hold of the log, and each checkpoint's step and next
/// nodes (ids and message ids differ from run to run).
fn shape(events: &[Event]) -> Vec<String> {
    let kinds = kinds(events);
    kinds
        .into_iter()
        .zip(events)
        .map(|(k, e)| match e {
            Event::NodeStarted { node, .. }
            | Event::Status { node, .. }
            | Event::Custom { node, .. } => format!("{k} {node}"),
            Event::NodeFinished { node, update, .. } => format!("{k} {node} {}", update["log"]),
            Event::Values { step, values } => format!("{k} {step} {}", values["log"]),
            Event::Checkpoint { step, next, .. } => format!("{k} {step} {next:?}"),
            _ => k,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_and_sync_runs_stream_the_same_events_and_reach_the_same_state() {
    let mut shapes = Vec::new();
    let mut logs = Vec::new();
    for durability in [Durability::Sync, Durability::Async] {
        let paced = Paced::new(
            Arc::new(MemoryCheckpointer::new()),
            Duration::from_millis(20),
        );
        let log = paced.log();
        let g = fan_graph(Arc::new(paced), log.clone());
        let t = thread();
        let (events, outcome) =
            events_of(&g, RunConfig::new(&t).durability(durability), say("go")).await;
        let outcome = outcome.expect("the run completes");
        assert_eq!(outcome.state.log, ["a", "b", "p1", "p2", "z"]);
        let stored = g.get_state(&t).await.unwrap().expect("a head");
        assert_eq!(stored.values.log, outcome.state.log);
        assert_eq!(stored.checkpoint_id, outcome.checkpoint_id.unwrap());
        shapes.push(shape(&events));
        logs.push(lines(&log));
    }
    assert_eq!(shapes[0], shapes[1], "the same stream in both modes");
    assert_eq!(
        shapes[0]
            .iter()
            .filter(|k| k.starts_with("status b"))
            .count(),
        1
    );
    // Sync: each node runs only once the checkpoint before it is stored. Async: `b` runs
    // while the checkpoint `a` made is on its way.
    let after_a_stored = |log: &[String]| {
        let ran_a = log.iter().position(|l| l == "ran a").unwrap();
        let stored = log[ran_a..]
            .iter()
            .position(|l| l.starts_with("stored "))
            .unwrap()
            + ran_a;
        let ran_b = log.iter().position(|l| l == "ran b").unwrap();
        ran_b > stored
    };
    assert!(after_a_stored(&logs[0]), "sync: {:?}", logs[0]);
    assert!(!after_a_stored(&logs[1]), "async: {:?}", logs[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_of_the_next_step_waits_for_the_checkpoint_it_belongs_to() {
    let paced = Paced::new(
        Arc::new(MemoryCheckpointer::new()),
        Duration::from_millis(30),
    );
    let log = paced.log();
    let mut g = StateGraph::<TestState>::new();
    g.add_node("a", |_s: Arc<TestState>, _c: NodeContext| async move {
        Ok::<_, NodeError>(Upd::default().log(vec!["a".into()]))
    });
    let node_log = log.clone();
    g.add_node("ask", move |_s: Arc<TestState>, ctx: NodeContext| {
        let log = node_log.clone();
        async move {
            // A durable step, then an interrupt: two writes at the checkpoint `a` made,
            // both asked for while that checkpoint is still being stored.
            let n: u32 = ctx.step("pick", async { Ok::<_, NodeError>(7) }).await?;
            note(&log, format!("stepped {n}"));
            let answer: String = ctx.interrupt("which one?")?;
            Ok::<_, NodeError>(Upd::default().log(vec![format!("{answer} {n}")]))
        }
    });
    g.add_edge(START, "a");
    g.add_edge("a", "ask");
    g.add_edge("ask", END);
    let g = build(g, Arc::new(paced));
    let t = thread();
    let outcome = g
        .invoke(RunConfig::new(&t).durability(Durability::Async), say("go"))
        .await
        .expect("the run stops at the interrupt");
    assert!(matches!(outcome.status, palgraph::RunStatus::Interrupted(ref i) if i.len() == 1));
    let log = lines(&log);
    let writes: Vec<&String> = log.iter().filter(|l| l.starts_with("writes ")).collect();
    assert!(!writes.is_empty(), "{log:?}");
    for w in writes {
        let id = w.trim_start_matches("writes ");
        let stored = log.iter().position(|l| l == &format!("stored {id}"));
        let written = log.iter().position(|l| l == w).unwrap();
        assert!(
            stored.is_some_and(|s| s < written),
            "a write at {id} before its checkpoint was stored: {log:?}"
        );
    }
    // The resume sees the durable step's recorded result and finishes the turn.
    let done = g
        .invoke(
            RunConfig::new(&t),
            RunInput::Resume(Resume::Value(serde_json::json!("this"))),
        )
        .await
        .expect("the resume completes");
    assert_eq!(done.state.log, ["a", "this 7"]);
}

/// `a`, then `slow` nodes (none, one, or two in parallel) that log that they ran, report a
/// status and wait far longer than the test, until dropped.
fn stuck_graph(
    cp: Arc<dyn Checkpointer>,
    log: Log,
    slow_nodes: usize,
) -> palgraph::CompiledGraph<TestState> {
    let mut g = StateGraph::<TestState>::new();
    g.add_node("a", |_s: Arc<TestState>, _c: NodeContext| async move {
        Ok::<_, NodeError>(Upd::default().log(vec!["a".into()]))
    });
    for name in ["s1", "s2"].into_iter().take(slow_nodes) {
        let log = log.clone();
        g.add_node(name, move |_s: Arc<TestState>, ctx: NodeContext| {
            let log = log.clone();
            async move {
                note(&log, format!("ran {name}"));
                ctx.status("working", serde_json::Value::Null);
                tokio::time::sleep(Duration::from_secs(600)).await;
                Ok::<_, NodeError>(Upd::default())
            }
        });
        g.add_edge("a", name);
        g.add_edge(name, END);
    }
    if slow_nodes == 0 {
        g.add_edge("a", END);
    }
    g.add_edge(START, "a");
    build(g, cp)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_that_fails_stops_the_step_that_started_on_it() {
    // (slow nodes after `a`, how long the failing put takes, whether they start): the
    // failure arrives while one or two of them run; it arrived before the next step would
    // start (none starts); it is `a`'s step's own, the last of the run.
    let cases = [
        (1, Duration::from_millis(50), true),
        (2, Duration::from_millis(50), true),
        (2, Duration::ZERO, false),
        (0, Duration::from_millis(50), false),
    ];
    for (slow, delay, started) in cases {
        let memory: Arc<dyn Checkpointer> = Arc::new(MemoryCheckpointer::new());
        // The first flushed put is the checkpoint `a` makes.
        let paced = Paced::new(memory.clone(), delay).failing_put(1);
        let log = paced.log();
        let g = stuck_graph(Arc::new(paced), log.clone(), slow);
        let t = thread();
        let cfg = RunConfig::new(&t).durability(Durability::Async);
        // Bounded so that a step that is not stopped fails the test instead of hanging it.
        let (events, outcome) =
            tokio::time::timeout(Duration::from_secs(60), events_of(&g, cfg, say("go")))
                .await
                .expect("the run stops once the checkpoint failed");
        let case = format!("{slow} slow nodes, a put of {delay:?}");
        let err = outcome.expect_err("the run fails");
        assert!(
            matches!(err, RunError::Checkpoint(CheckpointError::Unavailable(_))),
            "{case}: {err}"
        );
        let kinds = shape(&events);
        // Nothing of `a`'s step is told finished (its checkpoint is not stored), nothing of
        // the step that ran on it is told at all, and the run ends once.
        assert!(
            !kinds.iter().any(|k| k.starts_with("node_finished")
                || k.starts_with("status")
                || k.starts_with("node_started s")),
            "{case}: {kinds:?}"
        );
        assert_eq!(
            kinds
                .iter()
                .filter(
                    |k| ["completed", "failed", "interrupted", "cancelled"].contains(&k.as_str())
                )
                .count(),
            1,
            "{case}: {kinds:?}"
        );
        assert_eq!(kinds.last().map(String::as_str), Some("failed"));
        let log = lines(&log);
        assert!(log.iter().any(|l| l.starts_with("failed ")), "{log:?}");
        // The slow nodes started on the checkpoint in flight (and were stopped), unless
        // its failure was known before they could.
        let ran = log.iter().filter(|l| l.starts_with("ran s")).count();
        assert_eq!(ran, if started { slow } else { 0 }, "{case}: {log:?}");
        // The thread stays at its input checkpoint: `a` runs again on the next try.
        let head = g
            .get_state(&t)
            .await
            .unwrap()
            .expect("the input checkpoint");
        assert!(head.values.log.is_empty());
        assert_eq!(head.next, ["a"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_is_the_default_and_stops_before_the_next_step() {
    let paced = Paced::new(Arc::new(MemoryCheckpointer::new()), Duration::ZERO).failing_put(2);
    let log = paced.log();
    let g = fan_graph(Arc::new(paced), log.clone());
    let t = thread();
    let err = g
        .invoke(RunConfig::new(&t), say("go"))
        .await
        .expect_err("the second flushed put fails");
    assert!(matches!(err, RunError::Checkpoint(_)), "{err}");
    // Sync: the node after the failed checkpoint never ran.
    let log = lines(&log);
    let failed = log.iter().position(|l| l.starts_with("failed ")).unwrap();
    assert!(
        !log[failed..].iter().any(|l| l.starts_with("ran ")),
        "{log:?}"
    );
    assert_eq!(Durability::default(), Durability::Sync);
    assert_eq!(Durability::from_name("sync"), Some(Durability::Sync));
    assert_eq!(Durability::from_name("exit"), Some(Durability::Async));
    assert_eq!(Durability::from_name("later"), None);
}

/// A subgraph node's own run stores its checkpoints with the parent run's durability: with
/// `async` its second node runs while the checkpoint its first node made is stored, with
/// `sync` only after every checkpoint put so far is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subgraph_stores_its_checkpoints_with_the_parents_durability() {
    for durability in [Durability::Sync, Durability::Async] {
        let paced = Paced::new(
            Arc::new(MemoryCheckpointer::new()),
            Duration::from_millis(20),
        );
        let log = paced.log();
        let mut sub = StateGraph::<TestState>::new();
        for name in ["sa", "sb"] {
            let log = log.clone();
            sub.add_node(name, move |_s: Arc<TestState>, _c: NodeContext| {
                let log = log.clone();
                async move {
                    note(&log, format!("ran {name}"));
                    Ok::<_, NodeError>(Upd::default().log(vec![name.to_string()]))
                }
            });
        }
        sub.add_edge(START, "sa");
        sub.add_edge("sa", "sb");
        sub.add_edge("sb", END);
        let sub = sub.compile().unwrap();
        let mut g = StateGraph::<TestState>::new();
        g.add_subgraph(
            "sub",
            sub,
            |_s: &TestState| Upd::default(),
            |s: &TestState| Upd::default().log(s.log.clone()),
        );
        g.add_edge(START, "sub");
        g.add_edge("sub", END);
        let g = build(g, Arc::new(paced));
        let t = thread();
        let out = g
            .invoke(RunConfig::new(&t).durability(durability), say("go"))
            .await
            .expect("the run completes");
        assert_eq!(out.state.log, ["sa", "sb"]);
        // How many checkpoints were put and not yet stored when `sb` began.
        let log = lines(&log);
        let ran_sb = log.iter().position(|l| l == "ran sb").unwrap();
        let count = |p: &str| log[..ran_sb].iter().filter(|l| l.starts_with(p)).count();
        let in_flight = count("put ") - count("stored ");
        if durability == Durability::Sync {
            assert_eq!(in_flight, 0, "sync: {log:?}");
        } else {
            assert!(in_flight > 0, "async: {log:?}");
        }
    }
}
