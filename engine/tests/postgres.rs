//! The shared suite on the Postgres checkpointer (a fresh schema per test).

palgraph::checkpointer_suite!(palgraph::testkit::backends::postgres);

/// A row the database refuses, sent in a group with good ones: only its own put fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_row_in_a_group_commit_fails_alone() {
    use palgraph::checkpoint::{json, now_ms, CheckpointError, CheckpointRecord, PutCheckpoint};
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
    let puts = threads.iter().map(|t| {
        cp.put(PutCheckpoint {
            record: CheckpointRecord {
                thread_id: t.clone(),
                checkpoint_id: uuid::Uuid::now_v7().to_string(),
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
        })
    });
    let outcomes = futures_util::future::join_all(puts).await;
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
