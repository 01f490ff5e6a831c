//! OpenTelemetry traces, exported by the served `palgraph` binary over OTLP (http/protobuf)
//! to an in-process receiver speaking the real protocol: a request, its run, the run's
//! nodes, durable steps and checkpoint writes are one trace with the right parents; an LLM
//! call carries the GenAI attributes; a run taken over after its first server was killed
//! (SIGKILL) continues the same trace; each cron tick is a trace; with no endpoint (or the
//! SDK disabled) nothing is exported and no trace context is kept; a bad setting stops the
//! start.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use crate::common;
use crate::fake_openai;
#[path = "otlp_receiver/mod.rs"]
mod otlp_receiver;

use std::time::Duration;

use common::ledger::{ledger_input, wait_all_final, FAULT};
use common::{Backend, TestServer};
use fake_openai::FakeOpenAi;
use otlp_receiver::{Attr, OtlpReceiver, Span};
use serde_json::{json, Value};

/// The caller's trace and span, sent as `traceparent`.
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER: &str = "00f067aa0ba902b7";

fn traceparent(trace: &str) -> String {
    format!("00-{trace}-{CALLER}-01")
}

/// Export settings for a server: this receiver, batches sent every 100 ms.
fn otel_env(rx: &OtlpReceiver) -> Vec<(&'static str, String)> {
    vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", rx.endpoint.clone()),
        ("OTEL_BSP_SCHEDULE_DELAY", "100".into()),
    ]
}

fn env_refs<'a>(
    owned: &'a [(&'static str, String)],
    more: &[(&'a str, &'a str)],
) -> Vec<(&'a str, &'a str)> {
    owned
        .iter()
        .map(|(k, v)| (*k, v.as_str()))
        .chain(more.iter().copied())
        .collect()
}

/// The worker's run span (the engine's own run span, inside it, has no `user.id`).
fn is_run(s: &Span) -> bool {
    s.name == "run" && s.attr("user.id").is_some()
}

fn by_id<'a>(spans: &'a [Span], id: &str) -> Option<&'a Span> {
    spans.iter().find(|s| s.span_id == id)
}

/// `span`'s ancestors among `spans`, nearest first.
fn ancestors<'a>(spans: &'a [Span], span: &Span) -> Vec<&'a Span> {
    let mut out = Vec::new();
    let mut parent = span.parent_span_id.clone();
    while let Some(p) = by_id(spans, &parent) {
        out.push(p);
        parent = p.parent_span_id.clone();
    }
    out
}

fn under(spans: &[Span], span: &Span, ancestor: &Span) -> bool {
    ancestors(spans, span)
        .iter()
        .any(|a| a.span_id == ancestor.span_id)
}

async fn only_run(s: &TestServer, thread: &str) -> String {
    let (code, runs) = s.get_json(&format!("/threads/{thread}/runs")).await;
    assert_eq!(code, 200, "{runs}");
    runs[0]["run_id"].as_str().unwrap().to_string()
}

async fn trace_contexts_sqlite(s: &TestServer) -> Vec<Option<String>> {
    let path = s.sqlite_path().unwrap();
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    let rows: Vec<Option<String>> = sqlx::query_scalar("SELECT trace_context FROM runs")
        .fetch_all(&pool)
        .await
        .unwrap();
    pool.close().await;
    rows
}

