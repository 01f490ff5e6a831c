//! Document sets: named folders of one user's documents. A chat request that tags a set
//! (`tagged_set_ids`, or a set mention in its TipTap JSON) has every document of the set in
//! scope (see [`crate::doc_resolver`]).
//!
//! Rules every store keeps:
//! - a set and its documents belong to one owner; another user's set is `None` (404), and
//!   only the owner's own documents can be added (anything else is
//!   [`DocumentError::Invalid`], and nothing is stored);
//! - names are trimmed, 1 to [`MAX_SET_NAME_CHARS`] characters, and unique per owner
//!   ([`DocumentError::Conflict`]);
//! - an owner has at most [`MAX_SETS`] sets, a set at most [`MAX_SET_DOCUMENTS`] documents;
//! - adding a document already in the set changes nothing; deleting a document takes it out
//!   of its sets, deleting a set leaves its documents alone;
//! - concurrent changes to one set are applied one after the other (a set's row is written
//!   first in each change's transaction), so two adds both land and an add racing a delete
//!   either lands before it or finds no set.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::DocumentError;
use crate::state::DocRef;

/// The longest set name, in characters.
pub const MAX_SET_NAME_CHARS: usize = 100;
/// The most sets one user may have.
pub const MAX_SETS: usize = 100;
/// The most documents one set may hold (and one request may add).
pub const MAX_SET_DOCUMENTS: usize = 500;

/// A stored document set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DocumentSet {
    /// Its id (a UUID v7).
    pub id: String,
    /// The user it belongs to.
    pub owner: String,
    /// Its name (unique among its owner's sets).
    pub name: String,
    /// Its documents (id and title), oldest document first.
    pub documents: Vec<DocRef>,
    /// When it was created, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// When it was last renamed or its documents changed, in milliseconds since the epoch.
    pub updated_at_ms: i64,
}

/// What [`DocumentSetStore::remove_from_set`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Removal {
    /// The document was in the set and is no longer.
    Removed,
    /// The set exists but does not hold that document.
    NotInSet,
    /// The owner has no set with that id.
    NoSuchSet,
}

/// Where a user's document sets live. Every call is scoped by `owner`.
#[async_trait]
pub trait DocumentSetStore: Send + Sync {
    /// Makes a new set for `owner`, holding `document_ids` (may be empty).
    ///
    /// # Errors
    /// [`DocumentError::Invalid`] for a bad name, too many sets or documents, or a document
    /// that is not the owner's; [`DocumentError::Conflict`] when the owner already has a
    /// set of that name; a storage error.
    async fn create_set(
        &self,
        owner: &str,
        name: &str,
        document_ids: &[String],
    ) -> Result<DocumentSet, DocumentError>;

    /// The owner's sets, oldest first.
    ///
    /// # Errors
    /// A storage error.
    async fn sets(&self, owner: &str) -> Result<Vec<DocumentSet>, DocumentError>;

    /// One of the owner's sets; `None` when it does not exist or is someone else's.
    ///
    /// # Errors
    /// A storage error.
    async fn set(&self, owner: &str, id: &str) -> Result<Option<DocumentSet>, DocumentError>;

    /// Renames one of the owner's sets; `None` when there is no such set.
    ///
    /// # Errors
    /// As for [`DocumentSetStore::create_set`]'s name.
    async fn rename_set(
        &self,
        owner: &str,
        id: &str,
        name: &str,
    ) -> Result<Option<DocumentSet>, DocumentError>;

    /// Adds documents to one of the owner's sets (those already in it stay as they are);
    /// `None` when there is no such set.
    ///
    /// # Errors
    /// [`DocumentError::Invalid`] for no ids, a document that is not the owner's, or a set
    /// that would hold more than [`MAX_SET_DOCUMENTS`]; a storage error.
    async fn add_to_set(
        &self,
        owner: &str,
        id: &str,
        document_ids: &[String],
    ) -> Result<Option<DocumentSet>, DocumentError>;

