//! Whole threads on any checkpointer: delete, copy, delete a run's writes, prune, and reads of what is not there.
#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::storage_cases::everything;
use palgraph::checkpoint::{now_ms, CheckpointError, ListOptions, PruneStrategy};
use palgraph::testkit::fixtures::*;
use palgraph::{Checkpointer, RunConfig, RunError};
pub async fn delete_thread_removes_everything(cp: Arc<dyn Checkpointer>) {
    let g = linear(&["a"], cp.clone());
    let (t, other) = (thread(), thread());
    // A subgraph's namespace of `t`, and threads whose ids merely start like `t`'s.
    let (ns, nested, lookalike, after) = (
        format!("{t}|sub:1"),
        format!("{t}|sub:1|inner:2"),
        format!("{t}x"),
        format!("{t}}}"),
    );
    for th in [&t, &other, &ns, &nested, &lookalike, &after] {
        ok(&g, RunConfig::new(th), say("x")).await;
    }
    cp.delete_thread(&t).await.unwrap();
    for gone in [&ns, &nested] {
        assert!(
            cp.head(gone).await.unwrap().is_none(),
            "{gone} went with {t}"
        );
    }
    for kept in [&lookalike, &after] {
        assert!(
            cp.head(kept).await.unwrap().is_some(),
            "{kept} is another thread"
        );
    }
    assert!(cp.get(&t, None).await.unwrap().is_none());
    assert!(cp.head(&t).await.unwrap().is_none());
    assert!(cp
        .list(&t, &ListOptions::default())
        .await
        .unwrap()
        .is_empty());
    assert!(
        g.get_state(&other).await.unwrap().is_some(),
        "other threads untouched"
    );
    cp.delete_thread("never-existed").await.unwrap();
    // The thread id can be used again from scratch.
    let out = ok(&g, RunConfig::new(&t), say("fresh")).await;
    assert_eq!(contents(&out.state.messages), vec!["fresh"]);
}

pub async fn copy_thread_copies_history_and_leaves_source(cp: Arc<dyn Checkpointer>) {
    let g = everything(cp.clone());
    let (src, dst) = (thread(), thread());
    ok(&g, RunConfig::new(&src), say("one")).await;
    ok(&g, RunConfig::new(&src), say("two")).await;
    cp.copy_thread(&src, &dst).await.unwrap();
    let a = cp.list(&src, &ListOptions::default()).await.unwrap();
    let b = cp.list(&dst, &ListOptions::default()).await.unwrap();
    assert_eq!(
        a.iter()
            .map(|r| (&r.checkpoint_id, &r.parent_id, &r.metadata))
            .collect::<Vec<_>>(),
        b.iter()
            .map(|r| (&r.checkpoint_id, &r.parent_id, &r.metadata))
            .collect::<Vec<_>>()
    );
    assert!(b.iter().all(|r| r.thread_id == dst));
    assert_eq!(
        g.get_state(&src).await.unwrap().unwrap().values,
        g.get_state(&dst).await.unwrap().unwrap().values
    );
    ok(&g, RunConfig::new(&dst), say("three")).await;
    assert_eq!(
        g.get_state(&src)
            .await
            .unwrap()
            .unwrap()
            .values
            .messages
            .len(),
        4,
        "source unchanged"
    );
    assert_eq!(
        g.get_state(&dst)
            .await
            .unwrap()
            .unwrap()
            .values
            .messages
            .len(),
        6
    );
    let err = cp.copy_thread(&src, &dst).await.unwrap_err();
    assert!(
        matches!(err, CheckpointError::Conflict { .. }),
        "copying onto an existing thread is refused"
    );
}

