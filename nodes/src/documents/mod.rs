//! The document store: each user's documents (id, owner, title, content), scoped by owner so
//! a user never sees another's. One trait, [`DocumentStore`], and three implementations:
//! [`MemoryDocumentStore`] (tests), and [`SqlDocumentStore`] over the `documents` and
//! `document_texts` tables of a SQLite ([`SqliteDocumentStore`]) or Postgres
//! ([`PostgresDocumentStore`]) database, written once for both; its tables are
//! [`MIGRATIONS`]. [`seed_samples`] gives a new user
//! the sample documents of [`samples`]; [`title_and_body`] reads an uploaded file's title
//! (its first `#` heading, else its file name) and body.
//!
//! Every store also keeps its users' **document sets** ([`DocumentSetStore`], a supertrait
//! of [`DocumentStore`]): named folders of a user's documents, which a chat request tags
//! (`tagged_set_ids`, or a set mention) to put every document of the set in scope.

pub mod changes;
mod memory;
pub mod samples;
mod sets;
mod sql;
mod sql_sets;
mod title;

use async_trait::async_trait;
use palgraph::db::migrate::{Migration, Migrator};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::state::DocRef;

pub use changes::{LibraryChanges, LibraryStamp};
pub use memory::MemoryDocumentStore;
pub use samples::seed_samples;
pub use sets::{
    is_id, DocumentSet, DocumentSetStore, Removal, MAX_SETS, MAX_SET_DOCUMENTS, MAX_SET_NAME_CHARS,
};
pub use sql::{PostgresDocumentStore, SqlDocumentStore, SqliteDocumentStore};
pub use title::title_and_body;

/// The `documents` and `document_texts` tables and the document sets' tables
/// (`migrations/documents/`), for SQLite
/// and Postgres: apply them to a pool with `MIGRATIONS.apply_sqlite(&pool)` /
/// `apply_postgres(&pool)`, or open a store with [`SqlDocumentStore::open`], which does.
pub const MIGRATIONS: Migrator = Migrator {
    scope: "documents",
    postgres: &[
        Migration::new(
            1,
            "documents",
            include_str!("../../migrations/postgres/0001_documents.sql"),
        )
        .replacing(2),
        Migration::new(
            2,
            "document_sets",
            include_str!("../../migrations/postgres/0002_document_sets.sql"),
        ),
        Migration::new(
            3,
            "documents_lz4",
            include_str!("../../migrations/postgres/0003_lz4.sql"),
        ),
        Migration::new(
            4,
            "document_changes",
            include_str!("../../migrations/postgres/0004_document_changes.sql"),
        ),
        Migration::new(
            5,
            "document_texts",
            include_str!("../../migrations/postgres/0005_document_texts.sql"),
        ),
    ],
    sqlite: &[
        Migration::new(
            1,
            "documents",
            include_str!("../../migrations/sqlite/0001_documents.sql"),
        )
        .replacing(2),
        Migration::new(
            2,
            "document_sets",
            include_str!("../../migrations/sqlite/0002_document_sets.sql"),
        ),
        Migration::new(
            3,
            "document_texts",
            include_str!("../../migrations/sqlite/0003_document_texts.sql"),
        ),
    ],
};

/// The longest title accepted, in characters.
pub const MAX_TITLE_CHARS: usize = 300;
/// The largest content accepted by default, in bytes ([`Limits::max_bytes`]).
pub const MAX_CONTENT_BYTES: usize = 8 * 1024 * 1024;
/// The most documents one user may keep by default ([`Limits::max_documents`]).
pub const MAX_DOCUMENTS: usize = 1000;

/// How much one user may store: each document's text at most `max_bytes` bytes, at most
/// `max_documents` documents. A store refuses a document past either and stores nothing
/// ([`DocumentError::TooLarge`], [`DocumentError::TooMany`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The largest text of one document, in bytes (UTF-8).
    pub max_bytes: usize,
    /// The most documents one user may keep.
    pub max_documents: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: MAX_CONTENT_BYTES,
            max_documents: MAX_DOCUMENTS,
        }
    }
}

/// A stored document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Document {
    /// Its id (a UUID v7).
    pub id: String,
    /// The user it belongs to.
    pub owner: String,
    /// Its title.
    pub title: String,
    /// Its text (plain text or Markdown).
    pub content: String,
    /// When it was created, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
}

/// A document of user `u` with these id, title and text, for tests.
#[cfg(test)]
pub(crate) fn test_doc(id: &str, title: &str, content: &str) -> Document {
    Document {
        id: id.into(),
        owner: "u".into(),
        title: title.into(),
        content: content.into(),
        created_at_ms: 0,
    }
}

impl Document {
    /// Its id and title.
    pub fn doc_ref(&self) -> DocRef {
        DocRef {
            id: self.id.clone(),
            title: self.title.clone(),
        }
    }
}

/// A document as the list of a library gives it: without its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// When it was created, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// Its text's size in bytes (UTF-8).
    pub size: usize,
}

impl Listed {
    /// A document's listing.
    pub fn of(d: &Document) -> Listed {
        Listed {
            id: d.id.clone(),
            title: d.title.clone(),
            created_at_ms: d.created_at_ms,
            size: d.content.len(),
        }
    }
}

/// Why a document operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DocumentError {
    /// The input was refused (empty title, content too large, a set naming a document that
    /// is not the owner's, ...); nothing was stored.
    #[error("invalid document: {0}")]
    Invalid(String),
    /// The owner already has a set of that name; nothing was stored.
    #[error("{0}")]
    Conflict(String),
    /// The text is larger than the store accepts ([`Limits::max_bytes`]); nothing was
    /// stored.
    #[error("{0}")]
    TooLarge(String),
    /// The owner has as many documents as the store accepts ([`Limits::max_documents`]);
    /// nothing was stored.
    #[error("{0}")]
    TooMany(String),
    /// The database failed.
    #[error("document storage failed: {0}")]
    Storage(#[from] sqlx::Error),
    /// A document could not be analysed (its analysis stopped before it finished).
    #[error("document analysis failed: {0}")]
    Analysis(String),
}

