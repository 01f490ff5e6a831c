//! PalAssist end to end on the SQLite checkpointer (documents in the same SQLite file), with
//! the offline LLM wrapped in a call counter: the scenarios of the PalAssist issue (its
//! prompts are in `palassist_prompts.rs`).

#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use palgraph::stream::VecSink;
use palgraph::{Event, RunConfig, RunInput, RunStatus};
use palgraph_graphs::palassist::{turn_input, Action, ChatTurn};
use palgraph_nodes::llm::LlmCalls;
use palgraph_nodes::validate_inputs::COMPARE_DROPS_WEB;
use palgraph_nodes::{DocumentStore, InferenceSource};
use serde_json::json;
use support::*;

#[tokio::test]
async fn explicit_action_with_pure_mentions_makes_no_routing_llm_call() {
    let h = harness().await;
    let (crr, crr_title) = h.doc("Capital Requirements").await;
    let mut turn = h.mention("", &["Capital Requirements"]).await;
    turn.action = Some("summarize".into());
    let sink = Arc::new(VecSink::default());
    let out = h
        .graph
        .run(config("t"), RunInput::Turn(turn_input(turn)), sink.clone())
        .await
        .unwrap();

    assert_answered(&out, Action::Summarize);
    assert_eq!(
        h.calls(),
        LlmCalls {
            intent: 0,
            doc_resolution: 0,
            answer: 1
        },
        "only the answer itself calls the LLM"
    );
    assert_eq!(out.state.resolved_doc_ids, std::slice::from_ref(&crr));
    assert_eq!(out.state.inference_source, Some(InferenceSource::Explicit));
    assert_eq!(out.state.inference_confidence, 1.0);
    assert!(
        out.state.response.contains("4.5%"),
        "{}",
        out.state.response
    );
    assert!(out.state.citations.iter().all(|c| c.doc_id == crr));
    assert_eq!(out.state.conversation_docs.get(&crr_title), Some(&crr));

    // One status line per node (the explicit action skips intent_resolver), docs_found
    // once resolved, and the streamed text.
    let events = sink.events();
    let lines: Vec<(&str, &str)> = events
        .iter()
        .filter_map(|e| match e {
            Event::NodeStarted {
                node,
                status: Some(line),
                ..
            } => Some((node.as_str(), line.as_str())),
            Event::Status { node, message, .. } => Some((node.as_str(), message.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        lines,
        [
            ("doc_resolver", "Finding documents..."),
            ("validate_inputs", "Validating request..."),
            ("summarize", "Summarizing documents..."),
            ("format_response", "Formatting response...")
        ]
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::NodeStarted { node, .. } if node == "intent_resolver")),
        "an explicit action skips intent classification"
    );
    let found = events
        .iter()
        .find_map(|e| match e {
            Event::Status { node, details, .. } if node == "doc_resolver" => Some(details.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        found["docs_found"],
        json!([{"id": crr, "title": crr_title}])
    );
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            Event::MessageDelta {
                message_id, delta, ..
            } if Some(message_id) == out.state.messages.last().unwrap().id.as_ref() => {
                Some(delta.as_str())
            }
            _ => None,
        })
        .collect();
    let deltas = events
        .iter()
        .filter(|e| matches!(e, Event::MessageDelta { .. }))
        .count();
    assert!(deltas > 1, "the offline answer streams in several chunks");
    assert_eq!(streamed, out.state.response);
}

#[tokio::test]
async fn a_question_naming_no_document_is_answered_from_the_matching_one() {
    let h = harness().await;
    let (crr, _) = h.doc("Capital Requirements").await;
    let out = h.say("t", "What are the capital requirements?").await;
    assert_answered(&out, Action::Inquire);
    assert_eq!(out.state.resolved_doc_ids, std::slice::from_ref(&crr));
    assert_eq!(out.state.inference_source, Some(InferenceSource::Retrieval));
    assert!(
        out.state.response.contains('%') && out.state.citations.iter().all(|c| c.doc_id == crr),
        "{}",
        out.state.response
    );
    assert!(out.state.retrieval_confidence > 0.5);
    assert!(!out.state.enable_web_search);
    assert_eq!(out.state.tokens_used, 0, "offline answers cost nothing");
    assert_eq!(out.state.cost_usd, 0.0);
}

#[tokio::test]
async fn the_registry_grows_over_three_turns_and_resolves_that_regulation() {
    let h = harness().await;
    let (crr, crr_title) = h.doc("Capital Requirements").await;
    let (aml, aml_title) = h.doc("Anti-Money Laundering").await;

    let one = h
        .send("t", h.mention("Summarize", &["Capital Requirements"]).await)
        .await;
    assert_answered(&one, Action::Summarize);
    assert_eq!(one.state.conversation_docs.len(), 1);

    let two = h.say("t", "Summarize the AML policy").await;
    assert_answered(&two, Action::Summarize);
    assert_eq!(two.state.resolved_doc_ids, std::slice::from_ref(&aml));
    assert_eq!(two.state.inference_source, Some(InferenceSource::Fuzzy));
    assert_eq!(
        two.state.conversation_docs,
        [
            (crr_title.clone(), crr.clone()),
            (aml_title.clone(), aml.clone())
        ]
        .into()
    );

    let three = h
        .say(
            "t",
            "What does that regulation say about the leverage ratio?",
        )
        .await;
    assert_answered(&three, Action::Inquire);
    assert_eq!(three.state.resolved_doc_ids, [crr]);
    assert_eq!(
        three.state.inference_source,
        Some(InferenceSource::Registry)
    );
    assert!(three.state.inference_confidence >= 0.8);
    assert!(
        three.state.response.contains("leverage ratio of 3%"),
        "{}",
        three.state.response
    );
    assert_eq!(
        three.state.conversation_docs.len(),
        2,
        "the registry keeps both"
    );
    assert_eq!(
        three.state.messages.len(),
        6,
        "three questions, three answers"
    );
}

#[tokio::test]
async fn is_this_still_enforced_turns_web_search_on() {
    let h = harness().await;
    h.send("t", h.mention("Summarize", &["Capital Requirements"]).await)
        .await;
    let sink = Arc::new(VecSink::default());
    let turn = ChatTurn {
        message: "Is this still enforced?".into(),
        ..Default::default()
    };
    let out = h
        .graph
        .run(config("t"), RunInput::Turn(turn_input(turn)), sink.clone())
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.state.action, Some(Action::Inquire));
    assert!(out.state.enable_web_search);
    let query = out.state.web_search_query.clone().unwrap();
    assert_eq!(query, "Capital Requirements Regulation still enforced");
    let web_status = sink.events().into_iter().find_map(|e| match e {
        Event::Status {
            node,
            message,
            details,
        } if node == "inquire" => Some((message, details)),
        _ => None,
    });
    assert_eq!(
        web_status,
        Some(("Researching your question...".to_string(), json!({}))),
        "the offline model searches no web: no web_query is claimed"
    );
    assert!(
        out.state.response.contains("Web search is not available"),
        "{}",
        out.state.response
    );
    assert!(!out.state.citations.is_empty());
}

