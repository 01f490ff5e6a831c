//! The long-term store's conformance cases, each an `async fn(StoreFactory)`, and
//! [`store_suite!`](crate::store_suite) which runs all of them on one backend. A factory
//! makes a fresh, empty store, embedding with the index it is given.

#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use crate::store::{
    EmbedError, Embedder, Index, IndexConfig, NamespaceQuery, PutOptions, SearchQuery, Store,
    StoreError,
};

/// Makes a fresh store, searching by meaning with the index when given one.
pub type StoreFactory = Arc<
    dyn Fn(Option<IndexConfig>) -> Pin<Box<dyn Future<Output = Arc<dyn Store>> + Send>>
        + Send
        + Sync,
>;

/// Runs every case on stores from `$factory` (an `async fn(Option<IndexConfig>) ->
/// Arc<dyn Store>`), one `#[tokio::test]` each.
#[macro_export]
macro_rules! store_suite {
    ($factory:path) => {
        $crate::store_suite!(@cases $factory;
            put_get_update_and_delete,
            bad_input_is_refused_and_changes_nothing,
            search_stays_in_its_prefix_filters_and_pages,
            text_queries_rank_by_shared_words,
            ttl_expires_items_and_reads_refresh_it,
            namespaces_list_with_prefix_suffix_depth_and_pages,
            search_by_meaning_ranks_by_cosine_within_the_prefix,
            concurrent_puts_lose_nothing_and_duplicate_nothing,
            scoped_views_do_not_see_each_other,
        );
    };
    (@cases $factory:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let factory: $crate::testkit::store_cases::StoreFactory =
                    std::sync::Arc::new(|index| Box::pin($factory(index)));
                $crate::testkit::store_cases::$case(factory).await;
            }
        )*
    };
}

