//! The document stores (memory, SQLite, Postgres) pass one set of cases: owner scoping,
//! ordering, validation, deletion, and seeding the samples once; and for document sets:
//! owner scoping, names, adding and removing documents, deleting documents and sets, and
//! concurrent changes to one set.

#![allow(clippy::unwrap_used)]

use palgraph_nodes::documents::samples::samples;
use palgraph_nodes::documents::{Limits, Listed, Removal, MAX_SET_DOCUMENTS};
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

    // The library without its texts: ids, titles, creation times and sizes.
    assert_eq!(
        store.catalog("alice").await.unwrap(),
        [Listed::of(&a), Listed::of(&b)]
    );
    assert!(store.catalog("carol").await.unwrap().is_empty());
    // Sizes in bytes: "ça" is 2 characters, 3 bytes.
    let c = store.create("erin", "Été", "ça").await.unwrap();
    assert_eq!(store.catalog("erin").await.unwrap()[0].size, 3);
    // Texts by id, the owner's only.
    let mut texts = store
        .contents(
            "alice",
            &[
                &b.id,
                &a.id,
                &bob.id,
                "0190a0e0-0000-7000-8000-000000000000",
            ],
        )
        .await
        .unwrap();
    texts.sort_by(|x, y| x.id.cmp(&y.id));
    assert_eq!(texts, [a.clone(), b.clone()]);
    assert_eq!(store.contents("erin", &[&c.id]).await.unwrap(), [c]);

    // Deletes are scoped too.
    assert!(!store.delete("bob", &a.id).await.unwrap());
    assert!(store.delete("alice", &a.id).await.unwrap());
    assert!(!store.delete("alice", &a.id).await.unwrap());
    assert_eq!(
        store.catalog("alice").await.unwrap(),
        [Listed::of(&b)],
        "a deleted document leaves the library"
    );
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

fn ids(docs: &[&palgraph_nodes::Document]) -> Vec<String> {
    docs.iter().map(|d| d.id.clone()).collect()
}

fn set_ids(set: &palgraph_nodes::DocumentSet) -> Vec<String> {
    set.documents.iter().map(|d| d.id.clone()).collect()
}

