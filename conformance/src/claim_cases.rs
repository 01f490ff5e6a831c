//! Claims ([`FenceClaim`]): a writer handed a thread by its first checkpoint. The claiming
//! put raises the fence and stores in one go, refuses a claim older than the fence, and
//! hands the thread over even when its head moved; a run with a claim holds its thread
//! before any node runs, and one whose claim was superseded runs nothing. Run on any
//! checkpointer.

#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::Arc;

use palgraph::checkpoint::{
    json as raw, now_ms, CheckpointError, CheckpointRecord, Fence, FenceClaim, PutCheckpoint,
};
use palgraph::testkit::fixtures::*;
use palgraph::{Checkpointer, NodeContext, NodeError, RunConfig, StateGraph, END, START};

fn put(t: &str, seq: i64, head: Option<&str>, epoch: i64) -> PutCheckpoint {
    PutCheckpoint {
        record: CheckpointRecord {
            thread_id: t.to_string(),
            checkpoint_id: uuid::Uuid::now_v7().to_string(),
            parent_id: head.map(str::to_string),
            seq,
            created_at_ms: now_ms(),
            metadata: Default::default(),
            versions: Default::default(),
            plan: raw("{}".into()).unwrap(),
        },
        blobs: vec![],
        expected_head: head.map(str::to_string),
        fence: Some(Fence::new(t, epoch)),
        flush: Default::default(),
    }
}

fn is_fenced(e: &CheckpointError, epoch: i64, current: i64) -> bool {
    matches!(e, CheckpointError::Fenced { epoch: a, current: b, .. } if *a == epoch && *b == current)
}

pub async fn a_claiming_put_hands_the_thread_over_with_its_checkpoint(cp: Arc<dyn Checkpointer>) {
    let t = thread();
    assert_eq!(cp.advance_fence(&t, 5).await.unwrap(), 5);
    let first = put(&t, 1, None, 5);
    let a = first.record.checkpoint_id.clone();
    cp.put(&first).await.unwrap();

    // Epoch 6 takes the thread with its first checkpoint; epoch 5 is refused from then on.
    let claimed = put(&t, 2, Some(&a), 6);
    let b = claimed.record.checkpoint_id.clone();
    cp.put_claiming(&claimed).await.unwrap();
    assert_eq!(cp.advance_fence(&t, 0).await.unwrap(), 6);
    let stale = cp.put(&put(&t, 3, Some(&b), 5)).await.unwrap_err();
    assert!(is_fenced(&stale, 5, 6), "{stale}");

    // A claim older than the fence is refused and changes nothing.
    let old = cp.put_claiming(&put(&t, 3, Some(&b), 4)).await.unwrap_err();
    assert!(is_fenced(&old, 4, 6), "{old}");
    assert_eq!(cp.head(&t).await.unwrap().as_deref(), Some(b.as_str()));
    assert_eq!(cp.advance_fence(&t, 0).await.unwrap(), 6);

    // A claim whose head moved is a conflict, and still takes the thread.
    let moved = cp.put_claiming(&put(&t, 2, Some(&a), 7)).await.unwrap_err();
    assert!(matches!(moved, CheckpointError::Conflict { .. }), "{moved}");
    assert_eq!(cp.head(&t).await.unwrap().as_deref(), Some(b.as_str()));
    assert_eq!(cp.advance_fence(&t, 0).await.unwrap(), 7);
    let stale = cp.put(&put(&t, 3, Some(&b), 6)).await.unwrap_err();
    assert!(is_fenced(&stale, 6, 7), "{stale}");

    // The same claim again (it read the head anew) stores.
    let again = put(&t, 3, Some(&b), 7);
    let c = again.record.checkpoint_id.clone();
    cp.put_claiming(&again).await.unwrap();
    assert_eq!(cp.head(&t).await.unwrap().as_deref(), Some(c.as_str()));

    // A thread no one held yet: the claim is its first fence.
    let fresh = thread();
    cp.put_claiming(&put(&fresh, 1, None, 3)).await.unwrap();
    assert_eq!(cp.advance_fence(&fresh, 0).await.unwrap(), 3);
}

pub async fn a_run_claims_its_thread_before_any_node_and_a_superseded_claim_runs_nothing(
    cp: Arc<dyn Checkpointer>,
) {
    let ran = Counter::default();
    let mut g = StateGraph::<TestState>::new();
    let seen = ran.clone();
    g.add_node("count", move |s: Arc<TestState>, _c: NodeContext| {
        let ran = seen.clone();
        async move {
            ran.bump();
            Ok::<_, NodeError>(Upd::default().counter(s.counter + 1))
        }
    });
    g.add_edge(START, "count");
    g.add_edge("count", END);
    let g = build(g, cp.clone());
    let t = thread();

    // An earlier claim ran a turn (the graph's cache is off: the next turn bets that the
    // thread is new, and its first claiming put meets the head it did not read).
    cp.advance_fence(&t, 1).await.unwrap();
    ok(&g, RunConfig::new(&t).fence(Fence::new(&t, 1)), say("one")).await;
    let claim = FenceClaim::new(Fence::new(&t, 2));
    let out = ok(&g, RunConfig::new(&t).claiming(claim.clone()), say("two")).await;
    assert_eq!(out.state.counter, 2, "the turn ran on the earlier one");
    assert!(claim.is_held());
    assert_eq!(cp.advance_fence(&t, 0).await.unwrap(), 2);
    assert_eq!(ran.get(), 2, "each turn's node ran once");
    let turns = cp.list(&t, &Default::default()).await.unwrap().len();

    // The earlier claim is refused now; so is a claim older than the fence, before its
    // node runs and without writing anything.
    let err = g
        .invoke(RunConfig::new(&t).fence(Fence::new(&t, 1)), say("late"))
        .await
        .unwrap_err();
    assert!(err.is_fenced(), "{err}");
    let stale = FenceClaim::new(Fence::new(&t, 1));
    let err = g
        .invoke(RunConfig::new(&t).claiming(stale.clone()), say("stale"))
        .await
        .unwrap_err();
    assert!(err.is_fenced(), "{err}");
    assert!(!stale.is_held());
    assert_eq!(ran.get(), 2, "no node ran for a refused claim");
    assert_eq!(cp.list(&t, &Default::default()).await.unwrap().len(), turns);

    // A run that goes straight to its steps (nothing to save first) holds the thread
    // before its first node: a continue with nothing left to run writes nothing, and a
    // claim that is never used for a write stays unheld.
    let idle = FenceClaim::new(Fence::new(&t, 3));
    let out = ok(
        &g,
        RunConfig::new(&t).claiming(idle.clone()),
        palgraph::RunInput::Continue,
    )
    .await;
    assert_eq!(out.state.counter, 2);
    assert!(!idle.is_held(), "nothing was written or run");
    idle.hold(&*cp).await.unwrap();
    assert!(idle.is_held());
    assert_eq!(cp.advance_fence(&t, 0).await.unwrap(), 3);
}
