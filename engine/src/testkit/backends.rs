//! Fresh, isolated checkpointers for tests: a temporary SQLite file, or a new Postgres
//! schema in the test database (`PALGRAPH_TEST_DATABASE_URL`, else `DATABASE_URL`, else
//! `postgres://postgres@127.0.0.1:5432/postgres`). Each is removed when the checkpointer is
//! dropped, so tests run in parallel and leave nothing behind.

#![allow(missing_docs)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::wrapper::{Around, Wrapped};
use crate::checkpoint::Checkpointer;

type Cleanup = Box<dyn FnOnce() + Send>;

/// A checkpointer that runs a cleanup when dropped (before the one it wraps goes).
pub type WithCleanup = Wrapped<OnDrop>;

/// Runs a cleanup when dropped.
pub struct OnDrop(Mutex<Option<Cleanup>>);

impl Around for OnDrop {}

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(f) = self.0.lock().ok().and_then(|mut c| c.take()) {
            f();
        }
    }
}

impl WithCleanup {
    /// Wraps `inner`; `cleanup` runs on drop.
    pub fn new(inner: Arc<dyn Checkpointer>, cleanup: impl FnOnce() + Send + 'static) -> Self {
        Wrapped::around(inner, OnDrop(Mutex::new(Some(Box::new(cleanup)))))
    }
}

/// A path for a temporary SQLite file.
pub fn temp_db_path() -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "palgraph-test-{}.db",
        uuid::Uuid::new_v4().simple()
    ))
}

/// Removes a SQLite file and its WAL companions.
pub fn remove_sqlite_files(path: &std::path::Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
}

/// A SQLite checkpointer on a fresh temporary file.
#[cfg(feature = "sqlite")]
pub async fn sqlite() -> Arc<dyn Checkpointer> {
    let path = temp_db_path();
    let cp = crate::checkpoint::SqliteCheckpointer::open(&path)
        .await
        .expect("open a temporary SQLite database");
    let pool = cp.pool().clone();
    Arc::new(WithCleanup::new(Arc::new(cp), move || {
        drop(pool);
        remove_sqlite_files(&path);
    }))
}

/// The Postgres URL tests use.
pub fn test_database_url() -> String {
    std::env::var("PALGRAPH_TEST_DATABASE_URL")
        .or_else(|_| std::env::var("DATABASE_URL"))
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// A fresh Postgres schema, dropped when the guard is dropped.
#[cfg(feature = "postgres")]
pub struct PgSchema {
    /// The schema's name.
    pub name: String,
    /// The server URL.
    pub url: String,
}

#[cfg(feature = "postgres")]
impl PgSchema {
    /// Creates a schema (and drops schemas older than two hours left by killed test runs).
    pub async fn create() -> Self {
        use sqlx::Connection;
        let url = test_database_url();
        let secs = crate::checkpoint::now_ms() / 1000;
        let name = format!(
            "pgt_{secs}_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..10]
        );
        let mut conn = sqlx::PgConnection::connect(&url).await.unwrap_or_else(|e| {
            panic!(
                "cannot reach Postgres at {url} ({e}); start it or set PALGRAPH_TEST_DATABASE_URL"
            )
        });
        let stale: Vec<String> = sqlx::query_scalar(
            "SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'pgt\\_%'",
        )
        .fetch_all(&mut conn)
        .await
        .unwrap_or_default();
        for s in stale {
            let created: i64 = s
                .split('_')
                .nth(1)
                .and_then(|x| x.parse().ok())
                .unwrap_or(i64::MAX);
            if created < secs - 7200 {
                let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                    "DROP SCHEMA IF EXISTS \"{s}\" CASCADE"
                )))
                .execute(&mut conn)
                .await;
            }
        }
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA \"{name}\"")))
            .execute(&mut conn)
            .await
            .expect("create a test schema");
        PgSchema { name, url }
    }

    /// Connect options whose search path is this schema.
    pub fn options(&self) -> sqlx::postgres::PgConnectOptions {
        let opts: sqlx::postgres::PgConnectOptions =
            self.url.parse().expect("a valid Postgres URL");
        opts.options([("search_path", self.name.as_str())])
            .application_name(&self.name)
    }

    /// The URL of this schema (search path set in the URL's `options`).
    pub fn schema_url(&self) -> String {
        let sep = if self.url.contains('?') { '&' } else { '?' };
        format!("{}{sep}options=-csearch_path%3D{}", self.url, self.name)
    }

    /// A migrated pool on this schema.
    pub async fn pool(&self, max_connections: u32) -> sqlx::PgPool {
        self.pool_with(max_connections, self.options()).await
    }

    /// A migrated pool opened with `options` (this schema's [`PgSchema::options`] with
    /// settings of the caller's added).
    pub async fn pool_with(
        &self,
        max_connections: u32,
        options: sqlx::postgres::PgConnectOptions,
    ) -> sqlx::PgPool {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(max_connections)
            .test_before_acquire(false)
            .connect_with(options)
            .await
            .expect("connect to the test schema");
        crate::db::MIGRATIONS
            .apply_postgres(&pool)
            .await
            .expect("migrate the test schema");
        pool
    }
}

