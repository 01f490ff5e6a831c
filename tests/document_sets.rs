//! Document sets end to end (DESIGN.md, "Chat contract: exact shapes":
//! `tagged_set_ids` names document sets, folders of documents, and every document of a set
//! is in scope), through the real server on SQLite and Postgres:
//!
//! 1. the documents API's sets: create, list, get, rename, add and remove documents,
//!    delete; their shape, limits and JSON errors (409 for a name in use, 422 for a bad
//!    name, a malformed id or someone else's document, 404 for an unknown set);
//! 2. sets are per user: another user's set is a 404 for every route;
//! 3. concurrent adds to one set all land; deleting a document takes it out of its sets;
//! 4. a chat request's `tagged_set_ids` and a set mention in its TipTap JSON resolve to
//!    every document of the set (deduplicated with `tagged_doc_ids`), in doc_resolver's
//!    `docs_found`; an empty set and someone else's set are named in a notice.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Backend, SseEvent, TestServer};
use serde_json::{json, Value};

const KEYS: &[(&str, &str)] = &[("PALGRAPH_API_KEYS", "key-a=alice,key-b=bob")];

/// A user's view of the server: every request with its API key.
struct As<'a> {
    s: &'a TestServer,
    key: &'static str,
}

impl As<'_> {
    async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut r = self
            .s
            .client
            .request(method, self.s.url(path))
            .header("x-api-key", self.key);
        if let Some(b) = body {
            r = r.json(&b);
        }
        let resp = r.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("a JSON body: {text}"))
        };
        (status, body)
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.send(reqwest::Method::GET, path, None).await
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send(reqwest::Method::POST, path, Some(body)).await
    }

    async fn patch(&self, path: &str, body: Value) -> (u16, Value) {
        self.send(reqwest::Method::PATCH, path, Some(body)).await
    }

    async fn delete(&self, path: &str) -> (u16, Value) {
        self.send(reqwest::Method::DELETE, path, None).await
    }

    async fn document(&self, title: &str, content: &str) -> String {
        let (code, d) = self
            .post("/documents", json!({"title": title, "content": content}))
            .await;
        assert_eq!(code, 201, "{d}");
        d["id"].as_str().unwrap().to_string()
    }

    /// A chat turn's events.
    async fn chat(&self, body: Value) -> Vec<SseEvent> {
        let mut sse = self
            .s
            .sse(
                self.s
                    .client
                    .post(self.s.url("/chat"))
                    .header("x-api-key", self.key)
                    .json(&body),
            )
            .await;
        sse.all().await
    }
}

/// A JSON error: `{detail, code}` with the status.
fn error(got: &(u16, Value), status: u16, code: &str) {
    assert_eq!(got.0, status, "{}", got.1);
    assert_eq!(got.1["code"], code, "{}", got.1);
    assert!(got.1["detail"].is_string(), "{}", got.1);
}

/// A set, checked against its shape; returns its documents' ids.
fn set_shape(s: &Value) -> Vec<String> {
    let keys: Vec<&str> = s.as_object().unwrap().keys().map(String::as_str).collect();
    for k in [
        "id",
        "name",
        "documents",
        "document_count",
        "created_at",
        "updated_at",
    ] {
        assert!(keys.contains(&k), "{k} in {s}");
    }
    assert_eq!(keys.len(), 6, "{s}");
    let docs = s["documents"].as_array().unwrap();
    assert_eq!(s["document_count"], docs.len(), "{s}");
    docs.iter()
        .map(|d| {
            assert!(d["title"].is_string(), "{d}");
            d["id"].as_str().unwrap().to_string()
        })
        .collect()
}

/// doc_resolver's `docs_found` ids, and the final response's notices (one a line).
fn resolved(events: &[SseEvent]) -> (Vec<String>, String) {
    let found = events
        .iter()
        .find(|e| e.data["type"] == "status" && e.data["node"] == "doc_resolver")
        .map(|e| e.data["docs_found"].clone())
        .unwrap_or_else(|| panic!("a doc_resolver status: {events:?}"));
    let ids = found
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_string())
        .collect();
    let last = &events.last().unwrap().data;
    assert_eq!(last["type"], "response", "{last}");
    let notices: Vec<&str> = last["notices"]
        .as_array()
        .map(|n| n.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    (ids, notices.join("\n"))
}

