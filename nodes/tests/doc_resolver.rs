//! The `doc_resolver` node, one branch per test.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;

use palgraph::stream::VecSink;
use palgraph::{Event, Message, RunInput};
use palgraph_nodes::doc_resolver::doc_resolver;
use palgraph_nodes::prompt::CANCELLED_RESPONSE;
use palgraph_nodes::{Action, AgentStateUpdate, DocumentStore, InferenceSource};
use serde_json::{json, Value};
use support::*;

fn graph(kit: &Kit) -> palgraph::CompiledGraph<palgraph_nodes::AgentState> {
    single("doc_resolver", doc_resolver, &kit.deps)
}

fn asking(message: &str, action: Action) -> AgentStateUpdate {
    said(message).action(Some(action))
}

fn option_values(p: &Value) -> Vec<String> {
    p["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn pure_mentions_in_nested_tiptap_resolve_without_an_llm_call() {
    let kit = kit().await;
    let (crr, crr_t) = kit.doc("Capital").await;
    let (aml, aml_t) = kit.doc("Anti-Money").await;
    let input = asking(&format!("Compare @{crr_t} and @{aml_t}"), Action::Compare)
        .tiptap_json(Some(tiptap("Compare ", &[(&crr, &crr_t), (&aml, &aml_t)])));
    let sink = Arc::new(VecSink::default());
    let out = graph(&kit)
        .run(config("t"), RunInput::Turn(input), sink.clone())
        .await
        .unwrap();
    assert_eq!(out.state.resolved_doc_ids, [crr.clone(), aml.clone()]);
    assert_eq!(out.state.inference_source, Some(InferenceSource::Explicit));
    assert_eq!(out.state.inference_confidence, 1.0);
    assert_eq!(kit.llm.calls().doc_resolution, 0);
    let statuses: Vec<(String, Value)> = sink
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::Status {
                message, details, ..
            } => Some((message, details)),
            _ => None,
        })
        .collect();
    assert_eq!(statuses.len(), 1, "one status line: {statuses:?}");
    let status = statuses.into_iter().next();
    assert_eq!(
        status,
        Some((
            "Finding documents...".to_string(),
            json!({"docs_found": [{"id": crr, "title": crr_t}, {"id": aml, "title": aml_t}]})
        ))
    );
}

#[tokio::test]
async fn tagged_ids_count_as_mentions() {
    let kit = kit().await;
    let (r24, _) = kit.doc("Data Retention Policy 2024").await;
    let out = run(
        &graph(&kit),
        "t",
        asking("Summarize this", Action::Summarize).explicit_doc_ids(vec![r24.clone()]),
    )
    .await;
    assert_eq!(out.state.resolved_doc_ids, [r24]);
    assert_eq!(kit.llm.calls().doc_resolution, 0);
}

#[tokio::test]
async fn a_mention_of_another_users_document_is_left_out_and_reported() {
    let kit = kit().await;
    let foreign = kit
        .docs
        .create("bob", "Bob's Notes", "Private text of Bob.")
        .await
        .unwrap();
    let (crr, crr_t) = kit.doc("Capital").await;
    let input = asking("Summarize", Action::Summarize).tiptap_json(Some(tiptap(
        "Summarize ",
        &[(&foreign.id, "Bob's Notes"), (&crr, &crr_t)],
    )));
    let out = run(&graph(&kit), "t", input).await;
    assert_eq!(out.state.resolved_doc_ids, [crr]);
    assert_eq!(out.state.unresolved_names, ["Bob's Notes"]);
    assert!(out.state.notices[0].contains("Bob's Notes"));
}

#[tokio::test]
async fn a_mention_plus_another_name_is_not_pure_and_resolves_both() {
    let kit = kit().await;
    let (r23, r23_t) = kit.doc("Data Retention Policy 2023").await;
    let (aml, _) = kit.doc("Anti-Money").await;
    let input = asking(
        &format!("Compare @{r23_t} with the AML policy"),
        Action::Compare,
    )
    .tiptap_json(Some(tiptap("Compare ", &[(&r23, &r23_t)])));
    let out = run(&graph(&kit), "t", input).await;
    assert_eq!(kit.llm.calls().doc_resolution, 1);
    assert_eq!(out.state.resolved_doc_ids, [r23, aml]);
    assert_eq!(out.state.inference_source, Some(InferenceSource::Fuzzy));
}

fn conversation(kit_titles: &[(String, String)], extra: &[&str]) -> AgentStateUpdate {
    let registry: BTreeMap<String, String> = kit_titles
        .iter()
        .map(|(id, t)| (t.clone(), id.clone()))
        .collect();
    let mut messages = vec![];
    for (i, line) in extra.iter().enumerate() {
        messages.push(if i % 2 == 0 {
            Message::human(*line)
        } else {
            Message::ai(*line)
        });
    }
    AgentStateUpdate::default()
        .conversation_docs(registry)
        .messages(messages)
}

