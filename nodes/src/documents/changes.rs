//! [`LibraryChanges`]: how a store tells whether a user's library it read before may have
//! changed since, so a library can be kept from one turn to the next instead of read again
//! by every turn (one statement and its round trip a PalAssist turn).
//!
//! A store that can tell ([`DocumentStore::library_changes`]) hands out a [`LibraryStamp`]
//! per owner that moves whenever a document of that owner is added, changed or removed, and
//! whenever the store cannot vouch for what it heard (then every stamp moves). A library
//! read while the stamp stayed the same is current for as long as the stamp stays the same:
//! take the stamp, read, take it again, and keep the read only when the two are equal.
//!
//! - [`super::MemoryDocumentStore`] moves the stamp itself on every write (one process).
//! - [`super::PostgresDocumentStore`] made [`with_change_feed`] is told of every commit
//!   that touches the `documents` table, by whichever replica or client, through
//!   `LISTEN palgraph_documents` (a trigger, migration 4, notifies the owner): the store
//!   moves the stamp at once for its own writes, and for another replica's when the
//!   notification arrives, which Postgres sends as the change commits (well under a
//!   millisecond on one host). While the listening connection is down the store vouches for
//!   nothing (every read goes to the database) and everything kept before is dropped when it
//!   listens again.
//! - A SQLite store tells nothing: a file may be shared by processes that cannot tell each
//!   other (every turn reads its library; on SQLite that read is in-process).
//!
//! Stamps are counted in [`BUCKETS`] buckets of owners: a change moves the stamp of every
//! owner in its bucket (a needless read for them, never a stale one), and the memory used
//! does not grow with the number of owners.
//!
//! [`DocumentStore::library_changes`]: super::DocumentStore::library_changes
//! [`with_change_feed`]: super::SqlDocumentStore::with_change_feed

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// The buckets owners' stamps are counted in.
pub const BUCKETS: usize = 1024;

/// The channel on which Postgres announces a change to an owner's documents (the owner is
/// the payload; an empty payload, from `TRUNCATE`, means every owner).
pub const CHANNEL: &str = "palgraph_documents";

/// What a library read was current at: equal stamps mean nothing changed in between.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LibraryStamp {
    epoch: u64,
    count: u64,
}

/// Change counters for the owners of one store (see the module docs).
#[derive(Debug)]
pub struct LibraryChanges {
    /// Whether the store hears of every change now (an always-live store: from the start).
    live: AtomicBool,
    /// Moves when the store stops or starts hearing changes: every stamp moves with it.
    epoch: AtomicU64,
    buckets: Box<[AtomicU64]>,
    /// Keys the owners' hash (fixed for the process).
    hasher: foldhash::fast::FixedState,
}

impl LibraryChanges {
    /// Counters that hear every change from the start: a store that moves them itself on
    /// every write, in one process.
    pub fn live() -> Self {
        let c = Self::not_live();
        c.live.store(true, Ordering::SeqCst);
        c
    }

    /// Counters that vouch for nothing until [`Self::listening`] says otherwise.
    pub fn not_live() -> Self {
        LibraryChanges {
            live: AtomicBool::new(false),
            epoch: AtomicU64::new(0),
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            hasher: foldhash::fast::FixedState::with_seed(0x7061_6c67),
        }
    }

    /// The owner's stamp now; `None` while the store does not hear every change (nothing
    /// read then may be kept).
    pub fn stamp(&self, owner: &str) -> Option<LibraryStamp> {
        let epoch = self.epoch.load(Ordering::SeqCst);
        let live = self.live.load(Ordering::SeqCst);
        let count = self.buckets[self.bucket(owner)].load(Ordering::SeqCst);
        // The epoch moves before the store starts or stops hearing changes: a stamp taken
        // across such a moment is no stamp (it could match one taken before a loss).
        (live && self.epoch.load(Ordering::SeqCst) == epoch)
            .then_some(LibraryStamp { epoch, count })
    }

    /// The owner's documents changed (or may have): moves the owner's stamp.
    pub fn changed(&self, owner: &str) {
        self.buckets[self.bucket(owner)].fetch_add(1, Ordering::SeqCst);
    }

    /// Any owner's documents may have changed: moves every stamp.
    pub fn all_changed(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// The store hears every change from now on (`true`), or no longer does (`false`);
    /// either way what was read before is no longer vouched for.
    pub fn listening(&self, live: bool) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        self.live.store(live, Ordering::SeqCst);
    }

    fn bucket(&self, owner: &str) -> usize {
        // BUCKETS is a power of two: the low bits of the hash.
        (self.hasher.hash_one(owner) as usize) & (BUCKETS - 1)
    }
}

/// How long the feed waits before listening again after its connection failed.
const RETRY: Duration = Duration::from_millis(500);

