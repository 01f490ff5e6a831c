//! The seed chat contract through the real server, on SQLite and Postgres: event order,
//! PalAssist prompts and resumes, cancel (at a prompt and mid-run), disconnect and
//! reconnect (snapshot, then live; Last-Event-ID without gaps), watchers, busy threads,
//! idempotent retries, ownership, history, bad input.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

#[path = "chat/access.rs"]
mod access;
use crate::common;

use common::{Backend, Sse, SseEvent, TestServer};
use serde_json::{json, Value};

const PACED: &[(&str, &str)] = &[("PALASSIST_OFFLINE_PACE_MS", "25")];

async fn chat(s: &TestServer, body: Value) -> Sse {
    s.sse(s.client.post(s.url("/chat")).json(&body)).await
}

fn kinds(events: &[SseEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| e.data["type"].as_str().unwrap_or("").to_string())
        .collect()
}

fn tokens(events: &[SseEvent]) -> String {
    events
        .iter()
        .filter(|e| e.data["type"] == "token")
        .map(|e| e.data["content"].as_str().unwrap().to_string())
        .collect()
}

fn terminal(events: &[SseEvent]) -> &SseEvent {
    let t: Vec<&SseEvent> = events
        .iter()
        .filter(|e| {
            ["response", "interrupt", "error", "cancelled"]
                .contains(&e.data["type"].as_str().unwrap_or(""))
        })
        .collect();
    assert_eq!(
        t.len(),
        1,
        "exactly one terminal event: {:?}",
        kinds(events)
    );
    assert!(
        std::ptr::eq(t[0], events.last().unwrap()),
        "the terminal event is the last one"
    );
    t[0]
}

fn thread_of(sse: &Sse) -> String {
    sse.headers
        .get("x-thread-id")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string()
}

async fn history(s: &TestServer, t: &str) -> Value {
    let (code, h) = s.get_json(&format!("/chat/history/{t}")).await;
    assert_eq!(code, 200, "{h}");
    h
}

async fn resume(s: &TestServer, t: &str, kind: &str, value: Value) -> Vec<SseEvent> {
    s.sse(
        s.client
            .post(s.url("/chat/resume"))
            .json(&json!({"thread_id": t, "resume_value": {"type": kind, "value": value}})),
    )
    .await
    .all()
    .await
}

async fn statuses_then_exactly_one_response(b: Backend) {
    let s = TestServer::start(b).await;
    let mut sse = chat(&s, json!({"message": "What are the capital requirements?"})).await;
    assert_eq!(sse.headers.get("cache-control").unwrap(), "no-cache");
    assert_eq!(sse.headers.get("x-accel-buffering").unwrap(), "no");
    assert!(sse
        .headers
        .get("content-type")
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    // A thread the server makes is time-ordered (UUIDv7): its rows go to the end of the
    // indexes that begin with the thread id.
    let made = uuid::Uuid::parse_str(&thread_of(&sse)).unwrap();
    assert_eq!(made.get_version_num(), 7, "{made}");
    let events = sse.all().await;
    let nodes: Vec<&str> = events
        .iter()
        .filter(|e| e.data["type"] == "status")
        .map(|e| e.data["node"].as_str().unwrap())
        .collect();
    let mut dedup = nodes.clone();
    dedup.dedup();
    assert_eq!(
        dedup,
        vec![
            "intent_resolver",
            "doc_resolver",
            "validate_inputs",
            "inquire",
            "format_response"
        ]
    );
    let found = events
        .iter()
        .find(|e| e.data["docs_found"].is_array())
        .expect("doc_resolver reports docs_found");
    assert!(found.data["docs_found"][0]["title"]
        .as_str()
        .unwrap()
        .contains("Capital Requirements"));
    let end = terminal(&events);
    assert_eq!(end.data["type"], "response");
    assert_eq!(end.data["action"], "inquire");
    assert!(end.data["response"].as_str().unwrap().contains('%'));
    assert!(!end.data["citations"].as_array().unwrap().is_empty());
    for k in [
        "inference_confidence",
        "retrieval_confidence",
        "tokens_used",
        "cost_usd",
    ] {
        assert!(end.data.get(k).is_some(), "{k}");
    }
    assert!(!tokens(&events).is_empty(), "the answer streamed");
    // Every event has an id `<run_id>:<seq>`, seq increasing.
    let seqs: Vec<u64> = events
        .iter()
        .map(|e| {
            e.id.as_ref()
                .unwrap()
                .rsplit(':')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] <= w[1]));
}
both_backends!(
    statuses_then_exactly_one_response_,
    statuses_then_exactly_one_response
);