/// Writes an earlier conversation on thread `t` as if earlier turns had run.
async fn remember(
    g: &palgraph::CompiledGraph<palgraph_nodes::AgentState>,
    update: AgentStateUpdate,
) {
    g.update_state("t", None, update, Some("doc_resolver"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_registry_title_in_the_message_takes_the_cheap_path_without_history() {
    let recording = Arc::new(RecordingLlm::default());
    let kit = kit_with(recording.clone()).await;
    let crr = kit.doc("Capital").await;
    let aml = kit.doc("Anti-Money").await;
    let g = graph(&kit);
    remember(
        &g,
        conversation(
            &[crr.clone(), aml.clone()],
            &["q1", "a1", "q2", "a2", "q3", "a3"],
        ),
    )
    .await;
    let out = run(
        &g,
        "t",
        asking("What does the CRR say about buffers?", Action::Inquire),
    )
    .await;
    let requests = recording.docs.lock().unwrap().clone();
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0].history.is_empty(),
        "a registry title is named: no history needed"
    );
    assert_eq!(requests[0].registry.len(), 2);
    assert_eq!(out.state.resolved_doc_ids, [crr.0]);
}

#[tokio::test]
async fn a_pronoun_sends_the_last_five_messages_and_resolves_from_them() {
    let recording = Arc::new(RecordingLlm::default());
    let kit = kit_with(recording.clone()).await;
    let crr = kit.doc("Capital").await;
    let aml = kit.doc("Anti-Money").await;
    let g = graph(&kit);
    let said_aml = format!("Here is what {} says about PEPs.", aml.1);
    remember(
        &g,
        conversation(
            &[crr.clone(), aml.clone()],
            &["q1", "a1", "q2", "a2", "What about PEPs?", &said_aml],
        ),
    )
    .await;
    let out = run(&g, "t", asking("Is it still in force?", Action::Inquire)).await;
    let requests = recording.docs.lock().unwrap().clone();
    assert_eq!(requests[0].history.len(), 5);
    assert_eq!(requests[0].history[4].content, said_aml);
    assert_eq!(out.state.resolved_doc_ids, [aml.0]);
    assert_eq!(out.state.inference_source, Some(InferenceSource::Registry));
    assert!(out.state.inference_confidence >= 0.8);
}

#[tokio::test]
async fn a_medium_registry_guess_asks_which_and_takes_the_pick() {
    let kit = kit().await;
    let crr = kit.doc("Capital").await;
    let aml = kit.doc("Anti-Money").await;
    let ir = kit.doc("Information Security").await;
    let g = graph(&kit);
    remember(
        &g,
        conversation(&[crr.clone(), aml.clone(), ir.clone()], &[]),
    )
    .await;
    let out = run(&g, "t", asking("Is it still in force?", Action::Inquire)).await;
    let p = prompt(&out);
    assert_eq!(p["interrupt_type"], "doc_choice");
    assert_eq!(p["message"], "Which of these documents do you mean?");
    let mut values = option_values(&p);
    assert_eq!(values.pop().as_deref(), Some("all"));
    values.sort();
    let mut expected = vec![crr.0.clone(), aml.0.clone(), ir.0.clone()];
    expected.sort();
    assert_eq!(values, expected);
    let out = resume(&g, "t", json!(ir.0)).await;
    assert_eq!(out.state.resolved_doc_ids, [ir.0]);
    assert_eq!(
        out.state.inference_source,
        Some(InferenceSource::UserChoice)
    );
    assert_eq!(
        kit.llm.calls().doc_resolution,
        1,
        "the resume did not call again"
    );
}

#[tokio::test]
async fn a_misspelt_name_still_matches_by_similarity() {
    let kit = kit().await;
    let (r24, _) = kit.doc("Data Retention Policy 2024").await;
    let out = run(
        &graph(&kit),
        "t",
        asking(
            "Summarize the data retension policy 2024",
            Action::Summarize,
        ),
    )
    .await;
    assert_eq!(out.state.resolved_doc_ids, [r24]);
    assert_eq!(out.state.inference_source, Some(InferenceSource::Fuzzy));
    assert!(out.state.inference_confidence >= 0.85);
}

#[tokio::test]
async fn a_doc_choice_takes_an_id_all_or_typed_text() {
    let kit = kit().await;
    let (aml, _) = kit.doc("Anti-Money").await;
    let (r24, _) = kit.doc("Data Retention Policy 2024").await;
    let g = graph(&kit);
    for (thread, answer, expected) in [
        ("id", json!(aml), vec![aml.clone()]),
        ("all", json!("all"), vec![aml.clone(), r24.clone()]),
        ("typed", json!("the retention one"), vec![r24.clone()]),
        (
            "object",
            json!({"type": "choice", "value": r24}),
            vec![r24.clone()],
        ),
    ] {
        // Two policies: the AML policy and the data retention policy (its version in
        // force; the 2023 version it replaced is not a choice).
        let out = run(
            &g,
            thread,
            asking("Summarize the policy", Action::Summarize),
        )
        .await;
        let p = prompt(&out);
        assert_eq!(
            option_values(&p),
            [aml.clone(), r24.clone(), "all".to_string()]
        );
        let out = resume(&g, thread, answer).await;
        assert_eq!(out.state.resolved_doc_ids, expected, "{thread}");
        assert_eq!(
            out.state.suggested_doc_ids,
            [aml.clone(), r24.clone()],
            "{thread}"
        );
    }
}

#[tokio::test]
async fn the_versions_of_one_document_are_one_answer_not_a_choice() {
    let kit = kit().await;
    let (r23, _) = kit.doc("Data Retention Policy 2023").await;
    let (r24, _) = kit.doc("Data Retention Policy 2024").await;
    let g = graph(&kit);
    for (thread, message, expected) in [
        (
            "unnamed",
            "Summarize the data retention policy",
            vec![r24.clone()],
        ),
        (
            "current",
            "Summarize the current retention policy",
            vec![r24.clone()],
        ),
        (
            "old",
            "Summarize the old retention policy",
            vec![r23.clone()],
        ),
        (
            "year",
            "Summarize the 2023 data retention policy",
            vec![r23.clone()],
        ),
        (
            "both",
            "Compare the 2023 and 2024 data retention policies",
            vec![r23.clone(), r24.clone()],
        ),
    ] {
        let action = if thread == "both" {
            Action::Compare
        } else {
            Action::Summarize
        };
        let out = run(&g, thread, asking(message, action)).await;
        assert!(out.interrupts().is_empty(), "{thread}: no prompt");
        let mut got = out.state.resolved_doc_ids.clone();
        got.sort();
        let mut want = expected.clone();
        want.sort();
        assert_eq!(got, want, "{thread}");
    }
}

#[tokio::test]
async fn an_unknown_name_asks_for_text_again_until_it_matches_or_is_cancelled() {
    let kit = kit().await;
    let (ir, _) = kit.doc("Information Security").await;
    let g = graph(&kit);
    let out = run(
        &g,
        "a",
        asking("Summarize the travel expense policy", Action::Summarize),
    )
    .await;
    let p = prompt(&out);
    assert_eq!(p["interrupt_type"], "text_input");
    assert!(
        p["message"]
            .as_str()
            .unwrap()
            .contains("Data Retention Policy 2024"),
        "lists the user's documents"
    );
    let out = resume(&g, "a", json!("the incident response procedure")).await;
    assert_eq!(out.state.resolved_doc_ids, [ir]);
    assert_eq!(
        out.state.inference_source,
        Some(InferenceSource::UserChoice)
    );

    run(
        &g,
        "b",
        asking("Summarize the travel expense policy", Action::Summarize),
    )
    .await;
    let out = resume(&g, "b", json!("the banana manual")).await;
    let again = prompt(&out);
    assert_eq!(again["interrupt_type"], "text_input");
    assert!(again["message"]
        .as_str()
        .unwrap()
        .contains("the banana manual"));
    let out = resume(&g, "b", Value::Null).await;
    assert!(out.state.cancelled);
    assert_eq!(out.state.response, CANCELLED_RESPONSE);
    assert!(out.state.resolved_doc_ids.is_empty());
    let records: Vec<&Message> = out
        .state
        .messages
        .iter()
        .filter(|m| m.metadata.get("kind") == Some(&json!("palassist_prompt")))
        .collect();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0].metadata["answer"], "the banana manual");
    assert_eq!(records[1].metadata["answer"], Value::Null);
}

