//! [`SqliteDocumentStore`]: documents in palgraph's SQLite database.

use async_trait::async_trait;
use sqlx::SqlitePool;

use super::{new_document, Document, DocumentError, DocumentStore};
use crate::state::DocRef;

/// Documents in the `documents` table of a migrated SQLite database
/// (see `palgraph::db::open_sqlite`).
#[derive(Clone, Debug)]
pub struct SqliteDocumentStore {
    pool: SqlitePool,
}

impl SqliteDocumentStore {
    /// Uses a pool whose database is migrated.
    pub fn new(pool: SqlitePool) -> Self {
        SqliteDocumentStore { pool }
    }
}

type Row = (String, String, String, String, i64);

fn document((id, owner, title, content, created_at_ms): Row) -> Document {
    Document {
        id,
        owner,
        title,
        content,
        created_at_ms,
    }
}

#[async_trait]
impl DocumentStore for SqliteDocumentStore {
    async fn create(
        &self,
        owner: &str,
        title: &str,
        content: &str,
    ) -> Result<Document, DocumentError> {
        let doc = new_document(owner, title, content)?;
        sqlx::query(
            "INSERT INTO documents (id, owner, title, content, created_at_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .bind(&doc.id)
        .bind(&doc.owner)
        .bind(&doc.title)
        .bind(&doc.content)
        .bind(doc.created_at_ms)
        .execute(&self.pool)
        .await?;
        Ok(doc)
    }

    async fn list(&self, owner: &str) -> Result<Vec<Document>, DocumentError> {
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT id, owner, title, content, created_at_ms FROM documents
             WHERE owner = ?1 ORDER BY created_at_ms, id",
        )
        .bind(owner)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(document).collect())
    }

    async fn titles(&self, owner: &str) -> Result<Vec<DocRef>, DocumentError> {
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT id, title FROM documents WHERE owner = ?1 ORDER BY created_at_ms, id",
        )
        .bind(owner)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(id, title)| DocRef { id, title })
            .collect())
    }

    async fn get(&self, owner: &str, id: &str) -> Result<Option<Document>, DocumentError> {
        let row: Option<Row> = sqlx::query_as(
            "SELECT id, owner, title, content, created_at_ms FROM documents
             WHERE owner = ?1 AND id = ?2",
        )
        .bind(owner)
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(document))
    }

    async fn delete(&self, owner: &str, id: &str) -> Result<bool, DocumentError> {
        let done = sqlx::query("DELETE FROM documents WHERE owner = ?1 AND id = ?2")
            .bind(owner)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }
}