async fn doc_choice_then_resume_answers_and_history_shows_the_prompt(b: Backend) {
    let s = TestServer::start(b).await;
    let mut sse = chat(&s, json!({"message": "Summarize the policy"})).await;
    let t = thread_of(&sse);
    let events = sse.all().await;
    let intr = terminal(&events).data.clone();
    assert_eq!(intr["type"], "interrupt");
    assert_eq!(intr["interrupt_type"], "doc_choice");
    let options = intr["options"].as_array().unwrap();
    assert_eq!(options.last().unwrap()["id"], "all");
    // A refresh shows the pending prompt.
    let h = history(&s, &t).await;
    assert_eq!(h["pending_interrupt"]["interrupt_type"], "doc_choice");
    assert_eq!(h["pending_interrupt"]["options"], intr["options"]);
    assert_eq!(h["messages"][0]["role"], "user");
    let (_, thread) = s.get_json(&format!("/threads/{t}")).await;
    assert_eq!(thread["status"], "interrupted");
    // Pick the 2024 policy.
    let pick = options
        .iter()
        .find(|o| o["label"].as_str().unwrap().contains("2024"))
        .unwrap()["id"]
        .clone();
    let events = resume(&s, &t, "doc_choice", pick).await;
    let end = terminal(&events);
    assert_eq!(end.data["type"], "response", "{:?}", end.data);
    assert_eq!(end.data["action"], "summarize");
    assert!(end.data["citations"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["title"].as_str().unwrap().contains("2024")));
    let h = history(&s, &t).await;
    assert!(h["pending_interrupt"].is_null());
    let record = h["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metadata"]["kind"] == "palassist_prompt")
        .expect("prompt recorded");
    assert_eq!(record["metadata"]["interrupt_type"], "doc_choice");
    assert_eq!(
        h["messages"].as_array().unwrap().last().unwrap()["role"],
        "assistant"
    );
    // Nothing pending any more: a resume is refused and changes nothing.
    let r = s
        .client
        .post(s.url("/chat/resume"))
        .json(&json!({"thread_id": t, "resume_value": {"type": "doc_choice", "value": "all"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(history(&s, &t).await, h);
}
both_backends!(
    doc_choice_then_resume_answers_and_history_shows_the_prompt_,
    doc_choice_then_resume_answers_and_history_shows_the_prompt
);

async fn action_choice_pick_audit_then_text_input_through_resume(b: Backend) {
    let s = TestServer::start(b).await;
    let mut sse = chat(&s, json!({"message": "Summarize and audit this"})).await;
    let t = thread_of(&sse);
    let events = sse.all().await;
    assert_eq!(terminal(&events).data["interrupt_type"], "action_choice");
    let mut events = resume(&s, &t, "action_choice", json!("audit")).await;
    // Auditing needs text and documents; answer whatever PalAssist asks next in text.
    for _ in 0..3 {
        let end = terminal(&events).data.clone();
        if end["type"] != "interrupt" {
            break;
        }
        assert_eq!(end["interrupt_type"], "text_input", "{end}");
        events = resume(
            &s,
            &t,
            "text_input",
            json!("Customer records are kept for 3 years under the AML and KYC Policy"),
        )
        .await;
    }
    let end = terminal(&events);
    assert_eq!(end.data["type"], "response", "{:?}", end.data);
    assert_eq!(end.data["action"], "audit");
}
both_backends!(
    action_choice_pick_audit_then_text_input_through_resume_,
    action_choice_pick_audit_then_text_input_through_resume
);

async fn a_resume_that_does_not_fit_the_prompt_is_422_and_the_prompt_stays(b: Backend) {
    let s = TestServer::start(b).await;
    let mut sse = chat(&s, json!({"message": "Summarize and audit this"})).await;
    let t = thread_of(&sse);
    let events = sse.all().await;
    let prompt = terminal(&events).data.clone();
    assert_eq!(prompt["interrupt_type"], "action_choice");
    let before = history(&s, &t).await;
    for (kind, value) in [
        ("doc_choice", json!("all")),
        ("text_input", json!("audit")),
        ("action_choice", json!("banana")),
        ("action_choice", json!(["audit"])),
        ("action_choice", Value::Null),
    ] {
        let r = s
            .client
            .post(s.url("/chat/resume"))
            .json(&json!({"thread_id": t, "resume_value": {"type": kind, "value": value}}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 422, "{kind} {value}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["code"], "invalid", "{body}");
        assert!(
            body["detail"].as_str().is_some_and(|m| !m.is_empty()),
            "{body}"
        );
        assert_eq!(
            history(&s, &t).await,
            before,
            "{kind} {value} changed nothing"
        );
    }
    // A fitting answer is taken.
    let events = resume(&s, &t, "action_choice", json!("summarize")).await;
    assert_ne!(terminal(&events).data["type"], "error");
}
both_backends!(
    a_resume_that_does_not_fit_the_prompt_is_422_and_the_prompt_stays_,
    a_resume_that_does_not_fit_the_prompt_is_422_and_the_prompt_stays
);

async fn cancel_at_an_action_choice_stops_the_turn_with_no_answer(b: Backend) {
    let s = TestServer::start(b).await;
    let mut sse = chat(&s, json!({"message": "Summarize and audit this"})).await;
    let t = thread_of(&sse);
    let events = sse.all().await;
    assert_eq!(terminal(&events).data["interrupt_type"], "action_choice");
    let events = resume(&s, &t, "cancel", Value::Null).await;
    let end = terminal(&events);
    assert_eq!(end.data["type"], "response", "{:?}", end.data);
    assert_eq!(end.data["cancelled"], true);
    let nodes: Vec<&str> = events
        .iter()
        .filter(|e| e.data["type"] == "status")
        .filter_map(|e| e.data["node"].as_str())
        .collect();
    assert!(
        nodes.iter().all(|n| ![
            "doc_resolver",
            "validate_inputs",
            "inquire",
            "summarize",
            "audit",
            "compare"
        ]
        .contains(n)),
        "nothing else runs: {nodes:?}"
    );
    let h = history(&s, &t).await;
    assert!(h["pending_interrupt"].is_null());
    let messages = h["messages"].as_array().unwrap();
    assert!(
        messages
            .iter()
            .filter(|m| m["role"] == "assistant")
            .all(|m| m["metadata"]["kind"] == "palassist_prompt"),
        "no answer is stored: {messages:?}"
    );
}
both_backends!(
    cancel_at_an_action_choice_stops_the_turn_with_no_answer_,
    cancel_at_an_action_choice_stops_the_turn_with_no_answer
);

async fn cancel_at_a_prompt_ends_cleanly_and_next_message_starts_fresh(b: Backend) {
    let s = TestServer::start(b).await;
    let mut sse = chat(
        &s,
        json!({"message": "compare the capital requirements regulation"}),
    )
    .await;
    let t = thread_of(&sse);
    let events = sse.all().await;
    assert_eq!(terminal(&events).data["interrupt_type"], "text_input");
    let events = resume(&s, &t, "cancel", Value::Null).await;
    let end = terminal(&events);
    assert_eq!(end.data["type"], "response");
    assert_eq!(end.data["cancelled"], true);
    let h = history(&s, &t).await;
    assert!(h["pending_interrupt"].is_null());
    let record = h["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metadata"]["kind"] == "palassist_prompt")
        .unwrap();
    assert!(
        record["metadata"]["answer"].is_null(),
        "a cancelled prompt is recorded with no answer"
    );
    let events = chat(
        &s,
        json!({"message": "What are the capital requirements?", "thread_id": t}),
    )
    .await
    .all()
    .await;
    assert_eq!(terminal(&events).data["type"], "response");
}
both_backends!(
    cancel_at_a_prompt_ends_cleanly_and_next_message_starts_fresh_,
    cancel_at_a_prompt_ends_cleanly_and_next_message_starts_fresh
);

async fn new_message_at_a_prompt_abandons_it(b: Backend) {
    let s = TestServer::start(b).await;
    let mut sse = chat(&s, json!({"message": "Summarize the policy"})).await;
    let t = thread_of(&sse);
    assert_eq!(
        terminal(&sse.all().await).data["interrupt_type"],
        "doc_choice"
    );
    let events = chat(
        &s,
        json!({"message": "What are the capital requirements?", "thread_id": t}),
    )
    .await
    .all()
    .await;
    let end = terminal(&events);
    assert_eq!(
        end.data["type"], "response",
        "the old prompt is not re-triggered"
    );
    let h = history(&s, &t).await;
    assert!(h["pending_interrupt"].is_null());
    let abandoned = h["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metadata"]["kind"] == "palassist_prompt")
        .unwrap();
    assert_eq!(abandoned["metadata"]["cancelled"], true);
    let contents: Vec<&str> = h["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        contents
            .iter()
            .filter(|c| **c == "What are the capital requirements?")
            .count(),
        1
    );
}
both_backends!(
    new_message_at_a_prompt_abandons_it_,
    new_message_at_a_prompt_abandons_it
);

async fn stop_mid_run_keeps_the_partial_answer(b: Backend) {
    let s = TestServer::start_with(b, PACED).await;
    let mut sse = chat(&s, json!({"message": "What are the capital requirements?"})).await;
    let t = thread_of(&sse);
    let mut events = Vec::new();
    while events
        .iter()
        .filter(|e: &&SseEvent| e.data["type"] == "token")
        .count()
        < 3
    {
        events.push(sse.next().await.unwrap());
    }
    let r = s
        .client
        .post(s.url(&format!("/threads/{t}/cancel")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    events.extend(sse.all().await);
    let end = terminal(&events);
    assert_eq!(end.data["type"], "cancelled");
    assert_eq!(end.data["reason"], "user_cancelled");
    let h = history(&s, &t).await;
    let last = h["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["metadata"]["interrupted"], true);
    assert_eq!(
        last["content"],
        tokens(&events),
        "the partial answer is what was streamed"
    );
    // The thread takes the next message.
    let events = chat(
        &s,
        json!({"message": "What are the capital requirements?", "thread_id": t}),
    )
    .await
    .all()
    .await;
    assert_eq!(terminal(&events).data["type"], "response");
}
both_backends!(
    stop_mid_run_keeps_the_partial_answer_,
    stop_mid_run_keeps_the_partial_answer
);

async fn disconnect_then_reconnect_gets_snapshot_then_live(b: Backend) {
    let s = TestServer::start_with(b, PACED).await;
    let mut sse = chat(&s, json!({"message": "What are the capital requirements?"})).await;
    let t = thread_of(&sse);
    let mut seen = Vec::new();
    while seen
        .iter()
        .filter(|e: &&SseEvent| e.data["type"] == "token")
        .count()
        < 3
    {
        seen.push(sse.next().await.unwrap());
    }
    drop(sse);
    // Two watchers reconnect; each gets a snapshot first, then the live rest.
    let (mut w1, mut w2) = (
        s.sse(s.client.get(s.url(&format!("/chat/stream/{t}"))))
            .await,
        s.sse(s.client.get(s.url(&format!("/chat/stream/{t}"))))
            .await,
    );
    let (e1, e2) = tokio::join!(w1.all(), w2.all());
    for events in [&e1, &e2] {
        let snap = &events[0].data;
        assert_eq!(snap["type"], "snapshot");
        assert_eq!(snap["status"], "running");
        assert!(
            snap["statuses"].as_array().unwrap().len() >= 4,
            "status lines so far"
        );
        assert!(
            !snap["partial_text"].as_str().unwrap().is_empty(),
            "partial text so far"
        );
        let text = format!(
            "{}{}",
            snap["partial_text"].as_str().unwrap(),
            tokens(&events[1..])
        );
        let end = terminal(&events[1..]);
        assert_eq!(end.data["type"], "response");
        let h_last = history(&s, &t).await["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()["content"]
            .clone();
        assert_eq!(
            json!(text),
            h_last,
            "snapshot text + live tokens = the whole answer, no gap, no duplicate"
        );
    }
    assert_eq!(
        terminal(&e1[1..]).data,
        terminal(&e2[1..]).data,
        "both watchers saw the same result"
    );
    // Nothing runs now: the snapshot holds the result and the stream ends.
    let done = s
        .sse(s.client.get(s.url(&format!("/chat/stream/{t}"))))
        .await
        .all()
        .await;
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].data["status"], "idle");
    assert_eq!(done[0].data["result"]["type"], "response");
}
both_backends!(
    disconnect_then_reconnect_gets_snapshot_then_live_,
    disconnect_then_reconnect_gets_snapshot_then_live
);

async fn last_event_id_resumes_without_gaps_or_duplicates(b: Backend) {
    let s = TestServer::start_with(b, PACED).await;
    let mut sse = chat(&s, json!({"message": "What are the capital requirements?"})).await;
    let t = thread_of(&sse);
    let run = sse
        .headers
        .get("x-run-id")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let mut first = Vec::new();
    for _ in 0..8 {
        first.push(sse.next().await.unwrap());
    }
    drop(sse);
    let last = first.last().unwrap().id.clone().unwrap();
    let rest = s
        .sse(
            s.client
                .get(s.url(&format!("/chat/stream/{t}")))
                .header("last-event-id", last),
        )
        .await
        .all()
        .await;
    assert_ne!(
        rest[0].data["type"], "snapshot",
        "a resumed stream has no snapshot"
    );
    let whole = s
        .sse(
            s.client
                .get(s.url(&format!("/chat/stream/{t}")))
                .header("last-event-id", format!("{run}:0")),
        )
        .await
        .all()
        .await;
    let joined: Vec<SseEvent> = first.into_iter().chain(rest).collect();
    assert_eq!(joined, whole);
    terminal(&whole);
}
both_backends!(
    last_event_id_resumes_without_gaps_or_duplicates_,
    last_event_id_resumes_without_gaps_or_duplicates
);

async fn busy_thread_is_409_unless_the_message_supersedes(b: Backend) {
    let s = TestServer::start_with(b, PACED).await;
    let mut first = chat(&s, json!({"message": "What are the capital requirements?"})).await;
    let t = thread_of(&first);
    let _ = first.next().await;
    let r = s
        .post(
            "/chat",
            json!({"message": "Another question?", "thread_id": t}),
        )
        .await;
    assert_eq!(r.status(), 409);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["code"], "thread_busy");
    assert!(body["detail"].as_str().unwrap().contains("already running"));
    let second = chat(&s, json!({"message": "What are the capital requirements?", "thread_id": t, "multitask_strategy": "interrupt"})).await;
    let (e1, e2) = tokio::join!(first.all(), async move {
        let mut s2 = second;
        s2.all().await
    });
    assert_eq!(terminal(&e1).data["type"], "cancelled");
    assert_eq!(terminal(&e1).data["reason"], "superseded");
    assert_eq!(terminal(&e2).data["type"], "response");
}
both_backends!(
    busy_thread_is_409_unless_the_message_supersedes_,
    busy_thread_is_409_unless_the_message_supersedes
);

async fn idempotent_retry_returns_the_same_run(b: Backend) {
    let s = TestServer::start(b).await;
    let t = uuid::Uuid::new_v4().to_string();
    let body = json!({"message": "What are the capital requirements?", "thread_id": t});
    let a = s
        .sse(
            s.client
                .post(s.url("/chat"))
                .header("idempotency-key", "turn-1")
                .json(&body),
        )
        .await;
    let run_a = a.headers.get("x-run-id").unwrap().clone();
    let (mut a, b2) = (
        a,
        s.sse(
            s.client
                .post(s.url("/chat"))
                .header("idempotency-key", "turn-1")
                .json(&body),
        )
        .await,
    );
    assert_eq!(
        b2.headers.get("x-run-id").unwrap(),
        &run_a,
        "the retry joins the same run"
    );
    let mut b2 = b2;
    let (ea, eb) = tokio::join!(a.all(), b2.all());
    assert_eq!(ea, eb);
    let c = chat(&s, json!({"message": "What are the capital requirements?", "thread_id": t, "client_turn_id": "turn-1"})).await;
    assert_eq!(
        c.headers.get("x-run-id").unwrap(),
        &run_a,
        "client_turn_id works the same way"
    );
    let h = history(&s, &t).await;
    assert_eq!(
        h["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .count(),
        1,
        "one turn, not three"
    );
}
both_backends!(
    idempotent_retry_returns_the_same_run_,
    idempotent_retry_returns_the_same_run
);
