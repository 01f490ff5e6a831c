//! The async-openai client against an OpenAI-compatible server speaking the real wire
//! format: structured outputs with the schemars schema, streamed answers with usage,
//! retries on 429, 5xx and timeouts, no retry on 400, silence inside a stream, a stream cut
//! before the model finished (a retryable failure, never a short answer), a stream with no
//! `finish_reason` that ends with its usage, an error streamed by the server, cost per model,
//! and the whole `inquire` node streaming through it (and retrying a cut stream).

#![allow(clippy::unwrap_used)]

use crate::fake_openai;
use crate::support;

use std::sync::Arc;
use std::time::Duration;

use fake_openai::{FakeOpenAi, Reply as Fake};
use futures_util::StreamExt;
use palgraph::stream::VecSink;
use palgraph::{Event, RunInput, RunStatus};
use palgraph_nodes::actions::{self, inquire};
use palgraph_nodes::llm::{
    strict_schema, AnswerChunk, AnswerRequest, IntentDecision, IntentRequest, Llm, LlmError,
    OpenAiConfig, OpenAiLlm, TaskModels,
};
use palgraph_nodes::{Action, DocRef, Passage};
use serde_json::{json, Value};

fn client(server: &FakeOpenAi, attempts: u32) -> OpenAiLlm {
    let mut models = TaskModels::all("gpt-4o-mini");
    models.intent = Some("gpt-4o".into());
    let config = OpenAiConfig::new("sk-test")
        .with_base_url(server.base_url.clone())
        .with_models(models)
        .with_retry(
            palgraph::RetryPolicy::attempts(attempts)
                .initial_interval(Duration::from_millis(5))
                .max_interval(Duration::from_millis(20)),
        )
        .with_timeouts(Duration::from_millis(500), Duration::from_millis(500));
    OpenAiLlm::new(config).unwrap()
}

fn decision() -> Value {
    json!({
        "action": "audit", "requested_actions": ["audit"], "confidence": 0.92,
        "enable_web_search": false, "multi_action_detected": false, "reasoning": "asks to check a text"
    })
}

fn intent_request() -> IntentRequest {
    IntentRequest {
        message: "Check this against the AML policy".into(),
        history: vec![],
    }
}

fn completion(content: &Value) -> Fake {
    Fake::Completion {
        content: content.to_string(),
        prompt_tokens: 1000,
        completion_tokens: 200,
    }
}

#[tokio::test]
async fn structured_output_sends_the_schemars_schema_and_prices_the_call() {
    let server = FakeOpenAi::start(vec![completion(&decision())]).await;
    let reply = client(&server, 1)
        .classify_intent(&intent_request())
        .await
        .unwrap();
    assert_eq!(reply.value.action, Action::Audit);
    assert_eq!(reply.value.confidence, 0.92);
    assert_eq!(reply.usage.model, "gpt-4o");
    assert_eq!(reply.usage.total_tokens(), 1200);
    let expected = (1000.0 * 2.50 + 200.0 * 10.00) / 1_000_000.0;
    assert!((reply.usage.cost_usd - expected).abs() < 1e-12);

    let sent = server.received();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].authorization.as_deref(), Some("Bearer sk-test"));
    let body = &sent[0].body;
    assert_eq!(body["model"], "gpt-4o", "the intent task's own model");
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(
        body["response_format"]["json_schema"]["name"],
        "intent_decision"
    );
    assert_eq!(body["response_format"]["json_schema"]["strict"], true);
    assert_eq!(
        body["response_format"]["json_schema"]["schema"],
        strict_schema::<IntentDecision>()
    );
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][1]["role"], "user");
    assert!(body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .ends_with("Message: Check this against the AML policy"));
    assert!(body.get("stream").is_none());
}

#[tokio::test]
async fn rate_limits_are_retried_with_backoff_until_they_pass() {
    let limited = Fake::Error {
        status: 429,
        message: "Rate limit reached".into(),
    };
    let server = FakeOpenAi::start(vec![limited.clone(), limited, completion(&decision())]).await;
    let reply = client(&server, 4)
        .classify_intent(&intent_request())
        .await
        .unwrap();
    assert_eq!(reply.value.action, Action::Audit);
    assert_eq!(server.received().len(), 3);
}

