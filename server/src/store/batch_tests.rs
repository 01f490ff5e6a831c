//! Runs created and ended concurrently on Postgres, where they are written in batches
//! ([`super::run_batches`]): every caller gets the answer a transaction of its own would give.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use serde_json::json;

use palgraph::testkit::backends::PgSchema;
use palgraph::testkit::fixtures::rendered_metric;

use super::sql::SqlStore;
use super::{
    Claim, ClaimAtCreate, Finish, IfExists, MultitaskStrategy, NewRun, Notification, RunState,
    Store, StoreError, Thread, MIGRATIONS,
};

pub(super) fn thread(id: &str) -> Thread {
    Thread {
        thread_id: id.into(),
        owner: "u".into(),
        metadata: json!({}),
        status: "idle".into(),
        created_at_ms: 1,
        updated_at_ms: 1,
    }
}

/// A store on a fresh, migrated schema (kept while the schema value lives), and its pool.
pub(super) async fn migrated_store() -> (PgSchema, sqlx::PgPool, Arc<SqlStore<sqlx::Postgres>>) {
    let schema = PgSchema::create().await;
    let pool = schema.pool(8).await;
    MIGRATIONS.apply_postgres(&pool).await.unwrap();
    let store = Arc::new(SqlStore::new(pool.clone()));
    (schema, pool, store)
}

pub(super) fn new_run(run: &str, thread: &str) -> NewRun {
    NewRun {
        run_id: run.into(),
        thread_id: thread.into(),
        owner: "u".into(),
        assistant_id: "a".into(),
        graph_id: "g".into(),
        kwargs: json!({"input": {"text": format!("nul \u{0} in {run}")}}),
        metadata: json!({}),
        multitask_strategy: MultitaskStrategy::Enqueue,
        idempotency_key: None,
        new_thread: None,
        check_thread: false,
        claim: Some(ClaimAtCreate {
            worker: "w".into(),
            lease_ms: 60_000,
        }),
        trace_context: None,
    }
}

fn success(seq: i64) -> Finish {
    Finish {
        status: RunState::Success,
        error: None,
        terminal: (seq, json!({"type": "end"})),
        delete: false,
    }
}

