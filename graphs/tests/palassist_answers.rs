//! PalAssist's offline answers on documents uploaded before uploads were titled by their
//! heading: a document titled by its file name ("vendor") must not have its title cut out
//! of the user's words, nor turn into a stray topic line. The real graph, the in-memory
//! document store with the samples, and the offline model.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use palgraph::{RunConfig, RunInput, RunStatus};
use palgraph_graphs::palassist::{self, turn_input, AgentState, ChatTurn, PalAssistDeps};
use palgraph_nodes::llm::OfflineLlm;
use palgraph_nodes::{seed_samples, AnswerKind, DocumentStore, MemoryDocumentStore};
use serde_json::json;

const USER: &str = "alice";
const VENDOR: &str = include_str!("../eval/library/dev/fixtures/vendor.md");

/// The graph over the samples and the vendor standard uploaded as `vendor.md` under the
/// old rule (title = file name, the `#` heading left in the body); the vendor doc's id.
async fn graph_with_file_named_upload() -> (palgraph::CompiledGraph<AgentState>, String) {
    let docs = Arc::new(MemoryDocumentStore::new());
    seed_samples(docs.as_ref(), USER).await.unwrap();
    let vendor = docs.create(USER, "vendor", VENDOR).await.unwrap();
    let graph = palassist::graph(PalAssistDeps::new(Arc::new(OfflineLlm::new()), docs)).unwrap();
    (graph, vendor.id)
}

async fn answer(graph: &palgraph::CompiledGraph<AgentState>, turn: ChatTurn) -> Arc<AgentState> {
    let out = graph
        .invoke(
            RunConfig::new("t").context("user_id", USER),
            RunInput::Turn(turn_input(turn)),
        )
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{:?}", out.status);
    out.state
}

#[tokio::test]
async fn an_audit_quotes_the_users_words_whole_when_a_title_is_one_of_them() {
    let (graph, vendor) = graph_with_file_named_upload().await;
    let text = "Our critical vendors are reassessed every 24 months, and the vendor may keep our data for 90 days after the contract ends.";
    let state = answer(
        &graph,
        ChatTurn {
            message: format!("Audit this against @vendor: {text}"),
            tiptap_json: Some(
                json!({"type": "doc", "content": [{"type": "paragraph", "content": [
                    {"type": "text", "text": "Audit this against "},
                    {"type": "mention", "attrs": {"id": vendor, "label": "vendor"}},
                    {"type": "text", "text": format!(": {text}")}
                ]}]}),
            ),
            ..Default::default()
        },
    )
    .await;
    let r = &state.response;
    assert_eq!(state.audit_text.as_deref(), Some(text));
    assert!(
        r.contains("\"Our critical vendors are reassessed every 24 months\""),
        "{r}"
    );
    assert!(
        r.contains("\"the vendor may keep our data for 90 days after the contract ends\""),
        "{r}"
    );
    assert!(
        !r.contains("critical s ") && !r.contains("the may keep"),
        "{r}"
    );
    assert!(
        r.contains("every 24 months is less often than the rule's every 12 months"),
        "{r}"
    );
    assert!(
        r.contains("90 days is more than the 30 days allowed"),
        "{r}"
    );
    assert!(
        !r.contains("other vendors"),
        "the rule of other vendors is not this one: {r}"
    );
    assert_eq!(
        state.answered_by.as_ref().map(|a| a.kind),
        Some(AnswerKind::Offline)
    );
}

#[tokio::test]
async fn a_comparison_naming_its_documents_has_no_stray_topic_line() {
    let (graph, _) = graph_with_file_named_upload().await;
    let state = answer(
        &graph,
        ChatTurn {
            message: "Compare the vendor standard with the incident response procedure".into(),
            ..Default::default()
        },
    )
    .await;
    let r = &state.response;
    assert_eq!(state.resolved_doc_ids.len(), 2, "{r}");
    assert!(
        r.contains("**vendor** (v1.2) compared with **Information Security"),
        "{r}"
    );
    assert!(r.contains("24 hours") && r.contains("72 hours"), "{r}");
    assert!(!r.contains("(on "), "{r}");
}

#[tokio::test]
async fn which_documents_lists_every_document_of_the_user() {
    let (graph, _) = graph_with_file_named_upload().await;
    let state = answer(
        &graph,
        ChatTurn {
            message: "Which documents do I have?".into(),
            ..Default::default()
        },
    )
    .await;
    let r = &state.response;
    assert!(r.starts_with("You have 6 documents:"), "{r}");
    for title in [
        "Capital Requirements Regulation (CRR) — Excerpt",
        "Data Retention Policy 2023",
        "Data Retention Policy 2024",
        "**vendor**",
    ] {
        assert!(r.contains(title), "{title}: {r}");
    }
    assert!(
        r.contains(
            "**Data Retention Policy 2023** (v3.1, superseded by Data Retention Policy 2024)"
        ),
        "{r}"
    );
    assert_eq!(state.citations.len(), 6);
}
