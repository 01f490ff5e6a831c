//! The long-term store's conformance suite on its three backends.

mod memory {
    palgraph_conformance::store_suite!(palgraph::testkit::backends::memory_store);
}

mod sqlite {
    palgraph_conformance::store_suite!(palgraph::testkit::backends::sqlite_store);
}

mod postgres {
    palgraph_conformance::store_suite!(palgraph::testkit::backends::postgres_store);
}

/// Nodes reach the run's store with `ctx.store()`: what one thread remembers, another reads;
/// a run's store replaces the graph's; a run without one sees none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_reach_the_runs_store_across_threads() {
    use std::sync::Arc;

    use palgraph::store::{MemoryStore, PutOptions, Scoped, SearchQuery, Store};
    use palgraph::*;

    #[derive(Clone, Default, Debug, serde::Serialize, serde::Deserialize, State)]
    struct S {
        said: String,
        #[state(transient)]
        recalled: Vec<String>,
    }

    async fn remember(s: Arc<S>, ctx: NodeContext) -> Result<SUpdate, NodeError> {
        let Some(store) = ctx.store() else {
            return Ok(SUpdate::default().recalled(vec!["<no store>".into()]));
        };
        let ns = vec!["memories".to_string()];
        if let Some(fact) = s.said.strip_prefix("remember ") {
            store
                .put(
                    &ns,
                    fact,
                    serde_json::json!({"text": fact}),
                    PutOptions::default(),
                )
                .await
                .map_err(|e| NodeError::fatal(e.to_string()))?;
        }
        let found = store
            .search(&SearchQuery::new(ns))
            .await
            .map_err(|e| NodeError::fatal(e.to_string()))?;
        Ok(SUpdate::default().recalled(found.into_iter().map(|h| h.item.key).collect()))
    }

    let mut g = StateGraph::<S>::new();
    g.add_node("remember", remember);
    g.add_edge(START, "remember");
    g.add_edge("remember", END);
    let shared: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let graph = g.compile().unwrap().with_store(shared.clone());
    let say = |t: &str| RunInput::Turn(SUpdate::default().said(t.to_string()));

    let out = graph
        .invoke(RunConfig::new("t1"), say("remember tea"))
        .await
        .unwrap();
    assert_eq!(out.state.recalled, ["tea"]);
    let out = graph
        .invoke(RunConfig::new("t2"), say("what do you know?"))
        .await
        .unwrap();
    assert_eq!(out.state.recalled, ["tea"], "another thread reads it");

    // A run given a user's view sees only that user's memories.
    let ada: Arc<dyn Store> = Arc::new(Scoped::new(shared.clone(), "ada").unwrap());
    let out = graph
        .invoke(
            RunConfig::new("t3").store(ada.clone()),
            say("remember coffee"),
        )
        .await
        .unwrap();
    assert_eq!(out.state.recalled, ["coffee"]);
    assert_eq!(
        shared
            .get(&["ada".into(), "memories".into()], "coffee", false)
            .await
            .unwrap()
            .map(|i| i.value),
        Some(serde_json::json!({"text": "coffee"}))
    );
    let bare = g_without_store();
    let out = bare.invoke(RunConfig::new("t4"), say("hi")).await.unwrap();
    assert_eq!(out.state.recalled, ["<no store>"]);

    fn g_without_store() -> CompiledGraph<S> {
        let mut g = StateGraph::<S>::new();
        g.add_node("remember", remember);
        g.add_edge(START, "remember");
        g.add_edge("remember", END);
        g.compile().unwrap()
    }
}

/// pgvector is detected, not assumed: this machine's Postgres has no such extension, so the
/// store ranks with plain SQL (the suite's `search_by_meaning_*` case runs that path).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_detects_whether_pgvector_is_installed() {
    let schema = palgraph::testkit::backends::PgSchema::create().await;
    let pool = schema.pool(2).await;
    let installed: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')")
            .fetch_one(&pool)
            .await
            .unwrap();
    let store = palgraph::store::PostgresStore::new(pool);
    assert_eq!(store.uses_pgvector().await.unwrap(), installed);
}