#[tokio::test]
async fn rate_limits_on_every_attempt_are_a_rate_limit_error() {
    let limited = Fake::Error {
        status: 429,
        message: "Rate limit reached".into(),
    };
    let server = FakeOpenAi::start(vec![limited.clone(), limited.clone(), limited]).await;
    let err = client(&server, 2)
        .classify_intent(&intent_request())
        .await
        .unwrap_err();
    assert!(
        matches!(err, LlmError::RateLimited { attempts: 2, .. }),
        "{err}"
    );
    assert!(err.is_transient());
    assert!(err.to_string().contains("Rate limit reached"));
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn running_out_of_quota_is_not_retried() {
    let server = FakeOpenAi::start(vec![Fake::OutOfQuota, completion(&decision())]).await;
    let err = client(&server, 4)
        .classify_intent(&intent_request())
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Api { status: 429, .. }), "{err}");
    assert!(!err.is_transient());
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn server_errors_are_retried_but_bad_requests_are_not() {
    let server = FakeOpenAi::start(vec![
        Fake::Error {
            status: 500,
            message: "boom".into(),
        },
        completion(&decision()),
    ])
    .await;
    assert!(client(&server, 3)
        .classify_intent(&intent_request())
        .await
        .is_ok());
    assert_eq!(server.received().len(), 2);

    let server = FakeOpenAi::start(vec![Fake::Error {
        status: 400,
        message: "bad schema".into(),
    }])
    .await;
    let err = client(&server, 3)
        .classify_intent(&intent_request())
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Api { status: 400, .. }), "{err}");
    assert!(!err.is_transient());
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn a_timeout_is_retried() {
    let server = FakeOpenAi::start(vec![
        Fake::Silence(Duration::from_secs(5)),
        completion(&decision()),
    ])
    .await;
    let reply = client(&server, 2)
        .classify_intent(&intent_request())
        .await
        .unwrap();
    assert_eq!(reply.value.action, Action::Audit);
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn output_that_misses_the_schema_is_a_clear_error() {
    let server = FakeOpenAi::start(vec![completion(&json!({"action": "dance"}))]).await;
    let err = client(&server, 3)
        .classify_intent(&intent_request())
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::BadOutput(_)), "{err}");
    assert_eq!(server.received().len(), 1, "a bad answer is not retried");
}

fn answer_request() -> AnswerRequest {
    AnswerRequest {
        action: Action::Summarize,
        question: "Summarize".into(),
        documents: vec![DocRef {
            id: "d1".into(),
            title: "Policy".into(),
        }],
        versions: vec![],
        editions: vec![],
        passages: vec![Passage {
            number: 1,
            doc_id: "d1".into(),
            title: "Policy".into(),
            heading: Some("Rules".into()),
            clause: None,
            lead: None,
            text: "Records must be kept for 5 years.".into(),
            score: 0.0,
        }],
        retrieval_confidence: 1.0,
        audit_text: None,
        web_search_query: None,
        history: vec![],
    }
}

#[tokio::test]
async fn a_streamed_answer_yields_its_chunks_then_its_usage() {
    let server = FakeOpenAi::start(vec![Fake::Stream {
        deltas: vec!["Records ".into(), "are kept ".into(), "5 years [1].".into()],
        prompt_tokens: 300,
        completion_tokens: 12,
        stall_after: None,
    }])
    .await;
    let stream = client(&server, 1).answer(&answer_request()).await.unwrap();
    let items: Vec<AnswerChunk> = stream.map(|c| c.unwrap()).collect().await;
    let text: String = items
        .iter()
        .filter_map(|c| match c {
            AnswerChunk::Text(t) => Some(t.as_str()),
            AnswerChunk::Usage(_) | AnswerChunk::Finished(_) => None,
        })
        .collect();
    assert_eq!(text, "Records are kept 5 years [1].");
    assert_eq!(
        items
            .iter()
            .filter(|c| matches!(c, AnswerChunk::Text(_)))
            .count(),
        3
    );
    assert!(
        items.contains(&AnswerChunk::Finished("stop".into())),
        "the finish_reason is passed on"
    );
    match items.last() {
        Some(AnswerChunk::Usage(u)) => {
            assert_eq!((u.prompt_tokens, u.completion_tokens), (300, 12));
            assert_eq!(u.model, "gpt-4o-mini");
            assert!(u.cost_usd > 0.0);
        }
        other => panic!("usage should come last, got {other:?}"),
    }
    let body = &server.received()[0].body;
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    let user = body["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.contains("[1] (Policy / Rules) Records must be kept for 5 years."),
        "{user}"
    );
}

#[tokio::test]
async fn a_stream_that_goes_silent_ends_with_a_timeout() {
    let server = FakeOpenAi::start(vec![Fake::Stream {
        deltas: vec!["Partial".into(), " never finished".into()],
        prompt_tokens: 1,
        completion_tokens: 1,
        stall_after: Some(1),
    }])
    .await;
    let mut stream = client(&server, 1).answer(&answer_request()).await.unwrap();
    assert_eq!(
        stream.next().await.unwrap().unwrap(),
        AnswerChunk::Text("Partial".into())
    );
    let err = stream.next().await.unwrap().unwrap_err();
    assert!(matches!(err, LlmError::Timeout { .. }), "{err}");
    assert!(stream.next().await.is_none());
}

