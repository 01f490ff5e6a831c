//! What one request may make a server do at once: runs per batch, tasks planned per step,
//! tasks of a step running at once, and a fan-out of thousands beside another thread's
//! chat turns.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::{Backend, TestServer};
use serde_json::{json, Value};

/// `n` LangGraph `Send`s to the `jokes` graph's `generate_joke`.
fn sends(n: usize) -> Value {
    (0..n)
        .map(|i| json!({"node": "generate_joke", "input": {"subject": format!("s{i}")}}))
        .collect()
}

async fn thread_count(s: &TestServer) -> usize {
    let (code, threads) = s.post_json("/threads/search", json!({"limit": 1000})).await;
    assert_eq!(code, 200, "{threads}");
    threads.as_array().unwrap().len()
}

/// The run's status once it is final, and the values it ended with (its join).
async fn joined(s: &TestServer, thread: &str, run: &str) -> (String, Value) {
    let (code, values) = s
        .get_json(&format!("/threads/{thread}/runs/{run}/join"))
        .await;
    assert_eq!(code, 200, "{values}");
    let (_, run) = s.get_json(&format!("/threads/{thread}/runs/{run}")).await;
    (run["status"].as_str().unwrap().to_string(), values)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_over_the_limit_is_refused_whole_and_one_within_it_runs() {
    let s = TestServer::start_with(Backend::Sqlite, &[("PALGRAPH_MAX_BATCH_RUNS", "3")]).await;
    let run = json!({"assistant_id": "jokes", "input": {"topic": "cats"}, "on_completion": "keep"});
    let before = thread_count(&s).await;
    let (code, body) = s
        .post_json("/runs/batch", json!([run, run, run, run]))
        .await;
    assert_eq!(code, 422, "{body}");
    assert!(
        body["detail"].as_str().unwrap().contains("at most 3"),
        "{body}"
    );
    assert_eq!(thread_count(&s).await, before, "no run of it was created");

    let (code, runs) = s.post_json("/runs/batch", json!([run, run, run])).await;
    assert_eq!(code, 200, "{runs}");
    assert_eq!(runs.as_array().unwrap().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_over_the_step_limit_are_refused_from_a_command_and_fail_a_node() {
    let s = TestServer::start_with(Backend::Sqlite, &[("PALGRAPH_MAX_SENDS_PER_STEP", "2")]).await;
    let t = s.new_thread().await;
    let (code, body) = s
        .post_json(
            &format!("/threads/{t}/runs/wait"),
            json!({"assistant_id": "jokes", "command": {"goto": sends(3)}}),
        )
        .await;
    assert_eq!(code, 422, "{body}");
    assert!(
        body.to_string().contains("PALGRAPH_MAX_SENDS_PER_STEP"),
        "{body}"
    );
    let (_, state) = s.get_json(&format!("/threads/{t}/state")).await;
    assert!(
        state["checkpoint"]["checkpoint_id"].is_null() || state["values"] == json!({}),
        "a refused command changes nothing: {state}"
    );

    // Within the limit the tasks run.
    let (code, out) = s
        .post_json(
            &format!("/threads/{t}/runs/wait"),
            json!({"assistant_id": "jokes", "command": {"goto": sends(2)}}),
        )
        .await;
    assert_eq!(code, 200, "{out}");
    assert_eq!(out["jokes"].as_array().map(Vec::len), Some(2), "{out}");

    // `generate_topics` sends three subjects: over the limit, its run fails.
    let t = s.new_thread().await;
    let (code, run) = s
        .post_json(
            &format!("/threads/{t}/runs"),
            json!({"assistant_id": "jokes", "input": {"topic": "cats"}}),
        )
        .await;
    assert_eq!(code, 200, "{run}");
    let (status, _) = joined(&s, &t, run["run_id"].as_str().unwrap()).await;
    assert_eq!(status, "error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_max_concurrency_is_a_positive_integer() {
    let s = TestServer::start(Backend::Sqlite).await;
    for bad in [json!(0), json!("x"), json!(-1)] {
        let (code, body) = s
            .post_json(
                "/runs/wait",
                json!({"assistant_id": "jokes", "input": {"topic": "x"},
                       "config": {"max_concurrency": bad}}),
            )
            .await;
        assert_eq!(code, 422, "{bad}: {body}");
    }
    let (code, out) = s
        .post_json(
            "/runs/wait",
            json!({"assistant_id": "jokes", "input": {"topic": "owls"},
                   "config": {"max_concurrency": 1}}),
        )
        .await;
    assert_eq!(code, 200, "{out}");
    assert_eq!(out["jokes"].as_array().map(Vec::len), Some(3), "{out}");
}

/// The time from a chat request to its first status event.
async fn first_status(s: &TestServer) -> Duration {
    let started = Instant::now();
    let mut sse = s
        .sse(
            s.client
                .post(s.url("/chat"))
                .json(&json!({"message": "What is the retention period for customer records?"})),
        )
        .await;
    let mut first = None;
    while let Some(e) = sse.next().await {
        let kind = e.data["type"].as_str().unwrap_or("").to_string();
        if kind == "status" && first.is_none() {
            first = Some(started.elapsed());
        }
        if ["response", "interrupt", "error", "cancelled"].contains(&kind.as_str()) {
            break;
        }
    }
    first.expect("the turn streamed a status event")
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A fan-out of thousands of tasks on one thread does not starve another thread's chat
/// turns: they keep being served while it runs (the fan-out holds a bounded number of tasks
/// and of storage writes at once), and every task of it runs once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fan_out_of_thousands_does_not_starve_another_threads_turns() {
    const ITEMS: usize = 4000;
    let s = TestServer::start_with(
        Backend::Sqlite,
        &[
            ("PALGRAPH_MAX_SENDS_PER_STEP", "20000"),
            ("PALGRAPH_RATE_PER_SEC", "0"),
        ],
    )
    .await;
    for _ in 0..3 {
        first_status(&s).await;
    }
    let mut idle = Vec::new();
    for _ in 0..9 {
        idle.push(first_status(&s).await);
    }
    let t = s.new_thread().await;
    let (code, run) = s
        .post_json(
            &format!("/threads/{t}/runs"),
            json!({"assistant_id": "jokes", "command": {"goto": sends(ITEMS)}}),
        )
        .await;
    assert_eq!(code, 200, "{run}");
    let run_id = run["run_id"].as_str().unwrap().to_string();
    // Turns while the fan-out is running (counted only while it still is).
    let mut busy = Vec::new();
    loop {
        let took = first_status(&s).await;
        let (_, r) = s.get_json(&format!("/threads/{t}/runs/{run_id}")).await;
        match r["status"].as_str() {
            Some("running") => busy.push(took),
            Some("pending") => {}
            _ => break,
        }
    }
    let (status, values) = joined(&s, &t, &run_id).await;
    assert_eq!(status, "success");
    assert_eq!(
        values["jokes"].as_array().map(Vec::len),
        Some(ITEMS),
        "every task ran once"
    );
    assert!(busy.len() >= 3, "turns made during the fan-out: {busy:?}");
    let (idle, busy) = (median(idle), median(busy));
    assert!(
        busy < Duration::from_secs(2),
        "a turn's first status took {busy:?} during the fan-out, {idle:?} idle"
    );
}
