//! PalAssist's prompts end to end (the harness of `palassist.rs`): which action, which
//! document, the text to work on; a resume re-enters the node without repeating its calls,
//! and a cancelled prompt ends the turn.

#![allow(clippy::unwrap_used)]

use crate::support;

use palgraph::{RunOutcome, RunStatus};
use palgraph_graphs::palassist::{Action, AgentState};
use palgraph_nodes::prompt::CANCELLED_RESPONSE;
use palgraph_nodes::{DocumentStore, InferenceSource};
use serde_json::{json, Value};
use support::*;

#[tokio::test]
async fn two_actions_ask_which_then_audit_and_never_repeat_the_llm_call() {
    let h = harness().await;
    let out = h
        .say(
            "t",
            "Summarize and audit this: Customer account records are kept for three years after the account is closed.",
        )
        .await;
    let p = prompt(&out);
    assert_eq!(p["interrupt_type"], "action_choice");
    assert_eq!(option_values(p), ["summarize", "audit"]);
    assert_eq!(h.calls().intent, 1);

    let out = h.resume("t", json!("audit")).await;
    assert_answered(&out, Action::Audit);
    assert_eq!(
        h.calls().intent,
        1,
        "the resume re-entered the node without a new call"
    );
    assert!(out.state.multi_action_detected);
    assert_eq!(
        out.state.audit_text.as_deref(),
        Some("Customer account records are kept for three years after the account is closed.")
    );
    assert!(
        out.state.response.contains("- **Breaks**"),
        "{}",
        out.state.response
    );
    assert!(
        out.state
            .response
            .contains("three years is less than the 7 years required"),
        "the 2024 policy replaces the 2023 one, so its 7 years is the rule: {}",
        out.state.response
    );
    assert!(
        !out.state.response.contains("**Meets**"),
        "{}",
        out.state.response
    );

    let records = prompt_records(&out.state);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].metadata["interrupt_type"], "action_choice");
    assert_eq!(records[0].metadata["answer"], "audit");
    assert_eq!(records[0].content, p["message"]);
}

#[tokio::test]
async fn an_ambiguous_name_asks_which_document_then_answers_on_the_pick() {
    let h = harness().await;
    let (aml, _) = h.doc("Anti-Money Laundering").await;
    let (r24, r24_title) = h.doc("Data Retention Policy 2024").await;
    // Two policies fit: the AML policy, and the data retention policy in force (the
    // version it replaced is not a choice).
    let out = h.say("t", "Summarize the policy").await;
    let p = prompt(&out);
    assert_eq!(p["interrupt_type"], "doc_choice");
    assert_eq!(option_values(p), [aml.as_str(), r24.as_str(), "all"]);
    assert_eq!(p["options"][2]["label"], "All of these");
    let before = h.calls();

    let out = h.resume("t", json!(r24)).await;
    assert_answered(&out, Action::Summarize);
    assert_eq!(
        h.calls().routing(),
        before.routing(),
        "no routing call repeated"
    );
    assert_eq!(out.state.resolved_doc_ids, std::slice::from_ref(&r24));
    assert_eq!(
        out.state.inference_source,
        Some(InferenceSource::UserChoice)
    );
    assert_eq!(out.state.suggested_doc_ids, [aml, r24.clone()]);
    assert!(
        out.state.response.contains("7 years"),
        "{}",
        out.state.response
    );
    assert!(out.state.citations.iter().all(|c| c.doc_id == r24));
    assert_eq!(out.state.conversation_docs.get(&r24_title), Some(&r24));
}

/// The library a prompt was built from is stored with the prompt: a document added while
/// the question waits does not join the candidates when the node re-enters with the pick.
#[tokio::test]
async fn a_document_added_during_a_prompt_does_not_change_its_candidates() {
    let h = harness().await;
    let (aml, _) = h.doc("Anti-Money Laundering").await;
    let (r24, _) = h.doc("Data Retention Policy 2024").await;
    let out = h.say("t", "Summarize the policy").await;
    assert_eq!(
        option_values(prompt(&out)),
        [aml.as_str(), r24.as_str(), "all"]
    );
    h.docs
        .create(USER, "Travel Policy", "Trips are booked in economy.")
        .await
        .unwrap();
    let before = h.calls();

    let out = h.resume("t", json!(r24)).await;
    assert_answered(&out, Action::Summarize);
    assert_eq!(out.state.suggested_doc_ids, [aml, r24.clone()]);
    assert_eq!(out.state.resolved_doc_ids, [r24]);
    assert_eq!(
        h.calls().routing(),
        before.routing(),
        "no routing call repeated"
    );
}

#[tokio::test]
async fn all_of_these_answers_on_every_candidate() {
    let h = harness().await;
    let (aml, _) = h.doc("Anti-Money Laundering").await;
    let (r24, _) = h.doc("Data Retention Policy 2024").await;
    let out = h.say("t", "Summarize the policy").await;
    assert_eq!(prompt(&out)["interrupt_type"], "doc_choice");
    let out = h.resume("t", json!("all")).await;
    assert_answered(&out, Action::Summarize);
    assert_eq!(out.state.resolved_doc_ids, [aml, r24]);
    assert!(out
        .state
        .response
        .contains("**Anti-Money Laundering (AML) and Know Your Customer (KYC) Policy**"));
    assert!(out
        .state
        .response
        .contains("**Data Retention Policy 2024**"));
    assert_eq!(out.state.conversation_docs.len(), 2);
}