pub async fn delete_for_runs_keeps_chains_of_later_runs(cp: Arc<dyn Checkpointer>) {
    let g = everything(cp.clone());
    let t = thread();
    let mut runs = Vec::new();
    let mut states = Vec::new();
    for i in 0..3 {
        let cfg = RunConfig::new(&t);
        runs.push(cfg.run_id.clone());
        states.push(ok(&g, cfg, say(&format!("m{i}"))).await.state);
    }
    let stats = cp.delete_for_runs(&t, &[runs[1].clone()]).await.unwrap();
    assert_eq!(stats.checkpoints, 2);
    let remaining = cp.list(&t, &ListOptions::default()).await.unwrap();
    assert_eq!(remaining.len(), 4);
    assert!(remaining
        .iter()
        .all(|r| r.run_id() != Some(runs[1].as_str())));
    assert_eq!(
        *g.get_state(&t).await.unwrap().unwrap().values,
        *states[2],
        "the head's delta chain survives"
    );
    // Rolling back the latest run moves the head back.
    cp.delete_for_runs(&t, &[runs[2].clone()]).await.unwrap();
    let snap = g.get_state(&t).await.unwrap().unwrap();
    assert_eq!(*snap.values, *states[0]);
    let out = ok(&g, RunConfig::new(&t), say("after rollback")).await;
    assert_eq!(out.state.messages.len(), 4);
}

pub async fn prune_keep_latest_keeps_state_intact(cp: Arc<dyn Checkpointer>) {
    let g = everything(cp.clone());
    let t = thread();
    for i in 0..5 {
        ok(&g, RunConfig::new(&t), say(&format!("m{i}"))).await;
    }
    let before = g.get_state(&t).await.unwrap().unwrap();
    let stats = cp.prune(&t, PruneStrategy::KeepLatest).await.unwrap();
    assert_eq!(stats.checkpoints, 9);
    let left = cp.list(&t, &ListOptions::default()).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].checkpoint_id, before.checkpoint_id);
    let after = g.get_state(&t).await.unwrap().unwrap();
    assert_eq!(*after.values, *before.values);
    let out = ok(&g, RunConfig::new(&t), say("more")).await;
    assert_eq!(out.state.messages.len(), 12);
    assert_eq!(out.state.log.len(), 6);
    let again = cp.prune(&t, PruneStrategy::KeepLatest).await.unwrap();
    assert_eq!(again.checkpoints, 2);
    assert!(
        cp.prune(&t, PruneStrategy::DeleteAll)
            .await
            .unwrap()
            .checkpoints
            == 1
    );
    assert!(cp.get(&t, None).await.unwrap().is_none());
}

pub async fn prune_newer_than_keeps_recent_history_readable(cp: Arc<dyn Checkpointer>) {
    let g = everything(cp.clone());
    let t = thread();
    for i in 0..3 {
        ok(&g, RunConfig::new(&t), say(&format!("old{i}"))).await;
    }
    tokio::time::sleep(Duration::from_millis(5)).await;
    let cutoff = now_ms();
    tokio::time::sleep(Duration::from_millis(5)).await;
    for i in 0..2 {
        ok(&g, RunConfig::new(&t), say(&format!("new{i}"))).await;
    }
    let mut expected: HashMap<String, TestState> = HashMap::new();
    for s in g
        .get_state_history(&t, &ListOptions::default())
        .await
        .unwrap()
    {
        if s.created_at_ms >= cutoff {
            expected.insert(s.checkpoint_id.clone(), (*s.values).clone());
        }
    }
    assert_eq!(expected.len(), 4);
    let stats = cp
        .prune(&t, PruneStrategy::KeepNewerThan(cutoff))
        .await
        .unwrap();
    assert_eq!(stats.checkpoints, 6);
    let left = g
        .get_state_history(&t, &ListOptions::default())
        .await
        .unwrap();
    assert_eq!(left.len(), 4);
    for s in left {
        assert_eq!(
            &*s.values,
            expected.get(&s.checkpoint_id).unwrap(),
            "kept checkpoints read exactly as before"
        );
    }
}

pub async fn missing_thread_and_checkpoint_read_as_none(cp: Arc<dyn Checkpointer>) {
    let t = thread();
    assert!(cp.get(&t, None).await.unwrap().is_none());
    assert!(cp.get(&t, Some("nope")).await.unwrap().is_none());
    assert!(cp.head(&t).await.unwrap().is_none());
    assert!(cp
        .list(&t, &ListOptions::default())
        .await
        .unwrap()
        .is_empty());
    let g = linear(&["a"], cp.clone());
    ok(&g, RunConfig::new(&t), say("x")).await;
    assert!(g
        .get_state_at(&t, Some("00000000-0000-0000-0000-000000000000"))
        .await
        .unwrap()
        .is_none());
    let err = g
        .invoke(
            RunConfig::new(&t).from_checkpoint("bogus"),
            palgraph::RunInput::Continue,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::UnknownCheckpoint { .. }));
}
