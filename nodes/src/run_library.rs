//! The user's library as one run sees it: its titles and its documents are each read at
//! most once per run, however many nodes of the turn need them (the doc resolver, the
//! input validation, the action and the response formatting each did their own read).
//! The first read of the titles brings the documents with it when the library is small
//! enough to keep ([`DocumentStore::library`]): then a turn reads its library with one
//! statement (an SQL store reads the texts the analysis memo does not keep with a second
//! one), and its nodes all see that one read.
//!
//! A turn works from one snapshot: a document added or removed while it runs shows from
//! the next turn on. Snapshots are kept for the runs of the last [`KEEP`], at most
//! [`MAX_RUNS`] runs and [`MAX_SNAPSHOT_BYTES`] of texts (a snapshot shared by several runs
//! counts for each); a library larger than [`MAX_CACHED_BYTES`] is not kept (read again
//! when needed).
//!
//! Where the store can tell that a user's documents did not change since an earlier turn
//! read them ([`DocumentStore::library_changes`]), a turn takes that earlier read as its
//! snapshot instead of reading the library again ([`crate::kept_libraries`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::documents::{Document, DocumentError, DocumentStore, Library, LibraryStamp};
use crate::kept_libraries::{KeptLibraries, Read};
use crate::state::DocRef;

/// How long a run's snapshot is kept after it was read.
pub const KEEP: Duration = Duration::from_secs(60);
/// The most runs whose snapshots are kept at once.
pub const MAX_RUNS: usize = 256;
/// The largest library (sum of its documents' sizes) kept in a snapshot: about a
/// thousand policies.
pub const MAX_CACHED_BYTES: usize = 8 << 20;
/// The most bytes of texts the snapshots of the recent runs hold together.
pub const MAX_SNAPSHOT_BYTES: usize = 64 << 20;

/// One run's snapshot.
struct Snapshot {
    run_id: String,
    owner: String,
    read_at: Instant,
    titles: Option<Arc<Vec<DocRef>>>,
    documents: Option<Arc<Vec<Document>>>,
}

impl Snapshot {
    fn bytes(&self) -> usize {
        self.documents.as_deref().map_or(0, |d| bytes(d))
    }
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
        if let Some(t) = self.find(run_id, owner, |s| s.titles.clone()) {
            return Ok(t);
        }
        // The documents, when this run read them already, say the titles too.
        if let Some(d) = self.find(run_id, owner, |s| s.documents.clone()) {
            return Ok(Arc::new(d.iter().map(Document::doc_ref).collect()));
        }
        let stamp = stamp(store, owner);
        if let Some(read) = stamp.and_then(|s| self.kept.get(owner, s)) {
            let titles = read.titles.clone();
            self.keep(run_id, owner, |s| {
                s.titles = Some(read.titles);
                s.documents = read.documents;
            });
            return Ok(titles);
        }
        // One read: the documents too when the library is small enough to keep, so the
        // nodes that need them later read nothing, and see the same snapshot.
        let (titles, documents) = match store.library(owner, MAX_CACHED_BYTES).await? {
            Library::Documents(documents) => {
                let titles = documents.iter().map(Document::doc_ref).collect();
                let keep = bytes(&documents) <= MAX_CACHED_BYTES;
                (Arc::new(titles), keep.then(|| Arc::new(documents)))
            }
            Library::Titles(titles) => (Arc::new(titles), None),
        };
        self.keep(run_id, owner, |s| {
            s.titles = Some(titles.clone());
            s.documents = documents.clone();
        });
        self.keep_between_turns(store, owner, stamp, || Read {
            titles: titles.clone(),
            documents,
        });
        Ok(titles)
    }

    /// The owner's documents as run `run_id` sees them.
    pub(crate) async fn documents(
        &self,
        store: &dyn DocumentStore,
        run_id: &str,
        owner: &str,
    ) -> Result<Arc<Vec<Document>>, DocumentError> {
        if let Some(d) = self.find(run_id, owner, |s| s.documents.clone()) {
            return Ok(d);
        }
        let stamp = stamp(store, owner);
        let kept = stamp.and_then(|s| self.kept.get(owner, s));
        if let Some(Read {
            titles,
            documents: Some(documents),
        }) = kept
        {
            self.keep(run_id, owner, |s| {
                s.titles.get_or_insert(titles);
                s.documents = Some(documents.clone());
            });
            return Ok(documents);
        }
        let documents = Arc::new(store.list(owner).await?);
        if bytes(&documents) <= MAX_CACHED_BYTES {
            self.keep(run_id, owner, |s| s.documents = Some(documents.clone()));
            self.keep_between_turns(store, owner, stamp, || Read {
                titles: Arc::new(documents.iter().map(Document::doc_ref).collect()),
                documents: Some(documents.clone()),
            });
        }
        Ok(documents)
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

    fn find<T>(
        &self,
        run_id: &str,
        owner: &str,
        get: impl Fn(&Snapshot) -> Option<T>,
    ) -> Option<T> {
        let runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        // The newest first: a run asks while it runs, so its snapshot is among the last.
        runs.iter()
            .rev()
            .find(|s| s.run_id == run_id && s.owner == owner && s.read_at.elapsed() < KEEP)
            .and_then(get)
    }

    fn keep(&self, run_id: &str, owner: &str, set: impl FnOnce(&mut Snapshot)) {
        let mut runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        while runs
            .front()
            .is_some_and(|s| s.read_at.elapsed() >= KEEP || runs.len() > MAX_RUNS)
        {
            runs.pop_front();
        }
        if let Some(s) = runs
            .iter_mut()
            .rev()
            .find(|s| s.run_id == run_id && s.owner == owner)
        {
            set(s);
            return;
        }
        if runs.len() >= MAX_RUNS {
            runs.pop_front();
        }
        let mut s = Snapshot {
            run_id: run_id.to_string(),
            owner: owner.to_string(),
            read_at: Instant::now(),
            titles: None,
            documents: None,
        };
        set(&mut s);
        let mut total = s.bytes() + runs.iter().map(Snapshot::bytes).sum::<usize>();
        while total > MAX_SNAPSHOT_BYTES {
            match runs.pop_front() {
                Some(old) => total -= old.bytes(),
                None => break,
            }
        }
        runs.push_back(s);
    }
}

/// The owner's stamp in the store, taken before a read ([`KeptLibraries`]).
fn stamp(store: &dyn DocumentStore, owner: &str) -> Option<LibraryStamp> {
    store.library_changes()?.stamp(owner)
}

/// The size a snapshot's documents count for against [`MAX_CACHED_BYTES`].
fn bytes(documents: &[Document]) -> usize {
    documents
        .iter()
        .map(|d| d.content.len() + d.title.len())
        .sum()
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
    async fn a_library_too_big_to_keep_is_read_as_titles_then_documents() {
        let store = MemoryDocumentStore::default();
        let big = "x".repeat(MAX_CACHED_BYTES);
        store.create("ann", "Big", &big).await.unwrap();
        let libs = RunLibraries::default();
        assert_eq!(libs.titles(&store, "r1", "ann").await.unwrap().len(), 1);
        {
            let runs = libs.runs.lock().unwrap();
            let snap = runs.iter().find(|s| s.run_id == "r1").unwrap();
            assert!(snap.titles.is_some());
            assert!(snap.documents.is_none(), "too big to keep");
        }
        store.create("ann", "Small", "Keep more.").await.unwrap();
        // Not kept, so read when needed (and then it shows the newer document).
        let docs = libs.documents(&store, "r1", "ann").await.unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].content.len(), MAX_CACHED_BYTES);
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
            documents: None,
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
