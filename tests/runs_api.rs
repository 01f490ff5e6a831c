//! Runs through the real server (LangGraph API shapes), on SQLite and Postgres: streaming,
//! interrupts, background runs surviving disconnects, watchers, Last-Event-ID, cancel,
//! multitask strategies, ownership, bad input.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

#[path = "runs_api/access.rs"]
mod access;
use crate::common;

use std::time::Duration;

use common::{Backend, SseEvent, TestServer};
use serde_json::{json, Value};

fn slow(words: usize, delay_ms: u64) -> Value {
    json!({"messages": [{"type": "human", "content": "alpha beta gamma"}], "delay_ms": delay_ms, "words": words})
}

async fn stream_run(s: &TestServer, thread: &str, body: Value) -> common::Sse {
    s.sse(
        s.client
            .post(s.url(&format!("/threads/{thread}/runs/stream")))
            .json(&body),
    )
    .await
}

fn names(events: &[SseEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| e.event.clone().unwrap_or_default())
        .collect()
}

async fn wait_status(s: &TestServer, thread: &str, run: &str, want: &str) -> Value {
    for _ in 0..400 {
        let (_, r) = s.get_json(&format!("/threads/{thread}/runs/{run}")).await;
        if r["status"] == want {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("run {run} never reached {want}");
}

/// Waits until a run started with `stream_mode: messages-tuple` has streamed some text.
async fn wait_streaming(s: &TestServer, thread: &str, run: &str) {
    let mut watch = s
        .sse(
            s.client
                .get(s.url(&format!("/threads/{thread}/runs/{run}/stream")))
                .header("last-event-id", "-1"),
        )
        .await;
    while watch
        .next()
        .await
        .expect("the run streams")
        .event
        .as_deref()
        != Some("messages")
    {}
}

async fn streams_events_in_order(b: Backend) {
    let s = TestServer::start(b).await;
    let t = s.new_thread().await;
    // `POST /threads` without an id makes a time-ordered one (UUIDv7), later ones sorting later.
    assert_eq!(
        uuid::Uuid::parse_str(&t).unwrap().get_version_num(),
        7,
        "{t}"
    );
    let later = s.new_thread().await;
    assert!(later > t, "{later} sorts before {t}");
    let mut sse = stream_run(
        &s,
        &t,
        json!({"assistant_id": "streaming", "input": slow(6, 0), "stream_mode": ["updates", "messages-tuple", "custom", "values"]}),
    )
    .await;
    assert!(sse.headers.get("content-location").is_some());
    assert_eq!(sse.headers.get("x-accel-buffering").unwrap(), "no");
    let events = sse.all().await;
    let n = names(&events);
    assert_eq!(n[0], "metadata", "{n:?}");
    assert_eq!(n.iter().filter(|x| *x == "messages").count(), 6);
    let updates: Vec<&SseEvent> = events
        .iter()
        .filter(|e| e.event.as_deref() == Some("updates"))
        .collect();
    assert_eq!(updates.len(), 1);
    assert_eq!(
        updates[0].data["write"]["messages"][0]["content"],
        "alpha beta gamma alpha beta gamma"
    );
    let last_values = events
        .iter()
        .rev()
        .find(|e| e.event.as_deref() == Some("values"))
        .unwrap();
    assert_eq!(last_values.data["messages"].as_array().unwrap().len(), 2);
    let ids: Vec<u64> = events
        .iter()
        .filter_map(|e| e.id.as_ref()?.parse().ok())
        .collect();
    assert!(
        ids.windows(2).all(|w| w[0] <= w[1]),
        "ids increase: {ids:?}"
    );
    let first_message = events
        .iter()
        .find(|e| e.event.as_deref() == Some("messages"))
        .unwrap();
    assert_eq!(first_message.data[0]["type"], "AIMessageChunk");
    assert_eq!(first_message.data[1]["langgraph_node"], "write");
}
both_backends!(streams_events_in_order_, streams_events_in_order);

async fn interrupt_then_resume_with_command(b: Backend) {
    let s = TestServer::start(b).await;
    let t = s.new_thread().await;
    let events = stream_run(&s, &t, json!({"assistant_id": "approval", "input": {"messages": [{"type": "human", "content": "the launch"}]}}))
        .await
        .all()
        .await;
    let last = events.last().unwrap();
    assert_eq!(last.event.as_deref(), Some("values"));
    let intr = &last.data["__interrupt__"][0];
    assert_eq!(intr["value"]["question"], "Publish this draft?");
    let (_, thread) = s.get_json(&format!("/threads/{t}")).await;
    assert_eq!(thread["status"], "interrupted");
    let (_, st) = s.get_json(&format!("/threads/{t}/state")).await;
    assert_eq!(st["next"], json!(["review"]));
    assert_eq!(st["tasks"][0]["interrupts"][0]["id"], intr["id"]);
    // Resume by interrupt id.
    let id = intr["id"].as_str().unwrap();
    let (code, values) = s
        .post_json(
            &format!("/threads/{t}/runs/wait"),
            json!({"assistant_id": "approval", "command": {"resume": {id: {"approve": true}}}}),
        )
        .await;
    assert_eq!(code, 200, "{values}");
    assert_eq!(
        values["messages"][1]["content"],
        "Published: Draft 1 about \"the launch\"."
    );
    let (_, thread) = s.get_json(&format!("/threads/{t}")).await;
    assert_eq!(thread["status"], "idle");
    // Nothing left to resume: refused, nothing changes.
    let (code, err) = s
        .post_json(
            &format!("/threads/{t}/runs"),
            json!({"assistant_id": "approval", "command": {"resume": true}}),
        )
        .await;
    assert_eq!(code, 400, "{err}");
    assert!(err["detail"]
        .as_str()
        .unwrap()
        .contains("no pending interrupt"));
}
both_backends!(
    interrupt_then_resume_with_command_,
    interrupt_then_resume_with_command
);

async fn breakpoints_stop_the_run_and_a_null_input_continues(b: Backend) {
    let s = TestServer::start(b).await;
    let t = s.new_thread().await;
    let input = json!({"messages": [{"type": "human", "content": "the launch"}]});
    // Unknown node names are refused before a run exists.
    let (code, err) = s
        .post_json(
            &format!("/threads/{t}/runs"),
            json!({"assistant_id": "approval", "input": input, "interrupt_before": ["nope"]}),
        )
        .await;
    assert_eq!(code, 422, "{err}");
    assert!(err["detail"].as_str().unwrap().contains("nope"), "{err}");
    // Stop before `review` (which would raise its own interrupt).
    let events = stream_run(
        &s,
        &t,
        json!({"assistant_id": "approval", "input": input, "interrupt_before": ["review"], "stream_mode": ["updates"]}),
    )
    .await
    .all()
    .await;
    let last = events.last().unwrap();
    assert_eq!(last.event.as_deref(), Some("updates"), "{events:?}");
    assert_eq!(last.data, json!({"__interrupt__": []}));
    let (_, thread) = s.get_json(&format!("/threads/{t}")).await;
    assert_eq!(thread["status"], "interrupted");
    let (_, st) = s.get_json(&format!("/threads/{t}/state")).await;
    assert_eq!(st["next"], json!(["review"]), "{st}");
    assert_eq!(st["tasks"][0]["interrupts"], json!([]));
    let (_, runs) = s.get_json(&format!("/threads/{t}/runs")).await;
    assert_eq!(
        runs[0]["status"], "success",
        "a run stopped at a breakpoint did its work, as on the official server: {runs}"
    );
    // Edit the state in between, then continue with a null input: `review` runs now and
    // raises its own interrupt (the breakpoint does not fire again).
    let (code, upd) = s
        .post_json(
            &format!("/threads/{t}/state"),
            json!({"values": {"messages": [{"type": "human", "content": "edited"}]}}),
        )
        .await;
    assert_eq!(code, 200, "{upd}");
    let (_, st) = s.get_json(&format!("/threads/{t}/state")).await;
    assert_eq!(st["next"], json!(["review"]), "{st}");
    let (code, values) = s
        .post_json(
            &format!("/threads/{t}/runs/wait"),
            json!({"assistant_id": "approval", "input": null, "interrupt_after": ["draft"]}),
        )
        .await;
    assert_eq!(code, 200, "{values}");
    assert_eq!(
        values["__interrupt__"][0]["value"]["question"], "Publish this draft?",
        "{values}"
    );
    let (_, st) = s.get_json(&format!("/threads/{t}/state")).await;
    assert_eq!(st["next"], json!(["review"]));
    assert_eq!(st["values"]["messages"][1]["content"], "edited", "{st}");
    // interrupt_after "*" on the resume: stops after `review`, before `publish`.
    let (code, values) = s
        .post_json(
            &format!("/threads/{t}/runs/wait"),
            json!({"assistant_id": "approval", "command": {"resume": {"approve": true}}, "interrupt_after": "*"}),
        )
        .await;
    assert_eq!(code, 200, "{values}");
    let (_, thread) = s.get_json(&format!("/threads/{t}")).await;
    assert_eq!(thread["status"], "interrupted", "{thread}");
    let (code, values) = s
        .post_json(
            &format!("/threads/{t}/runs/wait"),
            json!({"assistant_id": "approval", "input": null}),
        )
        .await;
    assert_eq!(code, 200, "{values}");
    let (_, thread) = s.get_json(&format!("/threads/{t}")).await;
    assert_eq!(thread["status"], "idle", "{thread}");
    let (_, st) = s.get_json(&format!("/threads/{t}/state")).await;
    assert_eq!(st["next"], json!([]));
}
both_backends!(
    breakpoints_stop_the_run_and_a_null_input_continues_,
    breakpoints_stop_the_run_and_a_null_input_continues
);

async fn background_run_survives_disconnect_and_rejoins_without_gaps(b: Backend) {
    let s = TestServer::start(b).await;
    let t = s.new_thread().await;
    let body = json!({"assistant_id": "streaming", "input": slow(40, 15), "stream_mode": ["messages-tuple", "updates"]});
    let mut first = stream_run(&s, &t, body).await;
    let mut seen = Vec::new();
    while seen.len() < 6 {
        seen.push(first.next().await.unwrap());
    }
    let loc = first
        .headers
        .get("content-location")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    drop(first);
    let run_id = loc.rsplit('/').next().unwrap().to_string();
    let last_id = seen.last().unwrap().id.clone().unwrap();
    // Two watchers join: one from where the first left off, one from the start.
    let rejoin = s
        .sse(
            s.client
                .get(s.url(&format!("{loc}/stream")))
                .header("last-event-id", &last_id),
        )
        .await;
    let replay = s
        .sse(
            s.client
                .get(s.url(&format!("{loc}/stream")))
                .header("last-event-id", "-1"),
        )
        .await;
    let (mut rejoin, mut replay) = (rejoin, replay);
    let (rest, all) = tokio::join!(rejoin.all(), replay.all());
    let joined: Vec<SseEvent> = seen
        .iter()
        .filter(|e| e.event.as_deref() != Some("metadata"))
        .cloned()
        .chain(rest)
        .collect();
    let all: Vec<SseEvent> = all
        .into_iter()
        .filter(|e| e.event.as_deref() != Some("metadata"))
        .collect();
    assert_eq!(
        joined, all,
        "resuming after the last id gives exactly the rest"
    );
    assert_eq!(
        all.iter()
            .filter(|e| e.event.as_deref() == Some("messages"))
            .count(),
        40,
        "the run went on without a client"
    );
    wait_status(&s, &t, &run_id, "success").await;
}
both_backends!(
    background_run_survives_disconnect_and_rejoins_without_gaps_,
    background_run_survives_disconnect_and_rejoins_without_gaps
);

async fn two_watchers_see_the_same_events(b: Backend) {
    let s = TestServer::start(b).await;
    let t = s.new_thread().await;
    let (code, run) = s
        .post_json(&format!("/threads/{t}/runs"), json!({"assistant_id": "streaming", "input": slow(20, 10), "stream_mode": ["messages-tuple", "values"]}))
        .await;
    assert_eq!(code, 200, "{run}");
    let rid = run["run_id"].as_str().unwrap();
    let path = format!("/threads/{t}/runs/{rid}/stream");
    let mut a = s
        .sse(s.client.get(s.url(&path)).header("last-event-id", "-1"))
        .await;
    let mut b2 = s
        .sse(s.client.get(s.url(&path)).header("last-event-id", "-1"))
        .await;
    let (ea, eb) = tokio::join!(a.all(), b2.all());
    assert!(!ea.is_empty());
    assert_eq!(ea, eb);
}
both_backends!(
    two_watchers_see_the_same_events_,
    two_watchers_see_the_same_events
);

async fn cancel_mid_run_keeps_partial_text(b: Backend) {
    let s = TestServer::start(b).await;
    let t = s.new_thread().await;
    let (_, run) = s
        .post_json(
            &format!("/threads/{t}/runs"),
            json!({"assistant_id": "streaming", "input": slow(1000, 10), "stream_mode": ["messages-tuple"]}),
        )
        .await;
    let rid = run["run_id"].as_str().unwrap().to_string();
    wait_streaming(&s, &t, &rid).await;
    let r = s
        .client
        .post(s.url(&format!("/threads/{t}/runs/{rid}/cancel")))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());
    let again = s
        .client
        .post(s.url(&format!("/threads/{t}/runs/{rid}/cancel")))
        .send()
        .await
        .unwrap();
    assert!(again.status().is_success(), "cancel is idempotent");
    let r = wait_status(&s, &t, &rid, "interrupted").await;
    assert_eq!(r["status"], "interrupted");
    let (_, st) = s.get_json(&format!("/threads/{t}/state")).await;
    let last = st["values"]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["metadata"]["interrupted"], true);
    assert_eq!(last["metadata"]["interrupted_reason"], "user_cancelled");
    assert_eq!(last["metadata"]["finished_reason"], "cancelled");
    assert_eq!(last["metadata"]["stream_run_id"], rid.as_str());
    let words = last["content"].as_str().unwrap().split_whitespace().count();
    assert!(
        words > 0 && words < 1000,
        "partial text kept ({words} words)"
    );
    let (_, thread) = s.get_json(&format!("/threads/{t}")).await;
    assert_eq!(thread["status"], "idle");
    // The thread-level cancel is idempotent too, and 404 for unknown threads.
    let r = s
        .client
        .post(s.url(&format!("/threads/{t}/cancel")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = s
        .client
        .post(s.url(&format!("/threads/{}/cancel", uuid::Uuid::new_v4())))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}
both_backends!(
    cancel_mid_run_keeps_partial_text_,
    cancel_mid_run_keeps_partial_text
);

async fn on_disconnect_cancel_stops_the_run(b: Backend) {
    let s = TestServer::start(b).await;
    let t = s.new_thread().await;
    let mut sse = stream_run(&s, &t, json!({"assistant_id": "streaming", "input": slow(1000, 10), "stream_mode": ["messages-tuple"], "on_disconnect": "cancel"})).await;
    let _ = sse.next().await;
    let _ = sse.next().await;
    let loc = sse
        .headers
        .get("content-location")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    drop(sse);
    let rid = loc.rsplit('/').next().unwrap();
    let r = wait_status(&s, &t, rid, "interrupted").await;
    assert_eq!(r["status"], "interrupted");
}
both_backends!(
    on_disconnect_cancel_stops_the_run_,
    on_disconnect_cancel_stops_the_run
);

async fn busy_thread_and_multitask_strategies(b: Backend) {
    let s = TestServer::start(b).await;
    let t = s.new_thread().await;
    let start = |strategy: Option<&str>, words: usize| {
        let mut body = json!({"assistant_id": "streaming", "input": slow(words, 10), "stream_mode": ["messages-tuple"]});
        if let Some(st) = strategy {
            body["multitask_strategy"] = json!(st);
        }
        body
    };
    let (_, first) = s
        .post_json(&format!("/threads/{t}/runs"), start(None, 1000))
        .await;
    let first_id = first["run_id"].as_str().unwrap().to_string();
    // Until it has streamed text (which the interrupt below must keep).
    wait_streaming(&s, &t, &first_id).await;
    // reject (default): 409 with a code, nothing created.
    let (code, err) = s
        .post_json(&format!("/threads/{t}/runs"), start(None, 3))
        .await;
    assert_eq!(code, 409, "{err}");
    assert_eq!(err["code"], "thread_busy");
    let (_, runs) = s.get_json(&format!("/threads/{t}/runs")).await;
    assert_eq!(runs.as_array().unwrap().len(), 1);
    // interrupt: the running one is cancelled (superseded), the new one runs after it.
    let (code, second) = s
        .post_json(&format!("/threads/{t}/runs"), start(Some("interrupt"), 3))
        .await;
    assert_eq!(code, 200, "{second}");
    let second_id = second["run_id"].as_str().unwrap().to_string();
    wait_status(&s, &t, &first_id, "interrupted").await;
    wait_status(&s, &t, &second_id, "success").await;
    let (_, st) = s.get_json(&format!("/threads/{t}/state")).await;
    let msgs = st["values"]["messages"].as_array().unwrap();
    assert_eq!(msgs[1]["metadata"]["interrupted_reason"], "superseded");
    // enqueue: runs after the current one.
    let (_, third) = s
        .post_json(&format!("/threads/{t}/runs"), start(None, 30))
        .await;
    let third_id = third["run_id"].as_str().unwrap().to_string();
    let (code, fourth) = s
        .post_json(&format!("/threads/{t}/runs"), start(Some("enqueue"), 2))
        .await;
    assert_eq!(code, 200, "{fourth}");
    let fourth_id = fourth["run_id"].as_str().unwrap().to_string();
    let (_, r4) = s.get_json(&format!("/threads/{t}/runs/{fourth_id}")).await;
    assert_eq!(r4["status"], "pending");
    wait_status(&s, &t, &third_id, "success").await;
    wait_status(&s, &t, &fourth_id, "success").await;
    // rollback: the running one is deleted with its checkpoints.
    let before = s
        .post_json(&format!("/threads/{t}/history"), json!({"limit": 1000}))
        .await
        .1
        .as_array()
        .unwrap()
        .len();
    let (_, fifth) = s
        .post_json(&format!("/threads/{t}/runs"), start(None, 1000))
        .await;
    let fifth_id = fifth["run_id"].as_str().unwrap().to_string();
    wait_status(&s, &t, &fifth_id, "running").await;
    let (code, sixth) = s
        .post_json(&format!("/threads/{t}/runs"), start(Some("rollback"), 2))
        .await;
    assert_eq!(code, 200, "{sixth}");
    let sixth_id = sixth["run_id"].as_str().unwrap().to_string();
    wait_status(&s, &t, &sixth_id, "success").await;
    let (code, _) = s.get_json(&format!("/threads/{t}/runs/{fifth_id}")).await;
    assert_eq!(code, 404, "the rolled back run is deleted");
    let history = s
        .post_json(&format!("/threads/{t}/history"), json!({"limit": 1000}))
        .await
        .1;
    let history = history.as_array().unwrap();
    assert_eq!(
        history.len(),
        before + 2,
        "only the new run's checkpoints were added"
    );
    assert!(history
        .iter()
        .all(|h| h["metadata"]["run_id"] != json!(fifth_id)));
}
both_backends!(
    busy_thread_and_multitask_strategies_,
    busy_thread_and_multitask_strategies
);
