//! The store on both databases: what the shared SQL relies on (sqlx-sqlite's `$N`
//! parameters, enums as text, JSON binds Postgres accepts), and every [`Store`] operation.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{json, Value};
use sqlx::types::Json;
use sqlx::{Database, Pool};

use palgraph::testkit::backends::{remove_sqlite_files, temp_db_path, PgSchema};

use super::rows::json as json_bind;
use super::sql::SqlStore;
use super::{
    CancelAction, Claim, ClaimAtCreate, EventRow, Finish, IfExists, MultitaskStrategy, NewRun,
    RunState, Store, StoreError, Thread, ThreadQuery, MIGRATIONS,
};

pub(super) async fn sqlite_pool() -> (sqlx::SqlitePool, std::path::PathBuf) {
    let path = temp_db_path();
    let pool = palgraph::db::open_sqlite(&path).await.unwrap();
    MIGRATIONS.apply_sqlite(&pool).await.unwrap();
    (pool, path)
}

pub(super) async fn pg_pool(schema: &PgSchema) -> sqlx::PgPool {
    let pool = schema.pool(4).await;
    MIGRATIONS.apply_postgres(&pool).await.unwrap();
    pool
}

#[tokio::test]
async fn sqlite_binds_dollar_parameters_by_number_reused_and_out_of_order() {
    let (pool, path) = sqlite_pool().await;
    let s: String = sqlx::query_scalar("SELECT $3 || $1 || $2 || $1")
        .bind("a")
        .bind("b")
        .bind("c")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(s, "caba");
    // A parameter that is never read, between two that are.
    let n: i64 = sqlx::query_scalar("SELECT $1 + $3")
        .bind(1_i64)
        .bind("unused")
        .bind(40_i64)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(n, 41);
    pool.close().await;
    remove_sqlite_files(&path);
}

/// Enums go in and come back as their stored names.
async fn enums_round_trip<DB: Database>(pool: &Pool<DB>)
where
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
    DB::Arguments: sqlx::IntoArguments<DB>,
    str: sqlx::Type<DB>,
    for<'a> &'a str: sqlx::Encode<'a, DB>,
    for<'r> (String,): sqlx::FromRow<'r, DB::Row>,
    for<'r> (RunState, MultitaskStrategy, Option<CancelAction>): sqlx::FromRow<'r, DB::Row>,
    for<'r> (Option<CancelAction>,): sqlx::FromRow<'r, DB::Row>,
    for<'r> (RunState,): sqlx::FromRow<'r, DB::Row>,
{
    let stored: String = sqlx::query_scalar("SELECT $1")
        .bind(RunState::Interrupted)
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(stored, "interrupted");
    let back: (RunState, MultitaskStrategy, Option<CancelAction>) =
        sqlx::query_as("SELECT $1, $2, $3")
            .bind("cancelled")
            .bind(MultitaskStrategy::Enqueue)
            .bind("rollback")
            .fetch_one(pool)
            .await
            .unwrap();
    assert_eq!(
        back,
        (
            RunState::Cancelled,
            MultitaskStrategy::Enqueue,
            Some(CancelAction::Rollback)
        )
    );
    let none: Option<CancelAction> = sqlx::query_scalar("SELECT CAST(NULL AS TEXT)")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(none, None);
    let unknown = sqlx::query_scalar::<DB, RunState>("SELECT $1")
        .bind("paused")
        .fetch_one(pool)
        .await
        .unwrap_err();
    assert!(unknown.to_string().contains("paused"), "{unknown}");
}

#[tokio::test]
async fn enums_are_stored_as_their_names_on_both_databases() {
    let (pool, path) = sqlite_pool().await;
    enums_round_trip(&pool).await;
    pool.close().await;
    remove_sqlite_files(&path);
    let schema = PgSchema::create().await;
    enums_round_trip(&pg_pool(&schema).await).await;
}

#[tokio::test]
async fn json_binds_lose_nul_characters_on_postgres_only() {
    let value = json!({"k\u{0}": ["a\u{0}b", {"n": 1, "s": "\u{0}"}], "plain": "x"});
    let stripped = json!({"k\u{fffd}": ["a\u{fffd}b", {"n": 1, "s": "\u{fffd}"}], "plain": "x"});

    let schema = PgSchema::create().await;
    let pg = pg_pool(&schema).await;
    let Json(back): Json<Value> = sqlx::query_scalar("SELECT $1")
        .bind(json_bind::<sqlx::Postgres>(&value))
        .fetch_one(&pg)
        .await
        .unwrap();
    assert_eq!(back, stripped);
    // Why: jsonb refuses the escape.
    let refused = sqlx::query("SELECT $1")
        .bind(Json(&value))
        .execute(&pg)
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("Unicode"), "{refused}");

    let (lite, path) = sqlite_pool().await;
    let Json(back): Json<Value> = sqlx::query_scalar("SELECT $1")
        .bind(json_bind::<sqlx::Sqlite>(&value))
        .fetch_one(&lite)
        .await
        .unwrap();
    assert_eq!(back, value);
    lite.close().await;
    remove_sqlite_files(&path);
}

