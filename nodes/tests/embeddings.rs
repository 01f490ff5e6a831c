//! The long-term store searching by meaning through `OpenAiEmbedder`, against an
//! OpenAI-compatible embeddings server speaking the real wire format, on every backend.

#![allow(clippy::unwrap_used)]

use crate::fake_embeddings;

use std::sync::Arc;

use fake_embeddings::FakeEmbeddings;
use palgraph::store::{IndexConfig, PutOptions, SearchQuery, Store, StoreError};
use palgraph::testkit::backends::{memory_store, postgres_store, sqlite_store};
use palgraph_nodes::embeddings::{EmbeddingsConfig, OpenAiEmbedder};
use serde_json::json;

fn embedder(fake: &FakeEmbeddings) -> Arc<OpenAiEmbedder> {
    let mut config =
        EmbeddingsConfig::new("text-embedding-3-small", "test-key").with_base_url(&fake.base_url);
    config.dimensions = Some(5);
    Arc::new(OpenAiEmbedder::new(config).unwrap())
}

fn ns(labels: &[&str]) -> Vec<String> {
    labels.iter().map(|l| l.to_string()).collect()
}

async fn ranks_by_meaning(store: Arc<dyn Store>, fake: &FakeEmbeddings) {
    let n = ns(&["memories", "ada"]);
    for (k, text) in [
        ("drink", "I have a cappuccino every morning"),
        ("pet", "my terrier is called Rex"),
        ("trip", "two weeks by the sea in Lisbon"),
    ] {
        store
            .put(&n, k, json!({"text": text}), PutOptions::default())
            .await
            .unwrap();
    }
    store
        .put(
            &ns(&["memories", "bob"]),
            "b",
            json!({"text": "espresso"}),
            PutOptions::default(),
        )
        .await
        .unwrap();
    let hits = store
        .search(&SearchQuery::new(n.clone()).query("what coffee do I like?"))
        .await
        .unwrap();
    let keys: Vec<&str> = hits.iter().map(|h| h.item.key.as_str()).collect();
    assert_eq!(
        keys[0], "drink",
        "no word in common, same meaning: {keys:?}"
    );
    assert!(!keys.contains(&"b"), "bob's item is outside the prefix");
    assert!(
        hits[0].score.unwrap() > 0.8 && hits[1].score.unwrap() < 0.2,
        "{hits:?}"
    );
    let dogs = store
        .search(&SearchQuery::new(n).query("puppies and dogs").limit(1))
        .await
        .unwrap();
    assert_eq!(dogs[0].item.key, "pet");

    let received = fake.received();
    assert_eq!(
        received.len(),
        6,
        "four puts and two queries, one request each"
    );
    for r in &received {
        assert_eq!(r.authorization.as_deref(), Some("Bearer test-key"));
        assert_eq!(r.body["model"], "text-embedding-3-small");
        assert_eq!(r.body["dimensions"], 5);
    }
    assert_eq!(
        received[0].body["input"],
        json!(["I have a cappuccino every morning"])
    );
    assert_eq!(received[4].body["input"], json!(["what coffee do I like?"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_embedder_ranks_memory_store_searches_by_meaning() {
    let fake = FakeEmbeddings::start(vec![]).await;
    let store = memory_store(Some(IndexConfig::new(embedder(&fake)))).await;
    ranks_by_meaning(store, &fake).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_embedder_ranks_sqlite_store_searches_by_meaning() {
    let fake = FakeEmbeddings::start(vec![]).await;
    let store = sqlite_store(Some(IndexConfig::new(embedder(&fake)))).await;
    ranks_by_meaning(store, &fake).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_embedder_ranks_postgres_store_searches_by_meaning() {
    let fake = FakeEmbeddings::start(vec![]).await;
    let store = postgres_store(Some(IndexConfig::new(embedder(&fake)))).await;
    ranks_by_meaning(store, &fake).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_is_retried_and_a_refusal_fails_the_put_and_stores_nothing() {
    let fake = FakeEmbeddings::start(vec![429, 503]).await;
    let store = sqlite_store(Some(IndexConfig::new(embedder(&fake)))).await;
    let n = ns(&["m"]);
    store
        .put(&n, "k", json!({"text": "espresso"}), PutOptions::default())
        .await
        .unwrap();
    assert_eq!(fake.received().len(), 3, "two failures, then the answer");
    fake.fail_next(&[400]);
    let refused = store
        .put(&n, "k2", json!({"text": "latte"}), PutOptions::default())
        .await;
    assert!(matches!(refused, Err(StoreError::Embed(_))), "{refused:?}");
    assert_eq!(fake.received().len(), 4, "a 400 is not retried");
    assert!(store.get(&n, "k2", false).await.unwrap().is_none());
    fake.fail_next(&[401]);
    let failed = store
        .search(&SearchQuery::new(n.clone()).query("coffee"))
        .await;
    assert!(matches!(failed, Err(StoreError::Embed(_))), "{failed:?}");
    let hits = store
        .search(&SearchQuery::new(n).query("coffee"))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
}
