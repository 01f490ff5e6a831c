//! The user's library as a turn reads it: each document's id, title, creation time, size
//! and digest ([`Entry`]), never its text. What a turn does with the whole library (the
//! versions among its documents, ranking them against a request, listing them) reads the
//! digests; only the documents a turn quotes are read whole, and their analyses come from
//! the memo that analysing them at upload filled ([`analyses`]).
//!
//! A document whose digest this process does not keep (stored by another process, or
//! forgotten by a full memo) has its text read and is analysed once, off the runtime's
//! threads; the next turns find it kept.

use std::sync::Arc;

use crate::analysis::{self, Analysis};
use crate::documents::{Document, DocumentError, DocumentStore, Listed};
use crate::retrieval::digest::Digest;
use crate::state::DocRef;

/// A document of the library, as a turn sees it.
#[derive(Clone)]
pub(crate) struct Entry {
    /// Its id.
    pub(crate) id: String,
    /// Its title.
    pub(crate) title: String,
    /// When it was created (the order of versions nothing else orders).
    pub(crate) created_at_ms: i64,
    /// Its text's size in bytes.
    pub(crate) size: usize,
    /// Its digest.
    pub(crate) digest: Arc<Digest>,
}

impl Entry {
    /// Its id and title.
    pub(crate) fn doc_ref(&self) -> DocRef {
        DocRef {
            id: self.id.clone(),
            title: self.title.clone(),
        }
    }
}

#[cfg(test)]
impl Entry {
    /// A document's entry, the document analysed (or found in the memo).
    pub(crate) fn of(doc: &Document) -> Entry {
        Entry {
            id: doc.id.clone(),
            title: doc.title.clone(),
            created_at_ms: doc.created_at_ms,
            size: doc.content.len(),
            digest: Arc::clone(&analysis::analysis(doc).digest),
        }
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("id", &self.id)
            .field("title", &self.title)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

/// Analyses `docs` off the runtime's threads (a long document takes seconds), keeping
/// each analysis and digest in the memo.
async fn analyse(docs: Vec<Document>) -> Result<Vec<Arc<Analysis>>, DocumentError> {
    if docs.is_empty() {
        return Ok(Vec::new());
    }
    tokio::task::spawn_blocking(move || docs.iter().map(analysis::analysis).collect())
        .await
        .map_err(|e| DocumentError::Analysis(e.to_string()))
}

/// Analyses a document being stored, so that no turn has to (see [`crate::analysis`]).
///
/// # Errors
/// [`DocumentError::Analysis`] when the analysis could not finish.
pub(crate) async fn prepare(doc: &Document) -> Result<(), DocumentError> {
    analyse(vec![doc.clone()]).await.map(drop)
}

/// The owner's library: one read of its list, and of the texts of the documents whose
/// digests are not kept.
///
/// # Errors
/// A storage error.
pub(crate) async fn read(
    store: &dyn DocumentStore,
    owner: &str,
) -> Result<Vec<Entry>, DocumentError> {
    let listed: Vec<Listed> = store.catalog(owner).await?;
    let mut digests: Vec<Option<Arc<Digest>>> = listed
        .iter()
        .map(|l| analysis::kept_digest(&l.id, &l.title, l.size))
        .collect();
    let missing: Vec<&str> = listed
        .iter()
        .zip(&digests)
        .filter(|(_, d)| d.is_none())
        .map(|(l, _)| l.id.as_str())
        .collect();
    if !missing.is_empty() {
        let texts = store.contents(owner, &missing).await?;
        for a in analyse(texts).await? {
            if let Some(i) = listed.iter().position(|l| l.id == a.doc.id) {
                digests[i] = Some(Arc::clone(&a.digest));
            }
        }
    }
    // A document deleted between the two reads is left out, as if deleted before.
    Ok(listed
        .into_iter()
        .zip(digests)
        .filter_map(|(l, digest)| {
            Some(Entry {
                id: l.id,
                title: l.title,
                created_at_ms: l.created_at_ms,
                size: l.size,
                digest: digest?,
            })
        })
        .collect())
}

/// The whole analyses of `entries` (documents a turn quotes), in order: from the memo, else
/// their texts read (one read for them all) and analysed. A document deleted meanwhile is
/// left out.
///
/// # Errors
/// A storage error.
pub(crate) async fn analyses(
    store: &dyn DocumentStore,
    owner: &str,
    entries: &[&Entry],
) -> Result<Vec<Arc<Analysis>>, DocumentError> {
    let mut found: Vec<Option<Arc<Analysis>>> = entries
        .iter()
        .map(|e| analysis::kept_analysis(&e.id, &e.title, e.size))
        .collect();
    let missing: Vec<&str> = entries
        .iter()
        .zip(&found)
        .filter(|(_, a)| a.is_none())
        .map(|(e, _)| e.id.as_str())
        .collect();
    if !missing.is_empty() {
        let texts = store.contents(owner, &missing).await?;
        for a in analyse(texts).await? {
            if let Some(i) = entries.iter().position(|e| e.id == a.doc.id) {
                found[i] = Some(a);
            }
        }
    }
    Ok(found.into_iter().flatten().collect())
}
