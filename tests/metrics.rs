//! `GET /metrics`: the real server scraped over HTTP, its text read by a strict parser
//! (tests/metrics/exposition.rs), and the values checked against what the test made the
//! server do: chat turns with a model speaking OpenAI's wire format, LangGraph API runs
//! (one running, one queued behind it), a run taken over after a SIGKILL, and the route
//! protected like the API when auth is on.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
#[path = "metrics/exposition.rs"]
mod exposition;
use crate::fake_openai;

use std::time::Duration;

use common::ledger::wait_all_final;
use common::{Backend, SseEvent, TestServer};
use exposition::{parse, Exposition};
use fake_openai::FakeOpenAi;
use serde_json::{json, Value};

async fn scrape(s: &TestServer) -> (Exposition, String) {
    let resp = s.client.get(s.url("/metrics")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let ct = resp.headers()["content-type"].to_str().unwrap().to_string();
    assert!(ct.starts_with("text/plain; version=0.0.4"), "{ct}");
    let text = resp.text().await.unwrap();
    let parsed = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    (parsed, text)
}

/// A model that answers every structured call (intent: inquire) and streams every answer,
/// with token counts in its usage.
async fn model() -> FakeOpenAi {
    FakeOpenAi::inquiring(&["The leverage ratio ", "must be 3% [1]."]).await
}

async fn document(s: &TestServer, part: &str) -> String {
    let (code, docs) = s.get_json("/documents").await;
    assert_eq!(code, 200, "{docs}");
    docs.as_array()
        .unwrap()
        .iter()
        .find(|d| d["title"].as_str().unwrap().contains(part))
        .unwrap_or_else(|| panic!("a sample document with {part}: {docs}"))["id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn kind(e: &SseEvent) -> &str {
    e.data["type"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_counts_the_turns_their_nodes_checkpoints_tokens_and_routes() {
    let fake = model().await;
    let s = TestServer::start_with(
        Backend::Sqlite,
        &[
            ("OPENAI_API_KEY", "sk-test"),
            ("OPENAI_BASE_URL", fake.base_url.as_str()),
        ],
    )
    .await;
    let doc = document(&s, "Capital Requirements").await;
    let mut thread = None::<String>;
    for _ in 0..2 {
        let mut body = json!({"message": "What is the leverage ratio?", "tagged_doc_ids": [doc]});
        if let Some(t) = &thread {
            body["thread_id"] = json!(t);
        }
        let mut sse = s.sse(s.client.post(s.url("/chat")).json(&body)).await;
        let t = sse.headers["x-thread-id"].to_str().unwrap().to_string();
        let events = sse.all().await;
        assert!(
            events.iter().any(|e| kind(e) == "response"),
            "{:?}",
            events.iter().map(|e| &e.data).collect::<Vec<_>>()
        );
        thread = Some(t);
    }
    let thread = thread.unwrap();
    let (code, _) = s.get_json(&format!("/chat/history/{thread}")).await;
    assert_eq!(code, 200);
    let (code, _) = s.get_json("/no/such/route").await;
    assert_eq!(code, 404);

    let (m, text) = scrape(&s).await;
    // Runs: both turns succeeded, none is left pending or running.
    assert_eq!(m.family("palgraph_run_duration_seconds").kind, "histogram");
    assert!(
        m.sum(
            "palgraph_run_duration_seconds_count",
            &[("status", "success")]
        ) >= 2.0,
        "{text}"
    );
    assert_eq!(m.family("palgraph_runs").kind, "gauge");
    assert_eq!(m.sum("palgraph_runs", &[]), 0.0);
    assert_eq!(m.value("palgraph_run_queue_depth", &[]), 0.0);
    assert_eq!(m.value("palgraph_run_queue_oldest_age_seconds", &[]), 0.0);
    assert_eq!(m.value("palgraph_database_up", &[]), 1.0);
    // Nodes: every turn ran format_response once.
    assert!(
        m.sum(
            "palgraph_node_duration_seconds_count",
            &[("node", "format_response")]
        ) >= 2.0
    );
    // Checkpoints on SQLite: written and read.
    let writes = m.sum(
        "palgraph_checkpoint_write_duration_seconds_count",
        &[("backend", "sqlite"), ("kind", "checkpoint")],
    );
    assert!(writes >= 2.0, "{writes}");
    assert!(
        m.sum(
            "palgraph_checkpoint_load_duration_seconds_count",
            &[("backend", "sqlite")]
        ) >= 2.0
    );
    assert!(
        m.sum(
            "palgraph_group_commit_batch_size_count",
            &[("kind", "run_events")]
        ) >= 1.0
    );
    // The model's tokens and calls: two streamed answers of 300 + 12, structured calls of
    // 100 + 10 each.
    let input = m.sum("palgraph_llm_tokens_total", &[("direction", "input")]);
    let output = m.sum("palgraph_llm_tokens_total", &[("direction", "output")]);
    assert!(input >= 600.0 && output >= 24.0, "{input} {output}");
    assert_eq!(m.family("palgraph_llm_tokens_total").kind, "counter");
    assert!(m.sum("palgraph_llm_call_cost_usd_count", &[]) >= 2.0);
    // HTTP by route template and status; never a raw path.
    assert!(
        m.value(
            "palgraph_http_requests_total",
            &[("method", "POST"), ("route", "/chat"), ("status", "200")]
        ) >= 2.0
    );
    assert_eq!(
        m.value(
            "palgraph_http_requests_total",
            &[
                ("method", "GET"),
                ("route", "/chat/history/{thread_id}"),
                ("status", "200")
            ]
        ),
        1.0
    );
    assert!(
        m.value(
            "palgraph_http_requests_total",
            &[("route", "unmatched"), ("status", "404")]
        ) >= 1.0
    );
    assert!(
        m.sum(
            "palgraph_http_request_duration_seconds_count",
            &[("route", "/chat")]
        ) >= 2.0
    );
    assert!(!text.contains(&thread), "a thread id in a label:\n{text}");
    assert!(!text.contains("/no/such/route"));
    // The streams of the turns are closed.
    assert_eq!(m.value("palgraph_sse_streams", &[]), 0.0);
}

fn slow(words: usize, delay_ms: u64) -> Value {
    json!({"messages": [{"type": "human", "content": "alpha beta gamma"}], "delay_ms": delay_ms, "words": words})
}

/// A run streaming slowly, a second one queued behind it on the same thread: the database's
/// gauges show one running and one waiting, and an open stream.
async fn the_database_gauges_show_a_running_and_a_queued_run(b: Backend) {
    let s = TestServer::start(b).await;
    let t = s.new_thread().await;
    let mut first = s
        .sse(
            s.client
                .post(s.url(&format!("/threads/{t}/runs/stream")))
                .json(&json!({"assistant_id": "streaming", "input": slow(40, 100), "stream_mode": ["messages-tuple"]})),
        )
        .await;
    // Wait until it streams text: it is running, with about four seconds to go.
    while first
        .next()
        .await
        .expect("the run streams")
        .event
        .as_deref()
        != Some("messages")
    {}
    let (code, second) = s
        .post_json(
            &format!("/threads/{t}/runs"),
            json!({"assistant_id": "streaming", "input": slow(2, 0), "multitask_strategy": "enqueue"}),
        )
        .await;
    assert_eq!(code, 200, "{second}");
    let (m, text) = scrape(&s).await;
    let running = m.value(
        "palgraph_runs",
        &[("graph", "streaming"), ("status", "running")],
    );
    let pending = m.value(
        "palgraph_runs",
        &[("graph", "streaming"), ("status", "pending")],
    );
    assert_eq!((running, pending), (1.0, 1.0), "{text}");
    assert_eq!(m.value("palgraph_run_queue_depth", &[]), 1.0);
    assert!(m.value("palgraph_run_queue_oldest_age_seconds", &[]) >= 0.0);
    assert!(m.value("palgraph_sse_streams", &[]) >= 1.0);
    // Both end; the queue empties; the durations are counted by graph and status.
    let first_run = first.headers["content-location"]
        .to_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    let _ = first.all().await;
    let runs = [
        (t.clone(), first_run),
        (t.clone(), second["run_id"].as_str().unwrap().to_string()),
    ];
    let statuses = wait_all_final(&s, &runs, Duration::from_secs(60)).await;
    assert_eq!(statuses, ["success", "success"]);
    let (m, text) = scrape(&s).await;
    assert_eq!(m.sum("palgraph_runs", &[]), 0.0, "{text}");
    assert_eq!(m.value("palgraph_run_queue_depth", &[]), 0.0);
    assert_eq!(
        m.value(
            "palgraph_run_duration_seconds_count",
            &[("graph", "streaming"), ("status", "success")]
        ),
        2.0
    );
    let backend = match b {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    };
    assert!(
        m.sum(
            "palgraph_checkpoint_write_duration_seconds_count",
            &[("backend", backend)]
        ) >= 2.0,
        "{text}"
    );
    if b == Backend::Postgres {
        assert!(
            m.sum(
                "palgraph_group_commit_batch_size_count",
                &[("kind", "checkpoints")]
            ) >= 2.0,
            "{text}"
        );
    }
}
both_backends!(
    the_database_gauges_show_a_running_and_a_queued_run_,
    the_database_gauges_show_a_running_and_a_queued_run
);

/// A run cut off by SIGKILL is taken over by the restarted server, and counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_taken_over_after_a_sigkill_is_counted() {
    let mut s = TestServer::start(Backend::Sqlite).await;
    let t = s.new_thread().await;
    let (code, run) = s
        .post_json(
            &format!("/threads/{t}/runs"),
            json!({"assistant_id": "streaming", "input": slow(30, 100), "stream_mode": ["messages-tuple"]}),
        )
        .await;
    assert_eq!(code, 200, "{run}");
    let run_id = run["run_id"].as_str().unwrap().to_string();
    let mut watch = s
        .sse(
            s.client
                .get(s.url(&format!("/threads/{t}/runs/{run_id}/stream")))
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
    drop(watch);
    s.restart().await;
    let statuses = wait_all_final(&s, &[(t, run_id)], Duration::from_secs(60)).await;
    assert_eq!(statuses, ["success"]);
    let (m, text) = scrape(&s).await;
    assert_eq!(
        m.family("palgraph_run_lease_takeovers_total").kind,
        "counter"
    );
    assert_eq!(
        m.value("palgraph_run_lease_takeovers_total", &[]),
        1.0,
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_protected_like_the_api_and_can_be_turned_off() {
    let s = TestServer::start_with(
        Backend::Sqlite,
        &[("PALGRAPH_API_KEYS", "metrics-scraper-key=prometheus")],
    )
    .await;
    let bare = s.client.get(s.url("/metrics")).send().await.unwrap();
    assert_eq!(bare.status(), 401);
    let body: Value = bare.json().await.unwrap();
    assert!(body.is_object(), "{body}");
    let wrong = s
        .client
        .get(s.url("/metrics"))
        .bearer_auth("not-the-key")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    for req in [
        s.client
            .get(s.url("/metrics"))
            .bearer_auth("metrics-scraper-key"),
        s.client
            .get(s.url("/metrics"))
            .header("x-api-key", "metrics-scraper-key"),
    ] {
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 200);
        parse(&resp.text().await.unwrap()).unwrap();
    }

    let off = TestServer::start_with(Backend::Sqlite, &[("PALGRAPH_METRICS", "false")]).await;
    let (code, body) = off.get_json("/metrics").await;
    assert_eq!(code, 404, "{body}");
    assert!(body.to_string().contains("PALGRAPH_METRICS"), "{body}");
}
