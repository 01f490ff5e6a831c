//! Writes stored with [`Flush::WithNext`] on Postgres: committed and visible to every other
//! session when the call returns, with `synchronous_commit` off for their own transaction
//! only (the connection they ran on commits flushed again afterwards), refused like any
//! other write when their guard fails; and [`Checkpointer::flush`]. That they are lost in a
//! crash of the database unless flushed, and kept when the run flushed them, is the app's
//! `crash_flush` test (it needs a cluster of its own).

use serde_json::value::RawValue;

use crate::checkpoint::{Checkpointer, Flush, PendingWrite, PostgresCheckpointer};
use crate::db::reuse::Reused;
use crate::testkit::backends::PgSchema;

use super::pg_group_commit::{insert_one, NewRow};

fn row(thread: &str, seq: i64, expected: Option<&str>, flush: Flush) -> NewRow {
    NewRow {
        thread_id: thread.into(),
        checkpoint_id: format!("{thread}-{seq}"),
        seq,
        parent_id: expected.map(str::to_string),
        created_at_ms: 0,
        metadata: "{}".into(),
        versions: "{}".into(),
        plan: "[]".into(),
        vals: "{}".into(),
        expected: expected.map(str::to_string),
        fence: None,
        claim: false,
        flush,
    }
}

/// The setting the connection's next statement commits with.
async fn synchronous_commit(conns: &Reused<sqlx::Postgres>) -> String {
    let mut conn = conns.take().await.expect("the connection");
    let setting: String = sqlx::query_scalar("SHOW synchronous_commit")
        .fetch_one(&mut *conn)
        .await
        .expect("show");
    conn.keep();
    setting
}

#[tokio::test]
async fn an_unflushed_put_is_visible_at_once_and_leaves_its_connection_flushing() {
    let schema = PgSchema::create().await;
    let pool = schema.pool(2).await;
    let conns = Reused::with_generic_plans(pool.clone(), 1);
    assert!(insert_one(&conns, &row("t", 1, None, Flush::WithNext))
        .await
        .expect("put"));
    let seen: i64 = sqlx::query_scalar("SELECT count(*) FROM checkpoints WHERE thread_id = 't'")
        .fetch_one(&pool)
        .await
        .expect("read from another session");
    assert_eq!(seen, 1, "committed when the put returned");
    assert_eq!(synchronous_commit(&conns).await, "on");
    // Refused like a flushed put when its head moved; the next put of the chain is stored.
    assert!(
        !insert_one(&conns, &row("t", 2, Some("t-0"), Flush::WithNext))
            .await
            .expect("put")
    );
    assert!(insert_one(&conns, &row("t", 2, Some("t-1"), Flush::Now))
        .await
        .expect("put"));
    assert_eq!(synchronous_commit(&conns).await, "on");
}

#[tokio::test]
async fn unflushed_answers_at_the_head_are_visible_at_once_and_checked_like_flushed_ones() {
    let schema = PgSchema::create().await;
    let pool = schema.pool(4).await;
    let cp = PostgresCheckpointer::new(pool.clone());
    let conns = Reused::with_generic_plans(pool.clone(), 1);
    assert!(insert_one(&conns, &row("t", 1, None, Flush::Now))
        .await
        .expect("put"));
    let answer = |idx| PendingWrite {
        task_id: "task".into(),
        channel: "__resume__".into(),
        idx,
        value: RawValue::from_string("\"yes\"".into()).expect("json"),
    };
    // Not the head's count of writes: refused, nothing stored.
    assert!(!cp
        .put_writes_at_head("t", "t-1", 1, vec![answer(0)], None, Flush::WithNext)
        .await
        .expect("refused"));
    assert!(cp
        .put_writes_at_head("t", "t-1", 0, vec![answer(0)], None, Flush::WithNext)
        .await
        .expect("stored"));
    let head = cp
        .get_without_values("t", None)
        .await
        .expect("read")
        .expect("the head");
    assert_eq!(head.writes.len(), 1, "visible to the next read");
    cp.flush("t").await.expect("flush");
    // A thread without checkpoints has nothing to flush.
    cp.flush("nothing-here").await.expect("flush");
}
