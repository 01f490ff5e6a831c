//! The four action nodes: answers with citations and their metadata, streaming, notices,
//! one status line (with `web_query` only when the LLM really searches the web),
//! cancellation mid-answer, and LLM failures.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use async_trait::async_trait;
use futures_util::{stream, StreamExt};
use palgraph::stream::VecSink;
use palgraph::{CancelReason, Cancellation, Event, MessageKind, RunInput, RunStatus};
use palgraph_nodes::actions::{audit, compare, inquire, summarize};
use palgraph_nodes::llm::{
    AnswerChunk, AnswerRequest, AnswerStream, DocRequest, DocResolution, IntentDecision,
    IntentRequest, Llm, LlmError, OfflineLlm, Reply,
};
use palgraph_nodes::{Action, AgentState, AgentStateUpdate};
use support::*;

fn request(message: &str, action: Action, docs: &[&str]) -> AgentStateUpdate {
    said(message)
        .action(Some(action))
        .resolved_doc_ids(docs.iter().map(|d| d.to_string()).collect())
}

fn graph_for(action: Action, kit: &Kit) -> palgraph::CompiledGraph<AgentState> {
    match action {
        Action::Summarize => single("summarize", summarize, &kit.deps),
        Action::Inquire => single("inquire", inquire, &kit.deps),
        Action::Compare => single("compare", compare, &kit.deps),
        Action::Audit => single("audit", audit, &kit.deps),
    }
}

#[tokio::test]
async fn each_action_appends_one_cited_assistant_message() {
    let kit = kit().await;
    let (crr, _) = kit.doc("Capital").await;
    let (aml, _) = kit.doc("Anti-Money").await;
    let (r23, _) = kit.doc("Data Retention Policy 2023").await;
    let (r24, _) = kit.doc("Data Retention Policy 2024").await;
    let cases = [
        (
            Action::Summarize,
            request("Summarize", Action::Summarize, &[&crr]),
            "4.5%",
        ),
        (
            Action::Inquire,
            request("What is the leverage ratio?", Action::Inquire, &[&crr]),
            "leverage ratio of 3%",
        ),
        (
            Action::Compare,
            request("Compare", Action::Compare, &[&r23, &r24]),
            "within 90 days → within 30 days",
        ),
        (
            Action::Audit,
            request("Audit", Action::Audit, &[&aml]).audit_text(Some(
                "Customer due diligence records are retained for three years.".into(),
            )),
            "three years is less than the five years required",
        ),
    ];
    for (action, input, expected) in cases {
        let out = run(&graph_for(action, &kit), action.as_str(), input.clone()).await;
        assert_eq!(out.status, RunStatus::Completed);
        let answers: Vec<_> = out
            .state
            .messages
            .iter()
            .filter(|m| m.kind == MessageKind::Ai)
            .collect();
        assert_eq!(answers.len(), 1, "{action}");
        let m = answers[0];
        assert_eq!(m.content, out.state.response);
        assert!(m.content.contains(expected), "{action}: {}", m.content);
        assert_eq!(m.metadata["action"], action.as_str());
        assert_eq!(
            m.metadata["citations"],
            serde_json::json!(out.state.citations)
        );
        assert!(m.metadata.get("interrupted").is_none());
        assert_eq!(m.metadata["finished_reason"], "stop");
        for k in ["retrieval_confidence", "inference_confidence"] {
            let level = m.metadata[k].as_str().unwrap();
            assert!(["high", "medium", "low"].contains(&level), "{action} {k}");
        }
        let score = m.metadata["confidence_score"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&score), "{action}");
        assert!(!out.state.citations.is_empty(), "{action}");
        let resolved = input.resolved_doc_ids.clone().unwrap();
        for c in &out.state.citations {
            assert!(resolved.contains(&c.doc_id), "{action}: cites {}", c.title);
            assert!(m.content.contains(&format!("[{}]", c.marker)));
            assert!(!c.quote.is_empty());
        }
        assert!(out.state.retrieval_confidence > 0.0, "{action}");
    }
}

