//! The `intent_resolver` node, one branch per test.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::{Arc, Mutex};

use palgraph::Message;
use palgraph_nodes::intent_resolver::intent_resolver;
use palgraph_nodes::llm::IntentDecision;
use palgraph_nodes::Action;
use serde_json::{json, Value};
use support::*;

fn graph(kit: &Kit) -> palgraph::CompiledGraph<palgraph_nodes::AgentState> {
    single("intent_resolver", intent_resolver, &kit.deps)
}

#[tokio::test]
async fn an_explicit_action_wins_without_an_llm_call() {
    let kit = kit().await;
    let out = run(
        &graph(&kit),
        "t",
        said("compare these please").action(Some(Action::Audit)),
    )
    .await;
    assert_eq!(out.state.action, Some(Action::Audit));
    assert_eq!(out.state.intent_confidence, 1.0);
    assert_eq!(kit.llm.calls().intent, 0);
}

#[tokio::test]
async fn a_temporal_keyword_turns_web_search_on_even_with_an_explicit_action() {
    let kit = kit().await;
    let g = graph(&kit);
    let out = run(
        &g,
        "a",
        said("What is the latest guidance?").action(Some(Action::Inquire)),
    )
    .await;
    assert!(out.state.enable_web_search);
    let year = palgraph_nodes::temporal::current_year();
    let out = run(
        &g,
        "b",
        said(&format!("Changes made in {year}?")).action(Some(Action::Inquire)),
    )
    .await;
    assert!(out.state.enable_web_search);
    let out = run(
        &g,
        "c",
        said("What is the guidance?").action(Some(Action::Inquire)),
    )
    .await;
    assert!(!out.state.enable_web_search);
}

#[tokio::test]
async fn the_request_flag_keeps_web_search_on() {
    let kit = kit().await;
    let out = run(
        &graph(&kit),
        "t",
        said("Summarize the AML policy").enable_web_search(true),
    )
    .await;
    assert!(out.state.enable_web_search);
    assert_eq!(out.state.action, Some(Action::Summarize));
}

#[tokio::test]
async fn the_llm_judges_web_search_and_its_usage_is_counted() {
    let decision = IntentDecision {
        action: Action::Inquire,
        requested_actions: vec![Action::Inquire],
        confidence: 0.9,
        enable_web_search: true,
        multi_action_detected: false,
        reasoning: "needs current status".into(),
    };
    let kit = kit_with(Arc::new(ScriptedIntent(Mutex::new(vec![decision])))).await;
    let out = run(
        &graph(&kit),
        "t",
        said("Does the capital buffer apply to us?"),
    )
    .await;
    assert!(
        out.state.enable_web_search,
        "no keyword, no flag: the LLM said so"
    );
    assert_eq!(out.state.tokens_used, 15);
    assert!((out.state.cost_usd - 0.001).abs() < 1e-12);
}

#[tokio::test]
async fn a_clear_message_is_classified_in_one_structured_call() {
    let kit = kit().await;
    let out = run(
        &graph(&kit),
        "t",
        said("Compare the two retention policies"),
    )
    .await;
    assert_eq!(out.state.action, Some(Action::Compare));
    assert!(out.state.intent_confidence >= 0.7);
    assert!(!out.state.multi_action_detected);
    assert_eq!(kit.llm.calls().intent, 1);
    assert!(out.interrupts().is_empty());
}