    /// Takes a document out of one of the owner's sets (the document stays).
    ///
    /// # Errors
    /// A storage error.
    async fn remove_from_set(
        &self,
        owner: &str,
        id: &str,
        document_id: &str,
    ) -> Result<Removal, DocumentError>;

    /// Deletes one of the owner's sets (not its documents); false when there was none.
    ///
    /// # Errors
    /// A storage error.
    async fn delete_set(&self, owner: &str, id: &str) -> Result<bool, DocumentError>;
}

/// A set's name, trimmed and checked.
pub(crate) fn set_name(name: &str) -> Result<String, DocumentError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(DocumentError::Invalid("the set's name is empty".into()));
    }
    if name.chars().count() > MAX_SET_NAME_CHARS {
        return Err(DocumentError::Invalid(format!(
            "the set's name is longer than {MAX_SET_NAME_CHARS} characters"
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(DocumentError::Invalid(
            "the set's name holds control characters".into(),
        ));
    }
    Ok(name.to_string())
}

/// Whether `id` can be a stored id (documents and sets have UUIDs): anything else is
/// known to be no one's, and is never sent to the database.
pub fn is_id(id: &str) -> bool {
    uuid::Uuid::try_parse(id).is_ok()
}

/// Document ids to add: trimmed, each once, in the order given, at most
/// [`MAX_SET_DOCUMENTS`]; an id that cannot be a document's is refused.
pub(crate) fn set_document_ids(ids: &[String]) -> Result<Vec<String>, DocumentError> {
    let mut out: Vec<String> = Vec::new();
    for id in ids {
        let id = id.trim();
        if !out.iter().any(|o| o == id) {
            out.push(id.to_string());
        }
    }
    if out.len() > MAX_SET_DOCUMENTS {
        return Err(too_many_documents());
    }
    let bad: Vec<String> = out.iter().filter(|id| !is_id(id)).cloned().collect();
    if !bad.is_empty() {
        return Err(not_yours(&bad));
    }
    Ok(out)
}

/// The error for document ids that are not among the owner's documents.
pub(crate) fn not_yours(missing: &[String]) -> DocumentError {
    let list = missing
        .iter()
        .map(|m| format!("`{}`", m.escape_debug()))
        .collect::<Vec<_>>()
        .join(", ");
    DocumentError::Invalid(format!("not among your documents: {list}"))
}

/// The error for a set name the owner already uses.
pub(crate) fn name_taken(name: &str) -> DocumentError {
    DocumentError::Conflict(format!("you already have a set named \"{name}\""))
}

/// The error for an owner at [`MAX_SETS`].
pub(crate) fn too_many_sets() -> DocumentError {
    DocumentError::Invalid(format!("you can have at most {MAX_SETS} sets"))
}

/// The error for a set that would hold more than [`MAX_SET_DOCUMENTS`].
pub(crate) fn too_many_documents() -> DocumentError {
    DocumentError::Invalid(format!("a set holds at most {MAX_SET_DOCUMENTS} documents"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ids_are_checked() {
        assert_eq!(set_name("  Basel  ").ok().as_deref(), Some("Basel"));
        assert!(set_name(" ").is_err());
        assert!(set_name("a\u{0}b").is_err());
        assert!(set_name(&"x".repeat(MAX_SET_NAME_CHARS + 1)).is_err());
        let (a, b) = (
            uuid::Uuid::now_v7().to_string(),
            uuid::Uuid::now_v7().to_string(),
        );
        let ids = vec![a.clone(), format!(" {a} "), b.clone()];
        assert_eq!(set_document_ids(&ids).ok(), Some(vec![a, b]));
        assert!(set_document_ids(&["".to_string()]).is_err());
        assert!(set_document_ids(&["x\u{0}".to_string()]).is_err());
        let many: Vec<String> = (0..=MAX_SET_DOCUMENTS).map(|i| i.to_string()).collect();
        assert!(set_document_ids(&many).is_err());
    }
}