#[tokio::test]
async fn a_summary_is_narrowed_by_what_its_request_names_not_by_the_situation_told_beside_it() {
    let kit = kit().await;
    let (aml, _) = kit.doc("Anti-Money").await;
    let g = graph_for(Action::Summarize, &kit);
    let whole = run(
        &g,
        "a",
        request(
            "I've just been made a relationship manager for politically exposed clients. Can you summarise the policy for me?",
            Action::Summarize,
            &[&aml],
        ),
    )
    .await;
    let r = &whole.state.response;
    assert!(!r.contains("\nOn "), "not narrowed: {r}");
    let narrowed = run(
        &g,
        "b",
        request(
            "Summarise what it says about politically exposed persons.",
            Action::Summarize,
            &[&aml],
        ),
    )
    .await;
    let r = &narrowed.state.response;
    let on = r.lines().find(|l| l.starts_with("On ")).unwrap_or_default();
    assert!(on.contains("politically") && on.contains("exposed"), "{r}");
    assert!(
        !on.contains("expos,") && !on.contains("polit,"),
        "written words, not terms: {r}"
    );
}

#[tokio::test]
async fn a_comparison_asked_about_an_unchanged_point_says_it_is_the_same_in_both() {
    let kit = kit().await;
    let (r23, _) = kit.doc("Data Retention Policy 2023").await;
    let (r24, _) = kit.doc("Data Retention Policy 2024").await;
    let out = run(
        &graph_for(Action::Compare, &kit),
        "t",
        request(
            "Did the retention of employee personnel files change in the 2024 policy?",
            Action::Compare,
            &[&r23, &r24],
        ),
    )
    .await;
    let r = &out.state.response;
    let same = r
        .split("The same in both versions:")
        .nth(1)
        .unwrap_or_default();
    assert!(same.contains("6 years after employment ends"), "{r}");
    assert!(r.contains("(on employee"), "written words: {r}");
}

#[tokio::test]
async fn audit_finds_optional_wording_another_approver_and_differing_figures() {
    let kit = kit().await;
    let (aml, _) = kit.doc("Anti-Money").await;
    let text = "A business relationship with a PEP may be approved by any manager. \
                Customer due diligence records are retained for three years after the relationship ends. \
                Staff complete AML training annually.";
    let out = run(
        &graph_for(Action::Audit, &kit),
        "t",
        request("Audit", Action::Audit, &[&aml]).audit_text(Some(text.into())),
    )
    .await;
    let r = &out.state.response;
    assert!(r.contains("not a legal opinion"), "{r}");
    let lines = |verdict: &str| {
        r.lines()
            .filter(|l| l.starts_with(&format!("- **{verdict}**")))
            .collect::<Vec<_>>()
    };
    let breaks = lines("Breaks");
    assert_eq!(breaks.len(), 2, "{r}");
    assert!(
        breaks
            .iter()
            .any(|l| l.contains("senior management approval")
                && l.contains("optional")
                && l.contains("approved by manager where the rule names senior management")),
        "{r}"
    );
    assert!(
        breaks
            .iter()
            .any(|l| l.contains("three years is less than the five years required")),
        "{r}"
    );
    let meets = lines("Meets");
    assert_eq!(meets.len(), 1, "{r}");
    assert!(meets[0].contains("annually"), "{r}");
}

#[tokio::test]
async fn the_answer_streams_as_deltas_of_the_message_it_appends() {
    let kit = kit().await;
    let (crr, _) = kit.doc("Capital").await;
    let sink = Arc::new(VecSink::default());
    let out = graph_for(Action::Summarize, &kit)
        .run(
            config("t"),
            RunInput::Turn(request("Summarize", Action::Summarize, &[&crr])),
            sink.clone(),
        )
        .await
        .unwrap();
    let id = out.state.messages.last().unwrap().id.clone().unwrap();
    let deltas: Vec<String> = sink
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::MessageDelta {
                message_id,
                delta,
                node,
            } => {
                assert_eq!(message_id, id);
                assert_eq!(node, "summarize");
                Some(delta)
            }
            _ => None,
        })
        .collect();
    assert!(deltas.len() >= 3, "a few chunks, not one: {}", deltas.len());
    assert_eq!(deltas.concat(), out.state.response);
}

