//! Cancels, retries, crashes and node errors, run on any checkpointer: what completed stays, nothing runs twice.
#![allow(missing_docs, clippy::unwrap_used, clippy::type_complexity)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{json, Value};

use palgraph::testkit::fixtures::*;
use palgraph::{
    CancelReason, Cancellation, Checkpointer, Event, Message, NodeContext, NodeError, RetryPolicy,
    RunConfig, RunError, RunInput, RunStatus, StateGraph, StreamModes, END, START,
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
pub async fn cancel_mid_run_keeps_last_checkpoint_and_ends_cancelled(cp: Arc<dyn Checkpointer>) {
    // A cooperative node keeps its partial text, marked interrupted.
    let mut g = StateGraph::<TestState>::new();
    g.add_node("a", trail_node("a"));
    g.add_node("slow", |_s: Arc<TestState>, ctx: NodeContext| async move {
        ctx.message_delta("m1", "partial ");
        ctx.cancelled().await;
        let reason = ctx.cancel_reason().map(|r| r.as_str()).unwrap_or("");
        Ok::<_, NodeError>(Upd::default().messages(vec![Message::ai("partial ")
            .with_id("m1")
            .with_metadata("interrupted", true)
            .with_metadata("reason", reason)]))
    });
    g.add_node("c", trail_node("c"));
    g.add_edge(START, "a");
    g.add_sequence(["a", "slow", "c"]);
    g.add_edge("c", END);
    let g = build(g, cp.clone());
    let t = thread();
    let cancel = Cancellation::new();
    let mut stream = g.stream(
        RunConfig::new(&t)
            .cancel(cancel.clone())
            .stream_modes(StreamModes::ALL),
        say("go"),
    );
    while let Some(e) = stream.next().await {
        if matches!(&e.event, Event::MessageDelta { .. }) {
            cancel.cancel(CancelReason::UserCancelled);
        }
        if e.event.is_terminal() {
            assert_eq!(
                e.event,
                Event::Cancelled {
                    reason: CancelReason::UserCancelled
                }
            );
        }
    }
    let out = stream.outcome().await.unwrap();
    assert_eq!(
        out.status,
        RunStatus::Cancelled(CancelReason::UserCancelled)
    );
    let snap = g.get_state(&t).await.unwrap().unwrap();
    assert_eq!(snap.values.log, vec!["a"], "c did not run");
    let last = snap.values.messages.last().unwrap();
    assert_eq!(last.content, "partial ");
    assert_eq!(last.metadata.get("interrupted"), Some(&json!(true)));
    assert_eq!(last.metadata.get("reason"), Some(&json!("user_cancelled")));
    assert_eq!(snap.next, vec!["c"], "what completed is checkpointed");

    // A node that ignores the cancel is dropped after the grace period.
    let mut g2 = StateGraph::<TestState>::new();
    g2.add_node("a", trail_node("a"));
    g2.add_node("stuck", |_s: Arc<TestState>, _c: NodeContext| async move {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        Ok::<_, NodeError>(Upd::default())
    });
    g2.add_edge(START, "a");
    g2.add_edge("a", "stuck");
    g2.add_edge("stuck", END);
    let g2 = build(g2, cp).with_cancel_grace(Duration::from_millis(20));
    let t2 = thread();
    let cancel = Cancellation::new();
    let mut stream = g2.stream(
        RunConfig::new(&t2)
            .cancel(cancel.clone())
            .stream_modes(StreamModes::ALL),
        say("go"),
    );
    while let Some(e) = stream.next().await {
        if matches!(&e.event, Event::NodeStarted { node, .. } if node == "stuck") {
            cancel.cancel(CancelReason::Superseded);
        }
    }
    let out = stream.outcome().await.unwrap();
    assert_eq!(out.status, RunStatus::Cancelled(CancelReason::Superseded));
    let snap = g2.get_state(&t2).await.unwrap().unwrap();
    assert_eq!(snap.values.log, vec!["a"]);
    assert_eq!(snap.next, vec!["stuck"]);
}

pub async fn retry_policy_retries_transient_errors_only(cp: Arc<dyn Checkpointer>) {
    let flaky = Counter::default();
    let fatal = Counter::default();
    let (f1, f2) = (flaky.clone(), fatal.clone());
    let mut g = StateGraph::<TestState>::new();
    g.add_node("flaky", move |_s: Arc<TestState>, _c: NodeContext| {
        let f = f1.clone();
        async move {
            if f.bump() < 3 {
                return Err(NodeError::retryable("429 rate limited"));
            }
            Ok(Upd::default().log(vec!["flaky".into()]))
        }
    })
    .retry(
        RetryPolicy::attempts(3)
            .initial_interval(Duration::from_millis(1))
            .no_jitter(),
    );
    g.add_node("fatal", move |s: Arc<TestState>, _c: NodeContext| {
        let f = f2.clone();
        async move {
            f.bump();
            if s.messages.last().is_some_and(|m| m.content == "break") {
                return Err(NodeError::fatal("bad input"));
            }
            Ok(Upd::default())
        }
    })
    .retry(RetryPolicy::attempts(5).initial_interval(Duration::from_millis(1)));
    g.add_edge(START, "flaky");
    g.add_edge("flaky", "fatal");
    g.add_edge("fatal", END);
    let g = build(g, cp);
    let out = ok(&g, RunConfig::new(thread()), say("go")).await;
    assert_eq!(out.state.log, vec!["flaky"]);
    assert_eq!(flaky.get(), 3);
    let err = g
        .invoke(RunConfig::new(thread()), say("break"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RunError::Node { node, error } if node == "fatal" && error.message() == "bad input"),
        "{err}"
    );
    assert_eq!(
        fatal.get(),
        2,
        "one call in the first run, one (not retried) in the second"
    );
}

pub async fn failed_turn_is_not_carried_forward(cp: Arc<dyn Checkpointer>) {
    let mut g = StateGraph::<TestState>::new();
    g.add_node("ack", |s: Arc<TestState>, _c: NodeContext| async move {
        let last = s.messages.last().unwrap().content.clone();
        Ok::<_, NodeError>(
            Upd::default()
                .messages(vec![Message::ai(format!("ack {last}"))])
                .log(vec![last]),
        )
    });
    g.add_node("boom", |s: Arc<TestState>, _c: NodeContext| async move {
        if s.messages.iter().any(|m| m.content.contains("fail")) && s.messages.len() < 6 {
            return Err(NodeError::fatal("exploded"));
        }
        Ok(Upd::default())
    });
    g.add_edge(START, "ack");
    g.add_edge("ack", "boom");
    g.add_edge("boom", END);
    let g = build(g, cp);
    let t = thread();
    ok(&g, RunConfig::new(&t), say("hello")).await;
    let err = g
        .invoke(RunConfig::new(&t), say("please fail"))
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::Node { .. }));
    let snap = g.get_state(&t).await.unwrap().unwrap();
    assert_eq!(snap.tasks[0].name, "boom");
    assert_eq!(
        snap.tasks[0].error.as_deref(),
        Some("exploded"),
        "the failure is visible on the thread"
    );
    let out = ok(&g, RunConfig::new(&t), say("again")).await;
    assert_eq!(
        contents(&out.state.messages),
        vec!["hello", "ack hello", "again", "ack again"]
    );
    assert_eq!(out.state.log, vec!["hello", "again"]);
}

