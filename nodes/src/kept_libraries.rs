//! Users' libraries kept from one turn to the next, each as current as its store's
//! [`LibraryStamp`] says: a turn whose user's documents did not change since an earlier
//! turn read them uses that read instead of reading the library again (see
//! [`crate::documents::changes`] for which stores can tell, and how soon they hear of a
//! change made elsewhere).
//!
//! At most [`MAX_OWNERS`] libraries are kept, each for at most [`crate::run_library::KEEP`]
//! after it was read; the oldest read goes first. A library read holds no texts, only each
//! document's id, title, size and digest (the digests are shared with the analysis memo).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::documents::LibraryStamp;
use crate::library::Entry;
use crate::run_library::KEEP;
use crate::state::DocRef;

/// The most users whose libraries are kept.
pub const MAX_OWNERS: usize = 256;

/// One user's library as a turn read it.
#[derive(Clone)]
pub(crate) struct Read {
    /// Every document's id and title.
    pub(crate) titles: Arc<Vec<DocRef>>,
    /// Every document, as a turn sees it.
    pub(crate) entries: Arc<Vec<Entry>>,
}

struct Kept {
    owner: String,
    stamp: LibraryStamp,
    read_at: Instant,
    read: Read,
}

/// The kept libraries (see the module docs).
#[derive(Default)]
pub(crate) struct KeptLibraries {
    kept: Mutex<VecDeque<Kept>>,
}

impl KeptLibraries {
    /// The owner's library as last read, if it was read at `stamp` (nothing changed since).
    pub(crate) fn get(&self, owner: &str, stamp: LibraryStamp) -> Option<Read> {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let i = kept.iter().position(|k| k.owner == owner)?;
        if kept[i].stamp == stamp && kept[i].read_at.elapsed() < KEEP {
            return Some(kept[i].read.clone());
        }
        // Changed since, or too old: it will not match again.
        kept.remove(i);
        None
    }

    /// Keeps the owner's library, read while its stamp stayed `stamp`.
    pub(crate) fn put(&self, owner: &str, stamp: LibraryStamp, read: Read) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.retain(|k| k.owner != owner && k.read_at.elapsed() < KEEP);
        while kept.len() >= MAX_OWNERS {
            kept.pop_front();
        }
        kept.push_back(Kept {
            owner: owner.to_string(),
            stamp,
            read_at: Instant::now(),
            read,
        });
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.kept.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::documents::LibraryChanges;

    fn read(n: usize) -> Read {
        let titles = (0..n)
            .map(|i| DocRef {
                id: format!("d{i}"),
                title: "T".into(),
            })
            .collect();
        Read {
            titles: Arc::new(titles),
            entries: Arc::new(Vec::new()),
        }
    }

    #[test]
    fn a_library_is_kept_until_its_owners_stamp_moves() {
        let changes = LibraryChanges::live();
        let kept = KeptLibraries::default();
        let stamp = changes.stamp("ann").unwrap();
        kept.put("ann", stamp, read(2));
        assert_eq!(kept.get("ann", stamp).unwrap().titles.len(), 2);
        assert!(kept.get("bob", changes.stamp("bob").unwrap()).is_none());
        changes.changed("ann");
        assert!(kept.get("ann", changes.stamp("ann").unwrap()).is_none());
        assert_eq!(kept.len(), 0, "a stale library is dropped when found stale");
    }

    #[test]
    fn the_oldest_reads_go_first_past_the_owner_bound() {
        let changes = LibraryChanges::live();
        let kept = KeptLibraries::default();
        for i in 0..MAX_OWNERS + 5 {
            let owner = format!("u{i}");
            kept.put(&owner, changes.stamp(&owner).unwrap(), read(1));
        }
        assert_eq!(kept.len(), MAX_OWNERS);
        assert!(kept.get("u0", changes.stamp("u0").unwrap()).is_none());
        let last = format!("u{}", MAX_OWNERS + 4);
        assert!(kept.get(&last, changes.stamp(&last).unwrap()).is_some());
    }
}
