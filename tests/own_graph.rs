//! A graph defined here, in the test (not in graphs/), served in process with
//! `Server::builder()`: driven over `/chat` (through `MessagesChat`) and the LangGraph API,
//! described by the schemas `#[derive(State)]` generated from its fields.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;

use clap::Parser;
use common::{Sse, SseEvent};
use palgraph::{
    AddMessages, Message, MessageKind, NodeContext, NodeError, State, StateGraph, END, START,
};
use palgraph_server::{ServeConfig, Server};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// A shouting echo.
#[derive(Clone, Default, Debug, Serialize, Deserialize, State)]
struct Echo {
    /// The conversation.
    #[state(reducer = AddMessages)]
    messages: Vec<Message>,
    /// How many answers it gave.
    replies: u32,
}

/// Answers the last message in capitals, word by word; asks first when it says "confirm".
async fn shout(s: Arc<Echo>, ctx: NodeContext) -> Result<EchoUpdate, NodeError> {
    let asked = s
        .messages
        .iter()
        .rev()
        .find(|m| m.kind == MessageKind::Human);
    let mut text = asked.map(|m| m.content.to_uppercase()).unwrap_or_default();
    if text.contains("CONFIRM") {
        let answer: String = ctx.interrupt(json!({
            "interrupt_type": "text_input", "message": "Really?", "options": null
        }))?;
        text = format!("{text} {answer}");
    }
    let id = format!("echo-{}", ctx.task_id());
    for (i, w) in text.split(' ').enumerate() {
        ctx.message_delta(
            &id,
            if i == 0 {
                w.to_string()
            } else {
                format!(" {w}")
            },
        );
    }
    Ok(EchoUpdate::default()
        .messages(vec![Message::ai(text).with_id(id)])
        .replies(s.replies + 1))
}

/// Answers the last message in lower case (the second chat graph of the server).
async fn whisper(s: Arc<Echo>, _ctx: NodeContext) -> Result<EchoUpdate, NodeError> {
    let asked = s
        .messages
        .iter()
        .rev()
        .find(|m| m.kind == MessageKind::Human);
    let text = asked.map(|m| m.content.to_lowercase()).unwrap_or_default();
    Ok(EchoUpdate::default().messages(vec![Message::ai(text)]))
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    serve: ServeConfig,
}

async fn serve() -> (String, std::path::PathBuf) {
    let mut g = StateGraph::<Echo>::new();
    g.add_node("shout", shout);
    g.add_edge(START, "shout");
    g.add_edge("shout", END);
    let mut w = StateGraph::<Echo>::new();
    w.add_node("whisper", whisper);
    w.add_edge(START, "whisper");
    w.add_edge("whisper", END);
    let db = common::temp_sqlite_path();
    let cfg = Cli::parse_from(["test", "--port", "0", "--sqlite-path", db.to_str().unwrap()]).serve;
    let (server, listener) = Server::builder()
        .config(cfg)
        .chat_graph("echo", "Shouts back", g.compile().unwrap())
        .chat_graph("whisper", "Whispers back", w.compile().unwrap())
        .bind()
        .await
        .unwrap();
    let base = format!("http://{}", server.addr);
    tokio::spawn(server.serve(listener, std::future::pending()));
    (base, db)
}