async fn set_conformance(store: &dyn DocumentStore) {
    let a = store.create("erin", "A", "one").await.unwrap();
    let b = store.create("erin", "B", "two").await.unwrap();
    let c = store.create("erin", "C", "three").await.unwrap();
    let frank = store.create("frank", "F", "frank's").await.unwrap();

    // Created with documents (listed oldest first, each once), names trimmed.
    let set = store
        .create_set("erin", "  Basel ", &ids(&[&c, &a, &c]))
        .await
        .unwrap();
    assert_eq!(set.name, "Basel");
    assert_eq!(set_ids(&set), ids(&[&a, &c]));
    assert_eq!(store.set("erin", &set.id).await.unwrap(), Some(set.clone()));
    let empty = store.create_set("erin", "Empty", &[]).await.unwrap();
    assert!(empty.documents.is_empty());
    let listed: Vec<String> = store
        .sets("erin")
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(listed, ["Basel", "Empty"], "oldest first");

    // Scoped by owner: frank neither sees erin's set nor changes it, nor adds his document.
    assert_eq!(store.set("frank", &set.id).await.unwrap(), None);
    assert!(store.sets("frank").await.unwrap().is_empty());
    assert_eq!(
        store
            .add_to_set("frank", &set.id, &ids(&[&frank]))
            .await
            .unwrap(),
        None
    );
    assert_eq!(store.rename_set("frank", &set.id, "x").await.unwrap(), None);
    assert_eq!(
        store
            .remove_from_set("frank", &set.id, &a.id)
            .await
            .unwrap(),
        Removal::NoSuchSet
    );
    assert!(!store.delete_set("frank", &set.id).await.unwrap());
    let err = store
        .add_to_set("erin", &set.id, &ids(&[&b, &frank]))
        .await
        .unwrap_err();
    assert!(
        matches!(err, DocumentError::Invalid(ref m) if m.contains(&frank.id)),
        "{err}"
    );
    let err = store
        .create_set("erin", "Mixed", &ids(&[&frank]))
        .await
        .unwrap_err();
    assert!(matches!(err, DocumentError::Invalid(_)), "{err}");
    assert_eq!(
        set_ids(&store.set("erin", &set.id).await.unwrap().unwrap()),
        ids(&[&a, &c])
    );
    assert_eq!(store.sets("erin").await.unwrap().len(), 2, "nothing stored");

    // Names: checked, and unique per owner (another owner may use it).
    for bad in ["", "   ", &"x".repeat(101)] {
        let err = store.create_set("erin", bad, &[]).await.unwrap_err();
        assert!(matches!(err, DocumentError::Invalid(_)), "{err}");
    }
    let err = store.create_set("erin", "Basel", &[]).await.unwrap_err();
    assert!(matches!(err, DocumentError::Conflict(_)), "{err}");
    let err = store
        .rename_set("erin", &empty.id, " Basel")
        .await
        .unwrap_err();
    assert!(matches!(err, DocumentError::Conflict(_)), "{err}");
    store.create_set("frank", "Basel", &[]).await.unwrap();
    let renamed = store
        .rename_set("erin", &empty.id, "Later")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(renamed.name, "Later");
    assert_eq!(
        store
            .rename_set("erin", &set.id, "Basel")
            .await
            .unwrap()
            .unwrap()
            .name,
        "Basel",
        "its own name again"
    );

    // Adding: what is already there stays once; removing one.
    let added = store
        .add_to_set("erin", &set.id, &ids(&[&b, &a]))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(set_ids(&added), ids(&[&a, &b, &c]));
    assert!(added.updated_at_ms >= set.updated_at_ms);
    let err = store.add_to_set("erin", &set.id, &[]).await.unwrap_err();
    assert!(matches!(err, DocumentError::Invalid(_)), "{err}");
    assert_eq!(
        store.remove_from_set("erin", &set.id, &b.id).await.unwrap(),
        Removal::Removed
    );
    assert_eq!(
        store.remove_from_set("erin", &set.id, &b.id).await.unwrap(),
        Removal::NotInSet
    );
    assert_eq!(
        store
            .add_to_set("erin", "no-such-set", &ids(&[&a]))
            .await
            .unwrap(),
        None
    );

    // Deleting a document takes it out of its sets; deleting a set keeps its documents.
    assert!(store.delete("erin", &a.id).await.unwrap());
    assert_eq!(
        set_ids(&store.set("erin", &set.id).await.unwrap().unwrap()),
        ids(&[&c])
    );
    assert!(store.delete_set("erin", &set.id).await.unwrap());
    assert!(!store.delete_set("erin", &set.id).await.unwrap());
    assert_eq!(store.set("erin", &set.id).await.unwrap(), None);
    assert!(store.get("erin", &c.id).await.unwrap().is_some());
    assert_eq!(store.sets("erin").await.unwrap().len(), 1);

    // The limit on a set's documents.
    let many: Vec<String> = (0..=MAX_SET_DOCUMENTS).map(|i| format!("d{i}")).collect();
    let err = store.create_set("erin", "Big", &many).await.unwrap_err();
    assert!(matches!(err, DocumentError::Invalid(_)), "{err}");
}

