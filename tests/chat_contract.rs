//! The chat contract's exact shapes (DESIGN.md, "Chat contract: exact shapes"), as a
//! PalAssist frontend relies on them, through the real server on SQLite and Postgres:
//!
//! 1. prompt options are `[{id, label}]` (null for `text_input`) and each option's `id`
//!    resumes its prompt (action_choice, doc_choice and its "all");
//! 2. the `response` event's confidences are `"high" | "medium" | "low"`, the 0..1 score is
//!    `confidence_score` (never -0.0), and history shows the same levels;
//! 3. an explicit `action` skips intent classification: no `intent_resolver` status;
//! 4. one `status` per node, `docs_found: [{id, title}]` on doc_resolver's, and no
//!    `web_query` (nor a web search line) when no web search is configured;
//! 5. an unsure intent offers the top two actions;
//! 6. compare with one document says compare needs at least 2 documents;
//! 7. an LLM stream cut before the model finished is retried, then fails the run: never a
//!    `success` with truncated text (an OpenAI-compatible fake speaking the wire format);
//! 8. a stopped answer's message carries `interrupted`, `interrupted_reason`,
//!    `stream_run_id`, `client_turn_id`, `finished_reason`;
//! 9. every served graph is a chat graph, and the example graphs answer and prompt in the
//!    contract's shapes.
//!
//! Every stream ends with exactly one terminal event.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use crate::common;
#[path = "chat_contract/cut_answers.rs"]
mod cut_answers;
use crate::fake_openai;

use std::collections::BTreeMap;

use common::{Backend, Sse, SseEvent, TestServer};
use serde_json::{json, Value};

const PACED: &[(&str, &str)] = &[("PALASSIST_OFFLINE_PACE_MS", "25")];
const LEVELS: [&str; 3] = ["high", "medium", "low"];
const PROMPT_KINDS: [&str; 4] = ["doc_choice", "text_input", "action_choice", "retrieval_low"];
const NODES: [&str; 8] = [
    "intent_resolver",
    "doc_resolver",
    "validate_inputs",
    "summarize",
    "inquire",
    "compare",
    "audit",
    "format_response",
];
const ACTIONS: [&str; 4] = ["summarize", "inquire", "compare", "audit"];

async fn chat(s: &TestServer, body: Value) -> Sse {
    s.sse(s.client.post(s.url("/chat")).json(&body)).await
}

async fn resume(s: &TestServer, t: &str, kind: &str, value: Value) -> Vec<SseEvent> {
    s.sse(
        s.client
            .post(s.url("/chat/resume"))
            .json(&json!({"thread_id": t, "resume_value": {"type": kind, "value": value}})),
    )
    .await
    .all()
    .await
}

fn header(sse: &Sse, name: &str) -> String {
    sse.headers.get(name).unwrap().to_str().unwrap().to_string()
}

