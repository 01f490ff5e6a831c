//! Threads' time to live in the store, on both databases: which threads are due and in what
//! order, that a thread changed or busy since it was listed is not taken, that a
//! `keep_latest` thread is swept once per change; and the due query's plan on a big table
//! (a range of the partial index, never a scan of the threads).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{json, Value};

use palgraph::testkit::backends::{remove_sqlite_files, PgSchema};

use super::sql::ttl::due_query;
use super::sql::SqlStore;
use super::tests::{new_run, pg_pool, sqlite_pool, thread};
use super::{IfExists, MultitaskStrategy, Store, ThreadTtl, TtlStrategy};

const DELETE: TtlStrategy = TtlStrategy::Delete;
const KEEP: TtlStrategy = TtlStrategy::KeepLatest;

fn ttl(strategy: TtlStrategy, ttl_ms: i64) -> Option<ThreadTtl> {
    Some(ThreadTtl { strategy, ttl_ms })
}

async fn updated_at(store: &dyn Store, id: &str) -> i64 {
    store
        .get_thread_any(id)
        .await
        .unwrap()
        .unwrap()
        .updated_at_ms
}

async fn due(store: &dyn Store, strategy: TtlStrategy, now: i64) -> Vec<String> {
    store
        .expired_threads(strategy, now, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.thread_id)
        .collect()
}

async fn a_thread_is_due_once_it_has_been_left_alone(store: &dyn Store) {
    for id in ["a", "b", "none", "t1", "k"] {
        store
            .create_thread(thread(id, "u", json!({})), IfExists::Raise)
            .await
            .unwrap();
    }
    assert!(store
        .set_thread_ttl("u", "a", ttl(DELETE, 60_000))
        .await
        .unwrap()
        .is_some());
    assert!(store
        .set_thread_ttl("u", "b", ttl(DELETE, 1_000))
        .await
        .unwrap()
        .is_some());
    assert!(store
        .set_thread_ttl("u", "t1", ttl(DELETE, 1_000))
        .await
        .unwrap()
        .is_some());
    assert!(store
        .set_thread_ttl("u", "k", ttl(KEEP, 20))
        .await
        .unwrap()
        .is_some());
    // Another user's thread, or none: nothing set.
    assert!(store
        .set_thread_ttl("other", "none", ttl(DELETE, 1))
        .await
        .unwrap()
        .is_none());
    assert!(store
        .set_thread_ttl("u", "missing", ttl(DELETE, 1))
        .await
        .unwrap()
        .is_none());
    // A thread with a run is busy: never due, whatever its time.
    store
        .create_run(&new_run("r1", MultitaskStrategy::Reject, None))
        .await
        .unwrap();

    let a = updated_at(store, "a").await;
    let b = updated_at(store, "b").await;
    assert!(due(store, DELETE, b + 999).await.is_empty(), "not yet");
    assert_eq!(due(store, DELETE, b + 1_000).await, ["b"]);
    // The longest expired first; each strategy its own.
    assert_eq!(due(store, DELETE, a + 60_000).await, ["b", "a"]);
    assert_eq!(due(store, KEEP, a + 60_000).await, ["k"]);

    // Changed since it was listed: not taken, and no longer due at that time.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    store
        .patch_thread("u", "a", &json!({"x": 1}), None)
        .await
        .unwrap();
    assert!(!store
        .take_expired_thread("a", DELETE, a + 60_000)
        .await
        .unwrap());
    assert!(store.get_thread_any("a").await.unwrap().is_some());
    // Not yet due, or under the other strategy: not taken.
    assert!(!store
        .take_expired_thread("b", DELETE, b + 999)
        .await
        .unwrap());
    assert!(!store
        .take_expired_thread("b", KEEP, b + 1_000)
        .await
        .unwrap());
    assert!(!store
        .take_expired_thread("t1", DELETE, b + 60_000)
        .await
        .unwrap());
    // Taken once: the thread and its runs are gone.
    assert!(store
        .take_expired_thread("b", DELETE, b + 1_000)
        .await
        .unwrap());
    assert!(store.get_thread_any("b").await.unwrap().is_none());
    assert!(!store
        .take_expired_thread("b", DELETE, b + 1_000)
        .await
        .unwrap());

    // keep_latest: taken once (at the real time, which the sweep records), then due
    // again only after a change.
    let k = updated_at(store, "k").await;
    while super::now_ms() < k + 20 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert!(store
        .take_expired_thread("k", KEEP, super::now_ms())
        .await
        .unwrap());
    assert!(store.get_thread_any("k").await.unwrap().is_some());
    assert!(due(store, KEEP, k + 10_000).await.is_empty());
    assert!(!store
        .take_expired_thread("k", KEEP, k + 10_000)
        .await
        .unwrap());
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    store
        .patch_thread("u", "k", &json!({"y": 2}), None)
        .await
        .unwrap();
    let k2 = updated_at(store, "k").await;
    assert!(due(store, KEEP, k2 + 19).await.is_empty());
    assert_eq!(due(store, KEEP, k2 + 20).await, ["k"]);

    // Cleared: never due.
    assert!(store
        .set_thread_ttl("u", "k", None)
        .await
        .unwrap()
        .is_some());
    assert!(due(store, KEEP, i64::MAX / 2).await.is_empty());
    assert!(due(store, DELETE, i64::MAX / 2)
        .await
        .iter()
        .all(|t| t != "none"));
}