/// Two adds to one set at once both land; a set deleted while documents are added to it
/// and documents deleted while added leave no membership behind.
async fn concurrent_set_changes(store: std::sync::Arc<dyn DocumentStore>) {
    let mut docs = Vec::new();
    for i in 0..8 {
        docs.push(
            store
                .create("gina", &format!("G{i}"), "x")
                .await
                .unwrap()
                .id,
        );
    }
    let set = store.create_set("gina", "Race", &[]).await.unwrap();
    let adds: Vec<_> = docs
        .iter()
        .map(|d| {
            let (store, set, d) = (store.clone(), set.id.clone(), d.clone());
            tokio::spawn(async move { store.add_to_set("gina", &set, &[d]).await })
        })
        .collect();
    for a in adds {
        assert!(a.await.unwrap().unwrap().is_some());
    }
    let got = store.set("gina", &set.id).await.unwrap().unwrap();
    assert_eq!(set_ids(&got), docs, "every concurrent add landed");

    // Delete documents and the set while adding: whatever order they run in, no set holds
    // a deleted document and nothing fails but with "no such set" or a refused document.
    let other = store.create_set("gina", "Other", &[]).await.unwrap();
    let mut tasks = Vec::new();
    for d in docs.iter().take(4) {
        let (s, id, doc) = (store.clone(), other.id.clone(), d.clone());
        tasks.push(tokio::spawn(async move {
            match s.add_to_set("gina", &id, &[doc]).await {
                Ok(_) | Err(DocumentError::Invalid(_)) => {}
                Err(e) => panic!("{e}"),
            }
        }));
        let (s, d) = (store.clone(), d.clone());
        tasks.push(tokio::spawn(async move {
            s.delete("gina", &d).await.unwrap();
        }));
    }
    let (s, id) = (store.clone(), set.id.clone());
    tasks.push(tokio::spawn(async move {
        assert!(s.delete_set("gina", &id).await.unwrap());
    }));
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(store.set("gina", &set.id).await.unwrap(), None);
    let other = store.set("gina", &other.id).await.unwrap().unwrap();
    assert!(other.documents.is_empty(), "{other:?}");
    let kept = store.create_set("gina", "Kept", &docs[4..]).await.unwrap();
    assert_eq!(set_ids(&kept), docs[4..]);
}

/// Memberships whose document or set is gone.
const DANGLING: &str = "SELECT COUNT(*) FROM document_set_members m \
     WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.id = m.document_id) \
     OR NOT EXISTS (SELECT 1 FROM document_sets s WHERE s.id = m.set_id)";

