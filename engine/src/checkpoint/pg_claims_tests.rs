//! The group commit's claiming rows ([`super::pg_group_commit::PUT_BATCH_CLAIMING`]): in
//! one batch, each fence is raised to the highest epoch claimed for it, and every row is
//! checked against the fence as it stands after the raise, whether it claimed or not.

use std::sync::Arc;

use crate::checkpoint::{Checkpointer, Fence, PostgresCheckpointer};
use crate::db::reuse::Reused;
use crate::testkit::backends::PgSchema;

use super::pg_group_commit::{insert_many, NewRow};

/// A checkpoint row of `thread` (its first) under fence `key` at `epoch`.
fn row(thread: &str, key: &str, epoch: i64, claim: bool) -> NewRow {
    NewRow {
        thread_id: thread.into(),
        checkpoint_id: format!("{thread}-1"),
        seq: 1,
        parent_id: None,
        created_at_ms: 0,
        metadata: "{}".into(),
        versions: "{}".into(),
        plan: "[]".into(),
        vals: "{}".into(),
        expected: None,
        fence: Some((key.into(), epoch)),
        claim,
        flush: super::Flush::Now,
    }
}

#[tokio::test]
async fn a_batch_raises_claimed_fences_and_checks_every_row_against_them() {
    let schema = PgSchema::create().await;
    let pool = schema.pool(4).await;
    let cp = PostgresCheckpointer::new(pool.clone());
    // `held` stands at 7, `plain` at 1; `fresh` has no fence yet.
    assert_eq!(cp.advance_fence("held", 7).await.expect("advance"), 7);
    assert_eq!(cp.advance_fence("plain", 1).await.expect("advance"), 1);
    let conns = Reused::with_generic_plans(pool.clone(), 1);
    let rows = [
        // Two claims of `fresh`: the higher takes it, the lower is refused.
        row("claims-fresh", "fresh", 2, true),
        row("claims-fresh-late", "fresh", 1, true),
        // Not claiming, at the epoch `fresh` is raised to in this batch: stored.
        row("writes-fresh-current", "fresh", 2, false),
        // Not claiming, at an epoch the batch's raise superseded: refused.
        row("writes-fresh-stale", "fresh", 1, false),
        // A claim older than the stored fence: refused, the fence stays.
        row("claims-held-stale", "held", 5, true),
        // A claim at the stored epoch (the same claim again): stored.
        row("claims-held-again", "held", 7, true),
        // No claim in the batch for its key: checked against the stored fence.
        row("writes-plain", "plain", 1, false),
    ];
    let refs: Vec<&NewRow> = rows.iter().collect();
    let inserted = insert_many(&conns, &refs).await.expect("the batch");
    let mut got: Vec<&str> = inserted.iter().map(|(t, _)| t.as_str()).collect();
    got.sort_unstable();
    assert_eq!(
        got,
        [
            "claims-fresh",
            "claims-held-again",
            "writes-fresh-current",
            "writes-plain"
        ]
    );
    for (key, epoch) in [("fresh", 2), ("held", 7), ("plain", 1)] {
        assert_eq!(
            cp.advance_fence(key, 0).await.expect("read"),
            epoch,
            "{key}"
        );
    }
}

/// Many runs claiming their threads at once (their first checkpoints batched together, as
/// the group commit gathers them): each claim holds its thread, and the earlier writer of
/// every thread is refused afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_claims_each_take_their_thread() {
    use crate::checkpoint::FenceClaim;
    use crate::testkit::fixtures::{build, say, thread, TestState, Upd};
    use crate::{NodeContext, NodeError, RunConfig, StateGraph, END, START};

    let schema = PgSchema::create().await;
    let pool = schema.pool(8).await;
    let cp: Arc<dyn Checkpointer> = Arc::new(PostgresCheckpointer::new(pool.clone()));
    let mut g = StateGraph::<TestState>::new();
    g.add_node("one", |s: Arc<TestState>, _c: NodeContext| async move {
        Ok::<_, NodeError>(Upd::default().counter(s.counter + 1))
    });
    g.add_edge(START, "one");
    g.add_edge("one", END);
    let g = Arc::new(build(g, cp.clone()));
    let threads: Vec<String> = (0..24).map(|_| thread()).collect();
    for t in &threads {
        cp.advance_fence(t, 1).await.expect("an earlier claim");
    }
    let runs: Vec<_> = threads
        .iter()
        .map(|t| {
            let (g, t) = (g.clone(), t.clone());
            tokio::spawn(async move {
                let claim = FenceClaim::new(Fence::new(&t, 2));
                let out = g
                    .invoke(RunConfig::new(&t).claiming(claim.clone()), say("hi"))
                    .await;
                (out.map(|o| o.state.counter), claim.is_held())
            })
        })
        .collect();
    for run in runs {
        let (counter, held) = run.await.expect("the run's task");
        assert_eq!(counter.expect("the run"), 1);
        assert!(held);
    }
    for t in &threads {
        assert_eq!(cp.advance_fence(t, 0).await.expect("read"), 2, "{t}");
        let stale = g
            .invoke(RunConfig::new(t).fence(Fence::new(t, 1)), say("late"))
            .await
            .expect_err("the earlier claim is refused");
        assert!(stale.is_fenced(), "{stale}");
    }
}
