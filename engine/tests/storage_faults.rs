//! Bad conditions for the durable backends: undecodable rows, a database that goes away
//! mid-run. Each gives a typed error, never a panic, and the thread stays at its last good
//! checkpoint. (Migrations refusing a database are in `migrations.rs`.)

use std::sync::Arc;
use std::time::Duration;

use palgraph::checkpoint::{CheckpointError, PostgresCheckpointer, SqliteCheckpointer};
use palgraph::testkit::backends::{remove_sqlite_files, temp_db_path, PgSchema};
use palgraph::testkit::fixtures::{build, say, thread, TestState, Upd};
use palgraph::{Checkpointer, NodeContext, NodeError, RunConfig, RunError, StateGraph, END, START};

fn counter_graph(cp: Arc<dyn Checkpointer>) -> palgraph::CompiledGraph<TestState> {
    let mut g = StateGraph::<TestState>::new();
    g.add_node("count", |s: Arc<TestState>, _c: NodeContext| async move {
        Ok::<_, NodeError>(Upd::default().counter(s.counter + 1))
    });
    g.add_edge(START, "count");
    g.add_edge("count", END);
    build(g, cp)
}

/// A graph whose second node waits until told to go on.
fn gated_graph(
    cp: Arc<dyn Checkpointer>,
    gate: Arc<tokio::sync::Notify>,
) -> palgraph::CompiledGraph<TestState> {
    let mut g = StateGraph::<TestState>::new();
    g.add_node("first", |s: Arc<TestState>, _c: NodeContext| async move {
        Ok::<_, NodeError>(Upd::default().counter(s.counter + 1))
    });
    g.add_node("second", move |s: Arc<TestState>, _c: NodeContext| {
        let gate = gate.clone();
        async move {
            gate.notified().await;
            Ok::<_, NodeError>(Upd::default().counter(s.counter + 1))
        }
    });
    g.add_edge(START, "first");
    g.add_edge("first", "second");
    g.add_edge("second", END);
    build(g, cp)
}

#[tokio::test]
async fn sqlite_undecodable_row_is_a_typed_error() {
    let path = temp_db_path();
    let cp = Arc::new(SqliteCheckpointer::open(&path).await.unwrap());
    let g = counter_graph(cp.clone());
    let t = thread();
    g.invoke(RunConfig::new(&t), say("one")).await.unwrap();
    sqlx::query(
        "UPDATE checkpoints SET vals = json_set(vals, '$.counter[2]', 'not a number')
         WHERE json_extract(vals, '$.counter') IS NOT NULL",
    )
    .execute(cp.pool())
    .await
    .unwrap();
    let err = g.get_state(&t).await.unwrap_err();
    assert!(matches!(err, RunError::State(_)), "{err}");
    assert!(err.to_string().contains("does not decode"), "{err}");
    let err = g.invoke(RunConfig::new(&t), say("two")).await.unwrap_err();
    assert!(matches!(err, RunError::State(_)), "{err}");
    sqlx::query("UPDATE checkpoints SET plan = '{broken'")
        .execute(cp.pool())
        .await
        .unwrap();
    let err = g.get_state(&t).await.unwrap_err();
    assert!(
        matches!(err, RunError::Checkpoint(CheckpointError::Decode(_))),
        "{err}"
    );
    remove_sqlite_files(&path);
}

#[tokio::test]
async fn postgres_undecodable_row_is_a_typed_error() {
    let schema = PgSchema::create().await;
    let pool = schema.pool(4).await;
    let g = counter_graph(Arc::new(PostgresCheckpointer::new(pool.clone())));
    let t = thread();
    g.invoke(RunConfig::new(&t), say("one")).await.unwrap();
    sqlx::query("UPDATE checkpoints SET vals = jsonb_set(vals, '{counter,2}', '\"not a number\"') WHERE vals ? 'counter'")
        .execute(&pool)
        .await
        .unwrap();
    let err = g.invoke(RunConfig::new(&t), say("two")).await.unwrap_err();
    assert!(matches!(err, RunError::State(_)), "{err}");
    // The thread's state read after `sql` changed its rows: an error.
    let broken_by = |sql: &'static str| {
        let (pool, g, t) = (&pool, &g, &t);
        async move {
            sqlx::query(sql).execute(pool).await.unwrap();
            g.get_state(t).await.unwrap_err()
        }
    };
    let err = broken_by("UPDATE checkpoints SET vals = vals - 'messages'").await;
    assert!(
        matches!(err, RunError::Checkpoint(CheckpointError::MissingVersion { ref field, .. }) if field == "messages"),
        "{err}"
    );
    // The record is text, as on SQLite (migration 6): a broken one is a decode error too.
    let err = broken_by("UPDATE checkpoints SET plan = '{broken'").await;
    assert!(
        matches!(err, RunError::Checkpoint(CheckpointError::Decode(_))),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_going_away_mid_run_leaves_the_last_good_checkpoint() {
    let schema = PgSchema::create().await;
    let pool = schema.pool(4).await;
    let gate = Arc::new(tokio::sync::Notify::new());
    let g = gated_graph(
        Arc::new(PostgresCheckpointer::new(pool.clone())),
        gate.clone(),
    );
    let t = thread();
    let run = tokio::spawn({
        let (g, t) = (g.clone(), t.clone());
        async move { g.invoke(RunConfig::new(&t), say("go")).await }
    });
    // Wait until `first` is checkpointed, then take the database away and let `second` finish.
    let fresh = PostgresCheckpointer::new(schema.pool(1).await);
    loop {
        let n = fresh.list(&t, &Default::default()).await.unwrap().len();
        if n >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    pool.close().await;
    gate.notify_one();
    let err = run.await.unwrap().unwrap_err();
    assert!(
        matches!(err, RunError::Checkpoint(CheckpointError::Backend(_))),
        "{err}"
    );
    let snap = counter_graph(Arc::new(fresh))
        .get_state(&t)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(snap.values.counter, 1, "first's checkpoint is intact");
    assert_eq!(snap.next, vec!["second"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_going_away_mid_run_leaves_the_last_good_checkpoint() {
    let path = temp_db_path();
    let cp = SqliteCheckpointer::open(&path).await.unwrap();
    let pool = cp.pool().clone();
    let gate = Arc::new(tokio::sync::Notify::new());
    let g = gated_graph(Arc::new(cp), gate.clone());
    let t = thread();
    let run = tokio::spawn({
        let (g, t) = (g.clone(), t.clone());
        async move { g.invoke(RunConfig::new(&t), say("go")).await }
    });
    let fresh = SqliteCheckpointer::open(&path).await.unwrap();
    while fresh.list(&t, &Default::default()).await.unwrap().len() < 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    pool.close().await;
    gate.notify_one();
    let err = run.await.unwrap().unwrap_err();
    assert!(
        matches!(err, RunError::Checkpoint(CheckpointError::Backend(_))),
        "{err}"
    );
    let snap = counter_graph(Arc::new(fresh))
        .get_state(&t)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(snap.values.counter, 1);
    assert_eq!(snap.next, vec!["second"]);
    remove_sqlite_files(&path);
}
