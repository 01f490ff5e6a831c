//! Each document analysed once, not at every turn: its model ([`DocModel`]: header,
//! outline, sentences read as rules), its clauses as passages, and the terms retrieval
//! matches (each sentence's, each clause's with its section heading, the title's).
//!
//! A chat turn ranks the user's whole library against the request (the document resolver,
//! the validation of inputs, the question answerer), and reading documents was most of
//! PalAssist's own CPU per turn. The analysis depends only on the document's id, title and
//! text, so a process-wide memo keeps it for every turn and every user: an entry is used
//! only while the document it was made from is byte for byte the one asked about, and a
//! full memo forgets its least recently used documents. The texts it keeps also spare a
//! store reading them again ([`kept_text`]).

use std::sync::{Arc, LazyLock, Mutex};

use crate::docmodel::DocModel;
use crate::documents::Document;
use crate::passages::Passage;
use crate::text::terms;

/// The document text the memo keeps at most (the analyses come on top, a few times this).
const MAX_BYTES: usize = 32 << 20;
/// The documents the memo keeps at most.
const MAX_DOCUMENTS: usize = 4096;

/// What a document says, ready to rank and to answer from.
/// A set of terms, as the retrieval looks them up (hashed with foldhash: these lookups are
/// most of a ranking's cost, see [`crate::text::is_stopword`]).
pub(crate) type Terms = foldhash::HashSet<String>;

pub(crate) struct Analysis {
    /// The document model.
    pub(crate) model: DocModel,
    /// Its clauses as passages, in document order, unnumbered and unscored.
    pub(crate) passages: Vec<Passage>,
    /// Each sentence's terms (aligned with `model.sentences`).
    pub(crate) sentence_terms: Vec<Terms>,
    /// Each clause's terms, its section heading's included (aligned with `passages`).
    pub(crate) clause_terms: Vec<Terms>,
    /// Each clause's sentences (indexes into `model.sentences`, aligned with `passages`).
    pub(crate) clause_sentences: Vec<Vec<usize>>,
    /// The title's terms.
    pub(crate) title_terms: Terms,
    /// Whether each sentence describes the document rather than a rule ("This policy sets
    /// out ...": [`crate::retrieval::describes_the_document`]), aligned with
    /// `model.sentences`.
    pub(crate) framing: Vec<bool>,
    /// How much its answers count beside other documents' (an aid less than a policy:
    /// [`crate::docmodel::header::authority`]).
    pub(crate) authority: f64,
}

impl Analysis {
    fn of(doc: &Document) -> Analysis {
        let model = DocModel::read(&doc.title, &doc.content);
        let mut defined = crate::docmodel::acronyms(&doc.title);
        defined.extend(crate::docmodel::acronyms(&doc.content));
        let passages: Vec<Passage> = model
            .outline
            .clauses
            .iter()
            .enumerate()
            .map(|(i, c)| Passage {
                number: 0,
                doc_id: doc.id.clone(),
                title: doc.title.clone(),
                heading: model.outline.place(i),
                clause: c.number.clone(),
                text: c.text.clone(),
                lead: c.lead.clone(),
                score: 0.0,
            })
            .collect();
        let clause_terms = model
            .outline
            .clauses
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut t: Terms = terms(&crate::docmodel::outline::meaning(
                    &c.text,
                    c.lead.as_deref(),
                ))
                .into_iter()
                .collect();
                if let Some(h) = model.outline.heading(i) {
                    t.extend(terms(h));
                }
                crate::docmodel::expand(&mut t, &defined);
                t
            })
            .collect();
        let sentence_terms = model
            .sentences
            .iter()
            .map(|s| {
                let mut t: Terms = s.terms.iter().cloned().collect();
                crate::docmodel::expand(&mut t, &defined);
                t
            })
            .collect();
        let mut title_terms: Terms = terms(&doc.title).into_iter().collect();
        crate::docmodel::expand(&mut title_terms, &defined);
        let mut clause_sentences = vec![Vec::new(); passages.len()];
        for (k, s) in model.sentences.iter().enumerate() {
            if let Some(c) = clause_sentences.get_mut(s.clause) {
                c.push(k);
            }
        }
        let framing = model
            .sentences
            .iter()
            .map(|s| crate::retrieval::describes_the_document(&s.text))
            .collect();
        Analysis {
            framing,
            clause_sentences,
            authority: crate::docmodel::header::authority(&doc.title),
            title_terms,
            passages,
            sentence_terms,
            clause_terms,
            model,
        }
    }
}

/// The analyses of `docs`, in order, from the memo where it holds them (one look at the
/// memo for them all: a library's documents are asked for together on every turn).
pub(crate) fn analyses<'a>(docs: impl IntoIterator<Item = &'a Document>) -> Vec<Arc<Analysis>> {
    let docs: Vec<&Document> = docs.into_iter().collect();
    let mut found: Vec<Option<Arc<Analysis>>> = match MEMO.lock() {
        Ok(mut memo) => docs.iter().map(|d| memo.get(d)).collect(),
        Err(_) => vec![None; docs.len()],
    };
    for (d, slot) in docs.iter().zip(found.iter_mut()) {
        if slot.is_none() {
            *slot = Some(analysis(d));
        }
    }
    found.into_iter().flatten().collect()
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
    entries: foldhash::HashMap<String, Kept>,
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
        // A document's text is never changed (see [`kept_text`]): its id, title and text's
        // length say it is the one analysed, without comparing the text.
        if kept.title != doc.title || kept.content.len() != doc.content.len() {
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
    fn the_analysis_is_the_model_its_clauses_and_their_terms() {
        let d = doc(
            "analysis-a",
            "Policy",
            "## 2. Retention\n\n2.1 Records are kept seven years.\n\n- Backups expire.",
        );
        let a = analysis(&d);
        assert_eq!(a.passages.len(), 2);
        assert_eq!(a.passages[0].heading.as_deref(), Some("§2.1 Retention"));
        assert_eq!(a.passages[0].clause.as_deref(), Some("2.1"));
        assert!(a.clause_terms[0].contains(&text::terms("Retention")[0]));
        assert_eq!(a.sentence_terms.len(), a.model.sentences.len());
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
        assert!(changed.clause_terms[0].contains(&text::terms("retention")[0]));
        let retitled = analysis(&doc("analysis-b", "U", "New text about retention."));
        assert_eq!(retitled.passages[0].title, "U");
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
