//! Threads' time to live on the real server, on SQLite and Postgres: a thread with a `ttl`
//! is deleted (or pruned to its latest checkpoint) once it has been left alone that long,
//! never while a run is active; threads without one stay; a bad `ttl` is refused with a
//! clear error and changes nothing.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::{Backend, TestServer};
use serde_json::{json, Value};

fn human(text: &str) -> Value {
    json!({"messages": [{"type": "human", "content": text}]})
}

async fn thread_with(s: &TestServer, body: Value) -> String {
    let (status, t) = s.post_json("/threads", body).await;
    assert_eq!(status, 200, "{t}");
    t["thread_id"].as_str().unwrap().to_string()
}

async fn turn(s: &TestServer, thread: &str, body: Value) -> Value {
    let (status, out) = s
        .post_json(&format!("/threads/{thread}/runs/wait"), body)
        .await;
    assert_eq!(status, 200, "{out}");
    out
}

async fn history_len(s: &TestServer, thread: &str) -> usize {
    let (status, h) = s
        .post_json(&format!("/threads/{thread}/history"), json!({"limit": 100}))
        .await;
    assert_eq!(status, 200, "{h}");
    h.as_array().unwrap().len()
}

/// Waits until `GET /threads/{id}` answers `status`.
async fn until_thread(s: &TestServer, thread: &str, status: u16) {
    let started = Instant::now();
    loop {
        let (now, body) = s.get_json(&format!("/threads/{thread}")).await;
        if now == status {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "thread {thread} still answers {now} ({body}), not {status}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn expired_threads_are_swept(b: Backend) {
    let s = TestServer::start_with(b, &[("PALGRAPH_THREAD_TTL_SWEEP_SECS", "1")]).await;
    // 0.02 minutes: 1.2 s after the thread's last change.
    let short = json!({"strategy": "delete", "ttl": 0.02});
    let deleted = thread_with(&s, json!({"ttl": short})).await;
    turn(
        &s,
        &deleted,
        json!({"assistant_id": "fanout", "input": human("first")}),
    )
    .await;
    let kept = s.new_thread().await;
    turn(
        &s,
        &kept,
        json!({"assistant_id": "fanout", "input": human("kept")}),
    )
    .await;
    let long = thread_with(&s, json!({"ttl": 60})).await;
    let patched = s.new_thread().await;
    let (status, body) = s
        .client
        .patch(s.url(&format!("/threads/{patched}")))
        .json(&json!({"metadata": {"k": "v"}, "ttl": 0.02}))
        .send()
        .await
        .map(|r| (r.status().as_u16(), r))
        .unwrap();
    assert_eq!(status, 200, "{:?}", body.text().await);
    let pruned = thread_with(&s, json!({"ttl": {"strategy": "keep_latest", "ttl": 0.02}})).await;
    for text in ["one", "two"] {
        turn(
            &s,
            &pruned,
            json!({"assistant_id": "fanout", "input": human(text)}),
        )
        .await;
    }
    let (_, before) = s.get_json(&format!("/threads/{pruned}/state")).await;
    assert!(history_len(&s, &pruned).await > 1);

    until_thread(&s, &deleted, 404).await;
    until_thread(&s, &patched, 404).await;
    // The deleted thread's state and runs went with it.
    for path in [
        format!("/threads/{deleted}/state"),
        format!("/threads/{deleted}/runs"),
    ] {
        assert_eq!(s.get_json(&path).await.0, 404, "{path}");
    }
    // A keep_latest thread stays with only its latest checkpoint, its state unchanged.
    let started = Instant::now();
    while history_len(&s, &pruned).await > 1 {
        assert!(started.elapsed() < Duration::from_secs(30), "not pruned");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, after) = s.get_json(&format!("/threads/{pruned}/state")).await;
    assert_eq!(status, 200, "{after}");
    assert_eq!(after["values"], before["values"]);
    assert_eq!(after["checkpoint"], before["checkpoint"]);
    // Threads without a time to live, or with a long one, stay.
    for t in [&kept, &long] {
        assert_eq!(s.get_json(&format!("/threads/{t}")).await.0, 200, "{t}");
    }
    let (_, state) = s.get_json(&format!("/threads/{kept}/state")).await;
    assert!(state["values"]["messages"]
        .as_array()
        .is_some_and(|m| !m.is_empty()));
    // Swept again only after it changes: a new turn on the pruned thread re-arms it.
    turn(
        &s,
        &pruned,
        json!({"assistant_id": "fanout", "input": human("three")}),
    )
    .await;
    assert!(history_len(&s, &pruned).await > 1);
    let started = Instant::now();
    while history_len(&s, &pruned).await > 1 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "not pruned again"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(s.get_json(&format!("/threads/{pruned}")).await.0, 200);
}
both_backends!(expired_threads_are_swept_, expired_threads_are_swept);

/// A thread whose time runs out while a run is active is left alone until the run ends:
/// the run finishes, and the thread goes after it.
async fn a_busy_thread_outlives_its_ttl(b: Backend) {
    let s = TestServer::start_with(b, &[("PALGRAPH_THREAD_TTL_SWEEP_SECS", "1")]).await;
    // 0.6 s of time to live; the run takes about 4 s (40 words, 100 ms each).
    let t = thread_with(&s, json!({"ttl": 0.01})).await;
    let out = turn(
        &s,
        &t,
        json!({"assistant_id": "streaming", "input": {"messages": [{"type": "human", "content": "go"}], "delay_ms": 100, "words": 40}}),
    )
    .await;
    let answer = out["messages"].as_array().and_then(|m| m.last()).cloned();
    assert_eq!(
        answer.as_ref().map(|m| m["type"].clone()),
        Some(json!("ai")),
        "the run finished: {out}"
    );
    let (status, runs) = s.get_json(&format!("/threads/{t}/runs")).await;
    assert_eq!(
        status, 200,
        "the thread outlived its ttl while busy: {runs}"
    );
    assert_eq!(runs[0]["status"], "success", "{runs}");
    until_thread(&s, &t, 404).await;
}
both_backends!(
    a_busy_thread_outlives_its_ttl_,
    a_busy_thread_outlives_its_ttl
);

async fn a_bad_ttl_changes_nothing(b: Backend) {
    let s = TestServer::start(b).await;
    let id = "0191e2a4-0000-7000-8000-00000000a11d";
    for bad in [
        json!(-5),
        json!(0),
        json!("an hour"),
        json!({"strategy": "archive", "ttl": 5}),
        json!({"strategy": "delete"}),
        json!({"ttl": 5, "when": "later"}),
    ] {
        let (status, body) = s
            .post_json("/threads", json!({"thread_id": id, "ttl": bad}))
            .await;
        assert_eq!(status, 422, "{bad}: {body}");
        assert!(
            body["detail"].as_str().is_some_and(|d| d.contains("ttl")),
            "{body}"
        );
        assert_eq!(s.get_json(&format!("/threads/{id}")).await.0, 404, "{bad}");
    }
    let t = s.new_thread().await;
    let (_, before) = s.get_json(&format!("/threads/{t}")).await;
    let r = s
        .client
        .patch(s.url(&format!("/threads/{t}")))
        .json(&json!({"metadata": {"changed": true}, "ttl": {"ttl": -1}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 422);
    let (_, after) = s.get_json(&format!("/threads/{t}")).await;
    assert_eq!(after, before, "a refused patch changed the thread");
}
both_backends!(a_bad_ttl_changes_nothing_, a_bad_ttl_changes_nothing);