/// Runs the ledger graph (three durable steps) to its end on a new thread, as the caller
/// whose span `traceparent` names; returns (thread, run).
async fn ledger_run_wait(s: &TestServer, trace: &str) -> (String, String) {
    let t = s.new_thread().await;
    let resp = s
        .client
        .post(s.url(&format!("/threads/{t}/runs/wait")))
        .header("traceparent", traceparent(trace))
        .json(&json!({"assistant_id": "ledger", "input": ledger_input(0)}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    let run = only_run(s, &t).await;
    (t, run)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_one_trace_from_the_request_to_its_checkpoint_writes() {
    let rx = OtlpReceiver::start().await;
    let env = otel_env(&rx);
    let s = TestServer::start_with(Backend::Sqlite, &env_refs(&env, &[FAULT])).await;
    let (t, run_id) = ledger_run_wait(&s, TRACE).await;

    let spans = rx
        .wait_for(
            "the run's request, run, nodes, steps and checkpoint writes",
            |spans| {
                let in_trace = |name: &str| {
                    spans
                        .iter()
                        .any(|s| s.trace_id == TRACE && s.name.starts_with(name))
                };
                in_trace("POST ")
                    && spans.iter().any(|s| s.trace_id == TRACE && is_run(s))
                    && in_trace("node ")
                    && spans
                        .iter()
                        .filter(|s| s.trace_id == TRACE && s.name.starts_with("step "))
                        .count()
                        >= 3
                    && in_trace("checkpoint.put")
            },
        )
        .await;
    assert!(
        !spans.iter().any(|s| s.name == "api_route"),
        "no start-up spans of the OpenAPI builder (aide=warn by default)"
    );
    let (requests, all_protobuf) = rx.requests();
    assert!(
        requests >= 1 && all_protobuf,
        "OTLP/HTTP with protobuf bodies"
    );

    // The request continues the caller's trace, as a server span named by its route.
    let request = spans
        .iter()
        .find(|s| s.trace_id == TRACE && s.name == "POST /threads/{thread_id}/runs/wait")
        .expect("the request's span");
    assert_eq!(request.parent_span_id, CALLER);
    assert_eq!(request.kind, 2, "a server span");
    assert_eq!(request.attr_str("http.request.method"), Some("POST"));
    assert_eq!(
        request.attr_str("http.route"),
        Some("/threads/{thread_id}/runs/wait")
    );
    assert_eq!(
        request.attr("http.response.status_code"),
        Some(&Attr::Int(200))
    );
    assert_eq!(
        request.resource.get("service.name"),
        Some(&Attr::Str("palgraph".into()))
    );

    // The run is the request's child, with its ids.
    let run = spans
        .iter()
        .find(|s| s.trace_id == TRACE && is_run(s))
        .unwrap();
    assert_eq!(run.parent_span_id, request.span_id);
    assert_eq!(run.attr_str("run_id"), Some(run_id.as_str()));
    assert_eq!(run.attr_str("thread_id"), Some(t.as_str()));
    assert_eq!(run.attr_str("graph"), Some("ledger"));
    let (_, api_run) = s.get_json(&format!("/threads/{t}/runs/{run_id}")).await;
    assert_eq!(
        run.attr_str("assistant_id"),
        api_run["assistant_id"].as_str()
    );
    assert!(run.attr_str("user.id").is_some_and(|u| !u.is_empty()));
    assert_eq!(run.attr_str("run.status"), Some("success"));

    // Nodes, durable steps and checkpoint writes sit under the run, in the same trace.
    let nodes: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("node "))
        .collect();
    assert!(!nodes.is_empty());
    for n in &nodes {
        assert_eq!(n.trace_id, TRACE, "{n:?}");
        assert!(under(&spans, n, run), "{} under the run", n.name);
        assert_eq!(n.name, format!("node {}", n.attr_str("node").unwrap()));
    }
    let steps: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("step "))
        .collect();
    assert_eq!(
        steps.len(),
        3,
        "the ledger's three durable steps: {steps:?}"
    );
    for st in &steps {
        assert_eq!(st.trace_id, TRACE);
        let parent = by_id(&spans, &st.parent_span_id).expect("a step's parent");
        assert!(
            parent.name.starts_with("node "),
            "a step is its node's child: {parent:?}"
        );
        assert_eq!(st.attr("step.replayed"), Some(&Attr::Bool(false)));
        // Its result is recorded with the checkpoint's pending writes.
        assert!(spans
            .iter()
            .any(|w| w.name == "checkpoint.put_writes" && w.parent_span_id == st.span_id));
    }
    let puts: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "checkpoint.put" && s.trace_id == TRACE)
        .collect();
    assert!(!puts.is_empty());
    for p in &puts {
        assert!(under(&spans, p, run), "a checkpoint write under the run");
        assert_eq!(p.attr_str("thread_id"), Some(t.as_str()));
    }

    // The trace context is stored with the run: the request's span.
    let stored = trace_contexts_sqlite(&s).await;
    assert_eq!(
        stored,
        vec![Some(format!("00-{TRACE}-{}-01", request.span_id))]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_llm_call_is_a_chat_span_with_the_gen_ai_attributes() {
    let fake = FakeOpenAi::inquiring(&["The leverage ratio ", "must be 3% [1]."]).await;
    let rx = OtlpReceiver::start().await;
    let env = otel_env(&rx);
    let s = TestServer::start_with(
        Backend::Sqlite,
        &env_refs(
            &env,
            &[
                ("OPENAI_API_KEY", "sk-test"),
                ("OPENAI_BASE_URL", fake.base_url.as_str()),
            ],
        ),
    )
    .await;
    let (code, docs) = s.get_json("/documents").await;
    assert_eq!(code, 200, "{docs}");
    let doc = docs[0]["id"].as_str().unwrap().to_string();
    let mut sse = s
        .sse(s.client.post(s.url("/chat")).json(&json!({
            "message": "What is the leverage ratio?", "tagged_doc_ids": [doc]
        })))
        .await;
    let events = sse.all().await;
    assert!(
        events.iter().any(|e| e.data["type"] == "response"),
        "{events:?}"
    );
    let calls = fake.received().len();
    assert!(calls >= 2, "an intent call and a streamed answer: {calls}");

    let spans = rx
        .wait_for(&format!("a span per LLM call ({calls})"), |spans| {
            // The run span ends last: after the run is recorded, once the answer is out.
            spans.iter().any(is_run)
                && spans.iter().filter(|s| s.name.starts_with("chat ")).count() >= calls
                && spans.iter().any(|s| {
                    s.name.starts_with("chat ")
                        && s.attr("gen_ai.usage.output_tokens") == Some(&Attr::Int(12))
                })
        })
        .await;
    let chats: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("chat "))
        .collect();
    assert_eq!(chats.len(), calls, "one span per call the model server got");
    let run = spans.iter().find(|s| is_run(s)).expect("the chat's run");
    for c in &chats {
        let model = c
            .attr_str("gen_ai.request.model")
            .expect("gen_ai.request.model");
        assert_eq!(c.name, format!("chat {model}"));
        assert_eq!(c.kind, 3, "a client span");
        assert_eq!(c.attr_str("gen_ai.operation.name"), Some("chat"));
        assert_eq!(c.attr_str("gen_ai.provider.name"), Some("openai"));
        assert_eq!(c.attr_str("gen_ai.response.model"), Some(model));
        let tokens = (
            c.attr("gen_ai.usage.input_tokens").and_then(Attr::int),
            c.attr("gen_ai.usage.output_tokens").and_then(Attr::int),
        );
        assert!(
            tokens == (Some(100), Some(10)) || tokens == (Some(300), Some(12)),
            "{tokens:?}"
        );
        assert!(
            matches!(c.attr("palgraph.llm.cost_usd"), Some(Attr::Float(f)) if *f >= 0.0),
            "{c:?}"
        );
        assert_eq!(c.trace_id, run.trace_id);
        assert!(under(&spans, c, run), "an LLM call under its run");
        assert!(
            ancestors(&spans, c)
                .iter()
                .any(|a| a.name.starts_with("node ")),
            "and under its node"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_taken_over_after_a_sigkill_continues_its_trace() {
    const TAKEN: &str = "0af7651916cd43dd8448eb211c80319c";
    let rx = OtlpReceiver::start().await;
    let env = otel_env(&rx);
    let a = TestServer::start_with(
        Backend::Postgres,
        &env_refs(
            &env,
            &[
                FAULT,
                ("PALGRAPH_LEASE_SECS", "2"),
                ("OTEL_RESOURCE_ATTRIBUTES", "replica=a"),
            ],
        ),
    )
    .await;
    let b = a
        .replica(&[("OTEL_RESOURCE_ATTRIBUTES", "replica=b")])
        .await;
    let t = a.new_thread().await;
    let resp = a
        .client
        .post(a.url(&format!("/threads/{t}/runs")))
        .header("traceparent", traceparent(TAKEN))
        .json(&json!({"assistant_id": "ledger", "input": ledger_input(1500)}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let run_id = resp.json::<Value>().await.unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    // Kill the replica that took the run once it is inside it (its first durable step is
    // recorded); the other one takes it over when the lease runs out.
    let pool = a.pg_pool().await.unwrap();
    let started = std::time::Instant::now();
    let holder: i64 = loop {
        let pid: Option<i64> = sqlx::query_scalar(
            "SELECT pid FROM ledger_effects WHERE run_id = $1 ORDER BY at_ms LIMIT 1",
        )
        .bind(&run_id)
        .fetch_optional(&pool)
        .await
        .unwrap();
        if let Some(pid) = pid {
            break pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no replica ran the run"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let mut servers = [("a", a), ("b", b)];
    let (killed, survivor) = if servers[0].1.pid().map(i64::from) == Some(holder) {
        (0, 1)
    } else {
        (1, 0)
    };
    assert_eq!(servers[killed].1.pid().map(i64::from), Some(holder));
    servers[killed].1.kill().await;
    let (taker, b) = (servers[survivor].0, &servers[survivor].1);
    let statuses = wait_all_final(b, &[(t.clone(), run_id.clone())], Duration::from_secs(60)).await;
    assert_eq!(statuses, vec!["success".to_string()]);

    let replica = |s: &Span| {
        s.resource
            .get("replica")
            .and_then(Attr::str)
            .map(str::to_string)
    };
    let spans = rx
        .wait_for("the taker's run span and nodes", |spans| {
            spans
                .iter()
                .any(|s| is_run(s) && replica(s).as_deref() == Some(taker))
                && spans
                    .iter()
                    .any(|s| s.name.starts_with("node ") && replica(s).as_deref() == Some(taker))
        })
        .await;
    let b_run = spans
        .iter()
        .find(|s| is_run(s) && replica(s).as_deref() == Some(taker))
        .unwrap();
    assert_eq!(b_run.attr_str("run_id"), Some(run_id.as_str()));
    assert_eq!(
        b_run.trace_id, TAKEN,
        "the run continues the trace it was created in"
    );
    assert!(
        b_run.attr("attempt").and_then(Attr::int) >= Some(2),
        "{b_run:?}"
    );
    // Its parent is the span A's request ran in (stored with the run), not one of its own.
    let stored: Option<String> =
        sqlx::query_scalar("SELECT trace_context FROM runs WHERE run_id = $1")
            .bind(&run_id)
            .fetch_one(&pool)
            .await
            .unwrap();
    let stored = stored.expect("a trace context stored with the run");
    assert!(stored.starts_with(&format!("00-{TAKEN}-")), "{stored}");
    assert_eq!(
        stored.split('-').nth(2),
        Some(b_run.parent_span_id.as_str())
    );
    if let Some(req) = spans
        .iter()
        .find(|s| s.name.starts_with("POST ") && s.trace_id == TAKEN)
    {
        assert_eq!(req.span_id, b_run.parent_span_id);
        assert_eq!(replica(req).as_deref(), Some("a"));
    }
    for n in spans
        .iter()
        .filter(|s| s.name.starts_with("node ") && replica(s).as_deref() == Some(taker))
    {
        assert_eq!(n.trace_id, TAKEN);
        assert!(under(&spans, n, b_run));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_cron_tick_is_a_trace_with_its_run_inside() {
    let rx = OtlpReceiver::start().await;
    let env = otel_env(&rx);
    let s = TestServer::start_with(
        Backend::Sqlite,
        &env_refs(&env, &[FAULT, ("PALGRAPH_CRON_POLL_MS", "20")]),
    )
    .await;
    let (code, cron) = s
        .post_json(
            "/runs/crons",
            json!({"assistant_id": "ledger", "schedule": "* * * * * *", "input": ledger_input(0)}),
        )
        .await;
    assert_eq!(code, 200, "{cron}");
    let cron_id = cron["cron_id"].as_str().unwrap().to_string();
    let spans = rx
        .wait_for("two ticks' runs", |spans| {
            spans
                .iter()
                .filter(|r| {
                    is_run(r)
                        && spans
                            .iter()
                            .any(|t| t.name == "cron.tick" && t.span_id == r.parent_span_id)
                })
                .count()
                >= 2
        })
        .await;
    let ticks: Vec<&Span> = spans.iter().filter(|s| s.name == "cron.tick").collect();
    for tick in &ticks {
        assert_eq!(tick.parent_span_id, "", "a tick is a root span");
        assert_eq!(tick.attr_str("cron_id"), Some(cron_id.as_str()));
    }
    let traces: std::collections::BTreeSet<&str> =
        ticks.iter().map(|t| t.trace_id.as_str()).collect();
    assert_eq!(traces.len(), ticks.len(), "one trace per tick");
    for r in spans.iter().filter(|r| is_run(r)) {
        let tick = by_id(&spans, &r.parent_span_id).expect("a cron run's parent: its tick");
        assert_eq!(tick.name, "cron.tick");
        assert_eq!(r.trace_id, tick.trace_id);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_endpoint_or_with_the_sdk_disabled_nothing_is_exported() {
    let rx = OtlpReceiver::start().await;
    // No endpoint: no trace context is kept with the run (no OpenTelemetry layer at all).
    let plain = TestServer::start_with(Backend::Sqlite, &[FAULT]).await;
    ledger_run_wait(&plain, TRACE).await;
    assert_eq!(trace_contexts_sqlite(&plain).await, vec![None]);
    // An endpoint, but OTEL_SDK_DISABLED=true: the same, and nothing reaches the receiver,
    // not even at shutdown (SIGTERM, when the exporter would flush).
    let env = otel_env(&rx);
    let mut disabled = TestServer::start_with(
        Backend::Sqlite,
        &env_refs(&env, &[FAULT, ("OTEL_SDK_DISABLED", "true")]),
    )
    .await;
    ledger_run_wait(&disabled, TRACE).await;
    assert_eq!(trace_contexts_sqlite(&disabled).await, vec![None]);
    assert!(disabled.terminate().await.success());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rx.requests().0, 0, "no export request");
    assert!(rx.spans().is_empty());
}

#[tokio::test]
async fn a_bad_otel_setting_stops_the_start_and_names_the_variable() {
    for (name, value) in [
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ("OTEL_TRACES_SAMPLER", "sometimes"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "no-equals-sign"),
    ] {
        let db = common::temp_sqlite_path();
        let out = tokio::time::timeout(
            Duration::from_secs(30),
            tokio::process::Command::new(env!("CARGO_BIN_EXE_palgraph"))
                .arg("serve")
                .env("PALGRAPH_PORT", "0")
                .env("PALGRAPH_DB", &db)
                .env_remove("DATABASE_URL")
                .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
                .env(name, value)
                .output(),
        )
        .await
        .expect("palgraph exits at once")
        .unwrap();
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("{name}=\"{value}\"")),
            "the error names {name}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "it never listened");
        assert!(!db.exists(), "nothing was created");
    }
}