#[tokio::test]
async fn an_unsure_first_pass_gets_a_second_with_the_last_five_messages() {
    let recording = Arc::new(RecordingLlm::default());
    let kit = kit_with(recording.clone()).await;
    let mut history = vec![
        Message::human("Summarize the CRR"),
        Message::ai("Here are the key points of the CRR."),
        Message::human("Thanks"),
        Message::ai("You're welcome."),
        Message::human("Summarize the incident procedure"),
        Message::ai("Here are its key points."),
    ];
    history.push(Message::human("and the AML one"));
    let out = run(
        &graph(&kit),
        "t",
        palgraph_nodes::AgentStateUpdate::default().messages(history),
    )
    .await;
    let requests = recording.intents.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    assert!(requests[0].history.is_empty());
    assert_eq!(
        requests[1].history.len(),
        5,
        "the last five messages before this one"
    );
    assert_eq!(requests[1].history[4].content, "Here are its key points.");
    assert_eq!(
        out.state.action,
        Some(Action::Summarize),
        "the conversation was summarizing"
    );
    assert!(out.interrupts().is_empty());
}

#[tokio::test]
async fn still_unsure_offers_the_top_two_actions_and_takes_the_pick() {
    let kit = kit().await;
    let g = graph(&kit);
    let out = run(&g, "t", said("the AML policy")).await;
    let p = prompt(&out);
    assert_eq!(p["interrupt_type"], "action_choice");
    assert_eq!(p["message"], "What would you like me to do?");
    let values: Vec<&str> = p["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        values,
        ["inquire", "summarize"],
        "the guess (a question) and the runner-up, not every action"
    );
    let out = resume(&g, "t", json!("summarize")).await;
    assert_eq!(out.state.action, Some(Action::Summarize));
    assert_eq!(out.state.intent_confidence, 1.0);
    let record = out.state.messages.last().unwrap();
    assert_eq!(record.content, "What would you like me to do?");
    assert_eq!(
        Value::Object(record.metadata.clone()),
        json!({"kind": "palassist_prompt", "interrupt_type": "action_choice", "answer": "summarize"})
    );
}

#[tokio::test]
async fn several_actions_ask_among_them_and_the_resume_repeats_no_call() {
    let kit = kit().await;
    let g = graph(&kit);
    let out = run(
        &g,
        "t",
        said("Summarize and audit this: we keep records for a year."),
    )
    .await;
    let p = prompt(&out);
    assert_eq!(
        p["options"],
        json!([{"id": "summarize", "label": "Summarize"}, {"id": "audit", "label": "Audit"}])
    );
    assert_eq!(kit.llm.calls().intent, 1);
    let out = resume(&g, "t", json!("summarize")).await;
    assert_eq!(out.state.action, Some(Action::Summarize));
    assert!(out.state.multi_action_detected);
    assert_eq!(
        kit.llm.calls().intent,
        1,
        "re-entry used the recorded decision"
    );
}

#[tokio::test]
async fn a_cancelled_choice_ends_the_turn_without_an_action() {
    let kit = kit().await;
    let g = graph(&kit);
    run(&g, "t", said("Summarize and compare the policies")).await;
    let out = resume(&g, "t", Value::Null).await;
    assert!(out.state.cancelled, "the turn stops");
    assert_eq!(out.state.action, None, "no action was chosen");
    let last = out.state.messages.last().unwrap();
    assert_eq!(
        last.metadata["kind"], "palassist_prompt",
        "no answer is stored"
    );
    assert_eq!(last.metadata["answer"], Value::Null);
}

#[tokio::test]
async fn a_typed_answer_names_an_action_or_falls_back_with_a_notice() {
    let kit = kit().await;
    let g = graph(&kit);
    run(&g, "a", said("Summarize and compare the policies")).await;
    let out = resume(&g, "a", json!("Compare please")).await;
    assert_eq!(out.state.action, Some(Action::Compare));
    run(&g, "b", said("Summarize and compare the policies")).await;
    let out = resume(&g, "b", json!("banana")).await;
    assert_eq!(out.state.action, Some(Action::Inquire));
    assert!(out.state.notices[0].contains("banana"));
}

#[tokio::test]
async fn a_run_without_a_user_is_a_fatal_error() {
    let kit = kit().await;
    let err = graph(&kit)
        .invoke(
            palgraph::RunConfig::new("t"),
            palgraph::RunInput::Turn(said("hi")),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("user_id"), "{err}");
}
