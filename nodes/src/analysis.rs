//! Each document analysed once, not at every turn: its passages with their terms, and the
//! sentences in which it says it replaces another document.
//!
//! A chat turn ranks the user's whole library against the request (the document resolver,
//! the validation of inputs, the question answerer), and cutting documents into passages and
//! stemming their words was most of PalAssist's own CPU per turn. The analysis depends only
//! on the document's id, title and text, so a process-wide memo keeps it for every turn and
//! every user: an entry is used only while the document it was made from is byte for byte
//! the one asked about, and a full memo forgets its least recently used documents. The
//! texts it keeps also spare a store reading them again ([`kept_text`]).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock, Mutex};

use crate::documents::Document;
use crate::passages::{self, Passage};
use crate::text::sentences;

/// The document text the memo keeps at most (the analyses come on top, a few times this).
const MAX_BYTES: usize = 32 << 20;
/// The documents the memo keeps at most.
const MAX_DOCUMENTS: usize = 4096;

/// Words that say a document replaces another (lower case, each ending its phrase).
const REPLACES: [&str; 6] = [
    "replaces ",
    "supersedes ",
    "replace ",
    "supersede ",
    "in place of ",
    "repeals ",
];

/// What a document says, ready to rank.
pub(crate) struct Analysis {
    /// Its passages in document order, unnumbered and unscored.
    pub(crate) passages: Vec<Passage>,
    /// Each passage's terms, heading included ([`passages::passage_terms`]).
    pub(crate) terms: Vec<HashSet<String>>,
    /// Each passage's terms in reading order, heading first, for phrase matching.
    pub(crate) sequences: Vec<Vec<String>>,
    /// Its sentences that say it replaces something: the sentence verbatim, and what follows
    /// the word that says so (the name of the document replaced).
    pub(crate) replaces: Vec<(String, String)>,
}

impl Analysis {
    fn of(doc: &Document) -> Analysis {
        let passages = passages::split(doc);
        let terms = passages.iter().map(passages::passage_terms).collect();
        let sequences = passages.iter().map(passages::passage_sequence).collect();
        let replaces = sentences(&doc.content)
            .into_iter()
            .filter_map(|s| {
                let after = replaced_name(&s)?.to_string();
                Some((s, after))
            })
            .collect();
        Analysis {
            passages,
            terms,
            sequences,
            replaces,
        }
    }
}

/// What follows the first word of [`REPLACES`] (in that order) that `sentence` holds, any
/// case. The words are ASCII, so a match starts and ends on character boundaries whatever
/// the rest of the sentence is.
fn replaced_name(sentence: &str) -> Option<&str> {
    let bytes = sentence.as_bytes();
    REPLACES.iter().find_map(|w| {
        let w = w.as_bytes();
        let at = bytes
            .windows(w.len())
            .position(|window| window.eq_ignore_ascii_case(w))?;
        sentence.get(at + w.len()..)
    })
}

/// The analysis of `doc`, from the memo when it holds this very document.
pub(crate) fn analysis(doc: &Document) -> Arc<Analysis> {
    if let Some(found) = MEMO.lock().ok().and_then(|mut m| m.get(doc)) {
        return found;
    }
    let made = Arc::new(Analysis::of(doc));
    if let Ok(mut memo) = MEMO.lock() {
        memo.put(doc, Arc::clone(&made));
    }
    made
}

/// The text of document `id`, when the memo keeps it with this title and `len` bytes of
/// text. A document is never changed (it is created, read and deleted), so the text the memo
/// keeps for its id is its text: a store reading a library asks here before reading texts
/// (see `SqlDocumentStore::library`).
pub(crate) fn kept_text(id: &str, title: &str, len: usize) -> Option<String> {
    let mut memo = MEMO.lock().ok()?;
    memo.clock += 1;
    let clock = memo.clock;
    let kept = memo.entries.get_mut(id)?;
    if kept.title != title || kept.content.len() != len {
        return None;
    }
    kept.used = clock;
    Some(kept.content.clone())
}

static MEMO: LazyLock<Mutex<Memo>> = LazyLock::new(|| Mutex::new(Memo::default()));

/// The analyses by document id, each with the document it was made from and when it was
/// last used.
#[derive(Default)]
struct Memo {
    entries: HashMap<String, Kept>,
    bytes: usize,
    clock: u64,
}

struct Kept {
    title: String,
    content: String,
    analysis: Arc<Analysis>,
    used: u64,
}

impl Kept {
    fn bytes(&self) -> usize {
        self.title.len() + self.content.len()
    }
}

impl Memo {
    fn get(&mut self, doc: &Document) -> Option<Arc<Analysis>> {
        self.clock += 1;
        let clock = self.clock;
        let kept = self.entries.get_mut(&doc.id)?;
        if kept.title != doc.title || kept.content != doc.content {
            return None;
        }
        kept.used = clock;
        Some(Arc::clone(&kept.analysis))
    }

    fn put(&mut self, doc: &Document, analysis: Arc<Analysis>) {
        let size = doc.title.len() + doc.content.len();
        if size > MAX_BYTES / 8 {
            // Kept, it would push out many others.
            return;
        }
        self.clock += 1;
        let kept = Kept {
            title: doc.title.clone(),
            content: doc.content.clone(),
            analysis,
            used: self.clock,
        };
        if let Some(old) = self.entries.insert(doc.id.clone(), kept) {
            self.bytes -= old.bytes();
        }
        self.bytes += size;
        if self.entries.len() > MAX_DOCUMENTS || self.bytes > MAX_BYTES {
            self.evict();
        }
    }