#[tokio::test]
async fn concurrent_creates_and_ends_answer_as_one_transaction_each() {
    let (_schema, _pool, store) = migrated_store().await;
    let mut notes = store.notifications().await.expect("LISTEN");
    const THREADS: usize = 8;
    const PER_THREAD: usize = 4;
    for t in 0..THREADS {
        store
            .create_thread(thread(&format!("t{t}")), IfExists::Raise)
            .await
            .unwrap();
    }

    // Four runs on each of eight threads at once: on each thread one is claimed at its
    // creation and the others queue behind it, in a strict order.
    let creates: Vec<_> = (0..THREADS * PER_THREAD)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let t = i % THREADS;
                store
                    .create_run(&new_run(&format!("r{i:02}"), &format!("t{t}")))
                    .await
            })
        })
        .collect();
    let mut by_thread: BTreeMap<String, Vec<super::Run>> = BTreeMap::new();
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let seen = recorder.handle();
    {
        // This test's runtime has one thread: the batching tasks record here too.
        let _local = metrics::set_default_local_recorder(&recorder);
        for c in creates {
            let created = c.await.unwrap().unwrap();
            assert!(!created.existing && created.cancelled.is_empty());
            by_thread
                .entry(created.run.thread_id.clone())
                .or_default()
                .push(created.run);
        }
    }
    // The first run of each thread went through a batch (the others queued the long way).
    let seen = seen.render();
    let created_in_batches = rendered_metric(
        &seen,
        "palgraph_group_commit_batch_size_sum{kind=\"run_creates\"}",
    )
    .unwrap_or_else(|| panic!("no run_creates batches in {seen}"));
    assert!(
        created_in_batches >= (THREADS * PER_THREAD) as f64,
        "every create was tried in a batch: {seen}"
    );
    let mut running = Vec::new();
    for (t, runs) in &by_thread {
        let seqs: HashSet<i64> = runs.iter().map(|r| r.thread_seq).collect();
        assert_eq!(seqs, (1..=PER_THREAD as i64).collect(), "{t}");
        let first: Vec<_> = runs
            .iter()
            .filter(|r| r.status == RunState::Running)
            .collect();
        assert_eq!(first.len(), 1, "one run of {t} claimed at creation");
        assert_eq!((first[0].thread_seq, first[0].attempt), (1, 1), "{t}");
        // What the store holds is what the caller was told (the NUL replaced, as stored).
        let stored = store.get_run_any(&first[0].run_id).await.unwrap().unwrap();
        assert_eq!(stored.kwargs, first[0].kwargs);
        assert_eq!(stored.lease_until_ms, first[0].lease_until_ms);
        assert_eq!(stored.status, RunState::Running);
        assert!(!stored.kwargs.to_string().contains("\\u0000"));
        assert_eq!(
            store.get_thread_any(t).await.unwrap().unwrap().status,
            "busy"
        );
        running.push(first[0].run_id.clone());
    }

    // The claimed runs end at once, with a heartbeat of all of them racing the ends: each
    // end is recorded once, and each thread stays busy with its queued runs.
    let hb = {
        let store = store.clone();
        let held: Vec<(String, i64)> = running.iter().map(|r| (r.clone(), 1)).collect();
        tokio::spawn(async move {
            for _ in 0..20 {
                store.heartbeat("w", &held, 60_000).await.unwrap();
            }
        })
    };
    let ends: Vec<_> = running
        .iter()
        .cloned()
        .map(|run| {
            let store = store.clone();
            tokio::spawn(async move {
                let claim = Claim {
                    run_id: &run,
                    worker: "w",
                    attempt: 1,
                };
                store.finish_run(claim, &success(7)).await
            })
        })
        .collect();
    for e in ends {
        assert!(e.await.unwrap().unwrap(), "the claim held its run");
    }
    hb.await.unwrap();
    for run in &running {
        let claim = Claim {
            run_id: run,
            worker: "w",
            attempt: 1,
        };
        assert!(
            !store.finish_run(claim, &success(8)).await.unwrap(),
            "an ended run ends once"
        );
        let stored = store.get_run_any(run).await.unwrap().unwrap();
        assert_eq!(stored.status, RunState::Success);
        let events = store.events_after(run, 0).await.unwrap();
        assert_eq!(events.len(), 1, "one terminal event");
        assert_eq!(events[0].seq, 7);
    }
    for t in by_thread.keys() {
        assert_eq!(
            store.get_thread_any(t).await.unwrap().unwrap().status,
            "busy"
        );
    }
    // Each end announced the run queued behind it.
    let mut heard = HashSet::new();
    while let Ok(Some(n)) =
        tokio::time::timeout(std::time::Duration::from_millis(500), notes.recv()).await
    {
        if let Notification::Runs(t) = n {
            heard.insert(t);
        }
    }
    for t in by_thread.keys() {
        assert!(heard.contains(t), "{t} announced in {heard:?}");
    }
}

/// Runs whose threads were not read first ([`NewRun::check_thread`]) are checked by the
/// batch itself, which answers each one (no batch failed and retried the long way).
#[tokio::test]
async fn a_batch_checks_the_threads_of_checked_runs() {
    let (_schema, pool, store) = migrated_store().await;
    for t in [
        Thread {
            metadata: json!({"graph_id": "g"}),
            ..thread("mine")
        },
        Thread {
            owner: "someone else".into(),
            ..thread("theirs")
        },
        Thread {
            metadata: json!({"graph_id": "another"}),
            ..thread("another graph's")
        },
    ] {
        store.create_thread(t, IfExists::Raise).await.unwrap();
    }
    let batches = super::run_batches::RunBatches::spawn(&pool);
    let checked = |run: &str, t: &str| NewRun {
        check_thread: true,
        ..new_run(run, t)
    };
    let runs = [
        checked("c1", "theirs"),
        checked("c2", "another graph's"),
        checked("c3", "nowhere"),
        NewRun {
            new_thread: Some(thread("theirs")),
            ..checked("c4", "theirs")
        },
        checked("c5", "mine"),
    ];
    let answers = futures_util::future::join_all(runs.iter().map(|r| batches.create(r))).await;
    use super::run_batches::Created;
    let kinds: Vec<&str> = answers
        .iter()
        .map(|a| match a {
            Some(Created::NoThread) => "no thread",
            Some(Created::OtherGraph) => "other graph",
            Some(Created::Run(_)) => "run",
            _ => "?",
        })
        .collect();
    assert_eq!(
        kinds,
        ["no thread", "other graph", "no thread", "no thread", "run"],
        "{answers:?}"
    );
    for gone in ["c1", "c2", "c3", "c4"] {
        assert!(store.get_run_any(gone).await.unwrap().is_none());
    }
    let other = store
        .get_thread_any("another graph's")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (other.status.as_str(), &other.metadata["graph_id"]),
        ("idle", &json!("another"))
    );
}

