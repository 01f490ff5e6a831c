//! The tool-calling agent on the offline scripted model: parallel tool calls, tool errors
//! shown to the model, retries, streamed tokens, approval before a side effect (run once),
//! the limit of model calls; and the OpenAI client against a fake server.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use palgraph::{
    Event, Message, MessageKind, Resume, RetryPolicy, RunConfig, RunInput, RunStatus, StreamModes,
};
use palgraph_agents::{
    create_react_agent, tool, AgentBuilder, AgentStateUpdate, ChatModel, ModelError, ModelRequest,
    ModelTurn, OpenAiModel, ScriptedModel, Tool, NEED_MORE_STEPS,
};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

fn add() -> Arc<dyn Tool> {
    tool("add", "Adds two numbers", |x: Add| async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok::<_, String>(x.a + x.b)
    })
}

fn turn(text: &str) -> RunInput<palgraph_agents::AgentState> {
    RunInput::Turn(AgentStateUpdate::default().messages(vec![Message::human(text)]))
}

#[tokio::test]
async fn parallel_tool_calls_run_and_the_answer_streams() {
    let model = ScriptedModel::from_fn(|req: &ModelRequest<'_>| {
        let results: Vec<&str> = req
            .messages
            .iter()
            .filter(|m| m.kind == MessageKind::Tool)
            .map(|m| m.content.as_str())
            .collect();
        Ok(if results.is_empty() {
            ModelTurn::call("add", json!({"a": 1, "b": 2})).and_call("add", json!({"a": 3, "b": 4}))
        } else {
            ModelTurn::text(format!("the sums are {}", results.join(" and ")))
        })
    });
    let agent = create_react_agent(Arc::new(model.clone()), [add()]).unwrap();
    let mut stream = agent.stream(
        RunConfig::new("t1").stream_modes(StreamModes::ALL),
        turn("add things"),
    );
    let mut text = String::new();
    while let Some(e) = stream.next().await {
        if let Event::MessageDelta { delta, .. } = e.event {
            text.push_str(&delta);
        }
    }
    let out = stream.outcome().await.unwrap();
    assert!(matches!(out.status, RunStatus::Completed));
    let m = &out.state.messages;
    assert_eq!(m.len(), 5, "{m:?}");
    assert_eq!(m[2].kind, MessageKind::Tool);
    assert_eq!((m[2].content.as_str(), m[3].content.as_str()), ("3", "7"));
    assert_eq!(m[2].metadata["tool_call_id"], "call_0");
    assert_eq!(m[4].content, "the sums are 3 and 7");
    assert_eq!(text, "the sums are 3 and 7");
    assert_eq!(model.calls(), 2);
}

#[tokio::test]
async fn a_tool_error_goes_back_to_the_model() {
    let boom = tool("boom", "Always fails", |_: serde_json::Value| async move {
        Err::<(), _>("the disk is full")
    });
    let model = ScriptedModel::from_fn(|req: &ModelRequest<'_>| {
        Ok(match req.messages.last() {
            Some(m) if m.kind == MessageKind::Tool => {
                ModelTurn::text(format!("saw: {}", m.content))
            }
            _ => ModelTurn::call("boom", json!({})).and_call("nope", json!({})),
        })
    });
    let agent = create_react_agent(Arc::new(model), [boom]).unwrap();
    let out = agent
        .invoke(RunConfig::new("t2"), turn("go"))
        .await
        .unwrap();
    let m = &out.state.messages;
    assert_eq!(m[2].content, "Error: the disk is full");
    assert_eq!(m[3].content, "Error: there is no tool named `nope`");
    assert_eq!(m[4].content, "saw: Error: there is no tool named `nope`");
}

