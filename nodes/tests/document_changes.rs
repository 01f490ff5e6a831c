//! A Postgres document store's change feed on a real Postgres: a change made by another
//! replica, by plain SQL or by `TRUNCATE` moves the owner's stamp once its notification
//! arrives; while the listening connection is gone the store vouches for nothing, and once it
//! listens again everything read before is dropped and changes are heard again.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use palgraph::testkit::backends::PgSchema;
use palgraph_nodes::documents::LibraryStamp;
use palgraph_nodes::{DocumentStore, PostgresDocumentStore};
use sqlx::PgPool;

async fn pool(schema: &PgSchema) -> PgPool {
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(3)
        .connect_with(schema.options())
        .await
        .unwrap()
}

/// Waits (at most 10 s) until `store`'s stamp for `owner` is one `done` accepts; returns it
/// and how long that took.
async fn until(
    store: &PostgresDocumentStore,
    owner: &str,
    what: &str,
    done: impl Fn(Option<LibraryStamp>) -> bool,
) -> (Option<LibraryStamp>, Duration) {
    let start = Instant::now();
    loop {
        let stamp = store.library_changes().and_then(|c| c.stamp(owner));
        if done(stamp) {
            return (stamp, start.elapsed());
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out: {what}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test]
async fn changes_made_elsewhere_move_the_owners_stamp_when_they_commit() {
    let schema = PgSchema::create().await;
    let replica_a = PostgresDocumentStore::open(pool(&schema).await)
        .await
        .unwrap()
        .with_change_feed();
    let b_pool = pool(&schema).await;
    let replica_b = PostgresDocumentStore::open(b_pool.clone()).await.unwrap();
    assert!(
        replica_b.library_changes().is_none(),
        "without a feed: no stamps"
    );

    let (heard, _) = until(&replica_a, "ann", "the feed listens", |s| s.is_some()).await;
    let before = heard.unwrap();

    // Another replica adds a document.
    let doc = replica_b.create("ann", "Policy", "Keep.").await.unwrap();
    let (after_create, took) = until(&replica_a, "ann", "an insert elsewhere is heard", |s| {
        s.is_some_and(|s| s != before)
    })
    .await;
    eprintln!("another replica's insert heard in {took:?}");

    // Plain SQL, not through any store: the trigger announces it all the same.
    let mut last = after_create;
    for (sql, what) in [
        (
            "UPDATE documents SET title = 'Renamed' WHERE id = $1",
            "an update by SQL is heard",
        ),
        (
            "DELETE FROM documents WHERE id = $1",
            "a delete by SQL is heard",
        ),
    ] {
        sqlx::query(sql)
            .bind(&doc.id)
            .execute(&b_pool)
            .await
            .unwrap();
        (last, _) = until(&replica_a, "ann", what, |s| s.is_some() && s != last).await;
    }

    // TRUNCATE names no owner: every stamp moves.
    let zed = replica_a
        .library_changes()
        .and_then(|c| c.stamp("zed"))
        .unwrap();
    sqlx::query("TRUNCATE documents CASCADE")
        .execute(&b_pool)
        .await
        .unwrap();
    until(&replica_a, "zed", "a truncate moves every stamp", |s| {
        s.is_some_and(|s| s != zed)
    })
    .await;

    // A change through the store itself moves its stamp before the call returns.
    let own = replica_a
        .library_changes()
        .and_then(|c| c.stamp("bob"))
        .unwrap();
    replica_a.create("bob", "Mine", "Text.").await.unwrap();
    let now = replica_a.library_changes().and_then(|c| c.stamp("bob"));
    assert_ne!(now, Some(own), "its own write moves the stamp at once");
}

#[tokio::test]
async fn a_lost_listening_connection_vouches_for_nothing_until_it_listens_again() {
    let schema = PgSchema::create().await;
    let store = PostgresDocumentStore::open(pool(&schema).await)
        .await
        .unwrap()
        .with_change_feed();
    let admin = pool(&schema).await;
    let (heard, _) = until(&store, "ann", "the feed listens", |s| s.is_some()).await;
    let before = heard.unwrap();

    // Kill the feed's connection (this schema's connections carry its name).
    let killed: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE application_name = $1 AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()",
    )
    .bind(schema.options().get_application_name().unwrap())
    .fetch_all(&admin)
    .await
    .unwrap();
    assert_eq!(killed, [true], "one listening connection");

    // Whatever happened while it was down is not vouched for: the stamp moved.
    let (back, took) = until(&store, "ann", "listening again", |s| {
        s.is_some_and(|s| s != before)
    })
    .await;
    eprintln!("listening again after {took:?}");

    // And changes are heard again.
    sqlx::query("INSERT INTO documents (id, owner, title, size, created_at_ms) VALUES ($1, 'ann', 'T', 1, 0)")
        .bind(uuid::Uuid::now_v7().to_string())
        .execute(&admin)
        .await
        .unwrap();
    until(&store, "ann", "a change after the loss is heard", |s| {
        s.is_some_and(|s| Some(s) != back)
    })
    .await;
}
