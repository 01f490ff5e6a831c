//! The store's ranking cases: text queries ranked by shared words, and search by meaning
//! ranked by cosine similarity through a small concept embedder. Part of
//! [`store_suite!`](crate::store_suite), with the cases in [`crate::store_cases`].

#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::store_cases::{keys, ns, obj, plain, StoreFactory};
use palgraph::store::{EmbedError, Embedder, Index, IndexConfig, PutOptions, SearchQuery};

pub async fn text_queries_rank_by_shared_words(factory: StoreFactory) {
    let store = plain(&factory).await;
    let n = ns(&["memories", "ada"]);
    store
        .put(
            &n,
            "a",
            json!({"text": "dark roast coffee every morning"}),
            PutOptions::default(),
        )
        .await
        .unwrap();
    store
        .put(
            &n,
            "b",
            json!({"text": "coffee with oat milk"}),
            PutOptions::default(),
        )
        .await
        .unwrap();
    store
        .put(
            &n,
            "c",
            json!({"text": "green tea in the afternoon"}),
            PutOptions::default(),
        )
        .await
        .unwrap();
    store
        .put(
            &ns(&["memories", "bob"]),
            "d",
            json!({"text": "dark coffee"}),
            PutOptions::default(),
        )
        .await
        .unwrap();
    // Strings deep in the value are words too.
    store
        .put(
            &n,
            "e",
            json!({"tags": ["holiday", {"place": "Lisbon"}]}),
            PutOptions::default(),
        )
        .await
        .unwrap();
    let hits = store
        .search(&SearchQuery::new(n.clone()).query("dark coffee"))
        .await
        .unwrap();
    let found: Vec<&str> = hits.iter().map(|h| h.item.key.as_str()).collect();
    assert_eq!(
        found,
        ["a", "b"],
        "both words first, one word next, none not at all"
    );
    let (s0, s1) = (hits[0].score.unwrap(), hits[1].score.unwrap());
    assert!(s0 > s1 && s1 > 0.0, "{s0} > {s1} > 0");
    assert_eq!(
        keys(&*store, SearchQuery::new(n.clone()).query("TEA")).await,
        ["c"]
    );
    assert_eq!(
        keys(&*store, SearchQuery::new(n.clone()).query("lisbon")).await,
        ["e"]
    );
    assert!(keys(&*store, SearchQuery::new(n.clone()).query("pizza"))
        .await
        .is_empty());
    assert!(keys(&*store, SearchQuery::new(n.clone()).query("?!"))
        .await
        .is_empty());
    // A query with a filter and a page.
    let q = SearchQuery::new(ns(&["memories"]))
        .query("coffee")
        .filter(obj(json!({"text": {"$ne": "coffee with oat milk"}})));
    let mut found = keys(&*store, q).await;
    found.sort();
    assert_eq!(found, ["a", "d"]);
    let q = SearchQuery::new(n.clone())
        .query("dark coffee")
        .limit(1)
        .offset(1);
    assert_eq!(keys(&*store, q).await, ["b"]);
    // A rewritten item is found by its new words only.
    store
        .put(
            &n,
            "c",
            json!({"text": "black coffee"}),
            PutOptions::default(),
        )
        .await
        .unwrap();
    assert!(keys(&*store, SearchQuery::new(n.clone()).query("tea"))
        .await
        .is_empty());
    store.delete(&n, "a").await.unwrap();
    assert_eq!(
        keys(&*store, SearchQuery::new(n).query("dark")).await,
        Vec::<String>::new()
    );
}

/// An embedder that knows a few concepts: words of one concept share a direction, so an
/// item about "espresso" is close to a query about "coffee". Counts its calls.
pub struct ConceptEmbedder {
    pub calls: std::sync::atomic::AtomicUsize,
}

const CONCEPTS: &[&[&str]] = &[
    &["coffee", "espresso", "latte", "roast", "caffeine"],
    &["dog", "puppy", "canine", "terrier"],
    &["beach", "sea", "ocean", "holiday", "lisbon"],
    &["python", "rust", "code", "programming"],
];

