//! [`SqlDocumentStore`]: documents in the `documents` table of a SQLite or Postgres database
//! (id, owner, title, size, creation time) and their texts in `document_texts`, by id, so
//! that listing a library reads no text (on SQLite a row holding a large text costs its
//! whole text to any lookup that passes it). Written once: the statements are built with
//! sqlx's `QueryBuilder`, whose `push_bind` writes each backend's placeholders (`?` for
//! SQLite, `$1, $2, ...` for Postgres), and rows are read through [`sqlx::FromRow`].

use std::fmt;

use async_trait::async_trait;
use palgraph::db::migrate::MigrateError;
use palgraph::db::reuse::Reused;
use sqlx::{
    ColumnIndex, Database, Decode, Encode, Executor, FromRow, IntoArguments, Pool, QueryBuilder,
    Row, Type,
};

use super::changes::Feed;
use super::sets::is_id;
use super::{
    new_document, too_many, Document, DocumentError, DocumentStore, LibraryChanges, Limits, Listed,
};
use crate::state::DocRef;

/// Documents in the `documents` and `document_texts` tables of a database migrated with
/// [`super::MIGRATIONS`] (and document sets in its `document_sets` tables, see
/// `sql_sets.rs`); on SQLite: [`SqliteDocumentStore`], on Postgres: [`PostgresDocumentStore`].
pub struct SqlDocumentStore<DB: Database> {
    pub(super) pool: Pool<DB>,
    /// A few connections for the library read every PalAssist turn makes, reused without
    /// sqlx's ping on every return to the pool.
    hot: std::sync::Arc<Reused<DB>>,
    /// What tells whether a library read before changed since (see
    /// [`SqlDocumentStore::with_change_feed`]); `None`: every turn reads its library.
    feed: Option<std::sync::Arc<Feed>>,
    limits: Limits,
}

/// Connections of [`SqlDocumentStore::hot`].
const HOT_CONNECTIONS: usize = 4;

/// Documents in a SQLite database.
pub type SqliteDocumentStore = SqlDocumentStore<sqlx::Sqlite>;

/// Documents in a Postgres database.
pub type PostgresDocumentStore = SqlDocumentStore<sqlx::Postgres>;

impl<DB: Database> SqlDocumentStore<DB> {
    /// Uses a pool whose database is migrated (see [`SqlDocumentStore::open`]).
    pub fn new(pool: Pool<DB>) -> Self {
        SqlDocumentStore {
            hot: std::sync::Arc::new(Reused::new(pool.clone(), HOT_CONNECTIONS)),
            pool,
            feed: None,
            limits: Limits::default(),
        }
    }

    /// The store with these limits on what one user may store.
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Moves the owner's stamp after a write that committed (the feed hears of it too, later).
    fn changed(&self, owner: &str) {
        if let Some(feed) = &self.feed {
            feed.counters().changed(owner);
        }
    }
}

impl SqlDocumentStore<sqlx::Sqlite> {
    /// Applies [`super::MIGRATIONS`] to the pool's database and uses it.
    ///
    /// # Errors
    /// When migrating refuses or fails.
    pub async fn open(pool: sqlx::SqlitePool) -> Result<Self, MigrateError> {
        super::MIGRATIONS.apply_sqlite(&pool).await?;
        Ok(Self::new(pool))
    }
}

impl SqlDocumentStore<sqlx::Postgres> {
    /// Applies [`super::MIGRATIONS`] to the pool's database and uses it.
    ///
    /// # Errors
    /// When migrating refuses or fails.
    pub async fn open(pool: sqlx::PgPool) -> Result<Self, MigrateError> {
        super::MIGRATIONS.apply_postgres(&pool).await?;
        Ok(Self::new(pool))
    }

    /// Tells whether a user's library changed since it was read ([`LibraryChanges`]), so a
    /// chat turn can use the library an earlier turn read instead of reading it again: the
    /// store listens on `palgraph_documents` (a trigger announces every change to the
    /// `documents` table, migration 4), on one connection of the pool held from the first
    /// library read on. A change made through this store shows at once; one made elsewhere
    /// (another replica, another client) from the moment its notification arrives, which
    /// Postgres sends as the change commits. While that connection is down every turn reads
    /// its library.
    #[must_use]
    pub fn with_change_feed(mut self) -> Self {
        let pool = self.pool.clone();
        self.feed = Some(std::sync::Arc::new(Feed::new(move |changes| {
            super::changes::watch_postgres(pool.clone(), changes);
        })));
        self
    }
}

