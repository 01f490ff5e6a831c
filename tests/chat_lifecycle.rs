//! The chat contract's lifecycle rules (../shared/DESIGN.md, "Chat contract: exact shapes")
//! through the real server, on SQLite and Postgres: the cancel endpoint answers once the run
//! has stopped, so the next message is always accepted; a failed answer keeps what it had
//! written, with the contract's metadata, in history, in the reconnect snapshot and for the
//! next turn; ids are checked the same way everywhere (malformed: 422, unknown or someone
//! else's: 404).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::{Backend, Sse, SseEvent, TestServer};
use serde_json::{json, Value};

const PACED: &[(&str, &str)] = &[("PALASSIST_OFFLINE_PACE_MS", "25")];

async fn chat(s: &TestServer, body: Value) -> Sse {
    s.sse(s.client.post(s.url("/chat")).json(&body)).await
}

fn header(sse: &Sse, name: &str) -> String {
    sse.headers
        .get(name)
        .unwrap_or_else(|| panic!("no {name} header"))
        .to_str()
        .unwrap()
        .to_string()
}

fn tokens(events: &[SseEvent]) -> String {
    let mut text = String::new();
    for e in events.iter().filter(|e| e.data["type"] == "token") {
        if e.data["reset"] == true {
            text.clear();
        }
        text.push_str(e.data["content"].as_str().unwrap());
    }
    text
}

/// The one terminal event, which is the last event.
fn terminal(events: &[SseEvent]) -> &Value {
    let ends: Vec<&SseEvent> = events
        .iter()
        .filter(|e| {
            ["response", "interrupt", "error", "cancelled"]
                .contains(&e.data["type"].as_str().unwrap_or(""))
        })
        .collect();
    assert_eq!(ends.len(), 1, "exactly one terminal event");
    assert!(std::ptr::eq(ends[0], events.last().unwrap()));
    &ends[0].data
}

/// Reads events until `n` tokens have arrived.
async fn until_tokens(sse: &mut Sse, n: usize) -> Vec<SseEvent> {
    let mut events = Vec::new();
    while events
        .iter()
        .filter(|e: &&SseEvent| e.data["type"] == "token")
        .count()
        < n
    {
        events.push(
            sse.next()
                .await
                .expect("the stream ended before the tokens"),
        );
    }
    events
}

async fn cancel(s: &TestServer, t: &str) -> (u16, Value) {
    s.post_json(&format!("/threads/{t}/cancel"), json!({}))
        .await
}

async fn run_status(s: &TestServer, t: &str, run: &str) -> String {
    let (code, r) = s.get_json(&format!("/threads/{t}/runs/{run}")).await;
    assert_eq!(code, 200, "{r}");
    r["status"].as_str().unwrap().to_string()
}

async fn cancel_answers_once_the_run_has_stopped(b: Backend) {
    let s = TestServer::start_with(b, PACED).await;
    let question = "What are the capital requirements?";
    let mut thread: Option<String> = None;
    for round in 0..3 {
        let mut body = json!({"message": question});
        if let Some(t) = &thread {
            body["thread_id"] = t.clone().into();
        }
        let mut sse = chat(&s, body).await;
        let (t, run) = (header(&sse, "x-thread-id"), header(&sse, "x-run-id"));
        thread = Some(t.clone());
        let mut events = until_tokens(&mut sse, 2).await;
        let asked = Instant::now();
        let (code, answer) = cancel(&s, &t).await;
        let took = asked.elapsed();
        assert_eq!(code, 200, "round {round}: {answer}");
        assert_eq!(answer["stopped"], true, "{answer}");
        assert_eq!(answer["cancelled"], json!([run]), "{answer}");
        // Answered after the run stopped: its end is recorded already.
        assert_eq!(
            run_status(&s, &t, &run).await,
            "interrupted",
            "round {round}"
        );
        events.extend(sse.all().await);
        let end = terminal(&events);
        assert_eq!(end["type"], "cancelled");
        assert_eq!(end["reason"], "user_cancelled");
        assert!(took < Duration::from_secs(10), "cancel took {took:?}");
        // The next message, at once, is accepted and answered.
        let mut next = chat(&s, json!({"message": question, "thread_id": t})).await;
        let events = next.all().await;
        assert_eq!(terminal(&events)["type"], "response", "round {round}");
    }
    let t = thread.unwrap();
    // Nothing active: still 200, nothing cancelled.
    let (code, answer) = cancel(&s, &t).await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(
        answer,
        json!({"thread_id": t, "cancelled": [], "stopped": true})
    );
    // Unknown, malformed, someone else's.
    let (code, e) = cancel(&s, &uuid::Uuid::new_v4().to_string()).await;
    assert_eq!(code, 404, "{e}");
    assert_eq!(e["code"], "not_found");
    let (code, e) = cancel(&s, "not-a-uuid").await;
    assert_eq!(code, 422, "{e}");
    assert_eq!(e["code"], "invalid");
}
both_backends!(
    cancel_answers_once_the_run_has_stopped_,
    cancel_answers_once_the_run_has_stopped
);

