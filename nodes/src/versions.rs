//! Versions of a document: a document whose text says it replaces another ("Replaces the
//! Data Retention Policy 2023.", "This standard supersedes ...") is the newer version of
//! the document it names, when the user has that one too. Answers prefer the newer
//! version and say so; an answer from the older one says it has been replaced.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::analysis::analysis;
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

/// Every replacement among `library`: each document sentence saying it replaces, supersedes
/// or repeals a document that `library` holds (matched by title, numbers exactly).
pub(crate) fn replacements(library: &[Document]) -> Vec<Replacement> {
    let titles: Vec<DocRef> = library.iter().map(Document::doc_ref).collect();
    let mut out: Vec<Replacement> = Vec::new();
    for doc in library {
        for (sentence, after) in &analysis(doc).replaces {
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
}