#[tokio::test]
async fn an_unknown_name_asks_for_text_and_the_typed_title_resolves() {
    let h = harness().await;
    let (aml, _) = h.doc("Anti-Money Laundering").await;
    let out = h.say("t", "Summarize the travel expense policy").await;
    let p = prompt(&out);
    assert_eq!(p["interrupt_type"], "text_input");
    assert_eq!(p["options"], Value::Null, "a text_input has no options");
    assert!(p["message"]
        .as_str()
        .unwrap()
        .contains("travel expense policy"));

    let out = h.resume("t", json!("the AML policy")).await;
    assert_answered(&out, Action::Summarize);
    assert_eq!(out.state.resolved_doc_ids, [aml]);
    assert!(
        out.state.response.contains("five years"),
        "{}",
        out.state.response
    );
}

#[tokio::test]
async fn compare_with_one_document_asks_for_a_second_then_compares() {
    let h = harness().await;
    let (r23, _) = h.doc("Data Retention Policy 2023").await;
    let (r24, _) = h.doc("Data Retention Policy 2024").await;
    let out = h
        .send("t", h.mention("Compare", &["Anti-Money Laundering"]).await)
        .await;
    let p = prompt(&out);
    assert_eq!(p["interrupt_type"], "text_input");
    assert_eq!(out.interrupts()[0].node, "validate_inputs");
    assert!(p["message"]
        .as_str()
        .unwrap()
        .starts_with("Compare needs at least 2 documents"));
    assert_eq!(h.calls().doc_resolution, 0, "a pure mention needs no LLM");

    let out = h.resume("t", json!("Data Retention Policy 2024")).await;
    assert_answered(&out, Action::Compare);
    assert_eq!(out.state.resolved_doc_ids.len(), 2);
    assert_eq!(out.state.conversation_docs.len(), 2);

    // A version mentioned alone is compared with the version next to it, with no prompt.
    let out = h
        .send(
            "v",
            h.mention("Compare", &["Data Retention Policy 2023"]).await,
        )
        .await;
    assert_answered(&out, Action::Compare);
    assert_eq!(out.state.resolved_doc_ids, [r23, r24]);
    let r = &out.state.response;
    assert!(r.contains("Changed:"), "{r}");
    assert!(r.contains("5 years → 7 years"), "{r}");
    assert!(r.contains("Added in Data Retention Policy 2024"), "{r}");
}

/// Cancels the pending prompt, checks the turn ended cleanly, then checks the next message
/// starts fresh.
async fn cancel_then_fresh_turn(
    h: &Harness,
    thread: &str,
    out: RunOutcome<AgentState>,
    kind: &str,
) {
    assert_eq!(prompt(&out)["interrupt_type"], kind);
    let registry_before = out.state.conversation_docs.clone();
    let out = h.resume(thread, Value::Null).await;
    assert_eq!(out.status, RunStatus::Completed, "{kind}: {:?}", out.status);
    assert!(out.state.cancelled, "{kind}");
    assert_eq!(out.state.response, CANCELLED_RESPONSE);
    assert!(out.state.citations.is_empty());
    assert_eq!(
        out.state.conversation_docs, registry_before,
        "{kind}: nothing merged"
    );
    let last = out.state.messages.last().unwrap();
    assert_eq!(
        last.metadata["kind"], "palassist_prompt",
        "{kind}: no answer message"
    );
    assert_eq!(last.metadata["answer"], Value::Null);
    assert_eq!(last.metadata["interrupt_type"], kind);

    let snapshot = h.graph.get_state(thread).await.unwrap().unwrap();
    assert!(snapshot.interrupts.is_empty(), "{kind}: nothing pending");
    assert!(snapshot.next.is_empty(), "{kind}: nothing due");
    let next = h.say(thread, "What are the capital requirements?").await;
    assert_answered(&next, Action::Inquire);
    assert!(!next.state.cancelled, "{kind}: the next turn starts fresh");
    assert!(next.state.audit_text.is_none());
}

#[tokio::test]
async fn cancelling_any_prompt_ends_the_turn_and_the_next_message_starts_fresh() {
    let h = harness().await;

    // action_choice (intent_resolver).
    let out = h
        .say("a", "Summarize and compare the data retention policies")
        .await;
    cancel_then_fresh_turn(&h, "a", out, "action_choice").await;

    // doc_choice (doc_resolver).
    let out = h.say("b", "Summarize the policy").await;
    cancel_then_fresh_turn(&h, "b", out, "doc_choice").await;

    // text_input (doc_resolver: unknown name).
    let out = h.say("c", "Summarize the travel expense policy").await;
    cancel_then_fresh_turn(&h, "c", out, "text_input").await;

    // text_input (validate_inputs: compare needs a second document), on a thread whose
    // registry already holds a document.
    h.send("d", h.mention("Summarize", &["Capital Requirements"]).await)
        .await;
    let out = h
        .send("d", h.mention("Compare", &["Anti-Money Laundering"]).await)
        .await;
    assert_eq!(out.interrupts()[0].node, "validate_inputs");
    cancel_then_fresh_turn(&h, "d", out, "text_input").await;

    // text_input (validate_inputs: audit needs a text).
    let out = h
        .send(
            "e",
            h.mention("Audit this against", &["Anti-Money Laundering"])
                .await,
        )
        .await;
    cancel_then_fresh_turn(&h, "e", out, "text_input").await;
}