#[tokio::test]
async fn ttl_on_sqlite() {
    let (pool, path) = sqlite_pool().await;
    a_thread_is_due_once_it_has_been_left_alone(&SqlStore::new(pool.clone())).await;
    pool.close().await;
    remove_sqlite_files(&path);
}

#[tokio::test]
async fn ttl_on_postgres() {
    let schema = PgSchema::create().await;
    let pool = pg_pool(&schema).await;
    a_thread_is_due_once_it_has_been_left_alone(&SqlStore::new(pool.clone())).await;
    pool.close().await;
}

/// Gives the first 50 of the generated threads a time to live of a second.
const FIFTY_GET_A_TTL: &str =
    "UPDATE threads SET ttl_ms = 1000, ttl_strategy = 'delete' WHERE created_at_ms <= 50";

/// A time by which all 50 are due.
const NOW: i64 = 1_000_000;

/// Every node of a Postgres plan (depth first).
fn nodes(plan: &Value, out: &mut Vec<Value>) {
    out.push(plan.clone());
    for c in plan["Plans"].as_array().into_iter().flatten() {
        nodes(c, out);
    }
}

/// On 100,000 threads, 50 of them with a time to live, the sweep's query reads a range of
/// the partial index and scans no table.
#[tokio::test]
async fn the_due_query_reads_the_expiry_index_on_a_big_table_postgres() {
    let schema = PgSchema::create().await;
    let pool = pg_pool(&schema).await;
    sqlx::query(
        "INSERT INTO threads (thread_id, owner, metadata, status, created_at_ms, updated_at_ms)
         SELECT 'g' || i, 'u', '{}', 'idle', i, i FROM generate_series(1, 100000) AS i",
    )
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query(FIFTY_GET_A_TTL).execute(&pool).await.unwrap();
    sqlx::query("ANALYZE threads").execute(&pool).await.unwrap();
    let plan: Value = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "EXPLAIN (FORMAT JSON) {}",
        due_query()
    )))
    .bind(NOW)
    .bind(DELETE.as_str())
    .bind(100_i64)
    .fetch_one(&pool)
    .await
    .unwrap();
    let mut all = Vec::new();
    nodes(&plan[0]["Plan"], &mut all);
    assert!(
        all.iter().any(|n| n["Index Name"] == "threads_expiry_idx"),
        "the expiry index: {plan}"
    );
    assert!(
        !all.iter().any(|n| n["Node Type"] == "Seq Scan"),
        "a sequential scan: {plan}"
    );
    let store = SqlStore::new(pool.clone());
    let found = store.expired_threads(DELETE, NOW, 100).await.unwrap();
    assert_eq!(found.len(), 50);
    pool.close().await;
}

#[tokio::test]
async fn the_due_query_reads_the_expiry_index_on_a_big_table_sqlite() {
    let (pool, path) = sqlite_pool().await;
    sqlx::query(
        "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 20000)
         INSERT INTO threads (thread_id, owner, metadata, status, created_at_ms, updated_at_ms)
         SELECT 'g' || i, 'u', '{}', 'idle', i, i FROM s",
    )
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query(FIFTY_GET_A_TTL).execute(&pool).await.unwrap();
    sqlx::query("ANALYZE").execute(&pool).await.unwrap();
    let lines: Vec<(i64, i64, i64, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "EXPLAIN QUERY PLAN {}",
        due_query()
    )))
    .bind(NOW)
    .bind(DELETE.as_str())
    .bind(100_i64)
    .fetch_all(&pool)
    .await
    .unwrap();
    let plan: Vec<String> = lines.into_iter().map(|l| l.3).collect();
    assert!(
        plan.iter()
            .any(|l| l.contains("USING INDEX threads_expiry_idx")),
        "the expiry index: {plan:?}"
    );
    assert!(
        !plan.iter().any(|l| l.starts_with("SCAN threads")),
        "a scan of the threads: {plan:?}"
    );
    pool.close().await;
    remove_sqlite_files(&path);
}
