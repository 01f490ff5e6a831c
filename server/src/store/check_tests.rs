//! Runs whose threads were not read before their create ([`NewRun::check_thread`]): the
//! create checks the thread itself, on SQLite and Postgres alike.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;

use palgraph::testkit::backends::{remove_sqlite_files, PgSchema};

use super::sql::SqlStore;
use super::tests::{new_run, pg_pool, sqlite_pool, thread};
use super::{IfExists, MultitaskStrategy, NewRun, Store, StoreError};

async fn checked_creates(store: &dyn Store) {
    // A run whose thread was not read first: the create checks it (owner, graph) in its own
    // transaction and writes nothing when it refuses, whether the thread is free or busy.
    store
        .create_thread(thread("t8", "u", json!({"graph_id": "g"})), IfExists::Raise)
        .await
        .unwrap();
    let checked = |run: &str, owner: &str, graph: &str, thread: &str| NewRun {
        thread_id: thread.into(),
        owner: owner.into(),
        graph_id: graph.into(),
        check_thread: true,
        ..new_run(run, MultitaskStrategy::Enqueue, None)
    };
    for busy in [false, true] {
        let refused = [
            store
                .create_run(&checked("c1", "intruder", "g", "t8"))
                .await,
            store
                .create_run(&NewRun {
                    new_thread: Some(thread("t8", "intruder", json!({}))),
                    ..checked("c2", "intruder", "g", "t8")
                })
                .await,
            store.create_run(&checked("c3", "u", "other", "t8")).await,
            store.create_run(&checked("c4", "u", "g", "nowhere")).await,
        ];
        let kinds: Vec<&str> = refused
            .iter()
            .map(|r| match r {
                Err(StoreError::NotFound(_)) => "not found",
                Err(StoreError::OtherGraph(_)) => "other graph",
                _ => "?",
            })
            .collect();
        assert_eq!(
            kinds,
            ["not found", "not found", "other graph", "not found"],
            "busy: {busy}: {refused:?}"
        );
        for gone in ["c1", "c2", "c3", "c4"] {
            assert!(store.get_run_any(gone).await.unwrap().is_none());
        }
        assert!(store.get_thread_any("nowhere").await.unwrap().is_none());
        let t8 = store.get_thread_any("t8").await.unwrap().unwrap();
        assert_eq!(
            (
                t8.owner.as_str(),
                &t8.metadata["graph_id"],
                t8.status.as_str()
            ),
            ("u", &json!("g"), if busy { "busy" } else { "idle" })
        );
        if !busy {
            let ok = store
                .create_run(&checked("c5", "u", "g", "t8"))
                .await
                .unwrap();
            assert_eq!((ok.run.thread_seq, ok.existing), (1, false));
        }
    }
    // A checked run on a missing thread it may create creates it.
    let made = store
        .create_run(&NewRun {
            new_thread: Some(thread("t9", "u", json!({"graph_id": "g"}))),
            ..checked("c6", "u", "g", "t9")
        })
        .await
        .unwrap();
    assert_eq!(made.run.thread_seq, 1);
    assert_eq!(
        store.get_thread_any("t9").await.unwrap().unwrap().owner,
        "u"
    );
    assert!(store.delete_thread("u", "t8").await.unwrap());
    assert!(store.delete_thread("u", "t9").await.unwrap());
}

#[tokio::test]
async fn checked_creates_on_sqlite() {
    let (pool, path) = sqlite_pool().await;
    checked_creates(&SqlStore::new(pool.clone())).await;
    pool.close().await;
    remove_sqlite_files(&path);
}

#[tokio::test]
async fn checked_creates_on_postgres() {
    let schema = PgSchema::create().await;
    checked_creates(&SqlStore::new(pg_pool(&schema).await)).await;
}
