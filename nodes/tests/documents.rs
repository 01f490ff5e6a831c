//! The document stores (memory, SQLite, Postgres) pass one set of cases: owner scoping,
//! ordering, validation, deletion, and seeding the samples once.

#![allow(clippy::unwrap_used)]

use palgraph_nodes::documents::samples::samples;
use palgraph_nodes::{
    seed_samples, DocumentError, DocumentStore, MemoryDocumentStore, PostgresDocumentStore,
    SqliteDocumentStore,
};

async fn conformance(store: &dyn DocumentStore) {
    let a = store.create("alice", "First", "one").await.unwrap();
    let b = store
        .create("alice", "  Second ", "two\nlines")
        .await
        .unwrap();
    let bob = store.create("bob", "Bob's", "private").await.unwrap();
    assert_eq!(b.title, "Second");
    assert_ne!(a.id, b.id);

    // Reads are scoped by owner.
    assert_eq!(store.get("alice", &a.id).await.unwrap(), Some(a.clone()));
    assert_eq!(store.get("alice", &bob.id).await.unwrap(), None);
    assert_eq!(store.get("bob", &a.id).await.unwrap(), None);
    let listed = store.list("alice").await.unwrap();
    assert_eq!(listed, [a.clone(), b.clone()], "oldest first, alice's only");
    let titles: Vec<String> = store
        .titles("alice")
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.title)
        .collect();
    assert_eq!(titles, ["First", "Second"]);
    assert!(store.list("carol").await.unwrap().is_empty());

    // Deletes are scoped too.
    assert!(!store.delete("bob", &a.id).await.unwrap());
    assert!(store.delete("alice", &a.id).await.unwrap());
    assert!(!store.delete("alice", &a.id).await.unwrap());
    assert_eq!(store.list("alice").await.unwrap(), [b]);
    assert_eq!(store.list("bob").await.unwrap(), [bob]);

    // Bad input is refused and nothing is stored.
    for (owner, title, content) in [("", "t", "c"), ("alice", "", "c"), ("alice", "t", "  ")] {
        let err = store.create(owner, title, content).await.unwrap_err();
        assert!(matches!(err, DocumentError::Invalid(_)), "{err}");
    }
    assert_eq!(store.list("alice").await.unwrap().len(), 1);

    // Samples are seeded once, for a user with no documents.
    assert_eq!(seed_samples(store, "dave").await.unwrap(), samples().len());
    assert_eq!(seed_samples(store, "dave").await.unwrap(), 0);
    assert_eq!(
        seed_samples(store, "alice").await.unwrap(),
        0,
        "alice has documents"
    );
    let dave: Vec<String> = store
        .titles("dave")
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.title)
        .collect();
    assert_eq!(dave.len(), samples().len());
    assert!(dave.contains(&"Data Retention Policy 2024".to_string()));
}

#[tokio::test]
async fn memory_store_conforms() {
    conformance(&MemoryDocumentStore::new()).await;
}

#[tokio::test]
async fn sqlite_store_conforms() {
    let path = palgraph::testkit::backends::temp_db_path();
    let pool = palgraph::db::open_sqlite(&path).await.unwrap();
    conformance(&SqliteDocumentStore::open(pool.clone()).await.unwrap()).await;
    pool.close().await;
    palgraph::testkit::backends::remove_sqlite_files(&path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_conforms() {
    let schema = palgraph::testkit::backends::PgSchema::create().await;
    let pool = schema.pool(2).await;
    conformance(&PostgresDocumentStore::open(pool.clone()).await.unwrap()).await;
    pool.close().await;
}

#[tokio::test]
async fn documents_from_before_scoped_migrations_survive_the_upgrade() {
    use palgraph::db::migrate::Applied;
    use palgraph::testkit::unscoped;
    use palgraph_nodes::documents::MIGRATIONS;

    let adopted = Applied {
        ran: vec![],
        adopted: vec![1],
    };
    let path = palgraph::testkit::backends::temp_db_path();
    let pool = unscoped::sqlite_pool(&path).await.unwrap();
    unscoped::migrate_sqlite(&pool, 5).await.unwrap();
    let doc = SqliteDocumentStore::new(pool.clone())
        .create("alice", "Old", "kept")
        .await
        .unwrap();
    assert_eq!(
        MIGRATIONS.apply_sqlite(&pool).await.unwrap(),
        adopted,
        "unscoped 2 is the documents' 1"
    );
    let store = SqliteDocumentStore::open(pool.clone()).await.unwrap();
    assert_eq!(store.get("alice", &doc.id).await.unwrap(), Some(doc));
    pool.close().await;
    palgraph::testkit::backends::remove_sqlite_files(&path);

    let schema = palgraph::testkit::backends::PgSchema::create().await;
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .connect_with(schema.options())
        .await
        .unwrap();
    unscoped::migrate_postgres(&pool, 5).await.unwrap();
    let doc = PostgresDocumentStore::new(pool.clone())
        .create("bob", "Old", "kept")
        .await
        .unwrap();
    assert_eq!(MIGRATIONS.apply_postgres(&pool).await.unwrap(), adopted);
    let store = PostgresDocumentStore::open(pool.clone()).await.unwrap();
    assert_eq!(store.get("bob", &doc.id).await.unwrap(), Some(doc));
    pool.close().await;
}