async fn the_documents_api_keeps_each_users_sets(b: Backend) {
    let s = TestServer::start_with(b, KEYS).await;
    let (alice, bob) = (
        As {
            s: &s,
            key: "key-a",
        },
        As {
            s: &s,
            key: "key-b",
        },
    );
    let crr = alice
        .document("Capital Requirements Regulation", "Banks hold capital.")
        .await;
    let aml = alice
        .document("Anti-Money Laundering Directive", "Know your customer.")
        .await;
    let ret = alice
        .document("Data Retention Policy", "Keep records 5 years.")
        .await;
    let bobs_doc = bob.document("Bob's notes", "private").await;

    // Create: documents each once, oldest first; the name trimmed.
    let (code, set) = alice
        .post(
            "/document-sets",
            json!({"name": " Basel ", "document_ids": [aml, crr, aml]}),
        )
        .await;
    assert_eq!(code, 201, "{set}");
    assert_eq!(set_shape(&set), [crr.clone(), aml.clone()]);
    assert_eq!(set["name"], "Basel");
    let id = set["id"].as_str().unwrap().to_string();
    let path = format!("/document-sets/{id}");
    let (code, empty) = alice.post("/document-sets", json!({"name": "Empty"})).await;
    assert_eq!(code, 201, "{empty}");
    assert!(set_shape(&empty).is_empty());

    // Errors: a name in use, bad names, someone else's document, malformed and unknown ids.
    error(
        &alice.post("/document-sets", json!({"name": "Basel"})).await,
        409,
        "exists",
    );
    for name in [json!(""), json!("x".repeat(101)), json!("a\u{0}b")] {
        error(
            &alice.post("/document-sets", json!({ "name": name })).await,
            422,
            "invalid",
        );
    }
    error(
        &alice
            .post(
                "/document-sets",
                json!({"name": "Mine?", "document_ids": [bobs_doc]}),
            )
            .await,
        422,
        "invalid",
    );
    error(
        &alice.get("/document-sets/not-a-uuid").await,
        422,
        "invalid",
    );
    let unknown = "0190a0b0-0000-7000-8000-000000000000";
    error(
        &alice.get(&format!("/document-sets/{unknown}")).await,
        404,
        "not_found",
    );
    error(
        &alice.post("/document-sets", json!({})).await,
        422,
        "invalid",
    );

    // List and get.
    let (code, list) = alice.get("/document-sets").await;
    assert_eq!(code, 200);
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Basel", "Empty"]);
    let (code, got) = alice.get(&path).await;
    assert_eq!((code, got.clone()), (200, set.clone()));

    // Another user sees none of it and changes none of it.
    assert_eq!(bob.get("/document-sets").await, (200, json!([])));
    error(&bob.get(&path).await, 404, "not_found");
    error(
        &bob.patch(&path, json!({"name": "Mine"})).await,
        404,
        "not_found",
    );
    error(
        &bob.post(
            &format!("{path}/documents"),
            json!({"document_ids": [bobs_doc]}),
        )
        .await,
        404,
        "not_found",
    );
    error(
        &bob.delete(&format!("{path}/documents/{crr}")).await,
        404,
        "not_found",
    );
    error(&bob.delete(&path).await, 404, "not_found");
    // Bob may use the same name for a set of his own.
    assert_eq!(
        bob.post("/document-sets", json!({"name": "Basel"})).await.0,
        201
    );

    // Rename.
    let (code, renamed) = alice.patch(&path, json!({"name": "Basel III"})).await;
    assert_eq!(code, 200, "{renamed}");
    assert_eq!(renamed["name"], "Basel III");
    error(
        &alice.patch(&path, json!({"name": "Empty"})).await,
        409,
        "exists",
    );
    error(
        &alice.patch(&path, json!({"name": "  "})).await,
        422,
        "invalid",
    );

    // Add (what is there stays once), refuse someone else's document, remove.
    let (code, added) = alice
        .post(
            &format!("{path}/documents"),
            json!({"document_ids": [ret, crr]}),
        )
        .await;
    assert_eq!(code, 200, "{added}");
    assert_eq!(set_shape(&added), [crr.clone(), aml.clone(), ret.clone()]);
    error(
        &alice
            .post(
                &format!("{path}/documents"),
                json!({"document_ids": [bobs_doc]}),
            )
            .await,
        422,
        "invalid",
    );
    error(
        &alice
            .post(&format!("{path}/documents"), json!({"document_ids": []}))
            .await,
        422,
        "invalid",
    );
    let (code, _) = alice.delete(&format!("{path}/documents/{aml}")).await;
    assert_eq!(code, 204);
    error(
        &alice.delete(&format!("{path}/documents/{aml}")).await,
        404,
        "not_found",
    );
    error(
        &alice.delete(&format!("{path}/documents/nope")).await,
        422,
        "invalid",
    );
    assert_eq!(
        set_shape(&alice.get(&path).await.1),
        [crr.clone(), ret.clone()]
    );

    // Concurrent adds all land.
    let mut more = Vec::new();
    for i in 0..6 {
        more.push(alice.document(&format!("Circular {i}"), "text").await);
    }
    let add_path = format!("{path}/documents");
    let adds = more
        .iter()
        .map(|d| alice.post(&add_path, json!({"document_ids": [d]})));
    for (code, body) in futures_util::future::join_all(adds).await {
        assert_eq!(code, 200, "{body}");
    }
    let ids = set_shape(&alice.get(&path).await.1);
    assert_eq!(ids.len(), 8, "{ids:?}");
    assert!(more.iter().all(|d| ids.contains(d)));

    // Deleting a document takes it out of its sets; deleting a set keeps its documents.
    assert_eq!(alice.delete(&format!("/documents/{ret}")).await.0, 204);
    let ids = set_shape(&alice.get(&path).await.1);
    assert!(!ids.contains(&ret) && ids.contains(&crr), "{ids:?}");
    assert_eq!(alice.delete(&path).await.0, 204);
    error(&alice.get(&path).await, 404, "not_found");
    error(&alice.delete(&path).await, 404, "not_found");
    assert_eq!(alice.get(&format!("/documents/{crr}")).await.0, 200);
}
both_backends!(
    the_documents_api_keeps_each_users_sets_,
    the_documents_api_keeps_each_users_sets
);