#[tokio::test]
async fn batched_creates_refuse_what_one_transaction_refuses() {
    let (_schema, pool, store) = migrated_store().await;
    store
        .create_thread(thread("mine"), IfExists::Raise)
        .await
        .unwrap();
    let theirs = Thread {
        owner: "someone else".into(),
        ..thread("theirs")
    };
    store.create_thread(theirs, IfExists::Raise).await.unwrap();

    // The same idempotency key from two requests at once: one run.
    let keyed = |run: &str, t: &str| NewRun {
        idempotency_key: Some("k1".into()),
        ..new_run(run, t)
    };
    let (ka, kb) = (keyed("ka", "mine"), keyed("kb", "mine"));
    let (a, b) = tokio::join!(store.create_run(&ka), store.create_run(&kb));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.run.run_id, b.run.run_id, "one run for one key");
    assert!(a.existing != b.existing);
    assert_eq!(a.run.idempotency_key.as_deref(), Some("k1"));

    let (x1, x2, x3) = (
        new_run("x1", "no such thread"),
        NewRun {
            new_thread: Some(thread("theirs")),
            ..new_run("x2", "theirs")
        },
        NewRun {
            new_thread: Some(thread("fresh")),
            ..new_run("x3", "fresh")
        },
    );
    let (missing, stolen, new) = tokio::join!(
        store.create_run(&x1),
        store.create_run(&x2),
        store.create_run(&x3),
    );
    assert!(
        matches!(missing, Err(StoreError::NotFound(_))),
        "{missing:?}"
    );
    assert!(matches!(stolen, Err(StoreError::Exists(_))), "{stolen:?}");
    let new = new.unwrap().run;
    assert_eq!((new.status, new.thread_seq), (RunState::Running, 1));
    let fresh = store.get_thread_any("fresh").await.unwrap().unwrap();
    assert_eq!(fresh.owner, "u");
    assert_eq!(fresh.status, "busy");
    assert_eq!(fresh.metadata["graph_id"], "g");
    // The new thread was written once, before its run, in the run's transaction: not
    // inserted idle and then updated after the run (which leaves a dead version behind).
    let (same_xact, thread_cmd, run_cmd): (bool, String, String) = sqlx::query_as(
        "SELECT t.xmin = r.xmin, t.cmin::text, r.cmin::text
         FROM threads t, runs r WHERE t.thread_id = 'fresh' AND r.run_id = 'x3'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(same_xact, "one transaction");
    assert!(
        thread_cmd.parse::<u32>().unwrap() < run_cmd.parse::<u32>().unwrap(),
        "the thread's only version comes before its run ({thread_cmd} vs {run_cmd})"
    );
    for gone in ["x1", "x2"] {
        assert!(store.get_run_any(gone).await.unwrap().is_none());
    }
}

