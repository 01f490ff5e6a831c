//! The shared suite on the Postgres checkpointer (a fresh schema per test).

palgraph_conformance::checkpointer_suite!(palgraph::testkit::backends::postgres);

/// A row the database refuses, sent in a group with good ones: only its own put fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_row_in_a_group_commit_fails_alone() {
    use palgraph::checkpoint::CheckpointError;
    let cp = palgraph::testkit::backends::postgres().await;
    let base = uuid::Uuid::now_v7().to_string();
    let threads: Vec<String> = (0..24)
        .map(|i| {
            if i == 7 {
                format!("{base}-nul\0-{i}")
            } else {
                format!("{base}-{i}")
            }
        })
        .collect();
    let puts: Vec<_> = threads
        .iter()
        .map(|t| first_put(t, uuid::Uuid::now_v7().to_string()))
        .collect();
    let outcomes = futures_util::future::join_all(puts.iter().map(|p| cp.put(p))).await;
    for (i, (t, outcome)) in threads.iter().zip(outcomes).enumerate() {
        if i == 7 {
            assert!(
                matches!(outcome, Err(CheckpointError::Backend(_))),
                "{outcome:?}"
            );
        } else {
            outcome.expect("good rows commit");
            assert!(cp.head(t).await.expect("head").is_some());
        }
    }
}

/// Two puts that claim one thread's first place, sent in a group with others: the group's
/// statement fails on the thread's unique key and is retried row by row, where exactly one
/// of the two is inserted and the other is refused as a conflict; every other put commits.
/// (On one thread of a current-thread runtime every put after the first is queued before
/// the writer runs, so they go in one batch.)
#[tokio::test]
async fn two_puts_of_one_place_in_a_group_commit_make_one_checkpoint_and_a_conflict() {
    use palgraph::checkpoint::CheckpointError;
    let cp = palgraph::testkit::backends::postgres().await;
    let base = uuid::Uuid::now_v7().to_string();
    // Puts 5 and 6 are on the same thread, both as its first checkpoint.
    let threads: Vec<String> = (0..12)
        .map(|i| format!("{base}-{}", if i == 6 { 5 } else { i }))
        .collect();
    let ids: Vec<String> = threads
        .iter()
        .map(|_| uuid::Uuid::now_v7().to_string())
        .collect();
    let puts: Vec<_> = threads
        .iter()
        .zip(&ids)
        .map(|(t, id)| first_put(t, id.clone()))
        .collect();
    let outcomes = futures_util::future::join_all(puts.iter().map(|p| cp.put(p))).await;
    let (won, lost) = match (&outcomes[5], &outcomes[6]) {
        (Ok(()), Err(CheckpointError::Conflict { .. })) => (5, 6),
        (Err(CheckpointError::Conflict { .. }), Ok(())) => (6, 5),
        other => panic!("one put inserted and one refused as a conflict: {other:?}"),
    };
    let head = cp.head(&threads[5]).await.expect("head");
    assert_eq!(
        head.as_deref(),
        Some(ids[won].as_str()),
        "the winner is the head"
    );
    let stored = cp
        .list(&threads[5], &Default::default())
        .await
        .expect("list");
    let stored: Vec<&str> = stored.iter().map(|r| r.checkpoint_id.as_str()).collect();
    assert_eq!(
        stored,
        [ids[won].as_str()],
        "nothing of the refused put ({lost}) stored"
    );
    for (i, outcome) in outcomes.iter().enumerate() {
        if i != 5 && i != 6 {
            assert!(outcome.is_ok(), "put {i}: {outcome:?}");
            assert_eq!(
                cp.head(&threads[i]).await.expect("head").as_deref(),
                Some(ids[i].as_str())
            );
        }
    }
}

/// A thread's first checkpoint, `id`, with nothing in it.
fn first_put(thread_id: &str, id: String) -> palgraph::checkpoint::PutCheckpoint {
    use palgraph::checkpoint::{json, now_ms, CheckpointRecord, PutCheckpoint};
    PutCheckpoint {
        record: CheckpointRecord {
            thread_id: thread_id.to_string(),
            checkpoint_id: id,
            parent_id: None,
            seq: 1,
            created_at_ms: now_ms(),
            metadata: Default::default(),
            versions: Default::default(),
            plan: json("{}".into()).expect("json"),
        },
        blobs: vec![],
        expected_head: None,
        fence: None,
        flush: Default::default(),
    }
}
