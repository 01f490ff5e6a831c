//! The user's library as one run sees it: read at most once per run, however many nodes of
//! the turn need it (the doc resolver, the input validation, the action and the response
//! formatting). A read is each document's id, title, size and
//! digest, never the texts (the `library` module): the analyses were made when the documents
//! were stored.
//!
//! A turn works from one snapshot: a document added or removed while it runs shows from
//! the next turn on. Snapshots are kept for the runs of the last [`KEEP`], at most
//! [`MAX_RUNS`] runs.
//!
//! Where the store can tell that a user's documents did not change since an earlier turn
//! read them ([`DocumentStore::library_changes`]), a turn takes that earlier read as its
//! snapshot instead of reading the library again ([`crate::kept_libraries`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::documents::{DocumentError, DocumentStore, LibraryStamp};
use crate::kept_libraries::{KeptLibraries, Read};
use crate::library::Entry;
use crate::state::DocRef;

/// How long a run's snapshot is kept after it was read.
pub const KEEP: Duration = Duration::from_secs(60);
/// The most runs whose snapshots are kept at once.
pub const MAX_RUNS: usize = 256;

/// One run's snapshot.
struct Snapshot {
    run_id: String,
    owner: String,
    read_at: Instant,
    read: Read,
}

/// The snapshots of the recent runs (see the module docs).
#[derive(Default)]
pub(crate) struct RunLibraries {
    runs: Mutex<VecDeque<Snapshot>>,
    /// Libraries kept between turns, for stores that can tell when they change.
    kept: KeptLibraries,
}

impl RunLibraries {
    /// The owner's documents (id and title) as run `run_id` sees them.
    pub(crate) async fn titles(
        &self,
        store: &dyn DocumentStore,
        run_id: &str,
        owner: &str,
    ) -> Result<Arc<Vec<DocRef>>, DocumentError> {
        Ok(self.read(store, run_id, owner).await?.titles)
    }

    /// The owner's documents as run `run_id` sees them.
    pub(crate) async fn documents(
        &self,
        store: &dyn DocumentStore,
        run_id: &str,
        owner: &str,
    ) -> Result<Arc<Vec<Entry>>, DocumentError> {
        Ok(self.read(store, run_id, owner).await?.entries)
    }

    async fn read(
        &self,
        store: &dyn DocumentStore,
        run_id: &str,
        owner: &str,
    ) -> Result<Read, DocumentError> {
        if let Some(read) = self.find(run_id, owner) {
            return Ok(read);
        }
        let stamp = stamp(store, owner);
        if let Some(read) = stamp.and_then(|s| self.kept.get(owner, s)) {
            self.keep(run_id, owner, read.clone());
            return Ok(read);
        }
        let entries = crate::library::read(store, owner).await?;
        let read = Read {
            titles: Arc::new(entries.iter().map(Entry::doc_ref).collect()),
            entries: Arc::new(entries),
        };
        self.keep(run_id, owner, read.clone());
        self.keep_between_turns(store, owner, stamp, || read.clone());
        Ok(read)
    }

    /// Keeps a library read at `stamp` for later turns, if the owner's stamp is still
    /// `stamp` (nothing changed while it was read).
    fn keep_between_turns(
        &self,
        store: &dyn DocumentStore,
        owner: &str,
        stamp: Option<LibraryStamp>,
        read: impl FnOnce() -> Read,
    ) {
        if let (Some(before), Some(changes)) = (stamp, store.library_changes()) {
            if changes.stamp(owner) == Some(before) {
                self.kept.put(owner, before, read());
            }
        }
    }

    fn find(&self, run_id: &str, owner: &str) -> Option<Read> {
        let runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        // The newest first: a run asks while it runs, so its snapshot is among the last.
        runs.iter()
            .rev()
            .find(|s| s.run_id == run_id && s.owner == owner && s.read_at.elapsed() < KEEP)
            .map(|s| s.read.clone())
    }

    fn keep(&self, run_id: &str, owner: &str, read: Read) {
        let mut runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        while runs
            .front()
            .is_some_and(|s| s.read_at.elapsed() >= KEEP || runs.len() >= MAX_RUNS)
        {
            runs.pop_front();
        }
        runs.push_back(Snapshot {
            run_id: run_id.to_string(),
            owner: owner.to_string(),
            read_at: Instant::now(),
            read,
        });
    }
}

