//! The long-term store's routes on the real server, on SQLite and Postgres: search by
//! meaning when the server is configured with an embeddings endpoint (an OpenAI-compatible
//! fake speaking the wire format), PalAssist forgetting by meaning, and bad input refused
//! with a clear error that changes nothing. (The official SDKs' `client.store.*` flows are
//! in sdk_python.rs and sdk_js.rs.)

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::fake_embeddings;

use common::{Backend, TestServer};
use fake_embeddings::FakeEmbeddings;
use serde_json::{json, Value};

async fn put(s: &TestServer, body: Value) -> (u16, Value) {
    let r = s
        .client
        .put(s.url("/store/items"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn search(s: &TestServer, body: Value) -> Vec<Value> {
    let (status, found) = s.post_json("/store/items/search", body).await;
    assert_eq!(status, 200, "{found}");
    found["items"].as_array().unwrap().clone()
}

async fn searches_by_meaning_with_an_embeddings_endpoint(b: Backend) {
    let fake = FakeEmbeddings::start(vec![]).await;
    let s = TestServer::start_with(
        b,
        &[
            ("PALGRAPH_EMBEDDINGS_MODEL", "text-embedding-3-small"),
            ("PALGRAPH_EMBEDDINGS_BASE_URL", fake.base_url.as_str()),
            ("PALGRAPH_EMBEDDINGS_API_KEY", "embed-key"),
            ("PALGRAPH_STORE_INDEX_FIELDS", "text"),
        ],
    )
    .await;
    let ns = json!(["memories"]);
    for (key, text) in [
        ("drink", "a cappuccino every morning"),
        ("pet", "my terrier Rex"),
        ("trip", "two weeks by the sea"),
    ] {
        let (status, body) = put(
            &s,
            json!({"namespace": ns, "key": key, "value": {"text": text, "note": "coffee"}}),
        )
        .await;
        assert_eq!(status, 204, "{body}");
    }
    let (status, _) = put(
        &s,
        json!({"namespace": ns, "key": "quiet", "value": {"text": "espresso"}, "index": false}),
    )
    .await;
    assert_eq!(status, 204);
    let found = search(
        &s,
        json!({"namespace_prefix": ["memories"], "query": "what coffee do I like?"}),
    )
    .await;
    let keys: Vec<&str> = found.iter().map(|i| i["key"].as_str().unwrap()).collect();
    assert_eq!(
        keys[0], "drink",
        "by meaning, with no word in common: {keys:?}"
    );
    assert!(
        !keys.contains(&"quiet"),
        "an item put with index=false is not found by meaning"
    );
    assert!(found[0]["score"].as_f64().unwrap() > 0.8, "{found:?}");
    let dogs = search(
        &s,
        json!({"namespace_prefix": [], "query": "dogs", "limit": 1}),
    )
    .await;
    assert_eq!(dogs[0]["key"], "pet");
    // Only the configured field was embedded ("note" says coffee on every item).
    let received = fake.received();
    assert_eq!(received.len(), 5, "three embedded puts, two queries");
    assert_eq!(
        received[0].body["input"],
        json!(["a cappuccino every morning"])
    );
    assert_eq!(
        received[0].authorization.as_deref(),
        Some("Bearer embed-key")
    );
    assert_eq!(received[0].body["model"], "text-embedding-3-small");

    // PalAssist forgets the closest memory by meaning.
    let say = |message: &str| {
        let body = json!({"message": message});
        let s = &s;
        async move {
            let events = s
                .sse(s.client.post(s.url("/chat")).json(&body))
                .await
                .all()
                .await;
            events.last().unwrap().data["response"]
                .as_str()
                .unwrap_or("")
                .to_string()
        }
    };
    assert!(say("remember that I drink my espresso black")
        .await
        .starts_with("Got it."));
    assert!(say("Remember that my dog is called Rex")
        .await
        .starts_with("Got it."));
    assert_eq!(
        say("forget my coffee habits").await,
        "Done: I forgot that I drink my espresso black."
    );
    assert_eq!(
        say("what do you remember?").await,
        "Here is what I remember:\n- my dog is called Rex"
    );

    // The embeddings endpoint refusing: the put fails with 503, and nothing is stored.
    fake.fail_next(&[400]);
    let (status, body) = put(
        &s,
        json!({"namespace": ns, "key": "late", "value": {"text": "latte"}}),
    )
    .await;
    assert_eq!(status, 503, "{body}");
    let (status, item) = s.get_json("/store/items?namespace=memories&key=late").await;
    assert_eq!((status, item), (200, Value::Null));
}
both_backends!(by_meaning_, searches_by_meaning_with_an_embeddings_endpoint);

async fn bad_input_is_refused_and_changes_nothing(b: Backend) {
    let s = TestServer::start(b).await;
    let cases = [
        (
            json!({"namespace": ["a", ""], "key": "k", "value": {}}),
            422,
        ),
        (json!({"namespace": ["a.b"], "key": "k", "value": {}}), 422),
        (json!({"namespace": [], "key": "k", "value": {}}), 422),
        (json!({"namespace": ["a"], "key": "", "value": {}}), 422),
        (json!({"namespace": ["a"], "key": "k", "value": [1]}), 422),
        (
            json!({"namespace": ["a"], "key": "k", "value": {"x": "nul\u{0}"}}),
            422,
        ),
        (
            json!({"namespace": ["a"], "key": "k", "value": {}, "ttl": 0}),
            422,
        ),
        (
            json!({"namespace": ["a"], "key": "k", "value": {}, "index": "text"}),
            422,
        ),
        (json!({"namespace": ["a"], "value": {}}), 422),
    ];
    for (body, want) in cases {
        let (status, err) = put(&s, body.clone()).await;
        assert_eq!(status, want, "{body} -> {err}");
        assert!(
            err["detail"].as_str().is_some_and(|d| !d.is_empty()),
            "{err}"
        );
    }
    let (status, err) = s.get_json("/store/items?namespace=a").await;
    assert_eq!(status, 400, "a GET without a key: {err}");
    let (status, _) = s.get_json("/store/items?namespace=a..b&key=k").await;
    assert_eq!(status, 422, "an empty label");
    let (status, _) = s
        .post_json("/store/items/search", json!({"limit": 5000}))
        .await;
    assert_eq!(status, 422);
    let (status, _) = s
        .post_json(
            "/store/items/search",
            json!({"filter": {"x": {"$where": "1"}}}),
        )
        .await;
    assert_eq!(status, 422);
    let (status, _) = s
        .post_json("/store/namespaces", json!({"prefix": ["a.b"]}))
        .await;
    assert_eq!(status, 422);
    assert!(search(&s, json!({})).await.is_empty(), "nothing was stored");
    let (_, spaces) = s.post_json("/store/namespaces", json!({})).await;
    assert_eq!(spaces, json!({"namespaces": []}));
}
both_backends!(bad_input_, bad_input_is_refused_and_changes_nothing);

/// A Postgres outage (a cluster of the test's own, stopped and started again): store
/// requests answer 503 with `Retry-After` while it lasts, nothing stored is lost, and the
/// store works again once the database is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_outage_is_503_and_loses_nothing() {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    let pg = Arc::new(common::pg_cluster::PgCluster::start());
    let s = TestServer::start_on(&pg.url(), &[]).await;
    let item = json!({"namespace": ["m"], "key": "kept", "value": {"text": "before the outage"}});
    assert_eq!(put(&s, item).await.0, 204);

    tokio::task::spawn_blocking({
        let pg = pg.clone();
        move || pg.stop()
    })
    .await
    .unwrap();
    let r = s
        .client
        .put(s.url("/store/items"))
        .json(&json!({"namespace": ["m"], "key": "during", "value": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 503);
    assert!(r.headers().contains_key("retry-after"));
    let (status, err) = s.get_json("/store/items?namespace=m&key=kept").await;
    assert_eq!(status, 503, "{err}");

    tokio::task::spawn_blocking({
        let pg = pg.clone();
        move || pg.start_again()
    })
    .await
    .unwrap();
    // The pool reconnects on its own: retry as a client told `Retry-After` would.
    let started = Instant::now();
    let item = loop {
        let (status, item) = s.get_json("/store/items?namespace=m&key=kept").await;
        if status == 200 {
            break item;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "still {status}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(item["value"], json!({"text": "before the outage"}));
    let (status, none) = s.get_json("/store/items?namespace=m&key=during").await;
    assert_eq!(
        (status, none),
        (200, Value::Null),
        "the refused put stored nothing"
    );
    assert_eq!(
        put(&s, json!({"namespace": ["m"], "key": "after", "value": {}}))
            .await
            .0,
        204
    );
}

/// Big items come in responses of about the server's response size, the rest an offset
/// away: every item once, in the order of one long search.
async fn big_items_page_by_bytes(b: Backend) {
    let s = TestServer::start_with(b, &[("PALGRAPH_MAX_RESPONSE_BYTES", "4194304")]).await;
    let half_mib = "x".repeat(512 * 1024);
    for i in 0..30 {
        let (code, r) = put(
            &s,
            json!({"namespace": ["big"], "key": format!("k{i:02}"), "value": {"text": half_mib, "i": i}}),
        )
        .await;
        assert!(code < 300, "{code} {r}");
    }
    let mut keys = Vec::new();
    loop {
        let page = search(
            &s,
            json!({"namespace_prefix": ["big"], "limit": 1000, "offset": keys.len()}),
        )
        .await;
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 9, "about 4 MiB a response: {}", page.len());
        keys.extend(page.iter().map(|i| i["key"].as_str().unwrap().to_string()));
        assert!(keys.len() <= 30, "{keys:?}");
    }
    let mut sorted = keys.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 30, "{keys:?}");
    let small = search(
        &s,
        json!({"namespace_prefix": ["big"], "limit": 3, "offset": 28}),
    )
    .await;
    assert_eq!(small.len(), 2);
    let none = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        search(&s, json!({"namespace_prefix": ["big"], "limit": 0})),
    )
    .await
    .expect("a search for nothing answers at once");
    assert!(none.is_empty());
}
both_backends!(big_items_, big_items_page_by_bytes);