#[tokio::test]
async fn concurrent_new_threads_are_inserted_in_batches_once_each() {
    let (_schema, pool, store) = migrated_store().await;
    store
        .create_thread(thread("old"), IfExists::Raise)
        .await
        .unwrap();

    // 25 creates at once: 16 new ids, 4 of them asked for three times, and an id that was
    // there before; a NUL in metadata is replaced as the long way replaces it.
    let ids: Vec<String> = (0..16)
        .map(|i| format!("n{i:02}"))
        .chain((0..4).flat_map(|i| [format!("n{i:02}"), format!("n{i:02}")]))
        .chain(std::iter::once("old".to_string()))
        .collect();
    assert_eq!(ids.len(), 25);
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let seen = recorder.handle();
    let mut answers = Vec::new();
    {
        let _local = metrics::set_default_local_recorder(&recorder);
        let creates: Vec<_> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let store = store.clone();
                let mut t = thread(id);
                t.metadata = json!({"n": i, "note": "a \u{0} b"});
                let if_exists = if i % 2 == 0 {
                    IfExists::Raise
                } else {
                    IfExists::DoNothing
                };
                tokio::spawn(async move { (i, store.create_thread(t, if_exists).await) })
            })
            .collect();
        for c in creates {
            answers.push(c.await.unwrap());
        }
    }
    let seen = seen.render();
    let batched = rendered_metric(
        &seen,
        "palgraph_group_commit_batch_size_sum{kind=\"threads\"}",
    )
    .unwrap_or_else(|| panic!("no thread batches in {seen}"));
    assert_eq!(batched, 25.0, "every create went through a batch");

    // Each new id was created by exactly one caller; every other caller of that id got
    // "exists" (Raise) or the stored thread (DoNothing), as separate inserts would answer.
    let mut created = HashSet::new();
    for (i, answer) in answers {
        let id = &ids[i];
        match answer {
            Ok(t) if t.metadata["n"] == json!(i) => {
                assert_eq!(&t.thread_id, id);
                assert_eq!(t.metadata["note"], json!("a \u{fffd} b"), "NUL replaced");
                assert!(created.insert(id.clone()), "{id} created twice");
            }
            Ok(t) => {
                assert_eq!(i % 2, 1, "{id}: only DoNothing returns an existing thread");
                assert_eq!(&t.thread_id, id);
            }
            Err(StoreError::Exists(_)) => assert_eq!(i % 2, 0, "{id}: DoNothing never raises"),
            Err(e) => panic!("{id}: {e}"),
        }
    }
    let new_ids: HashSet<String> = (0..16).map(|i| format!("n{i:02}")).collect();
    assert_eq!(created, new_ids, "every new id created once, `old` never");
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM threads")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(rows, 17);
    let stored = store.get_thread("u", "n03").await.unwrap().unwrap();
    assert_eq!(stored.metadata["note"], json!("a \u{fffd} b"));
}

/// One call of `palgraph_finish_runs` with these ends (run, attempt, delete), built as the
/// batcher builds them: the answers in batch order.
pub(super) async fn finish_batch(pool: &sqlx::PgPool, ends: &[(&String, i64, bool)]) -> Vec<bool> {
    let items = ends
        .iter()
        .map(|(run, attempt, delete)| {
            let claim = Claim {
                run_id: run,
                worker: "w",
                attempt: *attempt,
            };
            let finish = Finish {
                terminal: (9, json!({"type": "end", "run": run})),
                delete: *delete,
                ..success(9)
            };
            super::run_batches::end_item(claim, &finish)
        })
        .collect();
    let mut conn = pool.acquire().await.unwrap();
    super::run_batches::end_batch(&mut conn, items)
        .await
        .unwrap()
}