/// What the stores made with [`limits`] refuse: a text over 16 bytes, a third document of
/// one owner (also when several are stored at once); each refusal stores nothing.
async fn limits_conformance(store: std::sync::Arc<dyn DocumentStore>) {
    assert_eq!(store.limits(), limits());
    let big = store.create("lim", "Big", &"x".repeat(17)).await;
    assert!(matches!(big, Err(DocumentError::TooLarge(_))), "{big:?}");
    assert!(store.catalog("lim").await.unwrap().is_empty());
    // At once: only two of five get in.
    let tries = (0..5).map(|i| {
        let store = store.clone();
        tokio::spawn(async move {
            store
                .create("lim", &format!("D{i}"), "sixteen bytes ok")
                .await
        })
    });
    let mut stored = 0;
    for t in tries {
        match t.await.unwrap() {
            Ok(_) => stored += 1,
            Err(DocumentError::TooMany(m)) => assert!(m.contains("2 documents"), "{m}"),
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(stored, 2);
    assert_eq!(store.catalog("lim").await.unwrap().len(), 2);
    // Another owner has places of their own.
    assert!(store.create("other", "D", "text").await.is_ok());
}

fn limits() -> Limits {
    Limits {
        max_bytes: 16,
        max_documents: 2,
    }
}

#[tokio::test]
async fn memory_store_conforms() {
    conformance(&MemoryDocumentStore::new()).await;
    set_conformance(&MemoryDocumentStore::new()).await;
    concurrent_set_changes(std::sync::Arc::new(MemoryDocumentStore::new())).await;
    limits_conformance(std::sync::Arc::new(
        MemoryDocumentStore::new().with_limits(limits()),
    ))
    .await;
}

#[tokio::test]
async fn sqlite_store_conforms() {
    let path = palgraph::testkit::backends::temp_db_path();
    let pool = palgraph::db::open_sqlite(&path).await.unwrap();
    let store = SqliteDocumentStore::open(pool.clone()).await.unwrap();
    conformance(&store).await;
    set_conformance(&store).await;
    concurrent_set_changes(std::sync::Arc::new(store)).await;
    let (dangling,): (i64,) = sqlx::query_as(DANGLING).fetch_one(&pool).await.unwrap();
    assert_eq!(dangling, 0, "no membership outlives its document or set");
    limits_conformance(std::sync::Arc::new(
        SqliteDocumentStore::new(pool.clone()).with_limits(limits()),
    ))
    .await;
    pool.close().await;
    palgraph::testkit::backends::remove_sqlite_files(&path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_conforms() {
    let schema = palgraph::testkit::backends::PgSchema::create().await;
    let pool = schema.pool(4).await;
    let store = PostgresDocumentStore::open(pool.clone()).await.unwrap();
    conformance(&store).await;
    set_conformance(&store).await;
    concurrent_set_changes(std::sync::Arc::new(store)).await;
    let (dangling,): (i64,) = sqlx::query_as(DANGLING).fetch_one(&pool).await.unwrap();
    assert_eq!(dangling, 0, "no membership outlives its document or set");
    limits_conformance(std::sync::Arc::new(
        PostgresDocumentStore::new(pool.clone()).with_limits(limits()),
    ))
    .await;
    pool.close().await;
}

/// A document as the schema before `document_texts` held it (text in `documents`).
fn old_document(owner: &str, content: &str) -> palgraph_nodes::Document {
    palgraph_nodes::Document {
        id: uuid::Uuid::now_v7().to_string(),
        owner: owner.to_string(),
        title: "Old".to_string(),
        content: content.to_string(),
        created_at_ms: 1_700_000_000_000,
    }
}

const OLD_INSERT: &str =
    "INSERT INTO documents (id, owner, title, content, created_at_ms) VALUES ($1, $2, $3, $4, $5)";

#[tokio::test]
async fn documents_from_before_scoped_migrations_survive_the_upgrade() {
    use palgraph::db::migrate::Applied;
    use palgraph::testkit::unscoped;
    use palgraph_nodes::documents::MIGRATIONS;

    // The texts move to `document_texts` (SQLite 3, Postgres 5); "été" is 3 characters, 5
    // bytes.
    let content = "kept été";
    let adopted = Applied {
        ran: vec![2, 3],
        adopted: vec![1],
    };
    let path = palgraph::testkit::backends::temp_db_path();
    let pool = unscoped::sqlite_pool(&path).await.unwrap();
    unscoped::migrate_sqlite(&pool, 5).await.unwrap();
    let doc = old_document("alice", content);
    sqlx::query(OLD_INSERT)
        .bind(&doc.id)
        .bind(&doc.owner)
        .bind(&doc.title)
        .bind(&doc.content)
        .bind(doc.created_at_ms)
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(
        MIGRATIONS.apply_sqlite(&pool).await.unwrap(),
        adopted,
        "unscoped 2 is the documents' 1; the sets' 2 is new"
    );
    let store = SqliteDocumentStore::open(pool.clone()).await.unwrap();
    assert_eq!(
        store.get("alice", &doc.id).await.unwrap(),
        Some(doc.clone())
    );
    assert_eq!(store.catalog("alice").await.unwrap(), [Listed::of(&doc)]);
    pool.close().await;
    palgraph::testkit::backends::remove_sqlite_files(&path);

    let schema = palgraph::testkit::backends::PgSchema::create().await;
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .connect_with(schema.options())
        .await
        .unwrap();
    unscoped::migrate_postgres(&pool, 5).await.unwrap();
    let doc = old_document("bob", content);
    sqlx::query(OLD_INSERT)
        .bind(&doc.id)
        .bind(&doc.owner)
        .bind(&doc.title)
        .bind(&doc.content)
        .bind(doc.created_at_ms)
        .execute(&pool)
        .await
        .unwrap();
    // On Postgres the texts' lz4 compression (3) and the change trigger (4) are new too.
    let adopted_pg = Applied {
        ran: vec![2, 3, 4, 5],
        adopted: vec![1],
    };
    assert_eq!(MIGRATIONS.apply_postgres(&pool).await.unwrap(), adopted_pg);
    let store = PostgresDocumentStore::open(pool.clone()).await.unwrap();
    assert_eq!(store.get("bob", &doc.id).await.unwrap(), Some(doc.clone()));
    assert_eq!(store.catalog("bob").await.unwrap(), [Listed::of(&doc)]);
    pool.close().await;
}