impl<DB: Database> Clone for SqlDocumentStore<DB> {
    fn clone(&self) -> Self {
        SqlDocumentStore {
            pool: self.pool.clone(),
            hot: self.hot.clone(),
            feed: self.feed.clone(),
            limits: self.limits,
        }
    }
}

impl<DB: Database> fmt::Debug for SqlDocumentStore<DB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqlDocumentStore")
            .field("pool", &self.pool)
            .finish()
    }
}

/// The most texts one statement of [`DocumentStore::contents`] reads.
const TEXTS_PER_STATEMENT: usize = 500;

/// A document whole: its row and its text.
const COLUMNS: &str = "SELECT d.id AS id, d.owner AS owner, d.title AS title, \
     t.content AS content, d.created_at_ms AS created_at_ms \
     FROM documents d JOIN document_texts t ON t.id = d.id";

impl<'r, R> FromRow<'r, R> for Document
where
    R: Row,
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
{
    fn from_row(row: &'r R) -> Result<Self, sqlx::Error> {
        Ok(Document {
            id: row.try_get("id")?,
            owner: row.try_get("owner")?,
            title: row.try_get("title")?,
            content: row.try_get("content")?,
            created_at_ms: row.try_get("created_at_ms")?,
        })
    }
}

impl<'r, R> FromRow<'r, R> for DocRef
where
    R: Row,
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
{
    fn from_row(row: &'r R) -> Result<Self, sqlx::Error> {
        Ok(DocRef {
            id: row.try_get("id")?,
            title: row.try_get("title")?,
        })
    }
}

