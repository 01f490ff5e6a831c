//! PalAssist end to end on the SQLite checkpointer (documents in the same SQLite file), with
//! the offline LLM wrapped in a call counter: the scenarios of the PalAssist issue.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use palgraph::checkpoint::SqliteCheckpointer;
use palgraph::stream::VecSink;
use palgraph::{
    CompiledGraph, Event, MessageKind, Resume, RunConfig, RunInput, RunOutcome, RunStatus,
};
use palgraph_graphs::palassist::{self, turn_input, Action, AgentState, ChatTurn, PalAssistDeps};
use palgraph_nodes::llm::{CountingLlm, LlmCalls, OfflineLlm};
use palgraph_nodes::prompt::CANCELLED_RESPONSE;
use palgraph_nodes::validate_inputs::COMPARE_DROPS_WEB;
use palgraph_nodes::{seed_samples, DocumentStore, InferenceSource, SqliteDocumentStore};
use serde_json::{json, Value};

const USER: &str = "alice";

struct Harness {
    graph: CompiledGraph<AgentState>,
    llm: Arc<CountingLlm>,
    docs: Arc<SqliteDocumentStore>,
    path: std::path::PathBuf,
}

impl Drop for Harness {
    fn drop(&mut self) {
        palgraph::testkit::backends::remove_sqlite_files(&self.path);
    }
}

async fn harness() -> Harness {
    let path = palgraph::testkit::backends::temp_db_path();
    let pool = palgraph::db::open_sqlite(&path).await.unwrap();
    let docs = Arc::new(SqliteDocumentStore::open(pool.clone()).await.unwrap());
    seed_samples(docs.as_ref(), USER).await.unwrap();
    let llm = Arc::new(CountingLlm::new(Arc::new(OfflineLlm::new())));
    let graph = palassist::graph(PalAssistDeps::new(llm.clone(), docs.clone()))
        .unwrap()
        .with_checkpointer(Arc::new(SqliteCheckpointer::new(pool)));
    Harness {
        graph,
        llm,
        docs,
        path,
    }
}

fn config(thread: &str) -> RunConfig {
    RunConfig::new(thread).context("user_id", USER)
}

impl Harness {
    async fn send(&self, thread: &str, turn: ChatTurn) -> RunOutcome<AgentState> {
        self.graph
            .invoke(config(thread), RunInput::Turn(turn_input(turn)))
            .await
            .unwrap()
    }

    async fn say(&self, thread: &str, message: &str) -> RunOutcome<AgentState> {
        self.send(
            thread,
            ChatTurn {
                message: message.into(),
                ..Default::default()
            },
        )
        .await
    }

    async fn resume(&self, thread: &str, value: Value) -> RunOutcome<AgentState> {
        self.graph
            .invoke(config(thread), RunInput::Resume(Resume::Value(value)))
            .await
            .unwrap()
    }

    /// (id, title) of the sample whose title starts with `prefix`.
    async fn doc(&self, prefix: &str) -> (String, String) {
        let d = self
            .docs
            .titles(USER)
            .await
            .unwrap()
            .into_iter()
            .find(|d| d.title.starts_with(prefix))
            .unwrap();
        (d.id, d.title)
    }

    /// A turn mentioning `docs` in TipTap JSON (nested in a paragraph), after `text`.
    async fn mention(&self, text: &str, prefixes: &[&str]) -> ChatTurn {
        let mut nodes = vec![json!({"type": "text", "text": text})];
        let mut message = text.to_string();
        for p in prefixes {
            let (id, title) = self.doc(p).await;
            nodes.push(json!({"type": "mention", "attrs": {"id": id, "label": title}}));
            message.push_str(&format!(" @{title}"));
        }
        ChatTurn {
            message,
            tiptap_json: Some(
                json!({"type": "doc", "content": [{"type": "paragraph", "content": nodes}]}),
            ),
            ..Default::default()
        }
    }

    fn calls(&self) -> LlmCalls {
        self.llm.calls()
    }
}

/// The single pending prompt's payload.
fn prompt(out: &RunOutcome<AgentState>) -> &Value {
    let pending = out.interrupts();
    assert_eq!(
        pending.len(),
        1,
        "expected one prompt, got {:?}",
        out.status
    );
    &pending[0].value
}