#[tokio::test]
async fn a_transient_model_failure_is_retried() {
    let n = Arc::new(AtomicUsize::new(0));
    let seen = n.clone();
    let model = ScriptedModel::from_fn(move |_: &ModelRequest<'_>| {
        if seen.fetch_add(1, Ordering::SeqCst) == 0 {
            Err(ModelError::Transient("429".into()))
        } else {
            Ok(ModelTurn::text("fine"))
        }
    });
    let agent = AgentBuilder::new(Arc::new(model))
        .retry(
            RetryPolicy::attempts(3)
                .initial_interval(Duration::from_millis(1))
                .no_jitter(),
        )
        .build()
        .unwrap();
    let out = agent
        .invoke(RunConfig::new("t3"), turn("hi"))
        .await
        .unwrap();
    assert_eq!(out.state.messages[1].content, "fine");
    assert_eq!(n.load(Ordering::SeqCst), 2);
    let fatal = ScriptedModel::from_fn(|_: &ModelRequest<'_>| Err(ModelError::Fatal("400".into())));
    let agent = create_react_agent(Arc::new(fatal.clone()), []).unwrap();
    assert!(agent
        .invoke(RunConfig::new("t3b"), turn("hi"))
        .await
        .is_err());
    assert_eq!(fatal.calls(), 1);
}

fn mailer(sent: Arc<AtomicUsize>) -> Arc<dyn Tool> {
    tool("send", "Sends a mail", move |_: serde_json::Value| {
        let sent = sent.clone();
        async move { Ok::<_, String>(format!("sent #{}", sent.fetch_add(1, Ordering::SeqCst) + 1)) }
    })
}

fn mail_model() -> ScriptedModel {
    ScriptedModel::from_fn(|req: &ModelRequest<'_>| {
        Ok(match req.messages.last() {
            Some(m) if m.kind == MessageKind::Tool => ModelTurn::text(&m.content),
            _ => ModelTurn::call("send", json!({"to": "ann"}))
                .and_call("add", json!({"a": 1, "b": 1})),
        })
    })
}

#[tokio::test]
async fn approval_stops_before_the_side_effect_which_then_runs_once() {
    let sent = Arc::new(AtomicUsize::new(0));
    let agent = AgentBuilder::new(Arc::new(mail_model()))
        .tools([mailer(sent.clone()), add()])
        .approve("send")
        .build()
        .unwrap();
    let out = agent
        .invoke(RunConfig::new("t4"), turn("mail ann"))
        .await
        .unwrap();
    let RunStatus::Interrupted(pending) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(pending[0].value["tool_calls"][0]["name"], "send");
    assert_eq!(pending[0].value["tool_calls"].as_array().unwrap().len(), 1);
    assert_eq!(sent.load(Ordering::SeqCst), 0);
    let out = agent
        .invoke(
            RunConfig::new("t4"),
            RunInput::Resume(Resume::Value(json!("approve"))),
        )
        .await
        .unwrap();
    assert!(matches!(out.status, RunStatus::Completed));
    assert_eq!(sent.load(Ordering::SeqCst), 1);
    assert_eq!(out.state.messages.last().unwrap().content, "2");
    assert_eq!(out.state.messages[2].content, "sent #1");
    // A resume with nothing pending is refused and runs nothing again.
    let again = agent
        .invoke(
            RunConfig::new("t4"),
            RunInput::Resume(Resume::Value(json!("approve"))),
        )
        .await;
    assert!(again.is_err());
    assert_eq!(sent.load(Ordering::SeqCst), 1);

    // Rejected: the model is told why; nothing is sent.
    agent
        .invoke(RunConfig::new("t5"), turn("mail ann"))
        .await
        .unwrap();
    let out = agent
        .invoke(
            RunConfig::new("t5"),
            RunInput::Resume(Resume::Value(
                json!({"approve": false, "reason": "not today"}),
            )),
        )
        .await
        .unwrap();
    assert_eq!(sent.load(Ordering::SeqCst), 1);
    assert_eq!(
        out.state.messages[2].content,
        "Error: the call was not approved: not today"
    );
}