async fn tagged_and_mentioned_sets_put_every_document_in_scope(b: Backend) {
    let s = TestServer::start_with(b, KEYS).await;
    let (alice, bob) = (
        As {
            s: &s,
            key: "key-a",
        },
        As {
            s: &s,
            key: "key-b",
        },
    );
    let crr = alice
        .document(
            "Capital Requirements Regulation",
            "Banks must hold a leverage ratio of 3 percent of Tier 1 capital.",
        )
        .await;
    let aml = alice
        .document(
            "Anti-Money Laundering Directive",
            "Obliged entities apply customer due diligence.",
        )
        .await;
    let ret = alice
        .document(
            "Data Retention Policy",
            "Records are kept for five years, then deleted.",
        )
        .await;
    let (_, set) = alice
        .post(
            "/document-sets",
            json!({"name": "Basel", "document_ids": [crr, aml]}),
        )
        .await;
    let set_id = set["id"].as_str().unwrap().to_string();
    let (_, empty) = alice.post("/document-sets", json!({"name": "Empty"})).await;
    let (_, bobs) = bob.post("/document-sets", json!({"name": "Bob's"})).await;

    // tagged_set_ids: every document of the set, deduplicated with tagged_doc_ids.
    let events = alice
        .chat(json!({
            "message": "Summarize these",
            "action": "summarize",
            "tagged_doc_ids": [aml, ret],
            "tagged_set_ids": [set_id],
            "tiptap_json": null,
            "enable_web_search": false
        }))
        .await;
    let (found, text) = resolved(&events);
    assert_eq!(found, [aml.clone(), ret.clone(), crr.clone()], "{text}");
    assert!(!text.contains("left out"), "{text}");

    // A set mention in the TipTap JSON.
    let tiptap = json!({"type": "doc", "content": [{"type": "paragraph", "content": [
        {"type": "text", "text": "Summarize "},
        {"type": "mention", "attrs": {"id": set_id, "label": "Basel", "kind": "set"}}
    ]}]});
    let events = alice
        .chat(json!({"message": "Summarize @Basel", "action": "summarize", "tiptap_json": tiptap}))
        .await;
    assert_eq!(resolved(&events).0, [crr.clone(), aml.clone()]);

    // Without an explicit action (intent from the message), the set still scopes it.
    let events = alice
        .chat(json!({"message": "Summarize these documents", "tagged_set_ids": [set_id]}))
        .await;
    let (found, _) = resolved(&events);
    assert_eq!(found, [crr.clone(), aml.clone()]);

    // An empty set and someone else's set: a notice each, the rest still in scope.
    let events = alice
        .chat(json!({
            "message": "Summarize this",
            "action": "summarize",
            "tagged_doc_ids": [ret],
            "tagged_set_ids": [empty["id"], bobs["id"]]
        }))
        .await;
    let (found, text) = resolved(&events);
    assert_eq!(found, [ret]);
    assert!(text.contains("\"Empty\" holds no documents"), "{text}");
    assert!(
        text.contains(&format!(
            "\"{}\" is not among your document sets",
            bobs["id"].as_str().unwrap()
        )),
        "{text}"
    );
}
both_backends!(
    tagged_and_mentioned_sets_put_every_document_in_scope_,
    tagged_and_mentioned_sets_put_every_document_in_scope
);

