//! Each document analysed once, when it is stored, not at every turn: its model
//! ([`DocModel`]: header, outline, sentences read as rules), its clauses as passages, and
//! its [`Digest`] (the terms retrieval matches, where they are, the header).
//!
//! The analysis depends only on the document's id, title and text, and a document's text
//! never changes (it is created, read and deleted), so process-wide memos keep it for every
//! turn and every user, by id, each entry used only while the id comes with the title and
//! the size it was made from ([`memo`]). The digests, which every turn that ranks or lists
//! the library reads, are kept apart and within a budget of their own (they are a small
//! part of an analysis); the whole analyses, which only the documents a turn quotes need,
//! within a smaller one. A store analyses a document as it stores it
//! (`crate::library::prepare`); a document stored by another process is analysed on its
//! first use here.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use crate::docmodel::DocModel;
use crate::documents::Document;
use crate::passages::Passage;
use crate::retrieval::digest::{Digest, Parts};
use crate::state::DocRef;
use crate::text::terms;

mod memo;

use memo::Memo;

/// The whole analyses are kept for documents of at most this many bytes of titles and texts
/// together (an analysis takes some twenty to thirty times its text: this bounds them to
/// about 400 MiB, and holds a quoted document of the largest size accepted).
const MAX_ANALYSED_BYTES: usize = 16 << 20;
/// The most documents whose whole analyses are kept.
const MAX_ANALYSED: usize = 4096;
/// The digests kept take at most this many bytes ([`Digest::bytes`]: a 7.5 MiB handbook's
/// takes about 10 MiB, a policy of a few pages' some 30 KiB).
const MAX_DIGEST_BYTES: usize = 256 << 20;
/// The most documents whose digests are kept.
const MAX_DIGESTS: usize = 65_536;

/// A set of terms, as the retrieval looks them up (hashed with foldhash: these lookups are
/// most of a ranking's cost, see [`crate::text::is_stopword`]).
pub(crate) type Terms = foldhash::HashSet<String>;

/// What a document says, ready to rank and to answer from.
pub(crate) struct Analysis {
    /// The document.
    pub(crate) doc: DocRef,
    /// The document model.
    pub(crate) model: DocModel,
    /// Its clauses as passages, in document order, unnumbered and unscored.
    pub(crate) passages: Vec<Passage>,
    /// What ranking and the library's versions read of it (kept apart from the rest, and
    /// much smaller: see [`Digest`]).
    pub(crate) digest: Arc<Digest>,
}

impl Analysis {
    fn of(doc: &Document) -> Analysis {
        MADE.fetch_add(1, Ordering::Relaxed);
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
        let clause_terms: Vec<Terms> = model
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
        let sentence_terms: Vec<Terms> = model
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
        let digest = Digest::of(Parts {
            model: &model,
            sentence_terms: &sentence_terms,
            clause_terms: &clause_terms,
            title_terms,
            authority: crate::docmodel::header::authority(&doc.title),
            opening: passages.first().cloned(),
        });
        Analysis {
            doc: doc.doc_ref(),
            passages,
            model,
            digest: Arc::new(digest),
        }
    }
}

/// How many documents were analysed in this process (each analysis, not each use).
static MADE: AtomicU64 = AtomicU64::new(0);

/// How many times a document was analysed in this process: a document is analysed when it
/// is stored (or first used, when another process stored it), not when a turn reads it.
pub fn analyses_made() -> u64 {
    MADE.load(Ordering::Relaxed)
}

/// The memos: the whole analyses, and the digests (see the module docs).
struct Memos {
    analyses: Memo<Analysis>,
    digests: Memo<Digest>,
}

static MEMOS: LazyLock<Mutex<Memos>> = LazyLock::new(|| {
    Mutex::new(Memos {
        analyses: Memo::new(MAX_ANALYSED_BYTES, MAX_ANALYSED),
        digests: Memo::new(MAX_DIGEST_BYTES, MAX_DIGESTS),
    })
});

fn memos() -> std::sync::MutexGuard<'static, Memos> {
    MEMOS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The size a document counts for: its title's and its text's bytes.
fn size(doc: &Document) -> usize {
    doc.title.len() + doc.content.len()
}

/// The analysis of `doc`, from the memo when it holds this very document; else made now,
/// and kept with its digest.
pub(crate) fn analysis(doc: &Document) -> Arc<Analysis> {
    if let Some(found) = kept_analysis(&doc.id, &doc.title, doc.content.len()) {
        return found;
    }
    let made = Arc::new(Analysis::of(doc));
    let mut m = memos();
    m.analyses.put(
        &doc.id,
        &doc.title,
        doc.content.len(),
        Arc::clone(&made),
        size(doc),
    );
    let digest = Arc::clone(&made.digest);
    let bytes = digest.bytes();
    m.digests
        .put(&doc.id, &doc.title, doc.content.len(), digest, bytes);
    made
}

/// The whole analysis of document `id`, when the memo keeps it for this title and
/// `len` bytes of text.
pub(crate) fn kept_analysis(id: &str, title: &str, len: usize) -> Option<Arc<Analysis>> {
    memos().analyses.get(id, title, len)
}

/// The digest of document `id`, when the memo keeps it for this title and `len` bytes of
/// text.
pub(crate) fn kept_digest(id: &str, title: &str, len: usize) -> Option<Arc<Digest>> {
    memos().digests.get(id, title, len)
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
        let retention = a.digest.id(&text::terms("Retention")[0]);
        assert!(a.digest.clause_has(0, retention));
        assert_eq!(a.digest.sentences(), a.model.sentences.len());
        assert_eq!(a.digest.opening.as_ref(), a.passages.first());
    }

    #[test]
    fn an_analysed_document_is_kept_with_its_digest() {
        let d = doc("analysis-prepared", "Kept", "Records are kept seven years.");
        assert!(kept_digest(&d.id, &d.title, d.content.len()).is_none());
        let digest = Arc::clone(&analysis(&d).digest);
        let kept = kept_digest(&d.id, "Kept", d.content.len());
        assert!(kept.is_some_and(|k| Arc::ptr_eq(&k, &digest)));
        assert!(kept_analysis(&d.id, "Kept", d.content.len()).is_some());
        assert!(kept_digest(&d.id, "Kept", 8).is_none(), "another size");
        assert!(kept_digest(&d.id, "Other", d.content.len()).is_none());
        assert!(Arc::ptr_eq(&analysis(&d).digest, &digest));
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
        let retention = changed.digest.id(&text::terms("retention")[0]);
        assert!(changed.digest.clause_has(0, retention));
        let retitled = analysis(&doc("analysis-b", "U", "New text about retention."));
        assert_eq!(retitled.passages[0].title, "U");
    }
}