fn ns(labels: &[&str]) -> Vec<String> {
    labels.iter().map(|l| l.to_string()).collect()
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

async fn plain(factory: &StoreFactory) -> Arc<dyn Store> {
    factory(None).await
}

async fn keys(store: &dyn Store, q: SearchQuery) -> Vec<String> {
    store
        .search(&q)
        .await
        .unwrap()
        .into_iter()
        .map(|h| h.item.key)
        .collect()
}

pub async fn put_get_update_and_delete(factory: StoreFactory) {
    let store = plain(&factory).await;
    let n = ns(&["users", "ada", "prefs"]);
    store
        .put(
            &n,
            "coffee",
            json!({"likes": "dark roast", "n": 1}),
            PutOptions::default(),
        )
        .await
        .unwrap();
    let first = store.get(&n, "coffee", true).await.unwrap().unwrap();
    assert_eq!(first.namespace, n);
    assert_eq!(first.key, "coffee");
    assert_eq!(first.value, json!({"likes": "dark roast", "n": 1}));
    assert_eq!(first.created_at_ms, first.updated_at_ms);
    assert_eq!(first.expires_at_ms, None);
    tokio::time::sleep(Duration::from_millis(5)).await;
    store
        .put(
            &n,
            "coffee",
            json!({"likes": "espresso"}),
            PutOptions::default(),
        )
        .await
        .unwrap();
    let second = store.get(&n, "coffee", true).await.unwrap().unwrap();
    assert_eq!(second.value, json!({"likes": "espresso"}));
    assert_eq!(second.created_at_ms, first.created_at_ms, "created is kept");
    assert!(second.updated_at_ms > first.updated_at_ms);
    // Unicode and nested values round-trip; other keys and namespaces are separate.
    let v = json!({"text": "café ☕ 日本", "nested": {"list": [1, 2.5, null, true]}});
    store
        .put(&n, "other", v.clone(), PutOptions::default())
        .await
        .unwrap();
    assert_eq!(
        store.get(&n, "other", false).await.unwrap().unwrap().value,
        v
    );
    assert!(store
        .get(&ns(&["users", "ada"]), "coffee", true)
        .await
        .unwrap()
        .is_none());
    store.delete(&n, "coffee").await.unwrap();
    assert!(store.get(&n, "coffee", true).await.unwrap().is_none());
    store.delete(&n, "coffee").await.unwrap();
    assert!(store.get(&n, "other", true).await.unwrap().is_some());
    assert_eq!(keys(&*store, SearchQuery::new(vec![])).await, ["other"]);
}

pub async fn bad_input_is_refused_and_changes_nothing(factory: StoreFactory) {
    let store = plain(&factory).await;
    let good = ns(&["a"]);
    let v = json!({"x": 1});
    let refused =
        |r: Result<(), StoreError>| assert!(matches!(r, Err(StoreError::Invalid(_))), "{r:?}");
    refused(store.put(&[], "k", v.clone(), PutOptions::default()).await);
    refused(
        store
            .put(&ns(&["a", ""]), "k", v.clone(), PutOptions::default())
            .await,
    );
    refused(
        store
            .put(&ns(&["a\u{1f}b"]), "k", v.clone(), PutOptions::default())
            .await,
    );
    refused(store.put(&good, "", v.clone(), PutOptions::default()).await);
    refused(
        store
            .put(&good, "k\0", v.clone(), PutOptions::default())
            .await,
    );
    refused(
        store
            .put(&good, "k", json!([1, 2]), PutOptions::default())
            .await,
    );
    refused(
        store
            .put(&good, "k", json!("text"), PutOptions::default())
            .await,
    );
    let bad_filter = SearchQuery::new(vec![]).filter(obj(json!({"x": {"$regex": "."}})));
    assert!(matches!(
        store.search(&bad_filter).await,
        Err(StoreError::Invalid(_))
    ));
    let bad_in = SearchQuery::new(vec![]).filter(obj(json!({"x": {"$in": 1}})));
    assert!(matches!(
        store.search(&bad_in).await,
        Err(StoreError::Invalid(_))
    ));
    assert!(store
        .search(&SearchQuery::new(vec![]))
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .list_namespaces(&NamespaceQuery::new())
        .await
        .unwrap()
        .is_empty());
}

pub async fn search_stays_in_its_prefix_filters_and_pages(factory: StoreFactory) {
    let store = plain(&factory).await;
    let items = [
        (
            ns(&["users", "ada", "prefs"]),
            "p1",
            json!({"kind": "pref", "n": 1, "meta": {"lang": "en"}}),
        ),
        (
            ns(&["users", "ada", "prefs"]),
            "p2",
            json!({"kind": "pref", "n": 2, "meta": {"lang": "fr"}}),
        ),
        (
            ns(&["users", "ada", "facts"]),
            "f1",
            json!({"kind": "fact", "n": 3}),
        ),
        (
            ns(&["users", "ada"]),
            "root",
            json!({"kind": "fact", "n": 4}),
        ),
        (ns(&["users", "adam"]), "x", json!({"kind": "pref", "n": 5})),
        (
            ns(&["users", "bob", "prefs"]),
            "y",
            json!({"kind": "pref", "n": 6}),
        ),
    ];
    for (n, k, v) in &items {
        store
            .put(n, k, v.clone(), PutOptions::default())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    // Newest first, only ada's (not adam's, though "adam" starts with "ada").
    assert_eq!(
        keys(&*store, SearchQuery::new(ns(&["users", "ada"]))).await,
        ["root", "f1", "p2", "p1"]
    );
    assert_eq!(
        keys(&*store, SearchQuery::new(ns(&["users", "ada", "prefs"]))).await,
        ["p2", "p1"]
    );
    assert_eq!(keys(&*store, SearchQuery::new(vec![])).await.len(), 6);
    assert!(keys(&*store, SearchQuery::new(ns(&["nobody"])))
        .await
        .is_empty());
    let pref = SearchQuery::new(ns(&["users"])).filter(obj(json!({"kind": "pref"})));
    assert_eq!(keys(&*store, pref).await, ["y", "x", "p2", "p1"]);
    let ranged = SearchQuery::new(ns(&["users"])).filter(obj(json!({"n": {"$gte": 2, "$lt": 5}})));
    assert_eq!(keys(&*store, ranged).await, ["root", "f1", "p2"]);
    let nested = SearchQuery::new(ns(&["users"])).filter(obj(json!({"meta.lang": "fr"})));
    assert_eq!(keys(&*store, nested).await, ["p2"]);
    let both =
        SearchQuery::new(ns(&["users"])).filter(obj(json!({"kind": "pref", "n": {"$ne": 5}})));
    assert_eq!(keys(&*store, both).await, ["y", "p2", "p1"]);
    // Pages after filtering: every item once.
    let mut seen = Vec::new();
    for page in 0..4 {
        let q = SearchQuery::new(ns(&["users"]))
            .filter(obj(json!({"kind": "pref"})))
            .limit(3)
            .offset(page * 3);
        seen.extend(keys(&*store, q).await);
    }
    assert_eq!(seen, ["y", "x", "p2", "p1"]);
    let q = SearchQuery::new(ns(&["users"])).limit(2).offset(1);
    assert_eq!(keys(&*store, q).await, ["x", "root"]);
    // An item found has its full shape, without a score when there was no query.
    let hit = &store
        .search(&SearchQuery::new(ns(&["users", "bob"])))
        .await
        .unwrap()[0];
    assert_eq!(hit.item.namespace, ns(&["users", "bob", "prefs"]));
    assert_eq!(hit.item.value, json!({"kind": "pref", "n": 6}));
    assert_eq!(hit.score, None);
}

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

pub async fn ttl_expires_items_and_reads_refresh_it(factory: StoreFactory) {
    let store = plain(&factory).await;
    let n = ns(&["session"]);
    let ttl = Duration::from_millis(1500);
    store
        .put(&n, "short", json!({"v": 1}), PutOptions::default().ttl(ttl))
        .await
        .unwrap();
    store
        .put(&n, "forever", json!({"v": 2}), PutOptions::default())
        .await
        .unwrap();
    let item = store.get(&n, "short", false).await.unwrap().unwrap();
    let first_expiry = item.expires_at_ms.unwrap();
    assert!(first_expiry > item.updated_at_ms);
    tokio::time::sleep(Duration::from_millis(900)).await;
    // A read refreshes: the item lives 1.5 s from now.
    let read = store.get(&n, "short", true).await.unwrap().unwrap();
    assert!(
        read.expires_at_ms.unwrap() >= first_expiry + 800,
        "refreshed"
    );
    tokio::time::sleep(Duration::from_millis(900)).await;
    // Past its first expiry, alive thanks to the read; a search refreshes it again.
    let found = store.search(&SearchQuery::new(n.clone())).await.unwrap();
    assert_eq!(found.len(), 2);
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert!(
        store.get(&n, "short", false).await.unwrap().is_some(),
        "the search refreshed it"
    );
    // Reads that do not refresh let it expire.
    store
        .search(&SearchQuery::new(n.clone()).refresh_ttl(false))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1700)).await;
    assert!(
        store.get(&n, "short", true).await.unwrap().is_none(),
        "expired"
    );
    assert_eq!(
        keys(&*store, SearchQuery::new(n.clone())).await,
        ["forever"]
    );
    store
        .put(
            &ns(&["gone"]),
            "k",
            json!({"v": 3}),
            PutOptions::default().ttl(Duration::from_millis(1)),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(
        store.list_namespaces(&NamespaceQuery::new()).await.unwrap(),
        vec![ns(&["session"])],
        "namespaces of expired items are not listed"
    );
    assert_eq!(store.sweep_expired().await.unwrap(), 2);
    assert_eq!(store.sweep_expired().await.unwrap(), 0);
    assert!(store.get(&n, "forever", true).await.unwrap().is_some());
    // A put over an expired item starts a new item (a new created_at).
    store
        .put(
            &n,
            "again",
            json!({"v": 1}),
            PutOptions::default().ttl(Duration::from_millis(1)),
        )
        .await
        .unwrap();
    let old = store.get(&n, "again", false).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    store
        .put(&n, "again", json!({"v": 2}), PutOptions::default())
        .await
        .unwrap();
    let new = store.get(&n, "again", false).await.unwrap().unwrap();
    assert_eq!(new.expires_at_ms, None);
    if let Some(old) = old {
        assert!(new.created_at_ms > old.created_at_ms);
    }
}

pub async fn namespaces_list_with_prefix_suffix_depth_and_pages(factory: StoreFactory) {
    let store = plain(&factory).await;
    for n in [
        ns(&["users", "ada", "prefs"]),
        ns(&["users", "ada", "facts"]),
        ns(&["users", "bob", "prefs"]),
        ns(&["users", "bob", "prefs", "old"]),
        ns(&["teams", "core"]),
        ns(&["usersx"]),
    ] {
        store
            .put(&n, "k1", json!({"v": 1}), PutOptions::default())
            .await
            .unwrap();
        store
            .put(&n, "k2", json!({"v": 2}), PutOptions::default())
            .await
            .unwrap();
    }
    let list = |q: NamespaceQuery| {
        let store = store.clone();
        async move { store.list_namespaces(&q).await.unwrap() }
    };
    assert_eq!(
        list(NamespaceQuery::new()).await,
        vec![
            ns(&["teams", "core"]),
            ns(&["users", "ada", "facts"]),
            ns(&["users", "ada", "prefs"]),
            ns(&["users", "bob", "prefs"]),
            ns(&["users", "bob", "prefs", "old"]),
            ns(&["usersx"]),
        ]
    );
    assert_eq!(
        list(NamespaceQuery::new().prefix(ns(&["users", "bob"]))).await,
        vec![
            ns(&["users", "bob", "prefs"]),
            ns(&["users", "bob", "prefs", "old"])
        ]
    );
    assert_eq!(
        list(NamespaceQuery::new().suffix(ns(&["prefs"]))).await,
        vec![
            ns(&["users", "ada", "prefs"]),
            ns(&["users", "bob", "prefs"])
        ]
    );
    assert_eq!(
        list(NamespaceQuery::new().prefix(ns(&["users", "*", "prefs"]))).await,
        vec![
            ns(&["users", "ada", "prefs"]),
            ns(&["users", "bob", "prefs"]),
            ns(&["users", "bob", "prefs", "old"])
        ]
    );
    assert_eq!(
        list(NamespaceQuery::new().max_depth(2)).await,
        vec![
            ns(&["teams", "core"]),
            ns(&["users", "ada"]),
            ns(&["users", "bob"]),
            ns(&["usersx"])
        ]
    );
    assert_eq!(
        list(
            NamespaceQuery::new()
                .prefix(ns(&["users"]))
                .max_depth(2)
                .limit(1)
                .offset(1)
        )
        .await,
        vec![ns(&["users", "bob"])]
    );
    assert!(list(NamespaceQuery::new().prefix(ns(&["nobody"])))
        .await
        .is_empty());
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
                for w in crate::store::tokens(t) {
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

pub async fn concurrent_puts_lose_nothing_and_duplicate_nothing(factory: StoreFactory) {
    let store = plain(&factory).await;
    let n = ns(&["load"]);
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..40 {
        let store = store.clone();
        let n = n.clone();
        tasks.spawn(async move {
            store
                .put(&n, &format!("k{i}"), json!({"i": i}), PutOptions::default())
                .await
                .unwrap();
            // Everyone also races on one key.
            store
                .put(&n, "shared", json!({"by": i}), PutOptions::default())
                .await
                .unwrap();
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap();
    }
    let all = store
        .search(&SearchQuery::new(n.clone()).limit(1000))
        .await
        .unwrap();
    let distinct: HashSet<String> = all.iter().map(|h| h.item.key.clone()).collect();
    assert_eq!(all.len(), 41, "40 keys and the shared one, each once");
    assert_eq!(distinct.len(), 41);
    for i in 0..40 {
        let item = store
            .get(&n, &format!("k{i}"), false)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(item.value, json!({"i": i}));
    }
    let shared = store.get(&n, "shared", false).await.unwrap().unwrap();
    assert!(shared.value["by"]
        .as_i64()
        .is_some_and(|b| (0..40).contains(&b)));
}

pub async fn scoped_views_do_not_see_each_other(factory: StoreFactory) {
    use crate::store::Scoped;
    let shared = plain(&factory).await;
    let ada = Scoped::new(shared.clone(), "user:ada@example.com").unwrap();
    let bob = Scoped::new(shared.clone(), "user:bob").unwrap();
    let n = ns(&["memories"]);
    ada.put(
        &n,
        "k",
        json!({"text": "ada's coffee"}),
        PutOptions::default(),
    )
    .await
    .unwrap();
    bob.put(&n, "k", json!({"text": "bob's tea"}), PutOptions::default())
        .await
        .unwrap();
    assert_eq!(
        ada.get(&n, "k", true).await.unwrap().unwrap().value,
        json!({"text": "ada's coffee"})
    );
    assert_eq!(ada.get(&n, "k", true).await.unwrap().unwrap().namespace, n);
    let found = ada.search(&SearchQuery::new(vec![])).await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].item.namespace, n);
    assert!(ada
        .search(&SearchQuery::new(vec![]).query("tea"))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        ada.list_namespaces(&NamespaceQuery::new()).await.unwrap(),
        vec![n.clone()]
    );
    // A suffix cannot reach the hidden root label.
    let rooted = NamespaceQuery::new().suffix(ns(&["user:ada@example.com", "memories"]));
    assert!(ada.list_namespaces(&rooted).await.unwrap().is_empty());
    let old = ns(&["memories", "old"]);
    ada.put(&old, "k", json!({}), PutOptions::default())
        .await
        .unwrap();
    let q = NamespaceQuery::new().suffix(ns(&["*"])).max_depth(1);
    assert_eq!(ada.list_namespaces(&q).await.unwrap(), vec![n.clone()]);
    let q = NamespaceQuery::new().prefix(ns(&["*", "old"])).limit(5);
    assert_eq!(ada.list_namespaces(&q).await.unwrap(), vec![old.clone()]);
    ada.delete(&old, "k").await.unwrap();
    bob.delete(&n, "k").await.unwrap();
    assert!(
        ada.get(&n, "k", true).await.unwrap().is_some(),
        "bob's delete is his own"
    );
    assert!(matches!(
        ada.put(&ns(&["a.b"]), "k", json!({}), PutOptions::default())
            .await,
        Err(StoreError::Invalid(_))
    ));
    assert_eq!(
        shared
            .list_namespaces(&NamespaceQuery::new())
            .await
            .unwrap(),
        vec![ns(&["user:ada@example.com", "memories"])]
    );
}
