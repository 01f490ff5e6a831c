//! [`MemoryDocumentStore`]: documents and document sets in memory, for tests and demos.

use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;

use super::sets::{
    name_taken, not_yours, set_document_ids, set_name, too_many_documents, too_many_sets,
};
use super::{
    new_document, now_ms, too_many, Document, DocumentError, DocumentSet, DocumentSetStore,
    DocumentStore, LibraryChanges, Limits, Listed, Removal, MAX_SETS, MAX_SET_DOCUMENTS,
};
use crate::state::DocRef;

/// A set as kept in memory: its documents by id.
#[derive(Debug)]
struct StoredSet {
    id: String,
    owner: String,
    name: String,
    document_ids: Vec<String>,
    created_at_ms: i64,
    updated_at_ms: i64,
}

/// Everything the store holds, behind one lock (so a change sees documents and sets alike).
#[derive(Debug, Default)]
struct Inner {
    docs: Vec<Document>,
    sets: Vec<StoredSet>,
}

impl Inner {
    /// A stored set as the API shows it: its documents that still exist, oldest first.
    fn view(&self, s: &StoredSet) -> DocumentSet {
        DocumentSet {
            id: s.id.clone(),
            owner: s.owner.clone(),
            name: s.name.clone(),
            documents: self
                .docs
                .iter()
                .filter(|d| d.owner == s.owner && s.document_ids.contains(&d.id))
                .map(Document::doc_ref)
                .collect(),
            created_at_ms: s.created_at_ms,
            updated_at_ms: s.updated_at_ms,
        }
    }

    fn set_index(&self, owner: &str, id: &str) -> Option<usize> {
        self.sets
            .iter()
            .position(|s| s.owner == owner && s.id == id)
    }

    /// The ids of `ids` that are not the owner's documents.
    fn missing(&self, owner: &str, ids: &[String]) -> Vec<String> {
        ids.iter()
            .filter(|id| !self.docs.iter().any(|d| d.owner == owner && &d.id == *id))
            .cloned()
            .collect()
    }

    fn name_used(&self, owner: &str, name: &str, except: &str) -> bool {
        self.sets
            .iter()
            .any(|s| s.owner == owner && s.name == name && s.id != except)
    }
}

/// Documents in a process's memory (lost when it exits).
#[derive(Debug)]
pub struct MemoryDocumentStore {
    inner: Mutex<Inner>,
    /// Moved by every write: a library read from this store is kept between turns until
    /// its owner's documents change.
    changes: LibraryChanges,
    limits: Limits,
}

impl Default for MemoryDocumentStore {
    fn default() -> Self {
        MemoryDocumentStore {
            inner: Mutex::default(),
            changes: LibraryChanges::live(),
            limits: Limits::default(),
        }
    }
}

impl MemoryDocumentStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The store with these limits on what one user may store.
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl DocumentStore for MemoryDocumentStore {
    async fn create(
        &self,
        owner: &str,
        title: &str,
        content: &str,
    ) -> Result<Document, DocumentError> {
        let doc = new_document(owner, title, content, self.limits)?;
        crate::library::prepare(&doc).await?;
        let mut inner = self.inner();
        if inner.docs.iter().filter(|d| d.owner == doc.owner).count() >= self.limits.max_documents {
            return Err(too_many(self.limits.max_documents));
        }
        inner.docs.push(doc.clone());
        drop(inner);
        self.changes.changed(owner);
        Ok(doc)
    }

    async fn list(&self, owner: &str) -> Result<Vec<Document>, DocumentError> {
        Ok(self
            .inner()
            .docs
            .iter()
            .filter(|d| d.owner == owner)
            .cloned()
            .collect())
    }

    async fn titles(&self, owner: &str) -> Result<Vec<DocRef>, DocumentError> {
        Ok(self
            .inner()
            .docs
            .iter()
            .filter(|d| d.owner == owner)
            .map(Document::doc_ref)
            .collect())
    }

    async fn catalog(&self, owner: &str) -> Result<Vec<Listed>, DocumentError> {
        Ok(self
            .inner()
            .docs
            .iter()
            .filter(|d| d.owner == owner)
            .map(Listed::of)
            .collect())
    }

    async fn contents(&self, owner: &str, ids: &[&str]) -> Result<Vec<Document>, DocumentError> {
        Ok(self
            .inner()
            .docs
            .iter()
            .filter(|d| d.owner == owner && ids.contains(&d.id.as_str()))
            .cloned()
            .collect())
    }

    async fn get(&self, owner: &str, id: &str) -> Result<Option<Document>, DocumentError> {
        Ok(self
            .inner()
            .docs
            .iter()
            .find(|d| d.owner == owner && d.id == id)
            .cloned())
    }

    async fn delete(&self, owner: &str, id: &str) -> Result<bool, DocumentError> {
        let mut inner = self.inner();
        let before = inner.docs.len();
        inner.docs.retain(|d| !(d.owner == owner && d.id == id));
        let deleted = inner.docs.len() != before;
        if deleted {
            for s in inner.sets.iter_mut().filter(|s| s.owner == owner) {
                s.document_ids.retain(|d| d != id);
            }
        }
        drop(inner);
        if deleted {
            self.changes.changed(owner);
        }
        Ok(deleted)
    }

    fn library_changes(&self) -> Option<&LibraryChanges> {
        Some(&self.changes)
    }

    fn limits(&self) -> Limits {
        self.limits
    }
}

