//! The notes example serves its graph, its route and its panel: a message on `/chat` is kept
//! as a note, `GET /notes` lists it, the chat page names the panel's module and serves its
//! files, and `/chat/graphs` says the graph needs the `notes` panel.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use serde_json::{json, Value};

#[path = "../../test-harness/sdk.rs"]
#[allow(dead_code)]
mod harness;

#[tokio::test(flavor = "multi_thread")]
async fn a_graph_with_a_route_and_a_panel_of_its_own() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let served = harness::Served::start(env!("CARGO_BIN_EXE_notes"), "notes", &[]).await;
    let base = served.base.clone();
    let http = reqwest::Client::new();
    let get = |path: &str| http.get(format!("{base}{path}")).send();

    // The route: empty, then the note a chat turn kept.
    let none: Value = get("/notes").await.unwrap().json().await.unwrap();
    assert_eq!(none, json!([]));
    let chat = http
        .post(format!("{base}/chat"))
        .json(&json!({"message": "call the auditors"}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        chat.contains(r#""response":"Noted: call the auditors""#),
        "{chat}"
    );
    let notes: Value = get("/notes").await.unwrap().json().await.unwrap();
    assert_eq!(notes, json!(["call the auditors"]));

    // The panel: the page names its module and links its style sheet; both are served.
    let page = get("/").await.unwrap().text().await.unwrap();
    assert!(
        page.contains(r#"<meta name="palgraph-module" content="/ext/notes/notes.js">"#),
        "{page}"
    );
    assert!(page.contains(r#"<link rel="stylesheet" href="/ext/notes/notes.css">"#));
    let js = get("/ext/notes/notes.js").await.unwrap();
    assert_eq!(js.status(), 200);
    assert!(js.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/javascript"));
    assert!(js.text().await.unwrap().contains("addPanel('notes'"));
    assert_eq!(get("/ext/notes/other.js").await.unwrap().status(), 404);
    // PalAssist's page module is not part of this server.
    assert_eq!(
        get("/ext/palassist/palassist.js").await.unwrap().status(),
        404
    );
    let graphs: Value = get("/chat/graphs").await.unwrap().json().await.unwrap();
    assert_eq!(graphs["graphs"][0]["panels"], json!(["notes"]));
    let _ = std::fs::remove_dir_all(&served.dir);
}
