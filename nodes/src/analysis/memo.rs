//! A memo of what was made from documents, by document id: an entry is given back only
//! for the title and the text's size it was made from (a document's text never changes, so
//! its id, title and size say it is the one), and a full memo forgets its least recently
//! used documents, by count and by the bytes each entry is said to take.

use std::sync::Arc;

/// What is kept of one document.
struct Kept<T> {
    title: String,
    len: usize,
    value: Arc<T>,
    bytes: usize,
    used: u64,
}

/// The memo (see the module docs).
pub(super) struct Memo<T> {
    entries: foldhash::HashMap<String, Kept<T>>,
    bytes: usize,
    clock: u64,
    max_bytes: usize,
    max_entries: usize,
}

impl<T> Memo<T> {
    /// An empty memo of at most `max_bytes` and `max_entries` documents.
    pub(super) fn new(max_bytes: usize, max_entries: usize) -> Self {
        Memo {
            entries: foldhash::HashMap::default(),
            bytes: 0,
            clock: 0,
            max_bytes,
            max_entries,
        }
    }

    /// What was made from document `id` with this title and `len` bytes of text.
    pub(super) fn get(&mut self, id: &str, title: &str, len: usize) -> Option<Arc<T>> {
        self.clock += 1;
        let clock = self.clock;
        let kept = self.entries.get_mut(id)?;
        if kept.title != title || kept.len != len {
            return None;
        }
        kept.used = clock;
        Some(Arc::clone(&kept.value))
    }

    /// Keeps `value`, made from document `id` with this title and `len` bytes of text, as
    /// taking `bytes`. Something larger than the whole memo is not kept.
    pub(super) fn put(&mut self, id: &str, title: &str, len: usize, value: Arc<T>, bytes: usize) {
        if bytes > self.max_bytes {
            return;
        }
        self.clock += 1;
        let kept = Kept {
            title: title.to_string(),
            len,
            value,
            bytes,
            used: self.clock,
        };
        if let Some(old) = self.entries.insert(id.to_string(), kept) {
            self.bytes -= old.bytes;
        }
        self.bytes += bytes;
        if self.entries.len() > self.max_entries || self.bytes > self.max_bytes {
            self.evict();
        }
    }

    /// Forgets the least recently used quarter of the documents, and more until the bytes
    /// kept are within three quarters of the budget.
    fn evict(&mut self) {
        let mut by_age: Vec<(u64, usize)> =
            self.entries.values().map(|k| (k.used, k.bytes)).collect();
        by_age.sort_unstable();
        let quarter = by_age.len().div_ceil(4);
        let mut bytes = self.bytes;
        let mut cutoff = 0;
        for (i, (used, size)) in by_age.into_iter().enumerate() {
            if i >= quarter && bytes <= self.max_bytes / 4 * 3 {
                break;
            }
            bytes -= size;
            cutoff = used;
        }
        // Stamps are unique: this forgets exactly the documents counted above.
        self.entries.retain(|_, k| k.used > cutoff);
        self.bytes = bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = 64;

    #[test]
    fn a_full_memo_forgets_the_least_recently_used() {
        let mut memo: Memo<()> = Memo::new(usize::MAX, MAX);
        let one = Arc::new(());
        for i in 0..=MAX {
            memo.put(&format!("m{i}"), "T", 1, Arc::clone(&one), 1);
            if i > 0 {
                // The first document stays in use.
                assert!(memo.get("m0", "T", 1).is_some(), "after {i} puts");
            }
        }
        assert!(memo.entries.len() <= MAX);
        assert!(memo.entries.len() >= MAX / 2);
        assert!(
            memo.get("m1", "T", 1).is_none(),
            "the least recently used went"
        );
        assert!(
            memo.get(&format!("m{MAX}"), "T", 1).is_some(),
            "the newest stayed"
        );
        assert_eq!(
            memo.bytes,
            memo.entries.values().map(|k| k.bytes).sum::<usize>()
        );
    }

    #[test]
    fn the_memo_keeps_to_its_byte_budget() {
        let budget = 1 << 20;
        let mut memo: Memo<()> = Memo::new(budget, usize::MAX);
        let one = Arc::new(());
        for i in 0..40 {
            memo.put(&format!("b{i}"), "T", 1, Arc::clone(&one), budget / 16);
            assert!(memo.bytes <= budget, "after {i} puts: {}", memo.bytes);
        }
        assert!(memo.get("b39", "T", 1).is_some());
        // Too big to keep at all.
        memo.put("h", "T", 1, one, budget + 1);
        assert!(memo.get("h", "T", 1).is_none());
    }

    #[test]
    fn an_entry_is_given_back_only_for_its_title_and_size() {
        let mut memo: Memo<u8> = Memo::new(100, 10);
        memo.put("d", "Kept", 7, Arc::new(1), 1);
        assert_eq!(memo.get("d", "Kept", 7).as_deref(), Some(&1));
        assert!(memo.get("d", "Kept", 8).is_none(), "another size");
        assert!(memo.get("d", "Other", 7).is_none(), "another title");
    }
}