    /// Forgets the least recently used quarter of the documents, and more until the text
    /// kept is within three quarters of [`MAX_BYTES`].
    fn evict(&mut self) {
        let mut by_age: Vec<(u64, usize)> =
            self.entries.values().map(|k| (k.used, k.bytes())).collect();
        by_age.sort_unstable();
        let quarter = by_age.len().div_ceil(4);
        let mut bytes = self.bytes;
        let mut cutoff = 0;
        for (i, (used, size)) in by_age.into_iter().enumerate() {
            if i >= quarter && bytes <= MAX_BYTES / 4 * 3 {
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
    use crate::documents::test_doc as doc;
    use crate::text;

    #[test]
    fn the_analysis_is_the_passages_and_their_terms() {
        let d = doc(
            "analysis-a",
            "Policy",
            "## Retention\n\nRecords are kept seven years.\n\n- Backups expire.",
        );
        let a = analysis(&d);
        assert_eq!(a.passages, passages::split(&d));
        let expected: Vec<HashSet<String>> =
            a.passages.iter().map(passages::passage_terms).collect();
        assert_eq!(a.terms, expected);
        assert_eq!(a.sequences[0][0], text::terms("Retention")[0]);
        assert!(a.replaces.is_empty());
    }

    #[test]
    fn a_kept_text_is_given_back_only_for_its_title_and_size() {
        let d = doc("analysis-kept", "Kept", "Seven b");
        assert_eq!(kept_text(&d.id, &d.title, 7), None, "not analysed yet");
        let _ = analysis(&d);
        assert_eq!(kept_text(&d.id, "Kept", 7).as_deref(), Some("Seven b"));
        assert_eq!(kept_text(&d.id, "Kept", 8), None, "another size");
        assert_eq!(kept_text(&d.id, "Other", 7), None, "another title");
    }

    #[test]
    fn a_changed_document_is_analysed_again() {
        let first = analysis(&doc("analysis-b", "T", "Old text about audits."));
        let again = analysis(&doc("analysis-b", "T", "Old text about audits."));
        assert!(
            Arc::ptr_eq(&first, &again),
            "the same document is served from the memo"
        );
        let changed = analysis(&doc("analysis-b", "T", "New text about retention."));
        assert!(!Arc::ptr_eq(&first, &changed));
        assert!(changed.terms[0].contains(&text::terms("retention")[0]));
        let retitled = analysis(&doc("analysis-b", "U", "New text about retention."));
        assert_eq!(retitled.passages[0].title, "U");
    }

    #[test]
    fn replacing_sentences_are_found_in_any_case_and_any_script() {
        assert_eq!(
            replaced_name("This Standard SUPERSEDES the Vendor Policy."),
            Some("the Vendor Policy.")
        );
        // Lower-casing "İ" lengthens it: an offset found in the lower-cased sentence would
        // cut "é" in half here.
        assert_eq!(replaced_name("İ replaces é."), Some("é."));
        assert_eq!(replaced_name("Nothing to see."), None);
        let a = analysis(&doc(
            "analysis-c",
            "New",
            "Approved in 2024. Replaces the Old Policy.\n\nMore.",
        ));
        assert_eq!(
            a.replaces,
            [(
                "Replaces the Old Policy.".to_string(),
                "the Old Policy.".to_string()
            )]
        );
    }

    #[test]
    fn a_full_memo_forgets_the_least_recently_used() {
        let mut memo = Memo::default();
        let docs: Vec<Document> = (0..MAX_DOCUMENTS + 1)
            .map(|i| doc(&format!("m{i}"), "T", "x"))
            .collect();
        let tiny = Arc::new(Analysis::of(&docs[0]));
        for (i, d) in docs.iter().enumerate() {
            memo.put(d, Arc::clone(&tiny));
            if i > 0 {
                // The first document stays in use.
                assert!(memo.get(&docs[0]).is_some(), "after {i} puts");
            }
        }
        assert!(memo.entries.len() <= MAX_DOCUMENTS);
        assert!(memo.entries.len() >= MAX_DOCUMENTS / 2);
        assert!(memo.get(&docs[1]).is_none(), "the least recently used went");
        assert!(
            memo.get(&docs[MAX_DOCUMENTS]).is_some(),
            "the newest stayed"
        );
        assert_eq!(
            memo.bytes,
            memo.entries.values().map(Kept::bytes).sum::<usize>()
        );
    }

    #[test]
    fn the_memo_keeps_to_its_byte_budget() {
        let mut memo = Memo::default();
        let big = "y".repeat(MAX_BYTES / 16);
        let tiny = Arc::new(Analysis::of(&doc("t", "T", "x")));
        for i in 0..40 {
            memo.put(&doc(&format!("b{i}"), "T", &big), Arc::clone(&tiny));
            assert!(memo.bytes <= MAX_BYTES, "after {i} puts: {}", memo.bytes);
        }
        assert!(memo.get(&doc("b39", "T", &big)).is_some());
        // Too big to keep at all.
        let huge = "z".repeat(MAX_BYTES / 4);
        memo.put(&doc("h", "T", &huge), tiny);
        assert!(memo.get(&doc("h", "T", &huge)).is_none());
    }
}