/// The documents a turn's doc resolver found (`None`: it reported none).
fn docs_found(events: &[SseEvent]) -> Option<Value> {
    events
        .iter()
        .find(|e| e.data["type"] == "status" && e.data["node"] == "doc_resolver")
        .map(|e| e.data["docs_found"].clone())
}

/// `reader`'s turn once it has heard of a change made through the other replica. The
/// change comes by Postgres notification as it commits (under a millisecond on one host,
/// later on a loaded machine), so the turn is made again until `heard` holds, for up to
/// 10 s; the last turn is returned either way, for the caller's assertions.
async fn once_heard(
    reader: &As<'_>,
    body: &Value,
    heard: impl Fn(&[SseEvent]) -> bool,
) -> Vec<SseEvent> {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let events = reader.chat(body.clone()).await;
        if heard(&events) || std::time::Instant::now() > until {
            return events;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Two replicas on one Postgres: each keeps a user's library between turns and hears of a
/// change made through the other (`palgraph_documents`), so a document added or deleted on
/// one is in, or out of, the other's turns as soon as the change's notification arrives,
/// turn after turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_changed_on_one_replica_shows_on_the_other_once_heard() {
    let a = TestServer::start_with(Backend::Postgres, KEYS).await;
    let b = a.replica(&[]).await;
    let (on_a, on_b) = (
        As {
            s: &a,
            key: "key-a",
        },
        As {
            s: &b,
            key: "key-a",
        },
    );
    let turn = |id: &str| {
        json!({
            "message": "Summarize this",
            "action": "summarize",
            "tagged_doc_ids": [id],
        })
    };
    let kept = on_a
        .document("Data Retention Policy", "Records are kept for five years.")
        .await;
    // Both replicas read alice's library and keep it (a replica keeps nothing before it
    // listens, which it starts to at its first read).
    for r in [&on_a, &on_b, &on_a, &on_b] {
        assert_eq!(resolved(&r.chat(turn(&kept)).await).0, [kept.as_str()]);
    }
    for round in 0..5 {
        let (writer, reader) = if round % 2 == 0 {
            (&on_a, &on_b)
        } else {
            (&on_b, &on_a)
        };
        let title = format!("Capital Requirements Regulation {round}");
        let added = writer
            .document(&title, "Banks must hold a leverage ratio of 3 percent.")
            .await;
        let wanted = json!([{"id": added, "title": title}]);
        let events = once_heard(reader, &turn(&added), |e| {
            docs_found(e).as_ref() == Some(&wanted)
        })
        .await;
        let (found, text) = resolved(&events);
        assert_eq!(
            found,
            [added.as_str()],
            "round {round}: added elsewhere: {text}"
        );
        // Named by its title, not tagged: found in the library the reader keeps.
        let named = json!({"message": format!("Summarize the {title}"), "action": "summarize"});
        let (found, text) = resolved(&reader.chat(named).await);
        assert_eq!(found, [added.as_str()], "round {round}: named: {text}");
        assert_eq!(writer.delete(&format!("/documents/{added}")).await.0, 204);
        // Gone: nothing is found, and PalAssist asks which document was meant.
        let events = once_heard(reader, &turn(&added), |e| docs_found(e) == Some(json!([]))).await;
        assert_eq!(
            docs_found(&events),
            Some(json!([])),
            "round {round}: deleted elsewhere"
        );
        let last = &events.last().unwrap().data;
        assert_eq!(last["type"], "interrupt", "round {round}: {last}");
        // The unchanged document is still found on both.
        assert_eq!(resolved(&writer.chat(turn(&kept)).await).0, [kept.as_str()]);
    }
}
