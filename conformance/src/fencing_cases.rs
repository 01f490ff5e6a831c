//! Fencing and availability: a writer whose thread was handed to another stops and writes
//! nothing more; a storage or dependency outage stops a run without recording a failure,
//! and running on later continues from the last checkpoint; a failure recorded after the
//! fact reads as a node's failure. Run on any checkpointer.

#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::Arc;

use palgraph::checkpoint::{
    json as raw, now_ms, CheckpointError, CheckpointRecord, Fence, PendingWrite, PutCheckpoint,
};
use palgraph::testkit::fixtures::*;
use palgraph::{
    Checkpointer, Message, NodeContext, NodeError, RunConfig, RunError, RunInput, RunStatus,
    StateGraph, END, START,
};

fn record(thread_id: &str, id: &str, seq: i64) -> CheckpointRecord {
    CheckpointRecord {
        thread_id: thread_id.to_string(),
        checkpoint_id: id.to_string(),
        parent_id: None,
        seq,
        created_at_ms: now_ms(),
        metadata: Default::default(),
        versions: Default::default(),
        plan: raw("{}".into()).unwrap(),
    }
}

fn put(t: &str, seq: i64, head: Option<String>, fence: Option<Fence>) -> PutCheckpoint {
    PutCheckpoint {
        record: record(t, &uuid::Uuid::now_v7().to_string(), seq),
        blobs: vec![],
        expected_head: head,
        fence,
        flush: Default::default(),
    }
}

fn step_write(task: &str, value: &str) -> PendingWrite {
    PendingWrite {
        task_id: task.into(),
        channel: "__step__:x".into(),
        idx: 0,
        value: raw(format!("\"{value}\"")).unwrap(),
    }
}

pub async fn a_superseded_fence_refuses_puts_and_pending_writes(cp: Arc<dyn Checkpointer>) {
    let t = thread();
    assert_eq!(cp.advance_fence(&t, 5).await.unwrap(), 5);
    let first = put(&t, 1, None, Some(Fence::new(&t, 5)));
    let a = first.record.checkpoint_id.clone();
    cp.put(&first).await.unwrap();
    cp.put_writes(
        &t,
        &a,
        vec![step_write("t1", "old")],
        Some(&Fence::new(&t, 5)),
    )
    .await
    .unwrap();

    // The thread is handed to epoch 6; a lower advance changes nothing.
    assert_eq!(cp.advance_fence(&t, 6).await.unwrap(), 6);
    assert_eq!(cp.advance_fence(&t, 4).await.unwrap(), 6);
    let stale = cp
        .put(&put(&t, 2, Some(a.clone()), Some(Fence::new(&t, 5))))
        .await
        .unwrap_err();
    assert!(
        matches!(
            stale,
            CheckpointError::Fenced {
                epoch: 5,
                current: 6,
                ..
            }
        ),
        "{stale}"
    );
    let stale = cp
        .put_writes(
            &t,
            &a,
            vec![step_write("t2", "stale")],
            Some(&Fence::new(&t, 5)),
        )
        .await
        .unwrap_err();
    assert!(matches!(stale, CheckpointError::Fenced { .. }), "{stale}");
    let loaded = cp.get(&t, None).await.unwrap().unwrap();
    assert_eq!(
        loaded.record.checkpoint_id, a,
        "the stale put wrote nothing"
    );
    assert_eq!(
        loaded
            .writes
            .iter()
            .map(|w| w.task_id.as_str())
            .collect::<Vec<_>>(),
        vec!["t1"],
        "the stale pending write wrote nothing"
    );

    // The new holder writes; so does an unfenced writer (an operator's update_state).
    let next = put(&t, 2, Some(a), Some(Fence::new(&t, 6)));
    let b = next.record.checkpoint_id.clone();
    cp.put(&next).await.unwrap();
    cp.put(&put(&t, 3, Some(b), None)).await.unwrap();

    // Deleting the thread deletes its fence: a writer that held it is refused.
    cp.delete_thread(&t).await.unwrap();
    let gone = cp
        .put(&put(&t, 1, None, Some(Fence::new(&t, 6))))
        .await
        .unwrap_err();
    assert!(
        matches!(gone, CheckpointError::Fenced { current: 0, .. }),
        "{gone}"
    );
}