#[tokio::test]
async fn the_inquire_node_streams_the_servers_tokens_and_cites_its_markers() {
    let server = FakeOpenAi::start(vec![Fake::Stream {
        deltas: vec!["The leverage ratio ".into(), "must be 3% [1].".into()],
        prompt_tokens: 400,
        completion_tokens: 10,
        stall_after: None,
    }])
    .await;
    let kit = support::kit_with(Arc::new(client(&server, 1))).await;
    let (crr, _) = kit.doc("Capital").await;
    let graph = support::single("inquire", inquire, &kit.deps);
    let sink = Arc::new(VecSink::default());
    let input = support::said("What is the leverage ratio?")
        .action(Some(Action::Inquire))
        .resolved_doc_ids(vec![crr.clone()]);
    let out = graph
        .run(support::config("t"), RunInput::Turn(input), sink.clone())
        .await
        .unwrap();

    let deltas: Vec<String> = sink
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::MessageDelta { delta, .. } => Some(delta),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, ["The leverage ratio ", "must be 3% [1]."]);
    assert_eq!(out.state.response, "The leverage ratio must be 3% [1].");
    assert_eq!(out.state.citations.len(), 1);
    assert_eq!(out.state.citations[0].doc_id, crr);
    assert!(
        out.state.citations[0]
            .quote
            .contains("leverage ratio of 3%"),
        "{:?}",
        out.state.citations
    );
    assert_eq!(out.state.tokens_used, 410);
    let expected = (400.0 * 0.15 + 10.0 * 0.60) / 1_000_000.0;
    assert!((out.state.cost_usd - expected).abs() < 1e-12);
    // The call is recorded on the node's task in the step's checkpoint.
    let head = graph.get_state("t").await.unwrap().unwrap();
    let ran = palgraph::observe::TaskRecord::of_metadata(&head.metadata);
    assert_eq!(ran.len(), 1, "{:?}", head.metadata);
    assert_eq!(ran[0].node, "inquire");
    let calls = &ran[0].llm_calls;
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].model, "gpt-4o-mini");
    assert_eq!((calls[0].input_tokens, calls[0].output_tokens), (400, 10));
    assert!((calls[0].cost_usd - expected).abs() < 1e-12);
    assert!(calls[0].duration_ms <= ran[0].duration_ms);
    let sent = server.received();
    let prompt = sent[0].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        prompt.contains("leverage ratio of 3%"),
        "the best passages are sent: {prompt}"
    );
}