#[async_trait]
impl<DB> DocumentStore for SqlDocumentStore<DB>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'r> Document: FromRow<'r, DB::Row>,
    for<'r> DocRef: FromRow<'r, DB::Row>,
    for<'r> (String,): FromRow<'r, DB::Row>,
    for<'r> (i64,): FromRow<'r, DB::Row>,
    for<'r> (String, String, i64, i64): FromRow<'r, DB::Row>,
    for<'r> (String, String, String): FromRow<'r, DB::Row>,
    for<'r> (String, String, String, i64, i64): FromRow<'r, DB::Row>,
    for<'r> (String, String): FromRow<'r, DB::Row>,
{
    async fn create(
        &self,
        owner: &str,
        title: &str,
        content: &str,
    ) -> Result<Document, DocumentError> {
        let doc = new_document(owner, title, content, self.limits)?;
        crate::library::prepare(&doc).await?;
        // Stored only while the owner has fewer documents than the limit: one statement
        // (SQLite runs it under its write lock), on Postgres under a lock on the owner, so
        // that two uploads at once cannot both take the last place.
        let mut tx = self.pool.begin().await?;
        if DB::NAME == "PostgreSQL" {
            let mut q = QueryBuilder::<DB>::new("SELECT pg_advisory_xact_lock(hashtextextended(");
            q.push_bind(doc.owner.as_str()).push(", 0))");
            q.build().execute(&mut *tx).await?;
        }
        let size = i64::try_from(doc.content.len()).unwrap_or(i64::MAX);
        let mut q = QueryBuilder::<DB>::new(
            "INSERT INTO documents (id, owner, title, size, created_at_ms) SELECT ",
        );
        let mut values = q.separated(", ");
        values
            .push_bind(doc.id.as_str())
            .push_bind(doc.owner.as_str())
            .push_bind(doc.title.as_str())
            .push_bind(size)
            .push_bind(doc.created_at_ms);
        let max = i64::try_from(self.limits.max_documents).unwrap_or(i64::MAX);
        q.push(" WHERE (SELECT count(*) FROM documents WHERE owner = ")
            .push_bind(doc.owner.as_str())
            .push(") < ")
            .push_bind(max)
            .push(" RETURNING id");
        let stored: Option<(String,)> = q.build_query_as().fetch_optional(&mut *tx).await?;
        if stored.is_none() {
            return Err(too_many(self.limits.max_documents));
        }
        let mut q = QueryBuilder::<DB>::new("INSERT INTO document_texts (id, content) VALUES (");
        let mut values = q.separated(", ");
        values
            .push_bind(doc.id.as_str())
            .push_bind(doc.content.as_str());
        q.push(")");
        q.build().execute(&mut *tx).await?;
        tx.commit().await?;
        self.changed(owner);
        Ok(doc)
    }

    async fn list(&self, owner: &str) -> Result<Vec<Document>, DocumentError> {
        let mut q = QueryBuilder::<DB>::new(COLUMNS);
        q.push(" WHERE d.owner = ")
            .push_bind(owner)
            .push(" ORDER BY d.created_at_ms, d.id");
        Ok(q.build_query_as::<Document>().fetch_all(&self.pool).await?)
    }

    async fn titles(&self, owner: &str) -> Result<Vec<DocRef>, DocumentError> {
        let mut q = QueryBuilder::<DB>::new("SELECT id, title FROM documents WHERE owner = ");
        q.push_bind(owner).push(" ORDER BY created_at_ms, id");
        Ok(q.build_query_as::<DocRef>().fetch_all(&self.pool).await?)
    }

    async fn catalog(&self, owner: &str) -> Result<Vec<Listed>, DocumentError> {
        let mut q = QueryBuilder::<DB>::new(
            "SELECT id, title, created_at_ms, size FROM documents WHERE owner = ",
        );
        q.push_bind(owner).push(" ORDER BY created_at_ms, id");
        let mut conn = self.hot.take().await?;
        let rows: Vec<(String, String, i64, i64)> =
            q.build_query_as().fetch_all(&mut *conn).await?;
        conn.keep();
        Ok(rows
            .into_iter()
            .map(|(id, title, created_at_ms, size)| Listed {
                id,
                title,
                created_at_ms,
                size: usize::try_from(size).unwrap_or(usize::MAX),
            })
            .collect())
    }

    async fn contents(&self, owner: &str, ids: &[&str]) -> Result<Vec<Document>, DocumentError> {
        let mut out = Vec::with_capacity(ids.len());
        for ids in ids.chunks(TEXTS_PER_STATEMENT) {
            let mut q = QueryBuilder::<DB>::new(COLUMNS);
            q.push(" WHERE d.owner = ")
                .push_bind(owner)
                .push(" AND d.id IN (");
            let mut list = q.separated(", ");
            for id in ids {
                list.push_bind(*id);
            }
            q.push(")");
            out.extend(q.build_query_as::<Document>().fetch_all(&self.pool).await?);
        }
        Ok(out)
    }

    async fn get(&self, owner: &str, id: &str) -> Result<Option<Document>, DocumentError> {
        if !is_id(id) {
            return Ok(None);
        }
        let mut q = QueryBuilder::<DB>::new(COLUMNS);
        q.push(" WHERE d.owner = ")
            .push_bind(owner)
            .push(" AND d.id = ")
            .push_bind(id);
        Ok(q.build_query_as::<Document>()
            .fetch_optional(&self.pool)
            .await?)
    }

    async fn delete(&self, owner: &str, id: &str) -> Result<bool, DocumentError> {
        // The document, its text and its memberships go together (Postgres would cascade;
        // the SQLite pool does not enforce foreign keys).
        if !is_id(id) {
            return Ok(false);
        }
        let mut tx = self.pool.begin().await?;
        let mut q = QueryBuilder::<DB>::new("DELETE FROM documents WHERE owner = ");
        q.push_bind(owner)
            .push(" AND id = ")
            .push_bind(id)
            .push(" RETURNING id");
        let deleted: Option<(String,)> = q.build_query_as().fetch_optional(&mut *tx).await?;
        if deleted.is_none() {
            return Ok(false);
        }
        for table in [
            "document_texts WHERE id",
            "document_set_members WHERE document_id",
        ] {
            let mut q = QueryBuilder::<DB>::new(format!("DELETE FROM {table} = "));
            q.push_bind(id);
            q.build().execute(&mut *tx).await?;
        }
        tx.commit().await?;
        self.changed(owner);
        Ok(true)
    }

    fn library_changes(&self) -> Option<&LibraryChanges> {
        self.feed.as_ref()?.changes()
    }

    fn limits(&self) -> Limits {
        self.limits
    }
}
