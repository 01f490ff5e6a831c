//! The `validate_inputs` node, one branch per test.

#![allow(clippy::unwrap_used)]

use crate::support;

use palgraph_nodes::prompt::CANCELLED_RESPONSE;
use palgraph_nodes::validate_inputs::{validate_inputs, COMPARE_DROPS_WEB};
use palgraph_nodes::{Action, AgentStateUpdate};
use serde_json::{json, Value};
use support::*;

fn graph(kit: &Kit) -> palgraph::CompiledGraph<palgraph_nodes::AgentState> {
    single("validate_inputs", validate_inputs, &kit.deps)
}

fn request(message: &str, action: Action, docs: &[&str]) -> AgentStateUpdate {
    said(message)
        .action(Some(action))
        .resolved_doc_ids(docs.iter().map(|d| d.to_string()).collect())
}

#[tokio::test]
async fn two_documents_are_enough_to_compare() {
    let kit = kit().await;
    let (a, _) = kit.doc("Data Retention Policy 2023").await;
    let (b, _) = kit.doc("Data Retention Policy 2024").await;
    let out = run(
        &graph(&kit),
        "t",
        request("Compare them", Action::Compare, &[&a, &b]),
    )
    .await;
    assert!(out.interrupts().is_empty());
    assert_eq!(out.state.resolved_doc_ids, [a, b]);
}

#[tokio::test]
async fn compare_with_one_document_asks_for_a_second_until_it_has_one() {
    let kit = kit().await;
    let (a, a_title) = kit.doc("Anti-Money").await;
    let (b, _) = kit.doc("Data Retention Policy 2024").await;
    let g = graph(&kit);
    let out = run(&g, "t", request("Compare", Action::Compare, &[&a])).await;
    let p = prompt(&out);
    assert_eq!(p["interrupt_type"], "text_input");
    assert_eq!(
        p["message"],
        format!("Compare needs at least 2 documents, and I have only \"{a_title}\". Which other document should I compare it with?")
    );
    assert_eq!(p["options"], Value::Null, "a text_input has no options");
    let out = resume(&g, "t", json!("the pizza menu")).await;
    let again = prompt(&out);
    let again = again["message"].as_str().unwrap();
    assert!(
        again.starts_with("I couldn't find \"the pizza menu\""),
        "{again}"
    );
    assert!(
        again.contains("Compare needs at least 2 documents"),
        "{again}"
    );
    let out = resume(&g, "t", json!("Data Retention Policy 2024")).await;
    assert!(out.interrupts().is_empty());
    assert_eq!(out.state.resolved_doc_ids, [a, b]);
}

#[tokio::test]
async fn compare_with_one_version_takes_the_version_next_to_it() {
    let kit = kit().await;
    let (r23, _) = kit.doc("Data Retention Policy 2023").await;
    let (r24, _) = kit.doc("Data Retention Policy 2024").await;
    let g = graph(&kit);
    for (thread, given) in [("older", &r23), ("newer", &r24)] {
        let out = run(
            &g,
            thread,
            request("What changed?", Action::Compare, &[given]),
        )
        .await;
        assert!(out.interrupts().is_empty(), "{thread}");
        assert_eq!(
            out.state.resolved_doc_ids,
            [r23.clone(), r24.clone()],
            "{thread}: oldest first"
        );
    }
}

#[tokio::test]
async fn was_it_different_before_of_a_document_with_no_other_version_answers_as_it_stands() {
    let kit = kit().await;
    let (a, a_title) = kit.doc("Anti-Money").await;
    let out = run(
        &graph(&kit),
        "t",
        request("Was that different before?", Action::Compare, &[&a]),
    )
    .await;
    assert!(out.interrupts().is_empty(), "nothing to ask");
    assert_eq!(out.state.action, Some(Action::Inquire));
    assert_eq!(out.state.resolved_doc_ids, [a]);
    assert!(
        out.state
            .notices
            .iter()
            .any(|n| n.contains("no earlier version") && n.contains(&a_title)),
        "{:?}",
        out.state.notices
    );
}

#[tokio::test]
async fn compare_with_no_document_takes_two_names_in_one_answer() {
    let kit = kit().await;
    let (crr, _) = kit.doc("Capital").await;
    let (aml, _) = kit.doc("Anti-Money").await;
    let g = graph(&kit);
    let out = run(&g, "t", request("Compare", Action::Compare, &[])).await;
    assert!(prompt(&out)["message"]
        .as_str()
        .unwrap()
        .starts_with("Compare needs at least 2 documents"));
    let out = resume(&g, "t", json!("the AML policy and the CRR")).await;
    assert_eq!(out.state.resolved_doc_ids, [aml, crr]);
}

#[tokio::test]
async fn summarize_with_no_document_asks_which() {
    let kit = kit().await;
    let (ir, _) = kit.doc("Information Security").await;
    let g = graph(&kit);
    let out = run(
        &g,
        "t",
        request("Give me a summary", Action::Summarize, &[]),
    )
    .await;
    assert_eq!(
        prompt(&out)["message"],
        "Which document should I summarize?"
    );
    let out = resume(&g, "t", json!("incident response procedure")).await;
    assert_eq!(out.state.resolved_doc_ids, [ir]);
}

