//! Versions of a document: a document whose text says it replaces another ("Replaces the
//! Data Retention Policy 2023.", "This standard supersedes ...") is the newer version of
//! the document it names, when the user has that one too. Answers prefer the newer
//! version and say so; an answer from the older one says it has been replaced.
//!
//! Finding them matches every such sentence against the titles of the whole library, and a
//! turn asked for them twice (the document resolver, the action): a small memo keeps the
//! answer for the last libraries seen, by each document's id, title and analysis (the
//! analysis is made anew whenever a document's text changes, see [`analysis`]).

use std::collections::VecDeque;
use std::sync::{Arc, LazyLock, Mutex, Weak};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::analysis::{analysis, Analysis};
use crate::documents::Document;
use crate::state::DocRef;
use crate::title_match::match_name;

/// A document that replaces another of the user's documents.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Replacement {
    /// The newer document.
    pub newer: DocRef,
    /// The document it replaces.
    pub older: DocRef,
    /// The newer document's sentence that says so, verbatim.
    pub statement: String,
}

/// The libraries whose replacements the memo keeps at most.
const MEMO_LIBRARIES: usize = 64;
/// The largest library the memo keeps (documents).
const MEMO_MAX_DOCUMENTS: usize = 1024;

/// One library's replacements, by what they were found from: each document's id, title and
/// analysis. The analysis is held weakly: its allocation stays while the entry does, so no
/// other analysis can take its address, and a document analysed again (its text changed,
/// or the analysis memo forgot it) is a different analysis.
struct Known {
    docs: Vec<(String, String, Weak<Analysis>)>,
    found: Vec<Replacement>,
}

impl Known {
    fn holds(&self, library: &[Document], analyses: &[Arc<Analysis>]) -> bool {
        self.docs.len() == library.len()
            && self.docs.iter().zip(library.iter().zip(analyses)).all(
                |((id, title, a), (doc, b))| {
                    *id == doc.id && *title == doc.title && std::ptr::eq(a.as_ptr(), Arc::as_ptr(b))
                },
            )
    }
}

/// The most recently used first.
static MEMO: LazyLock<Mutex<VecDeque<Known>>> = LazyLock::new(|| Mutex::new(VecDeque::new()));

/// Every replacement among `library`: each document sentence saying it replaces, supersedes
/// or repeals a document that `library` holds (matched by title, numbers exactly).
pub(crate) fn replacements(library: &[Document]) -> Vec<Replacement> {
    let analyses: Vec<Arc<Analysis>> = library.iter().map(analysis).collect();
    if let Ok(mut memo) = MEMO.lock() {
        if let Some(i) = memo.iter().position(|k| k.holds(library, &analyses)) {
            if let Some(known) = memo.remove(i) {
                let found = known.found.clone();
                memo.push_front(known);
                return found;
            }
        }
    }
    let found = find(library, &analyses);
    if library.len() <= MEMO_MAX_DOCUMENTS {
        if let Ok(mut memo) = MEMO.lock() {
            memo.push_front(Known {
                docs: library
                    .iter()
                    .zip(&analyses)
                    .map(|(d, a)| (d.id.clone(), d.title.clone(), Arc::downgrade(a)))
                    .collect(),
                found: found.clone(),
            });
            memo.truncate(MEMO_LIBRARIES);
        }
    }
    found
}

/// [`replacements`] worked out: `analyses` are the documents' own, in order.
fn find(library: &[Document], analyses: &[Arc<Analysis>]) -> Vec<Replacement> {
    let titles: Vec<DocRef> = library.iter().map(Document::doc_ref).collect();
    let mut out: Vec<Replacement> = Vec::new();
    for (doc, analysis) in library.iter().zip(analyses) {
        for (sentence, after) in &analysis.replaces {
            let others: Vec<DocRef> = titles.iter().filter(|t| t.id != doc.id).cloned().collect();
            let name = after.trim_end_matches(['.', ';', ',']);
            if let [one] = match_name(name, &others).as_slice() {
                if !out
                    .iter()
                    .any(|r| r.newer.id == doc.id && r.older.id == one.doc.id)
                {
                    out.push(Replacement {
                        newer: doc.doc_ref(),
                        older: one.doc.clone(),
                        statement: sentence.clone(),
                    });
                }
            }
        }
    }
    out
}

/// The replacements that concern `docs` (either side among them).
pub(crate) fn concerning(all: &[Replacement], docs: &[DocRef]) -> Vec<Replacement> {
    let has = |d: &DocRef| docs.iter().any(|x| x.id == d.id);
    all.iter()
        .filter(|r| has(&r.newer) || has(&r.older))
        .cloned()
        .collect()
}

/// The document that replaces `id`, when it is among `docs`.
pub(crate) fn newer_among<'a>(
    versions: &'a [Replacement],
    id: &str,
    docs: &[DocRef],
) -> Option<&'a Replacement> {
    versions
        .iter()
        .find(|r| r.older.id == id && docs.iter().any(|d| d.id == r.newer.id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::test_doc as doc;

    #[test]
    fn a_document_naming_the_one_it_replaces_is_its_newer_version() {
        let library = [
            doc("a", "Data Retention Policy 2023", "Version 3.1."),
            doc(
                "b",
                "Data Retention Policy 2024",
                "Version 4.0, approved in February 2024. Replaces the Data Retention Policy 2023.\n\nMore.",
            ),
            doc("c", "Vendor Standard", "This standard replaces nothing we keep."),
        ];
        let r = replacements(&library);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].newer.id.as_str(), r[0].older.id.as_str()), ("b", "a"));
        assert_eq!(r[0].statement, "Replaces the Data Retention Policy 2023.");
        let only_old = [library[0].doc_ref()];
        assert_eq!(concerning(&r, &only_old).len(), 1);
        assert!(newer_among(&r, "a", &only_old).is_none());
        let both = [library[0].doc_ref(), library[1].doc_ref()];
        assert!(newer_among(&r, "a", &both).is_some());
    }

    #[test]
    fn a_library_changed_in_a_title_or_a_text_is_looked_at_again() {
        let older = doc("versions-memo-a", "Travel Policy 2023", "Version 1.");
        let newer = doc(
            "versions-memo-b",
            "Travel Policy 2024",
            "Version 2. Replaces the Travel Policy 2023.",
        );
        let library = [older.clone(), newer.clone()];
        let first = replacements(&library);
        assert_eq!(first.len(), 1);
        assert_eq!(
            replacements(&library),
            first,
            "the same library, the same answer"
        );

        // The older document renamed: the sentence names no document any more.
        let renamed = doc("versions-memo-a", "Expense Policy 2023", "Version 1.");
        assert!(replacements(&[renamed, newer.clone()]).is_empty());

        // The newer document's text changed: it replaces nothing now.
        let rewritten = doc("versions-memo-b", "Travel Policy 2024", "Version 2.");
        assert!(replacements(&[older.clone(), rewritten]).is_empty());

        // And back: the first library's answer again.
        assert_eq!(replacements(&[older, newer]), first);
    }
}