#[tokio::test]
async fn one_call_ending_runs_answers_each_as_its_own_transaction_would() {
    let (_schema, pool, store) = migrated_store().await;
    // Notifications go to every listener of the database, other tests' too: this test's
    // ids are its own.
    let p = uuid::Uuid::new_v4().simple().to_string();
    let id = |name: &str| format!("{p}-{name}");
    let [r1, r2, r3, r4] = ["r1", "r2", "r3", "r4"].map(id);
    for t in ["t1", "t2", "t3", "t4"] {
        store
            .create_thread(thread(&id(t)), IfExists::Raise)
            .await
            .unwrap();
    }
    for (run, t) in [
        ("r1", "t1"),
        ("r2", "t2"),
        ("r2q", "t2"),
        ("r3", "t3"),
        ("r4", "t4"),
    ] {
        store.create_run(&new_run(&id(run), &id(t))).await.unwrap();
    }
    sqlx::query("INSERT INTO run_events (run_id, seq, event) VALUES ($1, 1, '{}')")
        .bind(&r3)
        .execute(&pool)
        .await
        .unwrap();
    let mut notes = store.notifications().await.expect("LISTEN");

    let before = super::now_ms();
    // One call: r1 ends, r2 ends with r2q queued behind it (its thread stays busy), r3 is
    // deleted with its events, an unknown run ends nothing; then a stale claim on r4 ends
    // nothing either.
    let done = finish_batch(
        &pool,
        &[
            (&r1, 1, false),
            (&r2, 1, false),
            (&r3, 1, true),
            (&id("gone"), 1, false),
        ],
    )
    .await;
    assert_eq!(done, [true, true, true, false]);
    assert!(
        !finish_batch(&pool, &[(&r4, 2, false)]).await[0],
        "a stale claim ends nothing"
    );
    for (t, status) in [
        ("t1", "idle"),
        ("t2", "busy"),
        ("t3", "idle"),
        ("t4", "busy"),
    ] {
        let stored = store.get_thread_any(&id(t)).await.unwrap().unwrap();
        assert_eq!(stored.status, status, "{t}");
    }
    assert!(
        store
            .get_thread_any(&id("t1"))
            .await
            .unwrap()
            .unwrap()
            .updated_at_ms
            >= before,
        "the end moved the thread's time"
    );
    for run in [&r1, &r2] {
        assert_eq!(
            store.get_run_any(run).await.unwrap().unwrap().status,
            RunState::Success
        );
        let events = store.events_after(run, 0).await.unwrap();
        assert_eq!(events.len(), 1, "{run}: one terminal event");
        assert_eq!(events[0].seq, 9);
        assert_eq!(events[0].event["run"], json!(run));
    }
    assert!(
        store.get_run_any(&r3).await.unwrap().is_none(),
        "r3 deleted"
    );
    let r3_events: i64 = sqlx::query_scalar("SELECT count(*) FROM run_events WHERE run_id = $1")
        .bind(&r3)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(r3_events, 0, "a deleted run's events go with it");
    assert_eq!(
        store.get_run_any(&r4).await.unwrap().unwrap().status,
        RunState::Running
    );

    // The same run twice in one batch: ended once, as one transaction each would answer.
    let done = finish_batch(&pool, &[(&r4, 1, false), (&r4, 1, false)]).await;
    assert_eq!(done, [true, false]);
    assert_eq!(store.events_after(&r4, 0).await.unwrap().len(), 1);
    assert_eq!(
        store
            .get_thread_any(&id("t4"))
            .await
            .unwrap()
            .unwrap()
            .status,
        "idle"
    );

    // A stale claim on a run, then its holder's, in one batch: the holder's ends it.
    let r5 = id("r5");
    store
        .create_thread(thread(&id("t5")), IfExists::Raise)
        .await
        .unwrap();
    store.create_run(&new_run(&r5, &id("t5"))).await.unwrap();
    let done = finish_batch(&pool, &[(&r5, 2, false), (&r5, 1, true)]).await;
    assert_eq!(done, [false, true]);
    assert!(
        store.get_run_any(&r5).await.unwrap().is_none(),
        "r5 deleted"
    );
    assert_eq!(
        store
            .get_thread_any(&id("t5"))
            .await
            .unwrap()
            .unwrap()
            .status,
        "idle"
    );

    // Every ended run was announced to its watchers, and r2's thread to the claim loops.
    let mut events = HashSet::new();
    let mut runs = HashSet::new();
    while let Ok(Some(n)) =
        tokio::time::timeout(std::time::Duration::from_millis(500), notes.recv()).await
    {
        match n {
            Notification::Events(r) if r.starts_with(&p) => events.insert(r),
            Notification::Runs(t) if t.starts_with(&p) => runs.insert(t),
            _ => false,
        };
    }
    assert_eq!(events, HashSet::from([r1, r2, r3, r4.clone(), r5]));
    assert_eq!(runs, HashSet::from([id("t2")]));
}