pub(super) fn thread(id: &str, owner: &str, metadata: Value) -> Thread {
    Thread {
        thread_id: id.into(),
        owner: owner.into(),
        metadata,
        status: "idle".into(),
        created_at_ms: 1,
        updated_at_ms: 1,
    }
}

pub(super) fn new_run(id: &str, strategy: MultitaskStrategy, key: Option<&str>) -> NewRun {
    NewRun {
        run_id: id.into(),
        thread_id: "t1".into(),
        owner: "u".into(),
        assistant_id: "a".into(),
        graph_id: "g".into(),
        kwargs: json!({"input": {"x": 1}}),
        metadata: json!({"m": true}),
        multitask_strategy: strategy,
        idempotency_key: key.map(Into::into),
        new_thread: None,
        check_thread: false,
        claim: None,
        trace_context: Some(TRACEPARENT.into()),
    }
}

const TRACEPARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

fn query(metadata: Value, ids: Option<&[&str]>) -> ThreadQuery {
    ThreadQuery {
        metadata: metadata.as_object().cloned().unwrap_or_default(),
        status: None,
        ids: ids.map(|ids| ids.iter().map(|s| s.to_string()).collect()),
        limit: 10,
        offset: 0,
    }
}

fn ids<T>(items: &[T], id: impl Fn(&T) -> &str) -> Vec<String> {
    items.iter().map(|t| id(t).to_string()).collect()
}

fn finish(status: RunState, seq: i64, delete: bool) -> Finish {
    Finish {
        status,
        error: (status == RunState::Error).then(|| "boom".into()),
        terminal: (seq, json!({"type": "end"})),
        delete,
    }
}