#[tokio::test]
async fn notices_go_beside_the_answer_not_into_its_text() {
    let kit = kit().await;
    let (crr, _) = kit.doc("Capital").await;
    let input =
        request("Summarize", Action::Summarize, &[&crr]).notices(vec!["Something to know.".into()]);
    let out = run(&graph_for(Action::Summarize, &kit), "t", input).await;
    assert!(
        !out.state.response.contains("Something to know"),
        "{}",
        out.state.response
    );
    assert_eq!(out.state.notices, vec!["Something to know.".to_string()]);
    let answer = out.state.messages.last().expect("the answer message");
    assert_eq!(
        answer.metadata["notices"],
        serde_json::json!(["Something to know."])
    );
}

/// The offline model, but as if a web-search model were configured.
struct WebSearchingLlm;

#[async_trait]
impl Llm for WebSearchingLlm {
    fn describe(&self) -> String {
        "web searching".into()
    }
    async fn classify_intent(&self, r: &IntentRequest) -> Result<Reply<IntentDecision>, LlmError> {
        OfflineLlm::new().classify_intent(r).await
    }
    async fn resolve_documents(&self, r: &DocRequest) -> Result<Reply<DocResolution>, LlmError> {
        OfflineLlm::new().resolve_documents(r).await
    }
    async fn answer(&self, r: &AnswerRequest) -> Result<AnswerStream, LlmError> {
        OfflineLlm::new().answer(r).await
    }
    fn searches_web(&self) -> bool {
        true
    }
}

/// The status lines an action reports with a web query in its state.
async fn web_status(kit: &Kit) -> (Vec<(String, serde_json::Value)>, AgentState) {
    let (crr, _) = kit.doc("Capital").await;
    let input = request("Is the leverage ratio still 3%?", Action::Inquire, &[&crr])
        .enable_web_search(true)
        .web_search_query(Some("CRR leverage ratio still 3%".into()));
    let sink = Arc::new(VecSink::default());
    let out = graph_for(Action::Inquire, kit)
        .run(config("t"), RunInput::Turn(input), sink.clone())
        .await
        .unwrap();
    let lines = sink
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::Status {
                message, details, ..
            } => Some((message, details)),
            _ => None,
        })
        .collect();
    (lines, (*out.state).clone())
}

#[tokio::test]
async fn a_web_searching_llm_reports_its_query_on_the_one_status_line() {
    let kit = kit_with(Arc::new(WebSearchingLlm)).await;
    let (lines, state) = web_status(&kit).await;
    assert_eq!(
        lines,
        [(
            "Researching your question...".to_string(),
            serde_json::json!({"web_query": "CRR leverage ratio still 3%"})
        )]
    );
    assert!(state.response.contains("leverage ratio of 3%"));
}

#[tokio::test]
async fn without_web_search_the_status_line_claims_no_web_query() {
    let kit = kit().await;
    let (lines, state) = web_status(&kit).await;
    assert_eq!(
        lines,
        [(
            "Researching your question...".to_string(),
            serde_json::json!({})
        )],
        "one line, and no web query the offline model would not run"
    );
    assert!(
        state.response.contains("Web search is not available"),
        "the answer says it relies on the documents: {}",
        state.response
    );
}

/// Answers with one chunk, then never finishes.
struct StallingLlm;

#[async_trait]
impl Llm for StallingLlm {
    fn describe(&self) -> String {
        "stalling".into()
    }
    async fn classify_intent(&self, r: &IntentRequest) -> Result<Reply<IntentDecision>, LlmError> {
        OfflineLlm::new().classify_intent(r).await
    }
    async fn resolve_documents(&self, r: &DocRequest) -> Result<Reply<DocResolution>, LlmError> {
        OfflineLlm::new().resolve_documents(r).await
    }
    async fn answer(&self, _: &AnswerRequest) -> Result<AnswerStream, LlmError> {
        let first = stream::iter(vec![Ok(AnswerChunk::Text(
            "The CET1 ratio is 4.5% [1]".into(),
        ))]);
        Ok(Box::pin(first.chain(stream::pending())))
    }
}