#[tokio::test]
async fn compare_asking_for_the_latest_drops_web_search_and_says_so() {
    let h = harness().await;
    let out = h
        .send(
            "t",
            h.mention(
                "Compare the latest changes between",
                &["Data Retention Policy 2023", "Data Retention Policy 2024"],
            )
            .await,
        )
        .await;
    assert_answered(&out, Action::Compare);
    assert!(!out.state.enable_web_search);
    assert_eq!(out.state.web_search_query, None);
    assert!(out.state.notices.contains(&COMPARE_DROPS_WEB.to_string()));
    assert!(
        !out.state.response.contains(COMPARE_DROPS_WEB),
        "the notice is beside the answer, not in it: {}",
        out.state.response
    );
    let answer = out.state.messages.last().expect("the answer message");
    assert_eq!(answer.metadata["notices"][0], COMPARE_DROPS_WEB);
}

#[tokio::test]
async fn a_user_never_reaches_another_users_documents() {
    let h = harness().await;
    let mallory_doc = h
        .docs
        .create(
            "mallory",
            "Mallory's Secret Plan",
            "We plan to keep records for one day.",
        )
        .await
        .unwrap();
    let turn = ChatTurn {
        message: "Summarize @Mallory's Secret Plan".into(),
        tagged_doc_ids: vec![mallory_doc.id.clone()],
        action: Some("summarize".into()),
        ..Default::default()
    };
    let out = h.send("t", turn).await;
    assert!(!out.state.resolved_doc_ids.contains(&mallory_doc.id));
    assert!(!out.state.response.contains("one day"));
    assert!(out.state.unresolved_names.contains(&mallory_doc.id));
}

#[tokio::test]
async fn a_run_without_a_user_fails_with_a_clear_error() {
    let h = harness().await;
    let err = h
        .graph
        .invoke(
            RunConfig::new("t"),
            RunInput::Turn(turn_input(ChatTurn {
                message: "hello".into(),
                ..Default::default()
            })),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("user_id"), "{err}");
}