/// The owner's stamp in the store, taken before a read ([`KeptLibraries`]).
fn stamp(store: &dyn DocumentStore, owner: &str) -> Option<LibraryStamp> {
    store.library_changes()?.stamp(owner)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::documents::MemoryDocumentStore;

    /// A store where "ann" has one document, "Policy A".
    async fn ann_with_policy_a() -> MemoryDocumentStore {
        let store = MemoryDocumentStore::default();
        store
            .create("ann", "Policy A", "Keep records.")
            .await
            .unwrap();
        store
    }

    #[tokio::test]
    async fn a_run_reads_the_library_once_and_the_next_run_sees_changes() {
        let store = ann_with_policy_a().await;
        let libs = RunLibraries::default();
        let first = libs.titles(&store, "r1", "ann").await.unwrap();
        assert_eq!(first.len(), 1);
        store.create("ann", "Policy B", "Keep more.").await.unwrap();
        // The same run: the snapshot it read.
        assert_eq!(libs.titles(&store, "r1", "ann").await.unwrap().len(), 1);
        // Its documents came with the titles: the same snapshot.
        let docs = libs.documents(&store, "r1", "ann").await.unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].title, "Policy A");
        // Another run, or another owner in the run, reads anew.
        assert_eq!(libs.titles(&store, "r2", "ann").await.unwrap().len(), 2);
        assert_eq!(libs.titles(&store, "r1", "bob").await.unwrap().len(), 0);
    }

    #[tokio::test]
    async fn documents_read_first_say_the_titles_too() {
        let store = ann_with_policy_a().await;
        let libs = RunLibraries::default();
        assert_eq!(libs.documents(&store, "r1", "ann").await.unwrap().len(), 1);
        store.create("ann", "Policy B", "Keep more.").await.unwrap();
        assert_eq!(libs.titles(&store, "r1", "ann").await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_document_stored_elsewhere_is_analysed_on_its_first_read_only() {
        let pool = sqlx::SqlitePool::connect("sqlite::memory:").await.unwrap();
        let store = crate::documents::SqliteDocumentStore::open(pool.clone())
            .await
            .unwrap();
        // Written by another process: not analysed here.
        sqlx::raw_sql(
            "INSERT INTO documents (id, owner, title, size, created_at_ms) VALUES ('0190a0e0-0000-7000-8000-00000000e15e', 'ann', 'Elsewhere', 29, 1);
             INSERT INTO document_texts (id, content) VALUES ('0190a0e0-0000-7000-8000-00000000e15e', 'Records are kept seven years.')",
        )
        .execute(&pool)
        .await
        .unwrap();
        let libs = RunLibraries::default();
        let first = libs.documents(&store, "r1", "ann").await.unwrap();
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].size, "Records are kept seven years.".len());
        let second = libs.documents(&store, "r2", "ann").await.unwrap();
        assert!(
            !Arc::ptr_eq(&first, &second),
            "read again: SQLite cannot tell"
        );
        assert!(
            Arc::ptr_eq(&first[0].digest, &second[0].digest),
            "the digest made on the first read is the one kept"
        );
    }

    #[tokio::test]
    async fn only_the_most_recent_runs_are_kept() {
        let store = ann_with_policy_a().await;
        let libs = RunLibraries::default();
        for i in 0..MAX_RUNS + 10 {
            libs.titles(&store, &format!("r{i}"), "ann").await.unwrap();
        }
        assert_eq!(libs.runs.lock().unwrap().len(), MAX_RUNS);
        store.create("ann", "Policy B", "Keep more.").await.unwrap();
        // The oldest run's snapshot is gone: read anew; the newest is kept.
        assert_eq!(libs.titles(&store, "r0", "ann").await.unwrap().len(), 2);
        let newest = format!("r{}", MAX_RUNS + 9);
        assert_eq!(libs.titles(&store, &newest, "ann").await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_turn_whose_library_did_not_change_uses_the_last_read() {
        let store = ann_with_policy_a().await;
        let libs = RunLibraries::default();
        let first = libs.titles(&store, "r1", "ann").await.unwrap();
        let docs = libs.documents(&store, "r1", "ann").await.unwrap();
        // Later turns: the same read, titles and documents alike.
        let second = libs.titles(&store, "r2", "ann").await.unwrap();
        assert!(Arc::ptr_eq(&first, &second), "not read again");
        let docs2 = libs.documents(&store, "r3", "ann").await.unwrap();
        assert!(Arc::ptr_eq(&docs, &docs2), "not read again");
        // A change: the next turn reads, and sees it.
        store.create("ann", "Policy B", "Keep more.").await.unwrap();
        let third = libs.titles(&store, "r4", "ann").await.unwrap();
        assert!(!Arc::ptr_eq(&first, &third));
        assert_eq!(third.len(), 2);
        // A turn that read before the change keeps its snapshot.
        assert_eq!(libs.titles(&store, "r2", "ann").await.unwrap().len(), 1);
        // A deletion shows from the next turn on too.
        let b = third
            .iter()
            .find(|d| d.title == "Policy B")
            .unwrap()
            .id
            .clone();
        assert!(store.delete("ann", &b).await.unwrap());
        assert_eq!(libs.titles(&store, "r5", "ann").await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_library_that_changed_while_it_was_read_is_not_kept() {
        let store = ann_with_policy_a().await;
        let libs = RunLibraries::default();
        let changes = store.library_changes().unwrap();
        let before = changes.stamp("ann");
        let read = || Read {
            titles: Arc::new(Vec::new()),
            entries: Arc::new(Vec::new()),
        };
        changes.changed("ann");
        libs.keep_between_turns(&store, "ann", before, read);
        assert_eq!(libs.kept.len(), 0, "read across a change");
        libs.keep_between_turns(&store, "ann", changes.stamp("ann"), read);
        assert_eq!(libs.kept.len(), 1);
    }

    #[tokio::test]
    async fn a_store_that_cannot_tell_is_read_every_turn() {
        let pool = sqlx::SqlitePool::connect("sqlite::memory:").await.unwrap();
        let store = crate::documents::SqliteDocumentStore::open(pool)
            .await
            .unwrap();
        store
            .create("ann", "Policy A", "Keep records.")
            .await
            .unwrap();
        assert!(store.library_changes().is_none());
        let libs = RunLibraries::default();
        let first = libs.titles(&store, "r1", "ann").await.unwrap();
        let second = libs.titles(&store, "r2", "ann").await.unwrap();
        assert!(!Arc::ptr_eq(&first, &second));
        assert_eq!(libs.kept.len(), 0);
    }
}
