//! The texts of the documents a store has read, by document id: a document is written once
//! and never changed (it is created, read and deleted), so its id names its text for good.
//! A PalAssist turn reads its user's whole library when it is small; with the texts kept,
//! the turn's statement reads each document's id, title and size only, and the texts of
//! documents it has not seen yet with a second one. Each kept text is checked against the
//! size the row says before it is used. A full memo forgets its least recently used texts.

use std::collections::HashMap;
use std::sync::Mutex;

/// The text the memo keeps at most, in bytes.
const MAX_BYTES: usize = 32 << 20;

/// Kept texts (see the module docs).
#[derive(Default)]
pub(super) struct Texts {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    by_id: HashMap<String, Kept>,
    bytes: usize,
    clock: u64,
}

struct Kept {
    text: String,
    used: u64,
}

impl Texts {
    /// The text of document `id` if it is kept and is `len` bytes long.
    pub(super) fn get(&self, id: &str, len: usize) -> Option<String> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.clock += 1;
        let clock = inner.clock;
        let kept = inner.by_id.get_mut(id)?;
        if kept.text.len() != len {
            return None;
        }
        kept.used = clock;
        Some(kept.text.clone())
    }

    /// Keeps document `id`'s text.
    pub(super) fn put(&self, id: &str, text: &str) {
        if text.len() > MAX_BYTES / 8 {
            return;
        }
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.clock += 1;
        let kept = Kept {
            text: text.to_string(),
            used: inner.clock,
        };
        inner.bytes += text.len();
        if let Some(old) = inner.by_id.insert(id.to_string(), kept) {
            inner.bytes -= old.text.len();
        }
        if inner.bytes > MAX_BYTES {
            inner.evict();
        }
    }

    /// Forgets document `id`'s text (it was deleted).
    pub(super) fn forget(&self, id: &str) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(old) = inner.by_id.remove(id) {
            inner.bytes -= old.text.len();
        }
    }
}

impl Inner {
    /// Forgets the least recently used texts until half of [`MAX_BYTES`] is kept.
    fn evict(&mut self) {
        let mut by_age: Vec<(u64, usize)> = self
            .by_id
            .values()
            .map(|k| (k.used, k.text.len()))
            .collect();
        by_age.sort_unstable();
        let mut cutoff = 0;
        for (used, len) in by_age {
            if self.bytes <= MAX_BYTES / 2 {
                break;
            }
            self.bytes -= len;
            cutoff = used;
        }
        // Stamps are unique: this forgets exactly the texts counted above.
        self.by_id.retain(|_, k| k.used > cutoff);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_given_back_only_at_the_size_asked() {
        let texts = Texts::default();
        texts.put("a", "seven b");
        assert_eq!(texts.get("a", 7).as_deref(), Some("seven b"));
        assert_eq!(texts.get("a", 8), None, "another size: not this text");
        assert_eq!(texts.get("b", 7), None);
        texts.forget("a");
        assert_eq!(texts.get("a", 7), None);
    }

    #[test]
    fn a_full_memo_forgets_its_least_recently_used_texts() {
        let texts = Texts::default();
        let big = "x".repeat(MAX_BYTES / 8);
        for i in 0..8 {
            texts.put(&format!("d{i}"), &big);
        }
        // d0 used again: d1 is now the oldest.
        assert!(texts.get("d0", big.len()).is_some());
        texts.put("d8", &big);
        assert!(
            texts.get("d1", big.len()).is_none(),
            "the oldest is forgotten"
        );
        assert!(
            texts.get("d0", big.len()).is_some(),
            "a recently used one is kept"
        );
        assert!(texts.get("d8", big.len()).is_some());
        let inner = texts.inner.lock().unwrap_or_else(|e| e.into_inner());
        assert!(inner.bytes <= MAX_BYTES);
        assert_eq!(
            inner.bytes,
            inner.by_id.values().map(|k| k.text.len()).sum::<usize>()
        );
    }
}