#[tokio::test]
async fn near_matches_are_suggested_when_nothing_matches() {
    let kit = kit().await;
    let (r23, _) = kit.doc("Data Retention Policy 2023").await;
    let (r24, _) = kit.doc("Data Retention Policy 2024").await;
    let g = graph(&kit);
    run(
        &g,
        "t",
        asking("Summarize the retention guideline", Action::Summarize),
    )
    .await;
    let out = resume(&g, "t", Value::Null).await;
    assert_eq!(out.state.suggested_doc_ids, [r23, r24]);
}

#[tokio::test]
async fn a_cancelled_doc_choice_ends_the_turn() {
    let kit = kit().await;
    let g = graph(&kit);
    run(&g, "t", asking("Summarize the policy", Action::Summarize)).await;
    let sink = Arc::new(VecSink::default());
    let out = g
        .run(
            config("t"),
            RunInput::Resume(palgraph::Resume::Value(Value::Null)),
            sink.clone(),
        )
        .await
        .unwrap();
    assert!(out.state.cancelled);
    assert_eq!(out.state.response, CANCELLED_RESPONSE);
    assert!(out.state.resolved_doc_ids.is_empty());
    let statuses: Vec<Value> = sink
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::Status { details, .. } => Some(details),
            _ => None,
        })
        .collect();
    assert_eq!(
        statuses,
        [json!({"docs_found": []})],
        "the node still reports its one status line: nothing found to work on"
    );
}