#[async_trait]
impl DocumentSetStore for MemoryDocumentStore {
    async fn create_set(
        &self,
        owner: &str,
        name: &str,
        document_ids: &[String],
    ) -> Result<DocumentSet, DocumentError> {
        let name = set_name(name)?;
        let ids = set_document_ids(document_ids)?;
        if owner.trim().is_empty() {
            return Err(DocumentError::Invalid("the owner is empty".into()));
        }
        let mut inner = self.inner();
        if inner.name_used(owner, &name, "") {
            return Err(name_taken(&name));
        }
        if inner.sets.iter().filter(|s| s.owner == owner).count() >= MAX_SETS {
            return Err(too_many_sets());
        }
        let missing = inner.missing(owner, &ids);
        if !missing.is_empty() {
            return Err(not_yours(&missing));
        }
        let now = now_ms();
        let stored = StoredSet {
            id: uuid::Uuid::now_v7().to_string(),
            owner: owner.to_string(),
            name,
            document_ids: ids,
            created_at_ms: now,
            updated_at_ms: now,
        };
        let view = inner.view(&stored);
        inner.sets.push(stored);
        Ok(view)
    }

    async fn sets(&self, owner: &str) -> Result<Vec<DocumentSet>, DocumentError> {
        let inner = self.inner();
        Ok(inner
            .sets
            .iter()
            .filter(|s| s.owner == owner)
            .map(|s| inner.view(s))
            .collect())
    }

    async fn set(&self, owner: &str, id: &str) -> Result<Option<DocumentSet>, DocumentError> {
        let inner = self.inner();
        Ok(inner
            .set_index(owner, id)
            .map(|i| inner.view(&inner.sets[i])))
    }

    async fn rename_set(
        &self,
        owner: &str,
        id: &str,
        name: &str,
    ) -> Result<Option<DocumentSet>, DocumentError> {
        let name = set_name(name)?;
        let mut inner = self.inner();
        let Some(i) = inner.set_index(owner, id) else {
            return Ok(None);
        };
        if inner.name_used(owner, &name, id) {
            return Err(name_taken(&name));
        }
        inner.sets[i].name = name;
        inner.sets[i].updated_at_ms = now_ms();
        Ok(Some(inner.view(&inner.sets[i])))
    }

    async fn add_to_set(
        &self,
        owner: &str,
        id: &str,
        document_ids: &[String],
    ) -> Result<Option<DocumentSet>, DocumentError> {
        let ids = set_document_ids(document_ids)?;
        if ids.is_empty() {
            return Err(DocumentError::Invalid("no document ids to add".into()));
        }
        let mut inner = self.inner();
        let Some(i) = inner.set_index(owner, id) else {
            return Ok(None);
        };
        let missing = inner.missing(owner, &ids);
        if !missing.is_empty() {
            return Err(not_yours(&missing));
        }
        let new: Vec<String> = ids
            .into_iter()
            .filter(|d| !inner.sets[i].document_ids.contains(d))
            .collect();
        if inner.sets[i].document_ids.len() + new.len() > MAX_SET_DOCUMENTS {
            return Err(too_many_documents());
        }
        inner.sets[i].document_ids.extend(new);
        inner.sets[i].updated_at_ms = now_ms();
        Ok(Some(inner.view(&inner.sets[i])))
    }

    async fn remove_from_set(
        &self,
        owner: &str,
        id: &str,
        document_id: &str,
    ) -> Result<Removal, DocumentError> {
        let mut inner = self.inner();
        let Some(i) = inner.set_index(owner, id) else {
            return Ok(Removal::NoSuchSet);
        };
        let set = &mut inner.sets[i];
        let before = set.document_ids.len();
        set.document_ids.retain(|d| d != document_id);
        if set.document_ids.len() == before {
            return Ok(Removal::NotInSet);
        }
        set.updated_at_ms = now_ms();
        Ok(Removal::Removed)
    }

    async fn delete_set(&self, owner: &str, id: &str) -> Result<bool, DocumentError> {
        let mut inner = self.inner();
        let before = inner.sets.len();
        inner.sets.retain(|s| !(s.owner == owner && s.id == id));
        Ok(inner.sets.len() != before)
    }
}