pub async fn crash_mid_node_recovers_without_repeating_steps(cp: Arc<dyn Checkpointer>) {
    let charge = Counter::default();
    let body = Counter::default();
    let first = Arc::new(AtomicBool::new(true));
    let (c2, b2, f2) = (charge.clone(), body.clone(), first.clone());
    let mut g = StateGraph::<TestState>::new();
    g.add_node("pay", move |_s: Arc<TestState>, ctx: NodeContext| {
        let (charge, body, first) = (c2.clone(), b2.clone(), f2.clone());
        async move {
            body.bump();
            let receipt: String = ctx
                .step("charge", async {
                    charge.bump();
                    Ok::<_, NodeError>("receipt-7".to_string())
                })
                .await?;
            if first.swap(false, Ordering::SeqCst) {
                // The process "dies" here: the run is dropped mid-node.
                std::future::pending::<()>().await;
            }
            Ok(Upd::default().log(vec![receipt]))
        }
    });
    g.add_edge(START, "pay");
    g.add_edge("pay", END);
    let g = build(g, cp);
    let t = thread();
    let g2 = g.clone();
    let t2 = t.clone();
    let handle = tokio::spawn(async move { g2.invoke(RunConfig::new(&t2), say("buy")).await });
    while charge.get() == 0 || first.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    tokio::time::sleep(Duration::from_millis(5)).await;
    handle.abort();
    let _ = handle.await;
    let snap = g.get_state(&t).await.unwrap().unwrap();
    assert_eq!(snap.next, vec!["pay"], "the node is still due");
    let out = ok(&g, RunConfig::new(&t), RunInput::Continue).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.state.log, vec!["receipt-7"]);
    assert_eq!(body.get(), 2);
    assert_eq!(charge.get(), 1, "the recorded step did not run again");
}

pub async fn node_error_fails_with_typed_error_and_keeps_checkpoint(cp: Arc<dyn Checkpointer>) {
    let mut g = StateGraph::<TestState>::new();
    g.add_node("a", trail_node("a"));
    g.add_node("bad", |_s: Arc<TestState>, _c: NodeContext| async move {
        let parsed: Value = serde_json::from_str("{not json")?;
        Ok::<_, NodeError>(Upd::default().log(vec![parsed.to_string()]))
    });
    g.add_edge(START, "a");
    g.add_edge("a", "bad");
    g.add_edge("bad", END);
    let g = build(g, cp);
    let t = thread();
    let mut stream = g.stream(RunConfig::new(&t), say("go"));
    let mut last = None;
    while let Some(e) = stream.next().await {
        last = Some(e.event);
    }
    assert!(matches!(last, Some(Event::Failed { node: Some(ref n), .. }) if n == "bad"));
    let err = stream.outcome().await.unwrap_err();
    assert!(matches!(&err, RunError::Node { node, .. } if node == "bad"));
    assert!(
        err.to_string()
            .starts_with("node `bad` failed: key must be a string"),
        "{err}"
    );
    let snap = g.get_state(&t).await.unwrap().unwrap();
    assert_eq!(
        snap.values.log,
        vec!["a"],
        "the last good checkpoint is kept"
    );
    assert_eq!(snap.next, vec!["bad"]);
}