#[async_trait]
impl Embedder for ConceptEmbedder {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0_f32; CONCEPTS.len() + 1];
                for w in palgraph::store::tokens(t) {
                    match CONCEPTS.iter().position(|c| c.contains(&w.as_str())) {
                        Some(i) => v[i] += 1.0,
                        None => v[CONCEPTS.len()] += 0.1,
                    }
                }
                v
            })
            .collect())
    }
}

pub async fn search_by_meaning_ranks_by_cosine_within_the_prefix(factory: StoreFactory) {
    let embedder = Arc::new(ConceptEmbedder {
        calls: Default::default(),
    });
    let index = IndexConfig::new(embedder.clone()).fields(vec!["text".into()]);
    let store = factory(Some(index)).await;
    let n = ns(&["memories", "ada"]);
    let put = |k: &'static str, v: Value, o: PutOptions| {
        let (store, n) = (store.clone(), n.clone());
        async move { store.put(&n, k, v, o).await.unwrap() }
    };
    put(
        "drink",
        json!({"text": "I drink espresso every day", "kind": "pref"}),
        PutOptions::default(),
    )
    .await;
    put(
        "pet",
        json!({"text": "my terrier is called Rex", "kind": "fact"}),
        PutOptions::default(),
    )
    .await;
    put(
        "trip",
        json!({"text": "a holiday by the sea in Lisbon", "kind": "fact"}),
        PutOptions::default(),
    )
    .await;
    put(
        "quiet",
        json!({"text": "latte art", "kind": "pref"}),
        PutOptions::default().index(Index::Off),
    )
    .await;
    put(
        "other",
        json!({"note": "coffee", "text": "python code"}),
        PutOptions::default(),
    )
    .await;
    put(
        "by_note",
        json!({"note": "coffee coffee", "text": "unrelated words"}),
        PutOptions::default().index(Index::Fields(vec!["note".into()])),
    )
    .await;
    store
        .put(
            &ns(&["memories", "bob"]),
            "b",
            json!({"text": "coffee"}),
            PutOptions::default(),
        )
        .await
        .unwrap();
    let calls_after_puts = embedder.calls.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        calls_after_puts, 6,
        "one call per embedded item, none for Index::Off"
    );

    let hits = store
        .search(&SearchQuery::new(n.clone()).query("coffee"))
        .await
        .unwrap();
    let found: Vec<&str> = hits.iter().map(|h| h.item.key.as_str()).collect();
    assert_eq!(
        &found[..2],
        ["by_note", "drink"],
        "no shared word needed: {found:?}"
    );
    assert!(
        (hits[0].score.unwrap() - 1.0).abs() < 1e-6,
        "same direction: cosine 1"
    );
    assert!(hits
        .iter()
        .all(|h| h.item.key != "quiet" && h.item.key != "b"));
    for w in hits.windows(2) {
        assert!(w[0].score >= w[1].score, "ranked by score");
    }
    let q = SearchQuery::new(n.clone()).query("puppy").limit(1);
    assert_eq!(keys(&*store, q).await, ["pet"]);
    let q = SearchQuery::new(n.clone())
        .query("ocean")
        .filter(obj(json!({"kind": "fact"})))
        .limit(2);
    assert_eq!(keys(&*store, q).await, ["trip", "pet"]);
    let q = SearchQuery::new(n.clone())
        .query("coffee")
        .limit(1)
        .offset(1);
    assert_eq!(keys(&*store, q).await, ["drink"]);
    // Without a query, everything of the prefix (the unindexed item too), newest first.
    let all = keys(&*store, SearchQuery::new(n.clone())).await;
    assert_eq!(all.len(), 6);
    assert!(all.contains(&"quiet".to_string()));
    // A rewrite is embedded again.
    put(
        "pet",
        json!({"text": "espresso beans", "kind": "fact"}),
        PutOptions::default(),
    )
    .await;
    let hits = store
        .search(&SearchQuery::new(n).query("puppy"))
        .await
        .unwrap();
    assert!(
        hits.iter().all(|h| h.score.unwrap() < 0.01),
        "nothing is about dogs now: {hits:?}"
    );
}