fn of_type<'a>(events: &'a [SseEvent], t: &str) -> Vec<&'a Value> {
    events
        .iter()
        .map(|e| &e.data)
        .filter(|d| d["type"] == t)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_graph_of_the_test_is_served_on_chat_and_the_langgraph_api() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (base, _db) = serve().await;
    let http = reqwest::Client::new();
    let chat = |body: Value| {
        let req = http.post(format!("{base}/chat")).json(&body);
        async move { Sse::new(req.send().await.unwrap()).all().await }
    };

    // /chat: tokens, then the answer.
    let events = chat(json!({"message": "hello there"})).await;
    let tokens: String = of_type(&events, "token")
        .iter()
        .map(|t| t["content"].as_str().unwrap())
        .collect();
    assert_eq!(tokens, "HELLO THERE");
    assert_eq!(of_type(&events, "response")[0]["response"], "HELLO THERE");

    // A prompt, answered with /chat/resume, on a thread of its own.
    let t = uuid::Uuid::new_v4().to_string();
    let events = chat(json!({"message": "please confirm", "thread_id": t})).await;
    let prompt = of_type(&events, "interrupt");
    assert_eq!(prompt[0]["message"], "Really?");
    let resumed = http
        .post(format!("{base}/chat/resume"))
        .json(&json!({"thread_id": t, "resume_value": {"type": "text_input", "value": "yes"}}))
        .send()
        .await
        .unwrap();
    let events = Sse::new(resumed).all().await;
    assert_eq!(
        of_type(&events, "response")[0]["response"],
        "PLEASE CONFIRM yes"
    );
    let history: Value = http
        .get(format!("{base}/chat/history/{t}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let roles: Vec<&str> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant"]);

    // The LangGraph API on the same thread: a run, then its state.
    let out: Value = http
        .post(format!("{base}/threads/{t}/runs/wait"))
        .json(&json!({"assistant_id": "echo", "input": {"messages": [{"role": "user", "content": "via the api"}]}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        out["messages"].as_array().unwrap().last().unwrap()["content"],
        "VIA THE API"
    );
    assert_eq!(out["replies"], 2);
    let state: Value = http
        .get(format!("{base}/threads/{t}/state"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(state["values"]["replies"], 2);
    // An input outside the state's update is refused.
    let bad = http
        .post(format!("{base}/threads/{t}/runs/wait"))
        .json(&json!({"assistant_id": "echo", "input": {"shouts": 1}}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 422);

    // Its schemas, from the derive: types, doc comments, reducers.
    let s: Value = http
        .get(format!("{base}/assistants/echo/schemas"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(s["state_schema"]["title"], "Echo");
    assert_eq!(s["state_schema"]["description"], "A shouting echo.");
    assert_eq!(
        s["state_schema"]["properties"]["replies"]["description"],
        "How many answers it gave. (reducer: overwrite; persistent)"
    );
    assert_eq!(
        s["state_schema"]["properties"]["replies"]["type"],
        "integer"
    );
    assert_eq!(
        s["input_schema"]["properties"]["messages"]["items"]["$ref"],
        "#/$defs/Message"
    );
    assert_eq!(s["input_schema"]["additionalProperties"], false);
    let doc: Value = http
        .get(format!("{base}/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let components = &doc["components"]["schemas"];
    assert_eq!(
        components["echo.State"]["properties"]["messages"]["items"]["$ref"],
        "#/components/schemas/echo.Message"
    );
    assert!(components["echo.Message"]["properties"]["content"].is_object());
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_picks_the_graph_per_thread() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (base, _db) = serve().await;
    let http = reqwest::Client::new();
    let post = |body: Value| http.post(format!("{base}/chat")).json(&body).send();

    // The chat graphs, the default (the first registered) first, with no page panels.
    let graphs: Value = http
        .get(format!("{base}/chat/graphs"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        graphs,
        json!({"graphs": [
            {"graph_id": "echo", "assistant_id": graphs["graphs"][0]["assistant_id"], "description": "Shouts back", "default": true, "panels": []},
            {"graph_id": "whisper", "assistant_id": graphs["graphs"][1]["assistant_id"], "description": "Whispers back", "default": false, "panels": []},
        ]})
    );

    // A new thread with `graph_id` talks to that graph, and keeps it.
    let t = uuid::Uuid::new_v4().to_string();
    let first = Sse::new(
        post(json!({"message": "Hello There", "thread_id": t, "graph_id": "whisper"}))
            .await
            .unwrap(),
    )
    .all()
    .await;
    assert_eq!(of_type(&first, "response")[0]["response"], "hello there");
    let again = Sse::new(
        post(json!({"message": "AGAIN", "thread_id": t}))
            .await
            .unwrap(),
    )
    .all()
    .await;
    assert_eq!(of_type(&again, "response")[0]["response"], "again");
    let thread: Value = http
        .get(format!("{base}/threads/{t}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(thread["metadata"]["graph_id"], "whisper");

    // Another graph on that thread is refused and changes nothing.
    let wrong = post(json!({"message": "shout", "thread_id": t, "graph_id": "echo"}))
        .await
        .unwrap();
    assert_eq!(wrong.status(), 409);
    let body: Value = wrong.json().await.unwrap();
    assert_eq!(body["code"], "graph_mismatch", "{body}");
    let history: Value = http
        .get(format!("{base}/chat/history/{t}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(history["messages"].as_array().unwrap().len(), 4);

    // An unknown graph is a 404 and creates no thread.
    let u = uuid::Uuid::new_v4().to_string();
    let unknown = post(json!({"message": "hi", "thread_id": u, "graph_id": "nope"}))
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
    let none = http
        .get(format!("{base}/threads/{u}"))
        .send()
        .await
        .unwrap();
    assert_eq!(none.status(), 404);
}