#[tokio::test]
async fn a_stream_cut_before_the_model_finished_ends_with_a_truncated_error() {
    for abort in [false, true] {
        let server = FakeOpenAi::start(vec![Fake::Truncated {
            deltas: vec!["Records are ".into(), "kept".into()],
            abort,
        }])
        .await;
        let stream = client(&server, 3).answer(&answer_request()).await.unwrap();
        let items: Vec<Result<AnswerChunk, LlmError>> = stream.collect().await;
        let text: String = items
            .iter()
            .filter_map(|c| match c {
                Ok(AnswerChunk::Text(t)) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        if abort {
            // A broken connection may lose what was in flight.
            assert!("Records are kept".starts_with(&text), "{text}");
        } else {
            assert_eq!(text, "Records are kept");
        }
        let last = items.last().unwrap().as_ref().unwrap_err();
        assert!(last.is_transient(), "abort {abort}: {last}");
        if !abort {
            assert!(
                matches!(last, LlmError::Truncated { chars: 16 }),
                "a body that just ends is a truncated answer: {last}"
            );
        }
        assert!(
            !items
                .iter()
                .any(|c| matches!(c, Ok(AnswerChunk::Finished(_)))),
            "the model never finished"
        );
        assert_eq!(
            server.received().len(),
            1,
            "a stream that started is not retried by the client"
        );
    }
}

#[tokio::test]
async fn a_stream_without_finish_reason_that_ends_with_usage_and_done_is_a_whole_answer() {
    let server = FakeOpenAi::start(vec![Fake::StreamWithoutFinishReason {
        deltas: vec!["Records are ".into(), "kept 5 years [1].".into()],
    }])
    .await;
    let stream = client(&server, 1).answer(&answer_request()).await.unwrap();
    let items: Vec<Result<AnswerChunk, LlmError>> = stream.collect().await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let text: String = items
        .iter()
        .filter_map(|c| match c {
            Ok(AnswerChunk::Text(t)) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Records are kept 5 years [1].");
    assert!(
        matches!(items.last(), Some(Ok(AnswerChunk::Usage(u))) if u.completion_tokens == 5),
        "the usage closes the answer: {items:?}"
    );
}

#[tokio::test]
async fn an_error_the_server_streams_is_reported_with_its_own_message() {
    for (kind, transient) in [("server_error", true), ("invalid_request_error", false)] {
        let server = FakeOpenAi::start(vec![Fake::StreamError {
            deltas: vec!["Records are ".into()],
            error: json!({"message": "The model is overloaded, try again", "type": kind, "param": null, "code": null}),
        }])
        .await;
        let stream = client(&server, 1).answer(&answer_request()).await.unwrap();
        let items: Vec<Result<AnswerChunk, LlmError>> = stream.collect().await;
        let err = items.last().unwrap().as_ref().unwrap_err();
        let shown = err.to_string();
        assert!(
            shown.contains("The model is overloaded, try again") && shown.contains(kind),
            "{shown}"
        );
        assert!(!shown.contains("missing field"), "{shown}");
        assert!(matches!(err, LlmError::Upstream { .. }), "{err:?}");
        assert_eq!(err.is_transient(), transient, "{kind}");
    }
}

fn inquire_with_retries(kit: &support::Kit) -> palgraph::CompiledGraph<palgraph_nodes::AgentState> {
    let deps = Arc::new(kit.deps.clone());
    let mut g = palgraph::StateGraph::<palgraph_nodes::AgentState>::new();
    g.add_node("inquire", move |s, c| inquire(deps.clone(), s, c))
        .retry(actions::retry_policy());
    g.add_edge(palgraph::START, "inquire");
    g.add_edge("inquire", palgraph::END);
    g.compile().unwrap()
}

fn cut() -> Fake {
    Fake::Truncated {
        deltas: vec!["The leverage ratio ".into(), "must".into()],
        abort: false,
    }
}

#[tokio::test]
async fn the_inquire_node_retries_a_cut_stream_and_streams_the_answer_again() {
    let server = FakeOpenAi::start(vec![
        cut(),
        Fake::Stream {
            deltas: vec!["The leverage ratio ".into(), "must be 3% [1].".into()],
            prompt_tokens: 400,
            completion_tokens: 10,
            stall_after: None,
        },
    ])
    .await;
    let kit = support::kit_with(Arc::new(client(&server, 1))).await;
    let (crr, _) = kit.doc("Capital").await;
    let sink = Arc::new(VecSink::default());
    let input = support::said("What is the leverage ratio?")
        .action(Some(Action::Inquire))
        .resolved_doc_ids(vec![crr]);
    let out = inquire_with_retries(&kit)
        .run(support::config("t"), RunInput::Turn(input), sink.clone())
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.state.response, "The leverage ratio must be 3% [1].");
    assert_eq!(server.received().len(), 2);
    // What a client shows: the cut attempt's text is reset, then the whole answer.
    let mut shown = String::new();
    for e in sink.events() {
        match e {
            Event::MessageDelta { delta, .. } => shown.push_str(&delta),
            Event::MessageReset { .. } => shown.clear(),
            _ => {}
        }
    }
    assert_eq!(shown, out.state.response);
    let last = out.state.messages.last().unwrap();
    assert_eq!(last.metadata["finished_reason"], "stop");
}

#[tokio::test]
async fn a_stream_cut_on_every_attempt_fails_the_run_instead_of_answering_short() {
    let server = FakeOpenAi::start(vec![cut(), cut(), cut()]).await;
    let kit = support::kit_with(Arc::new(client(&server, 1))).await;
    let (crr, _) = kit.doc("Capital").await;
    let input = support::said("What is the leverage ratio?")
        .action(Some(Action::Inquire))
        .resolved_doc_ids(vec![crr]);
    let err = inquire_with_retries(&kit)
        .invoke(support::config("t"), RunInput::Turn(input))
        .await
        .unwrap_err();
    match err {
        palgraph::RunError::Node { node, error } => {
            assert_eq!(node, "inquire");
            assert!(error.is_retryable(), "a transport failure: {error}");
            assert!(
                error.message().contains("ended before the model finished"),
                "{}",
                error.message()
            );
        }
        other => panic!("unexpected {other}"),
    }
    assert_eq!(
        server.received().len(),
        actions::ANSWER_ATTEMPTS as usize,
        "the node's retry policy ran the answer again, then gave up"
    );
}