#[tokio::test]
async fn audit_without_text_asks_for_it_and_takes_the_answer_as_the_text() {
    let kit = kit().await;
    let (aml, aml_title) = kit.doc("Anti-Money").await;
    let g = graph(&kit);
    let out = run(
        &g,
        "t",
        request(
            &format!("Audit this against @{aml_title}"),
            Action::Audit,
            &[&aml],
        ),
    )
    .await;
    let p = prompt(&out);
    assert_eq!(p["interrupt_type"], "text_input");
    assert_eq!(
        p["message"],
        format!("What text should I audit against {aml_title}? Paste it here.")
    );
    let text = "PEP relationships may be approved by any manager.";
    let out = resume(&g, "t", json!(text)).await;
    assert_eq!(out.state.audit_text.as_deref(), Some(text));
    assert_eq!(out.state.resolved_doc_ids, [aml]);
}

#[tokio::test]
async fn audit_text_in_the_message_needs_no_prompt_and_finds_documents_by_content() {
    let kit = kit().await;
    let (r23, _) = kit.doc("Data Retention Policy 2023").await;
    let (r24, _) = kit.doc("Data Retention Policy 2024").await;
    let out = run(
        &graph(&kit),
        "t",
        request(
            "Audit: Customer account records are kept for three years after the account is closed.",
            Action::Audit,
            &[],
        ),
    )
    .await;
    assert!(out.interrupts().is_empty());
    assert_eq!(
        out.state.audit_text.as_deref(),
        Some("Customer account records are kept for three years after the account is closed.")
    );
    assert!(
        out.state.resolved_doc_ids.contains(&r24),
        "the version in force is audited against"
    );
    assert!(
        !out.state.resolved_doc_ids.contains(&r23),
        "not the one it replaced"
    );
}

#[tokio::test]
async fn compare_drops_web_search_and_says_so() {
    let kit = kit().await;
    let (a, _) = kit.doc("Data Retention Policy 2023").await;
    let (b, _) = kit.doc("Data Retention Policy 2024").await;
    let out = run(
        &graph(&kit),
        "t",
        request("Compare the latest", Action::Compare, &[&a, &b]).enable_web_search(true),
    )
    .await;
    assert!(!out.state.enable_web_search);
    assert_eq!(out.state.web_search_query, None);
    assert_eq!(out.state.notices, [COMPARE_DROPS_WEB]);
}

#[tokio::test]
async fn web_search_gets_a_query_naming_the_document() {
    let kit = kit().await;
    let (crr, _) = kit.doc("Capital").await;
    let out = run(
        &graph(&kit),
        "t",
        request("Is the leverage ratio still 3%?", Action::Inquire, &[&crr])
            .enable_web_search(true),
    )
    .await;
    assert!(out.state.enable_web_search);
    assert_eq!(
        out.state.web_search_query.as_deref(),
        Some("Capital Requirements Regulation leverage ratio still 3%")
    );
}

#[tokio::test]
async fn a_request_about_the_present_turns_web_search_on_without_the_intent_resolver() {
    // An explicit action skips intent_resolver, so its temporal keyword scan happens here.
    let kit = kit().await;
    let (crr, _) = kit.doc("Capital").await;
    let out = run(
        &graph(&kit),
        "t",
        request(
            "What is the latest leverage ratio?",
            Action::Inquire,
            &[&crr],
        ),
    )
    .await;
    assert!(out.state.enable_web_search);
    assert!(out.state.web_search_query.is_some());
    let out = run(
        &graph(&kit),
        "u",
        request("What is the leverage ratio?", Action::Inquire, &[&crr]),
    )
    .await;
    assert!(!out.state.enable_web_search);
    assert_eq!(out.state.web_search_query, None);
    // An audit against the policy in force names the present of the document, not of the
    // world.
    let out = run(
        &graph(&kit),
        "v",
        request(
            "Audit this against the current policy: today we hold a leverage ratio of 2.9%.",
            Action::Audit,
            &[&crr],
        ),
    )
    .await;
    assert!(!out.state.enable_web_search);
    assert_eq!(out.state.web_search_query, None);
    let out = run(
        &graph(&kit),
        "w",
        request("Summarise the current policy.", Action::Summarize, &[&crr]),
    )
    .await;
    assert!(!out.state.enable_web_search);
}

#[tokio::test]
async fn a_cancelled_prompt_ends_the_turn() {
    let kit = kit().await;
    let g = graph(&kit);
    run(&g, "t", request("Compare", Action::Compare, &[])).await;
    let out = resume(&g, "t", Value::Null).await;
    assert!(out.state.cancelled);
    assert_eq!(out.state.response, CANCELLED_RESPONSE);
    let record = out.state.messages.last().unwrap();
    assert_eq!(record.metadata["interrupt_type"], "text_input");
    assert_eq!(record.metadata["answer"], Value::Null);
}

#[tokio::test]
async fn a_summary_of_a_policy_described_by_its_title_words_needs_no_prompt() {
    let kit = kit().await;
    let (aml, _) = kit.doc("Anti-Money").await;
    let out = run(
        &graph(&kit),
        "t",
        request(
            "Can you give me a rundown of our policy on anti-money laundering?",
            Action::Summarize,
            &[],
        ),
    )
    .await;
    assert!(out.interrupts().is_empty(), "{:?}", out.interrupts());
    assert_eq!(out.state.resolved_doc_ids, [aml]);
}
