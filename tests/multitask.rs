//! Double-texting: many messages sent at once on one thread, with every multitask strategy,
//! on both backends. Nothing answers 5xx, nothing stalls, every stream ends with exactly one
//! end event, no run fails, a thread never runs two runs at once, and enqueued runs run in
//! the order they were accepted.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::ledger::{ledger_input, ledger_rows_pg, ledger_rows_sqlite, wait_all_final, FAULT};
use common::{Backend, TestServer};
use serde_json::{json, Value};

const AT_ONCE: usize = 16;
const ROUNDS: usize = 4;

/// One chat sent with `strategy`: its HTTP status and, when accepted, its end events.
async fn send(s: &TestServer, thread: &str, strategy: &str, i: usize) -> (u16, Vec<String>) {
    let r = s
        .client
        .post(s.url("/chat"))
        .header("accept", "text/event-stream")
        .json(&json!({"message": format!("What are the capital requirements? ({i})"), "thread_id": thread, "multitask_strategy": strategy}))
        .send()
        .await
        .unwrap();
    let code = r.status().as_u16();
    if code != 200 {
        let err: Value = r.json().await.unwrap_or(Value::Null);
        assert_eq!(code, 409, "only a busy thread may refuse: {err}");
        assert_eq!(err["code"], "thread_busy");
        return (code, Vec::new());
    }
    let events = common::Sse::new(r).all().await;
    let ends = events
        .iter()
        .filter_map(|e| e.data["type"].as_str())
        .filter(|t| matches!(*t, "response" | "interrupt" | "error" | "cancelled"))
        .map(str::to_string)
        .collect();
    (code, ends)
}

async fn double_text(b: Backend) {
    let s = TestServer::start(b).await;
    for strategy in ["reject", "interrupt", "rollback", "enqueue"] {
        let started = Instant::now();
        let t = s.new_thread().await;
        let mut accepted = 0;
        for round in 0..ROUNDS {
            let sends = (0..AT_ONCE).map(|i| send(&s, &t, strategy, round * AT_ONCE + i));
            let results = tokio::time::timeout(
                Duration::from_secs(60),
                futures_util::future::join_all(sends),
            )
            .await
            .unwrap_or_else(|_| panic!("{strategy}: a round stalled"));
            for (code, ends) in results {
                if code == 200 {
                    accepted += 1;
                    assert_eq!(
                        ends.len(),
                        1,
                        "{strategy}: one end event per stream: {ends:?}"
                    );
                    let ok = match strategy {
                        "interrupt" | "rollback" => ends[0] == "response" || ends[0] == "cancelled",
                        _ => ends[0] == "response",
                    };
                    assert!(ok, "{strategy}: {ends:?}");
                }
            }
        }
        assert!(
            accepted >= ROUNDS,
            "{strategy}: each round accepted one at least"
        );
        // Every run ended, none failed, and the thread is consistent.
        let (_, runs) = s.get_json(&format!("/threads/{t}/runs?limit=1000")).await;
        let runs = runs.as_array().unwrap();
        for r in runs {
            let st = r["status"].as_str().unwrap();
            assert!(
                matches!(st, "success" | "interrupted"),
                "{strategy}: run {} ended {st}",
                r["run_id"]
            );
        }
        if strategy == "enqueue" {
            assert_eq!(runs.len(), ROUNDS * AT_ONCE, "every enqueued message ran");
            assert!(runs.iter().all(|r| r["status"] == "success"));
        }
        let (_, h) = s.get_json(&format!("/chat/history/{t}")).await;
        let msgs = h["messages"].as_array().unwrap();
        let ids: std::collections::HashSet<&str> =
            msgs.iter().map(|m| m["id"].as_str().unwrap()).collect();
        assert_eq!(ids.len(), msgs.len(), "{strategy}: no message twice");
        let (_, th) = s.get_json(&format!("/threads/{t}")).await;
        assert_eq!(th["status"], "idle", "{strategy}: the thread settled");
        println!(
            "{strategy}: {ROUNDS} rounds of {AT_ONCE} at once, {accepted} accepted, {} runs, in {:?}",
            runs.len(),
            started.elapsed()
        );
    }
}
both_backends!(
    double_texting_with_every_strategy_never_fails_or_stalls,
    double_text
);

/// Enqueued runs of one thread run one at a time, in the order they were accepted.
async fn enqueued_runs_run_one_at_a_time_in_order(b: Backend) {
    let s = TestServer::start_with(b, &[FAULT]).await;
    let t = s.new_thread().await;
    let path = format!("/threads/{t}/runs");
    let posts = (0..12).map(|_| {
        s.post_json(
            &path,
            json!({"assistant_id": "ledger", "input": ledger_input(20), "multitask_strategy": "enqueue"}),
        )
    });
    let created = futures_util::future::join_all(posts).await;
    let mut runs = Vec::new();
    for (code, run) in created {
        assert_eq!(code, 200, "{run}");
        runs.push((t.clone(), run["run_id"].as_str().unwrap().to_string()));
    }
    let statuses = wait_all_final(&s, &runs, Duration::from_secs(60)).await;
    assert!(statuses.iter().all(|st| st == "success"), "{statuses:?}");
    let ledger = match b {
        Backend::Postgres => ledger_rows_pg(&s.pg_pool().await.unwrap()).await,
        Backend::Sqlite => ledger_rows_sqlite(s.sqlite_path().unwrap()).await,
    };
    // Each run's three effects, in time: runs never overlap, and they follow the order
    // the thread accepted them in (newest first in the runs list).
    let (_, listed) = s.get_json(&format!("/threads/{t}/runs?limit=100")).await;
    let order: Vec<String> = listed
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .map(|r| r["run_id"].as_str().unwrap().to_string())
        .collect();
    let pool_rows = ledger_times(&s, b).await;
    let mut spans: Vec<(i64, i64, usize)> = Vec::new();
    for (i, run) in order.iter().enumerate() {
        let times = &pool_rows[run];
        spans.push((
            *times.iter().min().unwrap(),
            *times.iter().max().unwrap(),
            i,
        ));
        assert_eq!(
            ["reserve", "charge", "notify"]
                .iter()
                .filter(|st| ledger.contains_key(&(run.clone(), st.to_string())))
                .count(),
            3
        );
    }
    for w in spans.windows(2) {
        assert!(
            w[0].1 <= w[1].0,
            "run {} started before run {} ended",
            w[1].2,
            w[0].2
        );
    }
}
both_backends!(
    enqueued_runs_run_one_at_a_time_in_order_,
    enqueued_runs_run_one_at_a_time_in_order
);

/// The ledger's effect times per run.
async fn ledger_times(s: &TestServer, b: Backend) -> HashMap<String, Vec<i64>> {
    let rows: Vec<(String, i64)> = match b {
        Backend::Postgres => sqlx::query_as("SELECT run_id, at_ms FROM ledger_effects")
            .fetch_all(&s.pg_pool().await.unwrap())
            .await
            .unwrap(),
        Backend::Sqlite => {
            let pool = sqlx::SqlitePool::connect(&format!(
                "sqlite://{}",
                s.sqlite_path().unwrap().display()
            ))
            .await
            .unwrap();
            sqlx::query_as("SELECT run_id, at_ms FROM ledger_effects")
                .fetch_all(&pool)
                .await
                .unwrap()
        }
    };
    let mut out: HashMap<String, Vec<i64>> = HashMap::new();
    for (run, at) in rows {
        out.entry(run).or_default().push(at);
    }
    out
}