#[tokio::test]
async fn a_cancel_mid_answer_keeps_the_partial_text_marked_interrupted() {
    let kit = kit_with(Arc::new(StallingLlm)).await;
    let (crr, _) = kit.doc("Capital").await;
    let graph = then_format("inquire", inquire, &kit.deps);
    let cancel = Cancellation::new();
    let mut run = graph.stream(
        config("t")
            .cancel(cancel.clone())
            .context("client_turn_id", "turn-42"),
        RunInput::Turn(request("What is the CET1 ratio?", Action::Inquire, &[&crr])),
    );
    while let Some(e) = run.next().await {
        if matches!(e.event, Event::MessageDelta { .. }) {
            cancel.cancel(CancelReason::UserCancelled);
        }
    }
    let out = run.outcome().await.unwrap();
    assert_eq!(
        out.status,
        RunStatus::Cancelled(CancelReason::UserCancelled)
    );
    let m = out.state.messages.last().unwrap();
    assert_eq!(m.kind, MessageKind::Ai);
    assert_eq!(m.content, "The CET1 ratio is 4.5% [1]");
    assert_eq!(m.metadata["interrupted"], true);
    assert_eq!(m.metadata["interrupted_reason"], "user_cancelled");
    assert_eq!(m.metadata["finished_reason"], "cancelled");
    assert_eq!(m.metadata["stream_run_id"], out.run_id.as_str());
    assert_eq!(m.metadata["client_turn_id"], "turn-42");
    assert!(
        m.metadata.get("reason").is_none(),
        "the key is interrupted_reason"
    );
    assert_eq!(out.state.citations.len(), 1, "what was said is still cited");
    assert!(
        out.state.conversation_docs.is_empty(),
        "format_response did not run"
    );
}

/// Always rate limited.
struct RateLimitedLlm;

#[async_trait]
impl Llm for RateLimitedLlm {
    fn describe(&self) -> String {
        "rate limited".into()
    }
    async fn classify_intent(&self, _: &IntentRequest) -> Result<Reply<IntentDecision>, LlmError> {
        Err(LlmError::RateLimited {
            attempts: 4,
            message: "slow down".into(),
        })
    }
    async fn resolve_documents(&self, _: &DocRequest) -> Result<Reply<DocResolution>, LlmError> {
        Err(LlmError::RateLimited {
            attempts: 4,
            message: "slow down".into(),
        })
    }
    async fn answer(&self, _: &AnswerRequest) -> Result<AnswerStream, LlmError> {
        Err(LlmError::RateLimited {
            attempts: 4,
            message: "slow down".into(),
        })
    }
}

#[tokio::test]
async fn an_llm_that_keeps_failing_fails_the_node_with_a_retryable_error() {
    let kit = kit_with(Arc::new(RateLimitedLlm)).await;
    let (crr, _) = kit.doc("Capital").await;
    let err = graph_for(Action::Summarize, &kit)
        .invoke(
            config("t"),
            RunInput::Turn(request("Summarize", Action::Summarize, &[&crr])),
        )
        .await
        .unwrap_err();
    match err {
        palgraph::RunError::Node { node, error } => {
            assert_eq!(node, "summarize");
            assert!(error.is_retryable());
            assert!(error.message().contains("429"), "{}", error.message());
        }
        other => panic!("unexpected {other}"),
    }
}

#[tokio::test]
async fn a_question_about_the_document_itself_says_where_it_stands() {
    let kit = kit().await;
    let (crr, _) = kit.doc("Capital").await;
    let out = run(
        &graph_for(Action::Inquire, &kit),
        "t",
        request("Is it still enforced?", Action::Inquire, &[&crr]),
    )
    .await;
    let r = &out.state.response;
    assert!(
        r.contains("the only version of it among your documents"),
        "{r}"
    );
    assert_eq!(out.state.retrieval_confidence, 0.0);
    assert_eq!(
        out.state.citations[0].marker, 1,
        "its opening is cited: {r}"
    );
}

#[tokio::test]
async fn a_question_nothing_answers_says_so_with_no_figure() {
    let kit = kit().await;
    let (crr, _) = kit.doc("Capital").await;
    let out = run(
        &graph_for(Action::Inquire, &kit),
        "t",
        request(
            "What is the penalty for filing a tax return late?",
            Action::Inquire,
            &[&crr],
        ),
    )
    .await;
    let r = &out.state.response;
    assert!(r.contains("found nothing about"), "{r}");
    assert!(!r.contains('%'), "no figure: {r}");
}