/// A thread of the `streaming` graph (a chat graph through the default messages adapter):
/// its answers can be made to fail after some words.
async fn streaming_thread(s: &TestServer) -> String {
    let (code, t) = s
        .post_json("/threads", json!({"metadata": {"graph_id": "streaming"}}))
        .await;
    assert_eq!(code, 200, "{t}");
    t["thread_id"].as_str().unwrap().to_string()
}

fn last_message(history: &Value) -> Value {
    history["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone()
}

async fn a_failed_answer_keeps_its_partial_text_everywhere(b: Backend) {
    let s = TestServer::start(b).await;
    let t = streaming_thread(&s).await;
    let mut sse = chat(
        &s,
        json!({
            "message": "alpha beta gamma delta",
            "thread_id": t,
            "words": 8,
            "delay_ms": 5,
            "fail_after": 3,
            "client_turn_id": "turn-1",
        }),
    )
    .await;
    let run = header(&sse, "x-run-id");
    let events = sse.all().await;
    let end = terminal(&events);
    assert_eq!(end["type"], "error", "{end}");
    let streamed = tokens(&events);
    assert_eq!(streamed, "alpha beta gamma");
    // History: the question, then the partial answer with the contract's metadata.
    let (code, h) = s.get_json(&format!("/chat/history/{t}")).await;
    assert_eq!(code, 200, "{h}");
    let messages = h["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{h}");
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[0]["content"], "alpha beta gamma delta");
    let partial = last_message(&h);
    assert_eq!(partial["role"], "assistant");
    assert_eq!(partial["content"], streamed);
    let meta = &partial["metadata"];
    assert_eq!(meta["interrupted"], true, "{meta}");
    assert_eq!(meta["interrupted_reason"], "failed", "{meta}");
    assert_eq!(meta["stream_run_id"], run, "{meta}");
    assert_eq!(meta["client_turn_id"], "turn-1", "{meta}");
    assert_eq!(meta["finished_reason"], "error", "{meta}");
    // After a reload: the snapshot carries the partial text.
    let mut again = s
        .sse(s.client.get(s.url(&format!("/chat/stream/{t}"))))
        .await;
    let snap = again.all().await;
    assert_eq!(snap.len(), 1);
    let snap = &snap[0].data;
    assert_eq!(snap["type"], "snapshot");
    assert_eq!(snap["status"], "error", "{snap}");
    assert_eq!(snap["partial_text"], streamed, "{snap}");
    assert_eq!(snap["message_id"], partial["id"], "{snap}");
    assert_eq!(snap["interrupted_reason"], "failed", "{snap}");
    // The next turn follows the failed one: the conversation keeps it.
    let events = chat(
        &s,
        json!({"message": "one two", "thread_id": t, "words": 2, "delay_ms": 0}),
    )
    .await
    .all()
    .await;
    assert_eq!(terminal(&events)["type"], "response");
    let (_, h) = s.get_json(&format!("/chat/history/{t}")).await;
    let contents: Vec<&str> = h["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        contents,
        vec![
            "alpha beta gamma delta",
            "alpha beta gamma",
            "one two",
            "one two"
        ]
    );
    // A failure before anything was streamed keeps nothing of its turn.
    let events = chat(
        &s,
        json!({"message": "x", "thread_id": t, "words": 3, "delay_ms": 0, "fail_after": 0}),
    )
    .await
    .all()
    .await;
    assert_eq!(terminal(&events)["type"], "error");
    let events = chat(
        &s,
        json!({"message": "last", "thread_id": t, "words": 1, "delay_ms": 0}),
    )
    .await
    .all()
    .await;
    assert_eq!(terminal(&events)["type"], "response");
    let (_, h) = s.get_json(&format!("/chat/history/{t}")).await;
    assert_eq!(h["messages"].as_array().unwrap().len(), 6, "{h}");
    assert_eq!(last_message(&h)["content"], "last");
}
both_backends!(
    a_failed_answer_keeps_its_partial_text_everywhere_,
    a_failed_answer_keeps_its_partial_text_everywhere
);

