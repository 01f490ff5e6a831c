//! The long-term store's conformance cases, each an `async fn(StoreFactory)`, and
//! [`store_suite!`](crate::store_suite) which runs all of them on one backend. A factory
//! makes a fresh, empty store, embedding with the index it is given.

#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use palgraph::store::{IndexConfig, NamespaceQuery, PutOptions, SearchQuery, Store, StoreError};

pub use crate::store_search_cases::{
    search_by_meaning_ranks_by_cosine_within_the_prefix, text_queries_rank_by_shared_words,
    ConceptEmbedder,
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
                let factory: $crate::store_cases::StoreFactory =
                    std::sync::Arc::new(|index| Box::pin($factory(index)));
                $crate::store_cases::$case(factory).await;
            }
        )*
    };
}

pub(crate) fn ns(labels: &[&str]) -> Vec<String> {
    labels.iter().map(|l| l.to_string()).collect()
}

pub(crate) fn obj(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

pub(crate) async fn plain(factory: &StoreFactory) -> Arc<dyn Store> {
    factory(None).await
}

pub(crate) async fn keys(store: &dyn Store, q: SearchQuery) -> Vec<String> {
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
    use palgraph::store::Scoped;
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