/// Every operation, with the answers the server relies on.
async fn exercise(store: &dyn Store) {
    // Threads.
    let t1 = store
        .create_thread(thread("t1", "u", json!({"k": "v"})), IfExists::Raise)
        .await
        .unwrap();
    assert_eq!(t1.metadata, json!({"k": "v"}));
    let again = thread("t1", "u", json!({}));
    assert!(matches!(
        store.create_thread(again.clone(), IfExists::Raise).await,
        Err(StoreError::Exists(_))
    ));
    let same = store
        .create_thread(again, IfExists::DoNothing)
        .await
        .unwrap();
    assert_eq!(same.metadata, json!({"k": "v"}));
    store
        .create_thread(thread("t2", "other", json!({"k": "v"})), IfExists::Raise)
        .await
        .unwrap();
    assert!(store.get_thread("other", "t1").await.unwrap().is_none());
    let found = |m: Value, i: Option<&[&str]>| {
        let q = query(m, i);
        async move {
            let threads = store.search_threads("u", &q).await.unwrap();
            ids(&threads, |t| &t.thread_id)
        }
    };
    assert_eq!(found(json!({"k": "v"}), None).await, ["t1"]);
    assert!(found(json!({"k": "w"}), None).await.is_empty());
    assert_eq!(found(json!({}), Some(&["t1", "nope"])).await, ["t1"]);
    assert!(found(json!({}), Some(&[])).await.is_empty());
    let patched = store
        .patch_thread("u", "t1", &json!({"k": {"deep": 1}, "n": 2}), None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(patched.metadata, json!({"k": {"deep": 1}, "n": 2}));
    assert_eq!(found(json!({"k": {"deep": 1}}), None).await, ["t1"]);
    assert!(store
        .patch_thread("other", "t1", &json!({}), None)
        .await
        .unwrap()
        .is_none());

    // Runs: order, idempotency, strategies.
    assert!(matches!(
        store
            .create_run(&NewRun {
                thread_id: "missing".into(),
                ..new_run("r0", MultitaskStrategy::Reject, None)
            })
            .await,
        Err(StoreError::NotFound(_))
    ));
    let r1 = store
        .create_run(&new_run("r1", MultitaskStrategy::Reject, None))
        .await
        .unwrap();
    assert_eq!((r1.run.thread_seq, r1.run.status), (1, RunState::Pending));
    assert_eq!(r1.run.kwargs, json!({"input": {"x": 1}}));
    assert_eq!(r1.run.trace_context.as_deref(), Some(TRACEPARENT));
    let t1 = store.get_thread_any("t1").await.unwrap().unwrap();
    assert_eq!(t1.status, "busy");
    assert_eq!(t1.metadata["graph_id"], "g");
    assert_eq!(t1.metadata["assistant_id"], "a");
    assert_eq!(t1.metadata["n"], 2);
    assert!(matches!(
        store
            .create_run(&new_run("rx", MultitaskStrategy::Reject, None))
            .await,
        Err(StoreError::Busy(_))
    ));
    let r2 = store
        .create_run(&new_run("r2", MultitaskStrategy::Enqueue, Some("key")))
        .await
        .unwrap();
    assert_eq!(r2.run.thread_seq, 2);
    let repeated = store
        .create_run(&new_run("r2b", MultitaskStrategy::Enqueue, Some("key")))
        .await
        .unwrap();
    assert!(repeated.existing);
    assert_eq!(repeated.run.run_id, "r2");
    // Interrupt: both pending runs end at once, each with its terminal event.
    let r3 = store
        .create_run(&new_run("r3", MultitaskStrategy::Interrupt, None))
        .await
        .unwrap();
    assert_eq!(ids(&r3.cancelled, |r| &r.run_id), ["r1", "r2"]);
    for run in &r3.cancelled {
        assert_eq!(run.status, RunState::Cancelled);
        assert_eq!(run.cancel_action, Some(CancelAction::Interrupt));
        let events = store.events_after(&run.run_id, 0).await.unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].event["type"], "cancelled");
    }
    assert_eq!(
        ids(&store.active_runs("t1").await.unwrap(), |r| &r.run_id),
        ["r3"]
    );
    let listed = store.list_runs("t1", 2, 0).await.unwrap();
    assert_eq!(ids(&listed, |r| &r.run_id), ["r3", "r2"]);

    // Claims, leases, fencing.
    assert!(store
        .claim_run("w", 60_000, Some("r1"))
        .await
        .unwrap()
        .is_none());
    let claimed = store.claim_run("w", 60_000, None).await.unwrap().unwrap();
    assert_eq!((claimed.run_id.as_str(), claimed.attempt), ("r3", 1));
    assert_eq!(claimed.status, RunState::Running);
    assert!(store.claim_run("w2", 60_000, None).await.unwrap().is_none());
    let held = [("r3".to_string(), 1), ("r1".to_string(), 1)];
    let renewed = store.heartbeat("w", &held, 60_000).await.unwrap();
    assert_eq!(ids(&renewed, |r| &r.run_id), ["r3"]);
    assert_eq!(renewed[0].cancel_action, None);
    let stale = [("r3".to_string(), 0)];
    assert!(store
        .heartbeat("w", &stale, 60_000)
        .await
        .unwrap()
        .is_empty());
    let event = |seq: i64, attempt: i64| EventRow {
        run_id: "r3".into(),
        seq,
        thread_id: "t1".into(),
        event: json!({"seq": seq}),
        attempt,
    };
    store
        .append_events(&[event(1, 1), event(2, 0), event(1, 1)])
        .await
        .unwrap();
    let events = store.events_after("r3", 0).await.unwrap();
    let seqs: Vec<i64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [1], "the stale claim's event is not stored");
    assert_eq!(events[0].event, json!({"seq": 1}));

    // A cancel of a running run is a flag its worker's heartbeat reads.
    let flagged = store
        .request_cancel("r3", CancelAction::Interrupt, "user_cancelled")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(flagged.status, RunState::Running);
    let renewed = store.heartbeat("w", &held[..1], 60_000).await.unwrap();
    assert_eq!(renewed[0].cancel_action, Some(CancelAction::Interrupt));
    assert_eq!(renewed[0].cancel_reason.as_deref(), Some("user_cancelled"));
    let claim = Claim {
        run_id: "r3",
        worker: "w",
        attempt: 1,
    };
    let stale_claim = Claim {
        attempt: 0,
        ..claim
    };
    let done = finish(RunState::Interrupted, 2, false);
    assert!(!store.finish_run(stale_claim, &done).await.unwrap());
    assert!(store.finish_run(claim, &done).await.unwrap());
    assert!(!store.finish_run(claim, &done).await.unwrap(), "once");
    let r3 = store.get_run("u", "t1", "r3").await.unwrap().unwrap();
    assert_eq!(
        (r3.status, r3.lease_until_ms),
        (RunState::Interrupted, None)
    );
    assert!(store.get_run("other", "t1", "r3").await.unwrap().is_none());
    assert_eq!(store.events_after("r3", 1).await.unwrap()[0].seq, 2);
    assert_eq!(
        store.get_thread_any("t1").await.unwrap().unwrap().status,
        "interrupted"
    );
    // A finished run stays as it is.
    let over = store
        .request_cancel("r3", CancelAction::Rollback, "late")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(over.status, RunState::Interrupted);

    // Release, reclaim, a failed run, a rollback.
    store
        .create_run(&new_run("r4", MultitaskStrategy::Reject, None))
        .await
        .unwrap();
    let c4 = store
        .claim_run("w", 60_000, Some("r4"))
        .await
        .unwrap()
        .unwrap();
    let claim4 = Claim {
        run_id: "r4",
        worker: "w",
        attempt: c4.attempt,
    };
    store.release_run(claim4).await.unwrap();
    let (again, seen) = counting(store.claim_run("w2", 60_000, None)).await;
    let again = again.unwrap().unwrap();
    assert_eq!((again.run_id.as_str(), again.attempt), ("r4", 2));
    assert!(
        !seen.contains(crate::metric::LEASE_TAKEOVERS),
        "a released run is no takeover: {seen}"
    );
    assert!(!store
        .finish_run(claim4, &finish(RunState::Error, 1, false))
        .await
        .unwrap());
    let claim4 = Claim {
        worker: "w2",
        attempt: 2,
        ..claim4
    };
    assert!(store
        .finish_run(claim4, &finish(RunState::Error, 1, false))
        .await
        .unwrap());
    let r4 = store.get_run_any("r4").await.unwrap().unwrap();
    assert_eq!(
        (r4.status, r4.error.as_deref()),
        (RunState::Error, Some("boom"))
    );
    assert_eq!(
        store.get_thread_any("t1").await.unwrap().unwrap().status,
        "error"
    );
    store
        .create_run(&new_run("r5", MultitaskStrategy::Reject, None))
        .await
        .unwrap();
    let c5 = store.claim_run("w", 60_000, None).await.unwrap().unwrap();
    let claim5 = Claim {
        run_id: "r5",
        worker: "w",
        attempt: c5.attempt,
    };
    store
        .append_events(&[EventRow {
            run_id: "r5".into(),
            ..event(1, 1)
        }])
        .await
        .unwrap();
    assert!(store
        .finish_run(claim5, &finish(RunState::Cancelled, 2, true))
        .await
        .unwrap());
    assert!(store.get_run_any("r5").await.unwrap().is_none());
    assert!(store.events_after("r5", 0).await.unwrap().is_empty());
    assert_eq!(
        store.get_thread_any("t1").await.unwrap().unwrap().status,
        "idle"
    );
    // A rollback of a pending run deletes it.
    store
        .create_run(&new_run("r6", MultitaskStrategy::Reject, None))
        .await
        .unwrap();
    let gone = store
        .request_cancel("r6", CancelAction::Rollback, "user_cancelled")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(gone.status, RunState::Cancelled);
    assert!(store.get_run_any("r6").await.unwrap().is_none());
    assert_eq!(
        store.get_thread_any("t1").await.unwrap().unwrap().status,
        "idle"
    );

    // A run on a new thread: the thread is made in the run's transaction; a free thread's
    // run is claimed with its creation; a busy thread's waits, pending.
    let here = ClaimAtCreate {
        worker: "w".into(),
        lease_ms: 60_000,
    };
    let first = store
        .create_run(&NewRun {
            thread_id: "t7".into(),
            new_thread: Some(thread("t7", "u", json!({}))),
            check_thread: false,
            claim: Some(here.clone()),
            ..new_run("r7", MultitaskStrategy::Enqueue, None)
        })
        .await
        .unwrap();
    assert_eq!(first.run.status, RunState::Running);
    assert_eq!(
        (
            first.run.worker_id.as_deref(),
            first.run.attempt,
            first.run.thread_seq
        ),
        (Some("w"), 1, 1)
    );
    assert!(first.run.lease_until_ms.is_some());
    assert_eq!(
        store.get_thread_any("t7").await.unwrap().unwrap().status,
        "busy"
    );
    let second = store
        .create_run(&NewRun {
            thread_id: "t7".into(),
            claim: Some(here.clone()),
            ..new_run("r8", MultitaskStrategy::Enqueue, None)
        })
        .await
        .unwrap();
    assert_eq!(
        (
            second.run.status,
            second.run.worker_id.as_deref(),
            second.run.attempt
        ),
        (RunState::Pending, None, 0)
    );
    // Nobody else can claim the run claimed at creation while its lease holds.
    assert!(store
        .claim_run("w2", 60_000, Some("r7"))
        .await
        .unwrap()
        .is_none());
    // Another owner's thread is not taken over by a run "on a new thread" of that id.
    assert!(matches!(
        store
            .create_run(&NewRun {
                thread_id: "t7".into(),
                owner: "intruder".into(),
                new_thread: Some(thread("t7", "intruder", json!({}))),
                check_thread: false,
                ..new_run("r9", MultitaskStrategy::Enqueue, None)
            })
            .await,
        Err(StoreError::Exists(_))
    ));
    assert!(store.get_run_any("r9").await.unwrap().is_none());
    assert!(store.delete_thread("u", "t7").await.unwrap());

    // Deletes.
    store.delete_run("r3").await.unwrap();
    assert!(store.get_run_any("r3").await.unwrap().is_none());
    assert!(store.events_after("r3", 0).await.unwrap().is_empty());
    assert!(!store.delete_thread("other", "t1").await.unwrap());
    assert!(store.delete_thread("u", "t1").await.unwrap());
    assert!(store.get_thread_any("t1").await.unwrap().is_none());
    assert!(store.list_runs("t1", 10, 0).await.unwrap().is_empty());
    assert!(store.events_after("r1", 0).await.unwrap().is_empty());
}