/// The ids of a prompt's options (what a button sends back).
fn option_values(p: &Value) -> Vec<&str> {
    p["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect()
}

fn assert_answered(out: &RunOutcome<AgentState>, action: Action) {
    assert_eq!(out.status, RunStatus::Completed, "{:?}", out.status);
    assert_eq!(out.state.action, Some(action));
    assert!(!out.state.cancelled);
    let last = out.state.messages.last().unwrap();
    assert_eq!(last.kind, MessageKind::Ai);
    assert_eq!(last.content, out.state.response);
    assert_eq!(last.metadata["action"], action.as_str());
    assert!(
        !out.state.citations.is_empty(),
        "no citations: {}",
        out.state.response
    );
    assert_eq!(last.metadata["citations"], json!(out.state.citations));
}

fn prompt_records(state: &AgentState) -> Vec<&palgraph::Message> {
    state
        .messages
        .iter()
        .filter(|m| m.metadata.get("kind") == Some(&json!("palassist_prompt")))
        .collect()
}

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
    assert_eq!(out.state.resolved_doc_ids, [crr]);
    assert_eq!(out.state.inference_source, Some(InferenceSource::Retrieval));
    assert!(
        out.state.response.contains("capital ratio"),
        "{}",
        out.state.response
    );
    assert!(out.state.retrieval_confidence > 0.5);
    assert!(!out.state.enable_web_search);
    assert_eq!(out.state.tokens_used, 0, "offline answers cost nothing");
    assert_eq!(out.state.cost_usd, 0.0);
}

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
        out.state.response.contains("Possible gaps:\n1. "),
        "{}",
        out.state.response
    );
    assert!(
        out.state
            .response
            .contains("states 3 years where the requirement says 7 years"),
        "the 2024 policy replaces the 2023 one, so its 7 years is the requirement: {}",
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
    let (r23, _) = h.doc("Data Retention Policy 2023").await;
    let (r24, r24_title) = h.doc("Data Retention Policy 2024").await;
    let out = h.say("t", "Summarize the data retention policy").await;
    let p = prompt(&out);
    assert_eq!(p["interrupt_type"], "doc_choice");
    assert_eq!(option_values(p), [r23.as_str(), r24.as_str(), "all"]);
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
    assert_eq!(out.state.suggested_doc_ids, [r23, r24.clone()]);
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
    let (r23, _) = h.doc("Data Retention Policy 2023").await;
    let (r24, _) = h.doc("Data Retention Policy 2024").await;
    let out = h.say("t", "Summarize the data retention policy").await;
    assert_eq!(
        option_values(prompt(&out)),
        [r23.as_str(), r24.as_str(), "all"]
    );
    h.docs
        .create(
            USER,
            "Data Retention Policy 2025",
            "Records are kept for ten years.",
        )
        .await
        .unwrap();
    let before = h.calls();

    let out = h.resume("t", json!(r24)).await;
    assert_answered(&out, Action::Summarize);
    assert_eq!(out.state.suggested_doc_ids, [r23, r24.clone()]);
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
    let (r23, _) = h.doc("Data Retention Policy 2023").await;
    let (r24, _) = h.doc("Data Retention Policy 2024").await;
    let out = h.say("t", "Summarize the data retention policy").await;
    assert_eq!(prompt(&out)["interrupt_type"], "doc_choice");
    let out = h.resume("t", json!("all")).await;
    assert_answered(&out, Action::Summarize);
    assert_eq!(out.state.resolved_doc_ids, [r23, r24]);
    assert!(out
        .state
        .response
        .contains("**Data Retention Policy 2023**"));
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
        .send(
            "t",
            h.mention("Compare", &["Data Retention Policy 2023"]).await,
        )
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
    assert_eq!(out.state.resolved_doc_ids, [r23, r24]);
    let r = &out.state.response;
    assert!(r.contains("Changed:"), "{r}");
    assert!(r.contains("5 years → 7 years"), "{r}");
    assert!(r.contains("Only in Data Retention Policy 2024"), "{r}");
    assert_eq!(out.state.conversation_docs.len(), 2);
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

    // action_choice: a cancel falls back to inquire and the turn is answered.
    let out = h
        .say("a", "Summarize and compare the data retention policies")
        .await;
    assert_eq!(prompt(&out)["interrupt_type"], "action_choice");
    let out = h.resume("a", Value::Null).await;
    assert_answered(&out, Action::Inquire);
    assert_eq!(
        prompt_records(&out.state)[0].metadata["answer"],
        Value::Null
    );

    // doc_choice (doc_resolver).
    let out = h.say("b", "Summarize the data retention policy").await;
    cancel_then_fresh_turn(&h, "b", out, "doc_choice").await;

    // text_input (doc_resolver: unknown name).
    let out = h.say("c", "Summarize the travel expense policy").await;
    cancel_then_fresh_turn(&h, "c", out, "text_input").await;

    // text_input (validate_inputs: compare needs a second document), on a thread whose
    // registry already holds a document.
    h.send("d", h.mention("Summarize", &["Capital Requirements"]).await)
        .await;
    let out = h
        .send(
            "d",
            h.mention("Compare", &["Data Retention Policy 2023"]).await,
        )
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