/// Starts the task that tells `changes` of every change Postgres announces on [`CHANNEL`]
/// (on a connection of `pool`'s, held while the task runs). The task ends when `changes` is
/// dropped (at its next notification or retry) or the pool is closed.
pub(super) fn watch_postgres(pool: sqlx::PgPool, changes: Weak<LibraryChanges>) {
    tokio::spawn(async move {
        loop {
            let mut listener = match listen(&pool).await {
                Ok(l) => l,
                Err(e) => {
                    if pool.is_closed() || changes.strong_count() == 0 {
                        return;
                    }
                    tracing::warn!(error = %e, "cannot LISTEN for document changes; retrying");
                    tokio::time::sleep(RETRY).await;
                    continue;
                }
            };
            // Every change from here on is heard; what was kept before may be stale.
            match changes.upgrade() {
                Some(c) => c.listening(true),
                None => return,
            }
            loop {
                let heard = listener.try_recv().await;
                let Some(c) = changes.upgrade() else { return };
                match heard {
                    Ok(Some(n)) if n.payload().is_empty() => c.all_changed(),
                    Ok(Some(n)) => c.changed(n.payload()),
                    // The connection dropped and the listener listens again on a new one:
                    // whatever was announced in between was not heard.
                    Ok(None) => c.all_changed(),
                    Err(e) => {
                        c.listening(false);
                        if pool.is_closed() {
                            return;
                        }
                        tracing::warn!(error = %e, "lost LISTEN for document changes; retrying");
                        tokio::time::sleep(RETRY).await;
                        break;
                    }
                }
            }
        }
    });
}

async fn listen(pool: &sqlx::PgPool) -> Result<sqlx::postgres::PgListener, sqlx::Error> {
    let mut listener = sqlx::postgres::PgListener::connect_with(pool).await?;
    listener.listen(CHANNEL).await?;
    Ok(listener)
}

/// A store's feed of changes, started on first use (it needs a runtime to run on).
pub(super) struct Feed {
    changes: Arc<LibraryChanges>,
    start: std::sync::Once,
    starter: Box<dyn Fn(Weak<LibraryChanges>) + Send + Sync>,
}

impl Feed {
    /// A feed whose counters `starter` keeps told, once asked for within a runtime.
    pub(super) fn new(starter: impl Fn(Weak<LibraryChanges>) + Send + Sync + 'static) -> Self {
        Feed {
            changes: Arc::new(LibraryChanges::not_live()),
            start: std::sync::Once::new(),
            starter: Box::new(starter),
        }
    }

    /// The counters, the feed started if it was not (outside a runtime it cannot start:
    /// `None`, and every read goes to the database).
    pub(super) fn changes(&self) -> Option<&LibraryChanges> {
        if tokio::runtime::Handle::try_current().is_err() && !self.start.is_completed() {
            return None;
        }
        self.start
            .call_once(|| (self.starter)(Arc::downgrade(&self.changes)));
        Some(&self.changes)
    }

    /// The counters as they are, without starting the feed (a write moves them whether or
    /// not the feed runs).
    pub(super) fn counters(&self) -> &LibraryChanges {
        &self.changes
    }
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed")
            .field("changes", &self.changes)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_change_moves_its_owners_stamp_and_not_every_other() {
        let c = LibraryChanges::live();
        let ann = c.stamp("ann").unwrap();
        let others: Vec<_> = (0..50).map(|i| c.stamp(&format!("user{i}"))).collect();
        c.changed("ann");
        assert_ne!(c.stamp("ann").unwrap(), ann);
        let moved = (0..50)
            .filter(|i| c.stamp(&format!("user{i}")) != others[*i])
            .count();
        assert!(
            moved <= 2,
            "only owners sharing ann's bucket move ({moved})"
        );
    }

    #[test]
    fn stamps_move_together_when_everything_may_have_changed() {
        let c = LibraryChanges::live();
        let before = c.stamp("ann").unwrap();
        c.all_changed();
        assert_ne!(c.stamp("ann").unwrap(), before);
    }

    #[test]
    fn counters_not_listening_vouch_for_nothing_and_listening_again_moves_every_stamp() {
        let c = LibraryChanges::not_live();
        assert_eq!(c.stamp("ann"), None);
        c.listening(true);
        let heard = c.stamp("ann").unwrap();
        c.listening(false);
        assert_eq!(c.stamp("ann"), None);
        c.listening(true);
        assert_ne!(
            c.stamp("ann").unwrap(),
            heard,
            "what was kept before the loss is dropped"
        );
    }

    #[test]
    fn a_feed_asked_for_outside_a_runtime_does_not_start() {
        let started = Arc::new(AtomicBool::new(false));
        let s = started.clone();
        let feed = Feed::new(move |_| s.store(true, Ordering::SeqCst));
        assert!(feed.changes().is_none());
        assert!(!started.load(Ordering::SeqCst));
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            assert!(feed.changes().is_some());
        });
        assert!(started.load(Ordering::SeqCst));
        // Started once, it answers anywhere.
        assert!(feed.changes().is_some());
    }
}