#[tokio::test]
async fn the_agent_stops_at_its_limit_of_model_calls() {
    let model = ScriptedModel::from_fn(|_: &ModelRequest<'_>| {
        Ok(ModelTurn::call("add", json!({"a": 1, "b": 1})))
    });
    let agent = AgentBuilder::new(Arc::new(model.clone()))
        .tool(add())
        .max_model_calls(3)
        .build()
        .unwrap();
    let out = agent
        .invoke(RunConfig::new("t6"), turn("loop"))
        .await
        .unwrap();
    assert_eq!(model.calls(), 3);
    assert_eq!(out.state.messages.last().unwrap().content, NEED_MORE_STEPS);
    // The count is per turn.
    agent
        .invoke(RunConfig::new("t6"), turn("again"))
        .await
        .unwrap();
    assert_eq!(model.calls(), 6);
}

/// An OpenAI-compatible server streaming one text delta and one tool call in pieces.
async fn fake_openai() -> String {
    use axum::routing::post;
    let body = [
        json!({"choices": [{"index": 0, "delta": {"content": "Let me "}}]}),
        json!({"choices": [{"index": 0, "delta": {"content": "add."}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "add", "arguments": "{\"a\": 2,"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": " \"b\": 5}"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        json!({"model": "gpt-test-0613", "choices": [], "usage": {"prompt_tokens": 42, "completion_tokens": 9, "total_tokens": 51}}),
    ]
    .iter()
    .map(|e| format!("data: {e}\n\n"))
    .collect::<String>()
        + "data: [DONE]\n\n";
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post(move |axum::Json(req): axum::Json<serde_json::Value>| {
            let body = body.clone();
            async move {
                assert_eq!(req["tools"][0]["function"]["name"], "add");
                assert_eq!(req["messages"][0]["role"], "system");
                assert_eq!(req["stream_options"]["include_usage"], true);
                ([("content-type", "text/event-stream")], body)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/v1")
}

/// The spans opened while it is installed: name and fields (as text), by span.
#[derive(Clone, Default)]
struct Spans(Arc<std::sync::Mutex<Vec<(String, FieldMap)>>>);

type FieldMap = std::collections::BTreeMap<String, String>;

struct Fields<'a>(&'a mut std::collections::BTreeMap<String, String>);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Spans {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut fields = std::collections::BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let mut all = self.0.lock().unwrap();
        let i = usize::try_from(id.into_u64()).unwrap() - 1;
        if all.len() <= i {
            all.resize(i + 1, Default::default());
        }
        all[i] = (attrs.metadata().name().to_string(), fields);
    }

    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let i = usize::try_from(id.into_u64()).unwrap() - 1;
        values.record(&mut Fields(&mut self.0.lock().unwrap()[i].1));
    }
}

#[tokio::test]
async fn the_openai_client_streams_text_and_tool_calls() {
    use tracing_subscriber::layer::SubscriberExt;
    let spans = Spans::default();
    let _subscriber =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(spans.clone()));
    let base = fake_openai().await;
    let model = OpenAiModel::new(Some(&base), "sk-test", "gpt-test").unwrap();
    let tokens = std::sync::Mutex::new(String::new());
    let messages = [Message::human("add 2 and 5")];
    let specs = [add().spec()];
    // What the call records, on a recorder of this test's own (a current-thread runtime).
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let seen = recorder.handle();
    let local = metrics::set_default_local_recorder(&recorder);
    let turn = model
        .complete(
            ModelRequest {
                system: Some("be brief"),
                messages: &messages,
                tools: &specs,
            },
            &|t: &str| tokens.lock().unwrap().push_str(t),
        )
        .await
        .unwrap();
    drop(local);
    let text = seen.render();
    for line in [
        "palgraph_llm_tokens_total{model=\"gpt-test\",direction=\"input\"} 42",
        "palgraph_llm_tokens_total{model=\"gpt-test\",direction=\"output\"} 9",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
    }
    assert_eq!(turn.content, "Let me add.");
    assert_eq!(*tokens.lock().unwrap(), "Let me add.");
    assert_eq!(turn.tool_calls[0].id, "c1");
    assert_eq!(turn.tool_calls[0].args, json!({"a": 2, "b": 5}));
    // The call's span, by the OpenTelemetry GenAI conventions.
    let spans = spans.0.lock().unwrap().clone();
    let (_, chat) = spans
        .iter()
        .find(|(name, _)| name == "chat")
        .expect("a chat span");
    for (key, value) in [
        ("otel.name", "chat gpt-test"),
        ("otel.kind", "client"),
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.provider.name", "openai"),
        ("gen_ai.request.model", "gpt-test"),
        ("gen_ai.response.model", "gpt-test-0613"),
        ("gen_ai.usage.input_tokens", "42"),
        ("gen_ai.usage.output_tokens", "9"),
    ] {
        assert_eq!(
            chat.get(key).map(String::as_str),
            Some(value),
            "{key}: {chat:?}"
        );
    }
}

/// An OpenAI-compatible server whose stream arrives in network chunks that split
/// multi-byte characters (and a `data:` line) between them.
async fn fake_openai_in_pieces(text: &str) -> String {
    use axum::routing::post;
    let events = [
        json!({"choices": [{"index": 0, "delta": {"content": text}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ]
    .iter()
    .map(|e| format!("data: {e}\n\n"))
    .collect::<String>()
        + "data: [DONE]\n\n";
    let bytes = events.into_bytes();
    // Cut inside each multi-byte character: every piece but the last ends mid-character.
    let mut cuts: Vec<usize> = (1..bytes.len())
        .filter(|&i| (bytes[i] & 0xC0) == 0x80 && (bytes[i - 1] & 0xC0) != 0x80)
        .collect();
    cuts.push(bytes.len());
    let mut pieces = Vec::new();
    let mut from = 0;
    for to in cuts {
        pieces.push(bytes[from..to].to_vec());
        from = to;
    }
    assert!(
        pieces.len() > 2,
        "the text has multi-byte characters to split"
    );
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post(move || {
            let pieces = pieces.clone();
            async move {
                // Each piece its own write, a moment apart: the client reads them apart.
                let body =
                    futures_util::stream::unfold(pieces.into_iter(), |mut rest| async move {
                        let piece = rest.next()?;
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        Some((Ok::<_, std::convert::Infallible>(piece), rest))
                    });
                (
                    [("content-type", "text/event-stream")],
                    axum::body::Body::from_stream(body),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/v1")
}

#[tokio::test]
async fn a_character_split_between_network_chunks_arrives_whole() {
    let text = "Grüße, 日本の規程 — naïve café ✓";
    let base = fake_openai_in_pieces(text).await;
    let model = OpenAiModel::new(Some(&base), "sk-test", "gpt-test").unwrap();
    let tokens = std::sync::Mutex::new(String::new());
    let messages = [Message::human("greet")];
    let turn = model
        .complete(
            ModelRequest {
                system: None,
                messages: &messages,
                tools: &[],
            },
            &|t: &str| tokens.lock().unwrap().push_str(t),
        )
        .await
        .unwrap();
    assert_eq!(turn.content, text);
    assert_eq!(*tokens.lock().unwrap(), text);
}

#[tokio::test]
async fn a_refused_key_is_fatal_and_a_rate_limit_is_transient() {
    use axum::http::StatusCode;
    use axum::routing::post;
    for (status, kind, transient) in [
        (StatusCode::UNAUTHORIZED, "invalid_request_error", false),
        (StatusCode::TOO_MANY_REQUESTS, "requests", true),
        (StatusCode::TOO_MANY_REQUESTS, "insufficient_quota", false),
        (StatusCode::BAD_GATEWAY, "server_error", true),
    ] {
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            post(move || async move {
                (
                    status,
                    axum::Json(json!({"error": {"message": "no", "type": kind, "code": kind}})),
                )
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let model = OpenAiModel::new(Some(&format!("http://{addr}/v1")), "k", "m").unwrap();
        let messages = [Message::human("hi")];
        let err = model
            .complete(
                ModelRequest {
                    system: None,
                    messages: &messages,
                    tools: &[],
                },
                &|_: &str| {},
            )
            .await
            .unwrap_err();
        assert_eq!(
            matches!(err, ModelError::Transient(_)),
            transient,
            "{status} {kind}: {err}"
        );
    }
}

#[tokio::test]
async fn a_tool_that_ran_is_not_run_again_when_its_node_runs_again() {
    use palgraph::{CancelReason, Cancellation};
    let sent = Arc::new(AtomicUsize::new(0));
    let slow_calls = Arc::new(AtomicUsize::new(0));
    let calls = slow_calls.clone();
    let slow = tool(
        "slow",
        "Hangs the first time",
        move |_: serde_json::Value| {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                if n == 0 {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                }
                Ok::<_, String>("slow done")
            }
        },
    );
    let model = ScriptedModel::from_fn(|req: &ModelRequest<'_>| {
        Ok(match req.messages.last() {
            Some(m) if m.kind == MessageKind::Tool => {
                let results: Vec<&str> = req
                    .messages
                    .iter()
                    .filter(|m| m.kind == MessageKind::Tool)
                    .map(|m| m.content.as_str())
                    .collect();
                ModelTurn::text(results.join(", "))
            }
            _ => ModelTurn::call("send", json!({})).and_call("slow", json!({})),
        })
    });
    let agent = AgentBuilder::new(Arc::new(model))
        .tools([mailer(sent.clone()), slow])
        .build()
        .unwrap()
        .with_cancel_grace(Duration::from_millis(20));
    // The run stops (here: cancelled; in production also a crash) while `slow` hangs and
    // after `send` ran.
    let cancel = Cancellation::new();
    let watcher = {
        let (cancel, sent, slow_calls) = (cancel.clone(), sent.clone(), slow_calls.clone());
        tokio::spawn(async move {
            while sent.load(Ordering::SeqCst) == 0 || slow_calls.load(Ordering::SeqCst) == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            cancel.cancel(CancelReason::UserCancelled);
        })
    };
    let out = agent
        .invoke(RunConfig::new("t7").cancel(cancel), turn("go"))
        .await
        .unwrap();
    watcher.await.unwrap();
    assert!(
        matches!(out.status, RunStatus::Cancelled(_)),
        "{:?}",
        out.status
    );
    assert_eq!(sent.load(Ordering::SeqCst), 1);
    // Continuing runs the tools node again: `send`'s recorded result is reused.
    let out = agent
        .invoke(RunConfig::new("t7"), RunInput::Continue)
        .await
        .unwrap();
    assert!(
        matches!(out.status, RunStatus::Completed),
        "{:?}",
        out.status
    );
    assert_eq!(sent.load(Ordering::SeqCst), 1, "send ran once");
    assert_eq!(slow_calls.load(Ordering::SeqCst), 2);
    assert_eq!(
        out.state.messages.last().unwrap().content,
        "sent #1, slow done"
    );
}

#[tokio::test]
async fn each_model_call_is_recorded_on_the_agent_node_with_its_tokens() {
    use palgraph::observe::TaskRecord;
    let base = fake_openai().await;
    let model = OpenAiModel::new(Some(&base), "sk-test", "gpt-test").unwrap();
    let agent = AgentBuilder::new(Arc::new(model))
        .system_prompt("be brief")
        .tool(add())
        .max_model_calls(1)
        .build()
        .unwrap();
    agent
        .invoke(RunConfig::new("t-observe"), turn("add 2 and 5"))
        .await
        .unwrap();
    let history = agent
        .get_state_history("t-observe", &palgraph::ListOptions::default())
        .await
        .unwrap();
    let records: Vec<TaskRecord> = history
        .iter()
        .rev()
        .flat_map(|s| TaskRecord::of_metadata(&s.metadata))
        .collect();
    let nodes: Vec<&str> = records.iter().map(|r| r.node.as_str()).collect();
    assert_eq!(nodes, ["agent", "tools", "agent"]);
    let first = &records[0].llm_calls;
    assert_eq!(first.len(), 1, "{records:?}");
    assert_eq!(first[0].model, "gpt-test");
    assert_eq!((first[0].input_tokens, first[0].output_tokens), (42, 9));
    assert!(records[1].llm_calls.is_empty(), "tools call no model");
    assert!(
        records[2].llm_calls.is_empty(),
        "past its limit the agent answers without a call"
    );
}