/// Runs `fut` with a recorder of its own (this thread's: tests run on a current-thread
/// runtime); returns its output and what it recorded, rendered.
async fn counting<T>(fut: impl std::future::Future<Output = T>) -> (T, String) {
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    let out = {
        let _local = metrics::set_default_local_recorder(&recorder);
        fut.await
    };
    (out, handle.render())
}

#[tokio::test]
async fn every_operation_on_sqlite() {
    let (pool, path) = sqlite_pool().await;
    let store = SqlStore::new(pool.clone());
    exercise(&store).await;
    // A run left running by a dead process is claimable at once.
    store
        .create_run(&NewRun {
            thread_id: "t2".into(),
            owner: "other".into(),
            ..new_run("o1", MultitaskStrategy::Reject, None)
        })
        .await
        .unwrap();
    store
        .claim_run("dead", 600_000, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(store.recover_orphans().await.unwrap(), 1);
    // Taking it over is counted (a claim of a pending run is not: see exercise()).
    let (taken, seen) = counting(store.claim_run("w", 60_000, None)).await;
    let taken = taken.unwrap().unwrap();
    assert_eq!((taken.run_id.as_str(), taken.attempt), ("o1", 2));
    assert!(
        seen.contains(&format!("{} 1\n", crate::metric::LEASE_TAKEOVERS)),
        "{seen}"
    );
    pool.close().await;
    remove_sqlite_files(&path);
}

#[tokio::test]
async fn every_operation_on_postgres() {
    let schema = PgSchema::create().await;
    let pool = pg_pool(&schema).await;
    let store = SqlStore::new(pool.clone());
    let mut notes = store.notifications().await.expect("LISTEN");
    exercise(&store).await;
    // A run whose lease lapsed is taken over, and counted.
    store
        .create_run(&NewRun {
            thread_id: "t2".into(),
            owner: "other".into(),
            ..new_run("o1", MultitaskStrategy::Reject, None)
        })
        .await
        .unwrap();
    store.claim_run("stalled", -1, None).await.unwrap().unwrap();
    let (taken, seen) = counting(store.claim_run("w", 60_000, None)).await;
    let taken = taken.unwrap().unwrap();
    assert_eq!((taken.run_id.as_str(), taken.attempt), ("o1", 2));
    assert!(
        seen.contains(&format!("{} 1\n", crate::metric::LEASE_TAKEOVERS)),
        "{seen}"
    );
    // What other replicas heard: runs created (by thread), events, the cancel.
    let mut heard = Vec::new();
    while let Ok(Some(n)) =
        tokio::time::timeout(std::time::Duration::from_millis(500), notes.recv()).await
    {
        heard.push(n);
    }
    use super::Notification::{Cancel, Events, Runs};
    for expected in [
        Runs("t1".into()),
        Runs("r4".into()),
        Events("r1".into()),
        Events("r3".into()),
        Cancel("r3".into()),
    ] {
        assert!(heard.contains(&expected), "{expected:?} in {heard:?}");
    }
}
