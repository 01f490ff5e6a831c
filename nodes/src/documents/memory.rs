//! [`MemoryDocumentStore`]: documents in memory, for tests and demos.

use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;

use super::{new_document, Document, DocumentError, DocumentStore};
use crate::state::DocRef;

/// Documents in a process's memory (lost when it exits).
#[derive(Debug, Default)]
pub struct MemoryDocumentStore {
    docs: Mutex<Vec<Document>>,
}

impl MemoryDocumentStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn docs(&self) -> MutexGuard<'_, Vec<Document>> {
        self.docs.lock().unwrap_or_else(|e| e.into_inner())
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
        let doc = new_document(owner, title, content)?;
        self.docs().push(doc.clone());
        Ok(doc)
    }

    async fn list(&self, owner: &str) -> Result<Vec<Document>, DocumentError> {
        Ok(self
            .docs()
            .iter()
            .filter(|d| d.owner == owner)
            .cloned()
            .collect())
    }

    async fn titles(&self, owner: &str) -> Result<Vec<DocRef>, DocumentError> {
        Ok(self
            .docs()
            .iter()
            .filter(|d| d.owner == owner)
            .map(Document::doc_ref)
            .collect())
    }

    async fn get(&self, owner: &str, id: &str) -> Result<Option<Document>, DocumentError> {
        Ok(self
            .docs()
            .iter()
            .find(|d| d.owner == owner && d.id == id)
            .cloned())
    }

    async fn delete(&self, owner: &str, id: &str) -> Result<bool, DocumentError> {
        let mut docs = self.docs();
        let before = docs.len();
        docs.retain(|d| !(d.owner == owner && d.id == id));
        Ok(docs.len() != before)
    }
}