#[tokio::test]
async fn nothing_named_means_retrieval_for_questions_but_not_for_summaries() {
    let kit = kit().await;
    let (ir, _) = kit.doc("Information Security").await;
    let g = graph(&kit);
    let out = run(
        &g,
        "a",
        asking(
            "How fast must a personal data breach be notified?",
            Action::Inquire,
        ),
    )
    .await;
    assert_eq!(out.state.resolved_doc_ids[0], ir, "the best match first");
    assert_eq!(out.state.inference_source, Some(InferenceSource::Retrieval));
    assert!(out.state.inference_confidence > 0.3 && out.state.inference_confidence <= 1.0);
    let out = run(&g, "b", asking("Give me a summary", Action::Summarize)).await;
    assert!(out.state.resolved_doc_ids.is_empty());
    assert!(
        out.interrupts().is_empty(),
        "validate_inputs asks for summaries"
    );
}

#[tokio::test]
async fn a_tagged_or_mentioned_set_resolves_to_every_document_of_the_set() {
    use palgraph_nodes::DocumentSetStore;
    let kit = kit().await;
    let (crr, _) = kit.doc("Capital").await;
    let (aml, _) = kit.doc("Anti-Money").await;
    let (r24, _) = kit.doc("Data Retention Policy 2024").await;
    let basel = kit
        .docs
        .create_set(USER, "Basel", &[crr.clone(), aml.clone()])
        .await
        .unwrap();
    let empty = kit.docs.create_set(USER, "Empty", &[]).await.unwrap();
    let bobs = kit
        .docs
        .create_set("bob", "Bob's folder", &[])
        .await
        .unwrap();

    // tagged_set_ids: the set's documents, deduplicated with the tagged documents, no LLM.
    let input = asking("Summarize", Action::Summarize)
        .explicit_doc_ids(vec![aml.clone(), r24.clone()])
        .tagged_set_ids(vec![basel.id.clone(), basel.id.clone()]);
    let out = run(&graph(&kit), "t", input).await;
    assert_eq!(
        out.state.resolved_doc_ids,
        [aml.clone(), r24.clone(), crr.clone()]
    );
    assert_eq!(out.state.inference_source, Some(InferenceSource::Explicit));
    assert!(out.state.notices.is_empty(), "{:?}", out.state.notices);
    assert_eq!(kit.llm.calls().doc_resolution, 0);

    // A set mention in the TipTap JSON (`kind: "set"`), its label left out of the request.
    let mention = json!({"type": "doc", "content": [{"type": "paragraph", "content": [
        {"type": "text", "text": "Summarize "},
        {"type": "mention", "attrs": {"id": basel.id, "label": "Basel", "kind": "set"}},
    ]}]});
    let input = asking("Summarize @Basel", Action::Summarize).tiptap_json(Some(mention));
    let out = run(&graph(&kit), "m", input).await;
    assert_eq!(out.state.resolved_doc_ids, [crr.clone(), aml.clone()]);
    assert_eq!(kit.llm.calls().doc_resolution, 0, "a pure set mention");

    // Someone else's, unknown and empty sets are named in notices; the rest still counts.
    let input = asking("Summarize", Action::Summarize)
        .explicit_doc_ids(vec![crr.clone()])
        .tagged_set_ids(vec![
            bobs.id.clone(),
            "no-such-set".into(),
            empty.id.clone(),
        ]);
    let out = run(&graph(&kit), "n", input).await;
    assert_eq!(out.state.resolved_doc_ids, [crr]);
    let notices = out.state.notices.join("\n");
    assert!(
        notices.contains(&format!("\"{}\" is not among your document sets", bobs.id)),
        "{notices}"
    );
    assert!(
        notices.contains("\"no-such-set\" is not among your document sets"),
        "{notices}"
    );
    assert!(
        notices.contains("\"Empty\" holds no documents"),
        "{notices}"
    );
}