async fn ids_are_checked_the_same_way_everywhere(b: Backend) {
    let s = TestServer::start(b).await;
    let unknown = uuid::Uuid::new_v4().to_string();
    for path in [
        "/chat/history/not-a-uuid".to_string(),
        "/chat/stream/not-a-uuid".to_string(),
        "/threads/not-a-uuid".to_string(),
        "/threads/not-a-uuid/state".to_string(),
    ] {
        let (code, e) = s.get_json(&path).await;
        assert_eq!(code, 422, "{path}: {e}");
        assert_eq!(e["code"], "invalid", "{path}: {e}");
        // The official server's words, whichever id it is.
        assert!(
            e["detail"].as_str().unwrap().contains("must be a UUID"),
            "{e}"
        );
    }
    for path in [
        format!("/chat/history/{unknown}"),
        format!("/threads/{unknown}"),
    ] {
        let (code, e) = s.get_json(&path).await;
        assert_eq!(code, 404, "{path}: {e}");
        assert_eq!(e["code"], "not_found", "{path}: {e}");
    }
    let (code, e) = s
        .post_json(
            "/chat/resume",
            json!({"thread_id": "not-a-uuid", "resume_value": {"type": "cancel", "value": null}}),
        )
        .await;
    assert_eq!(code, 422, "{e}");
    let (code, e) = s
        .post_json("/chat", json!({"message": "hi", "thread_id": "not-a-uuid"}))
        .await;
    assert_eq!(code, 422, "{e}");
}
both_backends!(
    ids_are_checked_the_same_way_everywhere_,
    ids_are_checked_the_same_way_everywhere
);

/// Waits until `run` is over.
async fn ended(s: &TestServer, t: &str, run: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status = run_status(s, t, run).await;
        if !["pending", "running"].contains(&status.as_str()) {
            return status;
        }
        assert!(Instant::now() < deadline, "run {run} did not end");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn superseded_and_disconnected_answers_keep_their_partial_text(b: Backend) {
    let s = TestServer::start_with(b, PACED).await;
    let question = "What are the capital requirements?";
    // Superseded: a second message with the interrupt strategy stops the first answer.
    let mut first = chat(&s, json!({"message": question, "client_turn_id": "first"})).await;
    let (t, run) = (header(&first, "x-thread-id"), header(&first, "x-run-id"));
    let mut seen = until_tokens(&mut first, 2).await;
    let second = chat(
        &s,
        json!({"message": "And the leverage ratio?", "thread_id": t, "multitask_strategy": "interrupt"}),
    )
    .await;
    seen.extend(first.all().await);
    let end = terminal(&seen);
    assert_eq!(end["type"], "cancelled");
    assert_eq!(end["reason"], "superseded");
    let mut second = second;
    assert_eq!(terminal(&second.all().await)["type"], "response");
    let (_, h) = s.get_json(&format!("/chat/history/{t}")).await;
    let stopped = h["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metadata"]["stream_run_id"] == run.as_str())
        .unwrap_or_else(|| panic!("the superseded answer is kept: {h}"))
        .clone();
    assert_eq!(stopped["content"], tokens(&seen));
    assert_eq!(stopped["metadata"]["interrupted"], true);
    assert_eq!(stopped["metadata"]["interrupted_reason"], "superseded");
    assert_eq!(stopped["metadata"]["client_turn_id"], "first");

    // Disconnected: the client asked for its run to stop when it leaves.
    let mut sse = chat(
        &s,
        json!({"message": question, "thread_id": t, "on_disconnect": "cancel"}),
    )
    .await;
    let run = header(&sse, "x-run-id");
    let seen = until_tokens(&mut sse, 2).await;
    drop(sse);
    assert_eq!(ended(&s, &t, &run).await, "interrupted");
    let (_, h) = s.get_json(&format!("/chat/history/{t}")).await;
    let last = h["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["metadata"]["stream_run_id"], run.as_str(), "{h}");
    assert_eq!(
        last["metadata"]["interrupted_reason"], "disconnect",
        "{last}"
    );
    let kept = last["content"].as_str().unwrap();
    assert!(
        kept.starts_with(&tokens(&seen)),
        "the kept text begins with what the client saw: {kept:?}"
    );
}
both_backends!(
    superseded_and_disconnected_answers_keep_their_partial_text_,
    superseded_and_disconnected_answers_keep_their_partial_text
);