/// Where a user's documents (and document sets) live. Every call is scoped by `owner`.
#[async_trait]
pub trait DocumentStore: DocumentSetStore + Send + Sync {
    /// Stores a new document for `owner`, analysed as it is stored: the turns that read it
    /// later find its analysis kept (see `crate::analysis`).
    ///
    /// # Errors
    /// [`DocumentError::Invalid`] for an empty owner or title, an empty content, a title over
    /// [`MAX_TITLE_CHARS`]; [`DocumentError::TooLarge`] for a text over the store's
    /// [`Limits::max_bytes`]; [`DocumentError::TooMany`] when the owner already has
    /// [`Limits::max_documents`]; a storage error.
    async fn create(
        &self,
        owner: &str,
        title: &str,
        content: &str,
    ) -> Result<Document, DocumentError>;

    /// The owner's documents, oldest first.
    ///
    /// # Errors
    /// A storage error.
    async fn list(&self, owner: &str) -> Result<Vec<Document>, DocumentError>;

    /// The owner's documents as id and title only (what the resolvers need), oldest first.
    ///
    /// # Errors
    /// A storage error.
    async fn titles(&self, owner: &str) -> Result<Vec<DocRef>, DocumentError>;

    /// The owner's documents without their texts, oldest first: what a chat turn reads of
    /// its user's library (the analyses of the texts are kept apart, by id).
    ///
    /// The default reads the documents whole ([`DocumentStore::list`]); the SQL stores read
    /// the sizes without the texts.
    ///
    /// # Errors
    /// A storage error.
    async fn catalog(&self, owner: &str) -> Result<Vec<Listed>, DocumentError> {
        Ok(self.list(owner).await?.iter().map(Listed::of).collect())
    }

    /// The owner's documents of `ids` that exist, in any order (someone else's are not
    /// found).
    ///
    /// The default reads them one by one ([`DocumentStore::get`]); the SQL stores read
    /// them with one statement per few hundred.
    ///
    /// # Errors
    /// A storage error.
    async fn contents(&self, owner: &str, ids: &[&str]) -> Result<Vec<Document>, DocumentError> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            out.extend(self.get(owner, id).await?);
        }
        Ok(out)
    }

    /// One of the owner's documents; `None` when it does not exist or is someone else's.
    ///
    /// # Errors
    /// A storage error.
    async fn get(&self, owner: &str, id: &str) -> Result<Option<Document>, DocumentError>;

    /// Deletes one of the owner's documents, and takes it out of the sets that hold it;
    /// false when there was none to delete.
    ///
    /// # Errors
    /// A storage error.
    async fn delete(&self, owner: &str, id: &str) -> Result<bool, DocumentError>;

    /// The counters that tell whether an owner's library read from this store may have
    /// changed since (see [`changes`]), so that it can be kept between turns; `None` when
    /// the store cannot tell, and every turn reads its library.
    fn library_changes(&self) -> Option<&LibraryChanges> {
        None
    }

    /// What one user may store here.
    fn limits(&self) -> Limits {
        Limits::default()
    }
}

/// The refusal of one more document for an owner who has `max` already.
pub(crate) fn too_many(max: usize) -> DocumentError {
    DocumentError::TooMany(format!(
        "you have {max} documents, the most one user may keep: delete one to add another"
    ))
}

/// Checks a new document and gives it an id and a creation time.
pub(crate) fn new_document(
    owner: &str,
    title: &str,
    content: &str,
    limits: Limits,
) -> Result<Document, DocumentError> {
    let owner = owner.trim();
    let title = title.trim();
    if owner.is_empty() {
        return Err(DocumentError::Invalid("the owner is empty".into()));
    }
    if title.is_empty() {
        return Err(DocumentError::Invalid("the title is empty".into()));
    }
    if title.chars().count() > MAX_TITLE_CHARS {
        return Err(DocumentError::Invalid(format!(
            "the title is longer than {MAX_TITLE_CHARS} characters"
        )));
    }
    if content.trim().is_empty() {
        return Err(DocumentError::Invalid("the content is empty".into()));
    }
    if content.len() > limits.max_bytes {
        return Err(DocumentError::TooLarge(format!(
            "the document's text is {} bytes, more than the {} bytes a document may hold",
            content.len(),
            limits.max_bytes
        )));
    }
    Ok(Document {
        id: uuid::Uuid::now_v7().to_string(),
        owner: owner.to_string(),
        title: title.to_string(),
        content: content.to_string(),
        created_at_ms: now_ms(),
    })
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_document_refuses_empty_and_oversized_input() {
        assert!(matches!(
            new_document("", "t", "c", Limits::default()),
            Err(DocumentError::Invalid(_))
        ));
        assert!(matches!(
            new_document("u", "  ", "c", Limits::default()),
            Err(DocumentError::Invalid(_))
        ));
        assert!(matches!(
            new_document("u", "t", " \n", Limits::default()),
            Err(DocumentError::Invalid(_))
        ));
        let long = "x".repeat(MAX_TITLE_CHARS + 1);
        assert!(matches!(
            new_document("u", &long, "c", Limits::default()),
            Err(DocumentError::Invalid(_))
        ));
        let doc = new_document("u", "  Title ", "body", Limits::default()).unwrap();
        assert_eq!(doc.title, "Title");
        assert!(doc.created_at_ms > 0);
    }
}