fn kinds(events: &[SseEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| e.data["type"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The one terminal event, last; panics otherwise.
fn terminal(events: &[SseEvent]) -> &Value {
    let t: Vec<&SseEvent> = events
        .iter()
        .filter(|e| {
            ["response", "interrupt", "error", "cancelled"]
                .contains(&e.data["type"].as_str().unwrap_or(""))
        })
        .collect();
    assert_eq!(
        t.len(),
        1,
        "exactly one terminal event: {:?}",
        kinds(events)
    );
    assert!(
        std::ptr::eq(t[0], events.last().unwrap()),
        "the terminal event is the last one: {:?}",
        kinds(events)
    );
    &t[0].data
}

/// The status events, checked against the contract: `{type, node, message, docs_found?,
/// web_query?}`, one per node, docs_found only from doc_resolver (as `[{id, title}]`),
/// web_query only from an action node. Returns them by node.
fn statuses(events: &[SseEvent]) -> BTreeMap<String, Value> {
    let mut by_node: BTreeMap<String, Value> = BTreeMap::new();
    for e in events.iter().filter(|e| e.data["type"] == "status") {
        let v = &e.data;
        let node = v["node"].as_str().expect("a status names its node");
        assert!(NODES.contains(&node), "unknown node {node}");
        assert!(!v["message"].as_str().expect("a message").is_empty(), "{v}");
        for k in v.as_object().unwrap().keys() {
            assert!(
                ["type", "node", "message", "docs_found", "web_query"].contains(&k.as_str()),
                "unexpected status field {k}: {v}"
            );
        }
        if let Some(found) = v.get("docs_found") {
            assert_eq!(node, "doc_resolver", "docs_found only from doc_resolver");
            for d in found.as_array().expect("docs_found is a list") {
                assert!(d["id"].is_string() && d["title"].is_string(), "{d}");
            }
        }
        if let Some(q) = v.get("web_query") {
            assert!(
                ACTIONS.contains(&node),
                "web_query only from an action: {v}"
            );
            assert!(q.is_string(), "{v}");
        }
        assert!(
            by_node.insert(node.to_string(), v.clone()).is_none(),
            "one status per node, but {node} sent two: {:?}",
            events
                .iter()
                .filter(|e| e.data["type"] == "status")
                .map(|e| e.data["node"].clone())
                .collect::<Vec<_>>()
        );
    }
    by_node
}

/// The order the nodes reported their status in.
fn status_order(events: &[SseEvent]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.data["type"] == "status")
        .map(|e| e.data["node"].as_str().unwrap().to_string())
        .collect()
}

/// An `interrupt` event, checked against the contract; returns its options' ids.
fn prompt_shape(p: &Value) -> Vec<String> {
    assert_eq!(p["type"], "interrupt");
    let kind = p["interrupt_type"].as_str().expect("interrupt_type");
    assert!(PROMPT_KINDS.contains(&kind), "{kind}");
    assert!(!p["message"].as_str().expect("a message").is_empty());
    if kind == "text_input" {
        assert!(p["options"].is_null(), "text_input options are null: {p}");
        return Vec::new();
    }
    let options = p["options"].as_array().expect("options are a list");
    assert!(!options.is_empty(), "{p}");
    options
        .iter()
        .map(|o| {
            let id = o["id"]
                .as_str()
                .unwrap_or_else(|| panic!("a string id: {o}"));
            let label = o["label"]
                .as_str()
                .unwrap_or_else(|| panic!("a string label: {o}"));
            assert!(!id.is_empty() && !label.is_empty(), "{o}");
            id.to_string()
        })
        .collect()
}

/// A `response` event, checked against the contract.
fn response_shape(r: &Value) {
    assert_eq!(r["type"], "response", "{r}");
    assert!(r["response"].is_string());
    assert!(r["citations"].is_array());
    assert!(r["action"].is_string(), "{r}");
    for k in ["inference_confidence", "retrieval_confidence"] {
        let level = r[k]
            .as_str()
            .unwrap_or_else(|| panic!("{k} is a string: {r}"));
        assert!(LEVELS.contains(&level), "{k}: {level}");
    }
    let score = r["confidence_score"].as_f64().expect("confidence_score");
    assert!((0.0..=1.0).contains(&score), "{score}");
    assert!(!score.is_sign_negative(), "never -0.0: {r}");
    assert!(r["tokens_used"].is_u64(), "{r}");
    assert!(r["cost_usd"].is_number(), "{r}");
}

async fn history(s: &TestServer, t: &str) -> Value {
    let (code, h) = s.get_json(&format!("/chat/history/{t}")).await;
    assert_eq!(code, 200, "{h}");
    h
}

/// The local user's document whose title contains `part`: (id, title).
async fn document(s: &TestServer, part: &str) -> (String, String) {
    let (code, docs) = s.get_json("/documents").await;
    assert_eq!(code, 200, "{docs}");
    let d = docs
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["title"].as_str().unwrap().contains(part))
        .unwrap_or_else(|| panic!("a sample document with {part}: {docs}"));
    (
        d["id"].as_str().unwrap().to_string(),
        d["title"].as_str().unwrap().to_string(),
    )
}

// 1. Prompt options are {id, label}; each id resumes its prompt.

async fn prompt_options_are_id_and_label_and_ids_resume(b: Backend) {
    let s = TestServer::start(b).await;

    // action_choice: pick an option by its id.
    let mut sse = chat(&s, json!({"message": "Summarize and audit this"})).await;
    let t = header(&sse, "x-thread-id");
    let events = sse.all().await;
    let p = terminal(&events).clone();
    assert_eq!(p["interrupt_type"], "action_choice");
    let ids = prompt_shape(&p);
    assert_eq!(ids, ["summarize", "audit"]);
    let h = history(&s, &t).await;
    assert_eq!(h["pending_interrupt"]["options"], p["options"]);
    let events = resume(&s, &t, "action_choice", json!(ids[0])).await;
    let end = terminal(&events);
    assert_ne!(end["type"], "error", "{end}");
    if end["type"] == "interrupt" {
        prompt_shape(end);
        assert_ne!(end["interrupt_type"], "action_choice", "the pick was taken");
    } else {
        response_shape(end);
        assert_eq!(end["action"], "summarize");
    }

    // doc_choice: a document's id, then (on another thread) "all".
    for pick_all in [false, true] {
        let mut sse = chat(&s, json!({"message": "Summarize the policy"})).await;
        let t = header(&sse, "x-thread-id");
        let events = sse.all().await;
        let p = terminal(&events).clone();
        assert_eq!(p["interrupt_type"], "doc_choice");
        let ids = prompt_shape(&p);
        assert_eq!(ids.last().unwrap(), "all");
        assert_eq!(
            p["options"].as_array().unwrap().last().unwrap()["label"],
            "All of these"
        );
        let (r24, _) = document(&s, "Data Retention Policy 2024").await;
        assert!(ids.contains(&r24), "{ids:?}");
        let pick = if pick_all {
            "all".to_string()
        } else {
            r24.clone()
        };
        let events = resume(&s, &t, "doc_choice", json!(pick)).await;
        let end = terminal(&events);
        response_shape(end);
        assert_eq!(end["action"], "summarize");
        let cited: Vec<&str> = end["citations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["doc_id"].as_str().unwrap())
            .collect();
        if pick_all {
            assert!(cited.iter().any(|d| *d != r24), "all of these: {cited:?}");
        } else {
            assert!(cited.iter().all(|d| *d == r24), "{cited:?}");
        }
    }

    // text_input: null options, answered with text.
    let mut sse = chat(
        &s,
        json!({"message": "Summarize the travel expense policy"}),
    )
    .await;
    let t = header(&sse, "x-thread-id");
    let events = sse.all().await;
    let p = terminal(&events).clone();
    assert_eq!(p["interrupt_type"], "text_input");
    assert!(prompt_shape(&p).is_empty());
    let h = history(&s, &t).await;
    assert!(h["pending_interrupt"]["options"].is_null());
    let events = resume(&s, &t, "text_input", json!("the AML policy")).await;
    response_shape(terminal(&events));
}
both_backends!(
    prompt_options_are_id_and_label_and_ids_resume_,
    prompt_options_are_id_and_label_and_ids_resume
);

// 2. Confidences are levels; the score is a clean number.

async fn confidences_are_levels_and_the_score_a_number(b: Backend) {
    let s = TestServer::start(b).await;
    for (message, retrieval) in [
        ("What are the capital requirements?", None),
        // Nothing in the documents matches: a 0 score, "low", not -0.0.
        (
            "What is the penalty for filing a tax return late?",
            Some("low"),
        ),
    ] {
        let mut sse = chat(&s, json!({"message": message})).await;
        let t = header(&sse, "x-thread-id");
        let events = sse.all().await;
        let end = terminal(&events).clone();
        response_shape(&end);
        if let Some(level) = retrieval {
            assert_eq!(end["retrieval_confidence"], level, "{end}");
        }
        // History shows the answer's levels too (the page's badge reads them there).
        let h = history(&s, &t).await;
        let last = h["messages"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["role"], "assistant");
        let md = &last["metadata"];
        assert_eq!(md["retrieval_confidence"], end["retrieval_confidence"]);
        assert_eq!(md["inference_confidence"], end["inference_confidence"]);
        assert_eq!(md["confidence_score"], end["confidence_score"]);
        assert_eq!(md["finished_reason"], "stop");
    }
    let mut sse = chat(&s, json!({"message": "What are the capital requirements?"})).await;
    let end = terminal(&sse.all().await).clone();
    assert_eq!(end["retrieval_confidence"], "high", "{end}");
}
both_backends!(
    confidences_are_levels_and_the_score_a_number_,
    confidences_are_levels_and_the_score_a_number
);

// 3. An explicit action skips intent classification.

async fn an_explicit_action_skips_intent_classification(b: Backend) {
    let s = TestServer::start(b).await;
    let (crr, crr_title) = document(&s, "Capital Requirements").await;
    let mut sse = chat(
        &s,
        json!({"message": "Summarize this", "action": "summarize", "tagged_doc_ids": [crr]}),
    )
    .await;
    let events = sse.all().await;
    let end = terminal(&events).clone();
    response_shape(&end);
    assert_eq!(end["action"], "summarize");
    let by_node = statuses(&events);
    assert!(
        !by_node.contains_key("intent_resolver"),
        "no intent_resolver status with an explicit action"
    );
    assert_eq!(
        status_order(&events),
        [
            "doc_resolver",
            "validate_inputs",
            "summarize",
            "format_response"
        ],
        "the first status is doc_resolver's"
    );
    assert_eq!(
        by_node["doc_resolver"]["docs_found"],
        json!([{"id": crr, "title": crr_title}])
    );
}
both_backends!(
    an_explicit_action_skips_intent_classification_,
    an_explicit_action_skips_intent_classification
);

// 4. One status per node; no web_query without web search.

async fn one_status_per_node_and_no_web_query_without_web_search(b: Backend) {
    let s = TestServer::start(b).await;
    // Web search asked for (and implied by "still enforced"), but none is configured.
    let mut sse = chat(
        &s,
        json!({"message": "Is the Capital Requirements Regulation still enforced?", "enable_web_search": true}),
    )
    .await;
    let events = sse.all().await;
    let end = terminal(&events).clone();
    response_shape(&end);
    assert_eq!(end["action"], "inquire");
    let by_node = statuses(&events);
    assert_eq!(
        status_order(&events),
        [
            "intent_resolver",
            "doc_resolver",
            "validate_inputs",
            "inquire",
            "format_response"
        ]
    );
    let found = by_node["doc_resolver"]["docs_found"].as_array().unwrap();
    assert!(
        found[0]["title"]
            .as_str()
            .unwrap()
            .contains("Capital Requirements"),
        "{found:?}"
    );
    for (node, v) in &by_node {
        assert!(
            v.get("web_query").is_none(),
            "{node} claims a web query: {v}"
        );
        assert!(
            !v["message"]
                .as_str()
                .unwrap()
                .to_lowercase()
                .contains("web"),
            "{node} claims a web search: {v}"
        );
    }
    assert!(
        end["response"]
            .as_str()
            .unwrap()
            .contains("Web search is not available"),
        "the answer says it relies on the documents: {end}"
    );

    // A turn that stops at a prompt, then its resume: one status per node in each.
    let mut sse = chat(&s, json!({"message": "Summarize the policy"})).await;
    let t = header(&sse, "x-thread-id");
    let events = sse.all().await;
    assert_eq!(terminal(&events)["interrupt_type"], "doc_choice");
    assert_eq!(status_order(&events), ["intent_resolver"]);
    let events = resume(&s, &t, "doc_choice", json!("all")).await;
    response_shape(terminal(&events));
    let by_node = statuses(&events);
    assert_eq!(
        status_order(&events),
        [
            "doc_resolver",
            "validate_inputs",
            "summarize",
            "format_response"
        ]
    );
    assert_eq!(
        by_node["doc_resolver"]["docs_found"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}
both_backends!(
    one_status_per_node_and_no_web_query_without_web_search_,
    one_status_per_node_and_no_web_query_without_web_search
);

// 5. An unsure intent offers the top two actions.

async fn an_unsure_intent_offers_the_top_two_actions(b: Backend) {
    let s = TestServer::start(b).await;
    let mut sse = chat(&s, json!({"message": "the AML policy"})).await;
    let t = header(&sse, "x-thread-id");
    let events = sse.all().await;
    let p = terminal(&events).clone();
    assert_eq!(p["interrupt_type"], "action_choice");
    let ids = prompt_shape(&p);
    assert_eq!(ids, ["inquire", "summarize"], "the top two, not all four");
    let events = resume(&s, &t, "action_choice", json!(ids[1])).await;
    let end = terminal(&events);
    response_shape(end);
    assert_eq!(end["action"], "summarize");
}
both_backends!(
    an_unsure_intent_offers_the_top_two_actions_,
    an_unsure_intent_offers_the_top_two_actions
);

// 6. Compare with one document says compare needs at least 2.

async fn compare_with_one_document_says_it_needs_two(b: Backend) {
    let s = TestServer::start(b).await;
    let (crr, _) = document(&s, "Capital Requirements").await;
    let mut sse = chat(
        &s,
        json!({"message": "Compare this", "action": "compare", "tagged_doc_ids": [crr]}),
    )
    .await;
    let t = header(&sse, "x-thread-id");
    let events = sse.all().await;
    let p = terminal(&events).clone();
    assert_eq!(p["interrupt_type"], "text_input");
    assert!(prompt_shape(&p).is_empty());
    let message = p["message"].as_str().unwrap();
    assert!(
        message.contains("Compare needs at least 2 documents"),
        "{message}"
    );
    assert!(!message.contains("Which document should I compare with"));
    let events = resume(&s, &t, "text_input", json!("the AML policy")).await;
    let end = terminal(&events);
    response_shape(end);
    assert_eq!(end["action"], "compare");
}
both_backends!(
    compare_with_one_document_says_it_needs_two_,
    compare_with_one_document_says_it_needs_two
);

// 9. Every graph the server serves is a chat graph, and the examples speak the contract:
// the jokes graph answers a topic, the essay asks for a tone as a `text_input`, the
// approval graph asks before publishing, revises on a note and publishes on "yes"; a
// resume of another prompt type is a 422 that leaves the prompt pending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_served_graph_is_a_chat_graph_in_the_contract_shapes() {
    let s = TestServer::start(Backend::Sqlite).await;
    let (_, chat_graphs) = s.get_json("/chat/graphs").await;
    let mut chat_ids: Vec<&str> = chat_graphs["graphs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["graph_id"].as_str().unwrap())
        .collect();
    chat_ids.sort_unstable();
    let (_, assistants) = s
        .post_json("/assistants/search", json!({"limit": 100}))
        .await;
    let mut served: Vec<&str> = assistants
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["graph_id"].as_str().unwrap())
        .collect();
    served.sort_unstable();
    served.dedup();
    assert_eq!(chat_ids, served, "every served graph is offered on /chat");

    let mut sse = chat(&s, json!({"message": "cats", "graph_id": "jokes"})).await;
    let t = header(&sse, "x-thread-id");
    let events = sse.all().await;
    let answer = terminal(&events);
    assert_eq!(answer["type"], "response", "{answer}");
    assert!(
        answer["response"].as_str().unwrap().contains("cats"),
        "{answer}"
    );
    let h = history(&s, &t).await;
    let roles: Vec<&str> = h["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant"], "{h}");

    let mut sse = chat(&s, json!({"message": "tides", "graph_id": "essay"})).await;
    let t = header(&sse, "x-thread-id");
    let events = sse.all().await;
    let asked = terminal(&events);
    assert_eq!(asked["interrupt_type"], "text_input", "{asked}");
    assert!(asked["options"].is_null());
    assert!(asked["message"].as_str().unwrap().contains("Which tone?"));
    let events = resume(&s, &t, "text_input", json!("calm")).await;
    let essay = terminal(&events);
    assert_eq!(
        essay["response"],
        "A calm essay on tides: 1. what tides are; 2. why they matter."
    );

    let mut sse = chat(&s, json!({"message": "tides", "graph_id": "approval"})).await;
    let t = header(&sse, "x-thread-id");
    let events = sse.all().await;
    let asked = terminal(&events);
    assert_eq!(asked["interrupt_type"], "text_input", "{asked}");
    assert!(asked["message"].as_str().unwrap().contains("Draft 1 about"));
    let wrong = s
        .post(
            "/chat/resume",
            json!({"thread_id": t, "resume_value": {"type": "action_choice", "value": "yes"}}),
        )
        .await;
    assert_eq!(wrong.status(), 422);
    assert_eq!(
        history(&s, &t).await["pending_interrupt"]["interrupt_type"],
        "text_input"
    );
    let events = resume(&s, &t, "text_input", json!("shorter please")).await;
    let again = terminal(&events);
    assert!(
        again["message"]
            .as_str()
            .unwrap()
            .contains("Revised for: shorter please"),
        "{again}"
    );
    let events = resume(&s, &t, "text_input", json!("Yes")).await;
    let published = terminal(&events);
    assert!(
        published["response"]
            .as_str()
            .unwrap()
            .starts_with("Published: Draft 2"),
        "{published}"
    );
}