pub async fn a_run_whose_thread_was_handed_on_stops_and_writes_nothing_more(
    cp: Arc<dyn Checkpointer>,
) {
    let gate = Arc::new(tokio::sync::Notify::new());
    let ran = Counter::default();
    let mut g = StateGraph::<TestState>::new();
    g.add_node("first", |s: Arc<TestState>, _c: NodeContext| async move {
        Ok::<_, NodeError>(Upd::default().counter(s.counter + 1))
    });
    let (gate2, ran2) = (gate.clone(), ran.clone());
    g.add_node("second", move |s: Arc<TestState>, ctx: NodeContext| {
        let (gate, ran) = (gate2.clone(), ran2.clone());
        async move {
            gate.notified().await;
            let n: usize = ctx
                .step("effect", async { Ok::<_, NodeError>(ran.bump()) })
                .await?;
            Ok::<_, NodeError>(Upd::default().counter(s.counter + 10 * n as u32))
        }
    });
    g.add_edge(START, "first");
    g.add_edge("first", "second");
    g.add_edge("second", END);
    let g = build(g, cp.clone());
    let t = thread();
    cp.advance_fence(&t, 1).await.unwrap();
    let run = tokio::spawn({
        let (g, t) = (g.clone(), t.clone());
        async move {
            g.invoke(RunConfig::new(&t).fence(Fence::new(&t, 1)), say("go"))
                .await
        }
    });
    while cp.list(&t, &Default::default()).await.unwrap().len() < 2 {
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    // Another worker takes the thread while `second` runs.
    cp.advance_fence(&t, 2).await.unwrap();
    gate.notify_one();
    let err = run.await.unwrap().unwrap_err();
    assert!(err.is_fenced(), "{err}");
    assert!(!err.is_transient());
    assert_eq!(
        ran.get(),
        1,
        "the step ran once, and its result was refused"
    );
    let snap = g.get_state(&t).await.unwrap().unwrap();
    assert_eq!(snap.values.counter, 1, "nothing after `first` was written");
    assert_eq!(snap.next, vec!["second"]);
    assert!(
        snap.tasks.iter().all(|task| task.error.is_none()),
        "a fenced writer records no failure"
    );

    // The new holder continues from the last checkpoint and runs the step.
    gate.notify_one();
    let out = ok(
        &g,
        RunConfig::new(&t).fence(Fence::new(&t, 2)),
        RunInput::Continue,
    )
    .await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.state.counter, 21);
}

pub async fn an_unavailable_dependency_stops_the_run_without_a_failure(cp: Arc<dyn Checkpointer>) {
    let down = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let mut g = StateGraph::<TestState>::new();
    g.add_node("first", |s: Arc<TestState>, _c: NodeContext| async move {
        Ok::<_, NodeError>(
            Upd::default()
                .counter(s.counter + 1)
                .messages(vec![Message::ai("first")]),
        )
    });
    let down2 = down.clone();
    g.add_node("lookup", move |_s: Arc<TestState>, _c: NodeContext| {
        let down = down2.clone();
        async move {
            if down.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(NodeError::unavailable("the document store is restarting"));
            }
            Ok::<_, NodeError>(Upd::default().messages(vec![Message::ai("found")]))
        }
    });
    g.add_edge(START, "first");
    g.add_edge("first", "lookup");
    g.add_edge("lookup", END);
    let g = build(g, cp);
    let t = thread();
    let err = g.invoke(RunConfig::new(&t), say("hi")).await.unwrap_err();
    assert!(
        matches!(err, RunError::Unavailable { ref node, .. } if node == "lookup"),
        "{err}"
    );
    assert!(err.is_transient());
    let snap = g.get_state(&t).await.unwrap().unwrap();
    assert_eq!(snap.next, vec!["lookup"]);
    assert!(snap.tasks.iter().all(|task| task.error.is_none()));

    // Running on once the dependency is back finishes the turn, without running `first`
    // again and with the turn's message kept.
    down.store(false, std::sync::atomic::Ordering::SeqCst);
    let out = ok(&g, RunConfig::new(&t), RunInput::Continue).await;
    assert_eq!(out.state.counter, 1);
    assert_eq!(contents(&out.state.messages), vec!["hi", "first", "found"]);
}

pub async fn a_failure_recorded_after_the_fact_is_not_carried_forward(cp: Arc<dyn Checkpointer>) {
    let mut g = StateGraph::<TestState>::new();
    g.add_node("ack", |s: Arc<TestState>, _c: NodeContext| async move {
        let last = s.messages.last().unwrap().content.clone();
        Ok::<_, NodeError>(Upd::default().messages(vec![Message::ai(format!("ack {last}"))]))
    });
    g.add_node("flaky", |s: Arc<TestState>, _c: NodeContext| async move {
        if s.messages.iter().any(|m| m.content == "ack outage") {
            return Err(NodeError::unavailable("down"));
        }
        Ok::<_, NodeError>(Upd::default())
    });
    g.add_edge(START, "ack");
    g.add_edge("ack", "flaky");
    g.add_edge("flaky", END);
    let g = build(g, cp);
    let t = thread();
    ok(&g, RunConfig::new(&t), say("hello")).await;
    let cfg = RunConfig::new(&t);
    let run_id = cfg.run_id.clone();
    assert!(g
        .invoke(cfg, say("outage"))
        .await
        .unwrap_err()
        .is_transient());
    // Whoever ran it gives up and records the failure; a second record changes nothing,
    // and another run's id records nothing.
    assert!(!g
        .record_failure(&t, "another-run", None, "gave up", None)
        .await
        .unwrap());
    assert!(g
        .record_failure(&t, &run_id, None, "storage unavailable", None)
        .await
        .unwrap());
    assert!(!g
        .record_failure(&t, &run_id, None, "storage unavailable", None)
        .await
        .unwrap());
    let snap = g.get_state(&t).await.unwrap().unwrap();
    assert_eq!(
        snap.tasks[0].error.as_deref(),
        Some("storage unavailable"),
        "the failure is visible on the thread"
    );
    let out = ok(&g, RunConfig::new(&t), say("again")).await;
    assert_eq!(
        contents(&out.state.messages),
        vec!["hello", "ack hello", "again", "ack again"],
        "the failed turn's message is not carried forward"
    );
}
