//! Batches lock threads in one order on Postgres whatever the database's collation
//! (migration 9): a batch that creates runs and one that ends runs, over the same threads,
//! never wait on each other in a cycle.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use super::batch_tests::{finish_batch, migrated_store, new_run, thread};
use super::run_batches::{create_in, new_in_batch, Created};
use super::{IfExists, Store};

/// Waits until a session other than `blockers` waits for a lock one of `blockers` (backend
/// pids) holds, and returns its pid. (Other tests share the database: only these sessions'
/// waits count.)
async fn blocked_by(pool: &sqlx::PgPool, blockers: &[i32]) -> i32 {
    for _ in 0..1000 {
        let waiting: Option<i32> = sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity
             WHERE pg_blocking_pids(pid) && $1 AND NOT pid = ANY ($1) LIMIT 1",
        )
        .bind(blockers)
        .fetch_optional(pool)
        .await
        .unwrap();
        if let Some(pid) = waiting {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no session waited for {blockers:?}");
}

#[tokio::test]
async fn creates_and_ends_lock_threads_in_one_order_whatever_the_collation() {
    let (_schema, pool, store) = migrated_store().await;
    // The threads' ids compared as English text, as in a database created with
    // `en_US.UTF-8`: `…-a1` sorts before `…-B1` that way, after it by bytes.
    sqlx::raw_sql(
        r#"ALTER TABLE threads ALTER COLUMN thread_id TYPE text COLLATE "en-US-x-icu";
           ALTER TABLE runs ALTER COLUMN thread_id TYPE text COLLATE "en-US-x-icu";"#,
    )
    .execute(&pool)
    .await
    .unwrap();
    let p = uuid::Uuid::new_v4().simple().to_string();
    let (a, b) = (format!("{p}-a1"), format!("{p}-B1"));
    let (ra, rb) = (format!("{p}-ra"), format!("{p}-rb"));
    for (t, r) in [(&a, &ra), (&b, &rb)] {
        store
            .create_thread(thread(t), IfExists::Raise)
            .await
            .unwrap();
        store.create_run(&new_run(r, t)).await.unwrap();
    }
    // A third transaction holds `a1`, so that both batches queue up behind it.
    let mut holder = pool.begin().await.unwrap();
    let holder_pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut *holder)
        .await
        .unwrap();
    sqlx::query("SELECT 1 FROM threads WHERE thread_id = $1 FOR UPDATE")
        .bind(&a)
        .execute(&mut *holder)
        .await
        .unwrap();
    // The end of both runs, then a second run asked for on each thread.
    let ends = {
        let (pool, ra, rb) = (pool.clone(), ra.clone(), rb.clone());
        tokio::spawn(async move { finish_batch(&pool, &[(&ra, 1, false), (&rb, 1, false)]).await })
    };
    let ends_pid = blocked_by(&pool, &[holder_pid]).await;
    let creates = {
        let pool = pool.clone();
        let items: Vec<_> = [("ra2", &a), ("rb2", &b)]
            .into_iter()
            .map(|(r, t)| new_in_batch(&new_run(&format!("{p}-{r}"), t)).expect("no NUL"))
            .collect();
        tokio::spawn(async move {
            let mut conn = pool.acquire().await.unwrap();
            create_in(&mut conn, items).await
        })
    };
    // Behind the ends (one order) or behind the holder too (opposite orders).
    blocked_by(&pool, &[holder_pid, ends_pid]).await;
    holder.commit().await.unwrap();
    // Taken in opposite orders, the two would deadlock here and Postgres would refuse one
    // of them (after `deadlock_timeout`).
    let ended = tokio::time::timeout(Duration::from_secs(20), ends)
        .await
        .expect("the ends finished")
        .expect("the ends did not fail");
    let created = tokio::time::timeout(Duration::from_secs(20), creates)
        .await
        .expect("the creates finished")
        .unwrap()
        .expect("the creates did not fail");
    assert_eq!(ended, [true, true]);
    // Each thread's run had ended when its create looked: a new run, none busy.
    assert_eq!(created.len(), 2);
    assert!(
        created.iter().all(|c| matches!(c, Created::Run(_))),
        "{created:?}"
    );
}