#[cfg(feature = "postgres")]
impl Drop for PgSchema {
    fn drop(&mut self) {
        let (url, name) = (self.url.clone(), self.name.clone());
        // Drop runs outside any async context we may block, so use a private runtime.
        let _ = std::thread::spawn(move || {
            use sqlx::Connection;
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                if let Ok(mut conn) = sqlx::PgConnection::connect(&url).await {
                    // Connections of this schema's pools may still be open (a pool outlives
                    // its test until the runtime stops): end them so the drop cannot wait.
                    let _ = sqlx::query(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                         WHERE application_name = $1 AND pid <> pg_backend_pid()",
                    )
                    .bind(&name)
                    .execute(&mut conn)
                    .await;
                    let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                        "DROP SCHEMA IF EXISTS \"{name}\" CASCADE"
                    )))
                    .execute(&mut conn)
                    .await;
                }
            });
        })
        .join();
    }
}

/// A Postgres checkpointer on a fresh schema.
#[cfg(feature = "postgres")]
pub async fn postgres() -> Arc<dyn Checkpointer> {
    let schema = PgSchema::create().await;
    let pool = schema.pool(8).await;
    let cp = crate::checkpoint::PostgresCheckpointer::new(pool.clone());
    Arc::new(WithCleanup::new(Arc::new(cp), move || {
        drop(pool);
        drop(schema);
    }))
}

/// A store that keeps what it needs alive (a temporary file, a schema) until dropped.
struct StoreWithCleanup {
    inner: Arc<dyn crate::store::Store>,
    _guard: Box<dyn std::any::Any + Send + Sync>,
}

#[async_trait]
impl crate::store::Store for StoreWithCleanup {
    async fn put(
        &self,
        n: &[String],
        k: &str,
        v: serde_json::Value,
        o: crate::store::PutOptions,
    ) -> Result<(), crate::store::StoreError> {
        self.inner.put(n, k, v, o).await
    }
    async fn get(
        &self,
        n: &[String],
        k: &str,
        r: bool,
    ) -> Result<Option<crate::store::Item>, crate::store::StoreError> {
        self.inner.get(n, k, r).await
    }
    async fn delete(&self, n: &[String], k: &str) -> Result<(), crate::store::StoreError> {
        self.inner.delete(n, k).await
    }
    async fn search(
        &self,
        q: &crate::store::SearchQuery,
    ) -> Result<Vec<crate::store::SearchItem>, crate::store::StoreError> {
        self.inner.search(q).await
    }
    async fn list_namespaces(
        &self,
        q: &crate::store::NamespaceQuery,
    ) -> Result<Vec<Vec<String>>, crate::store::StoreError> {
        self.inner.list_namespaces(q).await
    }
    async fn sweep_expired(&self) -> Result<u64, crate::store::StoreError> {
        self.inner.sweep_expired().await
    }
}

/// An in-memory store.
pub async fn memory_store(
    index: Option<crate::store::IndexConfig>,
) -> Arc<dyn crate::store::Store> {
    let store = crate::store::MemoryStore::new();
    Arc::new(match index {
        Some(i) => store.with_index(i),
        None => store,
    })
}

/// A SQLite store on a fresh temporary file.
#[cfg(feature = "sqlite")]
pub async fn sqlite_store(
    index: Option<crate::store::IndexConfig>,
) -> Arc<dyn crate::store::Store> {
    struct Files(std::path::PathBuf);
    impl Drop for Files {
        fn drop(&mut self) {
            remove_sqlite_files(&self.0);
        }
    }
    let path = temp_db_path();
    let pool = crate::db::open_sqlite(&path)
        .await
        .expect("open a temporary SQLite database");
    let store = crate::store::SqliteStore::new(pool);
    let store = match index {
        Some(i) => store.with_index(i),
        None => store,
    };
    Arc::new(StoreWithCleanup {
        inner: Arc::new(store),
        _guard: Box::new(Files(path)),
    })
}

/// A Postgres store on a fresh schema.
#[cfg(feature = "postgres")]
pub async fn postgres_store(
    index: Option<crate::store::IndexConfig>,
) -> Arc<dyn crate::store::Store> {
    let schema = PgSchema::create().await;
    let pool = schema.pool(8).await;
    let store = crate::store::PostgresStore::new(pool);
    let store = match index {
        Some(i) => store.with_index(i),
        None => store,
    };
    Arc::new(StoreWithCleanup {
        inner: Arc::new(store),
        _guard: Box::new(schema),
    })
}
