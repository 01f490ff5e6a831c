//! Versions of a document in a user's library. Documents are one family when their titles
//! are the same but for a version, a year or an edition ("Gifts and Hospitality Policy
//! v1.3" and "... v2.0", "Complaints Handling Procedure (2022 edition)" and "(2025
//! edition)", two uploads both titled "Personal Account Dealing Policy"), or when one says
//! it replaces the other ("Replaces the Data Retention Policy 2023."). Within a family they
//! are ordered by version number, else effective date, else the title's year; a document
//! that says which version it supersedes is placed after it. The last one is **in force**;
//! each other one is superseded by the next.
//!
//! Documents of one title that give no version, date or year are not taken for versions
//! of each other: nothing says which is newer.
//!
//! Working this out reads every document's header (from its digest, made when it was
//! stored) and matches titles; a small memo keeps the answer for the last libraries seen,
//! by each document's id, title and digest (a document analysed again, its text changed,
//! is a different library).

use std::cmp::Ordering;
use std::collections::VecDeque;
use std::sync::{Arc, LazyLock, Mutex, Weak};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::library::Entry as Listed;
use crate::retrieval::digest::Digest;
use crate::state::DocRef;
use crate::title_match::match_name;

/// A document that replaces another of the user's documents.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Replacement {
    /// The newer document.
    pub newer: DocRef,
    /// The document it replaces.
    pub older: DocRef,
    /// The newer document's sentence that says so, verbatim; or, when no sentence says it,
    /// how the order was told ("v2.0 follows v1.3").
    pub statement: String,
    /// Whether the newer document itself says it replaces the older one.
    #[serde(default)]
    pub stated: bool,
}

/// A document and where it stands among the versions of its family.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Edition {
    /// The document.
    pub doc: DocRef,
    /// Its version as the document gives it ("v2.0", "2024", "effective March 2025").
    pub label: Option<String>,
    /// Whether it is the version in force of its family (a document with no other
    /// version is in force).
    pub in_force: bool,
    /// The version that came after it, when the user has it.
    pub superseded_by: Option<DocRef>,
    /// The version it came after, when the user has it.
    pub supersedes: Option<DocRef>,
}

/// One document of a library, as the versions see it.
#[derive(Clone, Debug)]
struct Entry {
    doc: DocRef,
    label: Option<String>,
    version: Option<crate::docmodel::header::Version>,
    year: Option<u16>,
    /// The date it takes effect (year, month, day; 0 for a day or month not given).
    effective: Option<(u16, u8, u8)>,
    family: usize,
    older: Option<usize>,
    newer: Option<usize>,
    /// The sentence of this document that says it replaces `older`.
    statement: Option<String>,
}

/// The versions among a library's documents.
#[derive(Debug, Default)]
pub(crate) struct Versions {
    entries: Vec<Entry>,
    /// Each entry's index by its document's id.
    by_id: foldhash::HashMap<String, usize>,
}

impl Versions {
    fn find(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    /// Where document `id` stands ([`Edition`]); `None` for a document not in the library.
    pub(crate) fn edition(&self, id: &str) -> Option<Edition> {
        let i = self.find(id)?;
        let e = &self.entries[i];
        Some(Edition {
            doc: e.doc.clone(),
            label: e.label.clone(),
            in_force: e.newer.is_none(),
            superseded_by: e.newer.map(|n| self.entries[n].doc.clone()),
            supersedes: e.older.map(|o| self.entries[o].doc.clone()),
        })
    }

    /// The version in force of `id`'s family.
    pub(crate) fn in_force(&self, id: &str) -> Option<DocRef> {
        let mut i = self.find(id)?;
        while let Some(n) = self.entries[i].newer {
            i = n;
        }
        Some(self.entries[i].doc.clone())
    }

    /// The version before `id`, if the user has it.
    pub(crate) fn previous(&self, id: &str) -> Option<DocRef> {
        let i = self.find(id)?;
        self.entries[i].older.map(|o| self.entries[o].doc.clone())
    }

    /// Whether a newer version of `id` is in the library.
    pub(crate) fn is_superseded(&self, id: &str) -> bool {
        self.find(id)
            .is_some_and(|i| self.entries[i].newer.is_some())
    }

    /// Every version of `id`'s family, oldest first (just `id` when it has no other).
    pub(crate) fn family(&self, id: &str) -> Vec<DocRef> {
        let Some(mut i) = self.find(id) else {
            return Vec::new();
        };
        while let Some(o) = self.entries[i].older {
            i = o;
        }
        let mut out = vec![self.entries[i].doc.clone()];
        while let Some(n) = self.entries[i].newer {
            i = n;
            out.push(self.entries[i].doc.clone());
        }
        out
    }

    /// The version of `id`'s family that `ask` names: a version number, a year, the one in
    /// force, or the one before it; the one in force when `ask` is `None`. `None` when the
    /// family has no such version.
    pub(crate) fn asked(
        &self,
        id: &str,
        ask: Option<&crate::question::VersionAsk>,
    ) -> Option<DocRef> {
        use crate::question::VersionAsk;
        let family = self.family(id);
        let entry = |d: &DocRef| self.find(&d.id).map(|i| &self.entries[i]);
        match ask {
            None | Some(VersionAsk::Current) => self.in_force(id),
            Some(VersionAsk::Previous) => {
                let current = self.in_force(id)?;
                self.previous(&current.id)
            }
            Some(VersionAsk::Named(v)) => family
                .into_iter()
                .find(|d| entry(d).is_some_and(|e| e.version.as_ref() == Some(v))),
            Some(VersionAsk::Year(y)) => family
                .into_iter()
                .find(|d| entry(d).is_some_and(|e| e.year == Some(*y))),
        }
    }

    /// The version of `id`'s family that was in force on `date` (year, month, day; 0 for
    /// a day not given): the one that took effect last on or before it. `None` when the
    /// family's versions give no dates, or the date is before them all.
    pub(crate) fn in_force_on(&self, id: &str, date: (u16, u8, u8)) -> Option<DocRef> {
        let family = self.family(id);
        family
            .iter()
            .filter_map(|d| {
                let e = self.find(&d.id).map(|i| &self.entries[i])?;
                e.effective.filter(|eff| *eff <= date).map(|eff| (eff, d))
            })
            .max_by_key(|(eff, _)| *eff)
            .map(|(_, d)| d.clone())
    }

    /// Whether two documents are versions of one family.
    pub(crate) fn same_family(&self, a: &str, b: &str) -> bool {
        match (self.find(a), self.find(b)) {
            (Some(x), Some(y)) => self.entries[x].family == self.entries[y].family,
            _ => false,
        }
    }

    /// Each document and the one it replaced, newest first within a family.
    pub(crate) fn replacements(&self) -> Vec<Replacement> {
        self.entries
            .iter()
            .filter_map(|e| {
                let o = &self.entries[e.older?];
                let (statement, stated) = match &e.statement {
                    Some(s) => (s.clone(), true),
                    None => (
                        format!(
                            "{} ({}) is a later version of {} ({})",
                            e.doc.title,
                            e.label.as_deref().unwrap_or("newer"),
                            o.doc.title,
                            o.label.as_deref().unwrap_or("older")
                        ),
                        false,
                    ),
                };
                Some(Replacement {
                    newer: e.doc.clone(),
                    older: o.doc.clone(),
                    statement,
                    stated,
                })
            })
            .collect()
    }
}

/// The replacements that concern `docs` (either side among them).
pub(crate) fn concerning(all: &[Replacement], docs: &[DocRef]) -> Vec<Replacement> {
    let has = |d: &DocRef| docs.iter().any(|x| x.id == d.id);
    all.iter()
        .filter(|r| has(&r.newer) || has(&r.older))
        .cloned()
        .collect()
}

/// The libraries whose versions the memo keeps at most.
const MEMO_LIBRARIES: usize = 64;

/// One library's versions, by what they were found from: each document's id, title and
/// digest (held weakly: its allocation stays while the entry does, so no other digest can
/// take its address).
struct Known {
    docs: Vec<(String, String, Weak<Digest>)>,
    versions: Arc<Versions>,
}

impl Known {
    fn holds(&self, library: &[Listed]) -> bool {
        self.docs.len() == library.len()
            && self.docs.iter().zip(library).all(|((id, title, a), doc)| {
                *id == doc.id
                    && *title == doc.title
                    && std::ptr::eq(a.as_ptr(), Arc::as_ptr(&doc.digest))
            })
    }
}

/// The most recently used first.
static MEMO: LazyLock<Mutex<VecDeque<Known>>> = LazyLock::new(|| Mutex::new(VecDeque::new()));

/// A library as a turn read it, and its versions.
type Read = (Weak<Vec<Listed>>, Arc<Versions>);

/// The versions among a library as a turn reads it: the same read (the same list, kept
/// between turns while the library does not change) is answered at once, without asking
/// after each of its documents.
pub(crate) fn versions_of(library: &Arc<Vec<Listed>>) -> Arc<Versions> {
    static READS: LazyLock<Mutex<VecDeque<Read>>> = LazyLock::new(|| Mutex::new(VecDeque::new()));
    let same = |w: &Weak<Vec<Listed>>| std::ptr::eq(w.as_ptr(), Arc::as_ptr(library));
    if let Some(found) = READS
        .lock()
        .ok()
        .and_then(|r| r.iter().find(|(w, _)| same(w)).map(|(_, v)| Arc::clone(v)))
    {
        return found;
    }
    let found = versions(library);
    if let Ok(mut reads) = READS.lock() {
        reads.retain(|(w, _)| w.strong_count() > 0);
        reads.push_front((Arc::downgrade(library), Arc::clone(&found)));
        reads.truncate(MEMO_LIBRARIES);
    }
    found
}

/// The versions among `library`.
pub(crate) fn versions(library: &[Listed]) -> Arc<Versions> {
    if let Ok(mut memo) = MEMO.lock() {
        if let Some(i) = memo.iter().position(|k| k.holds(library)) {
            if let Some(known) = memo.remove(i) {
                let found = Arc::clone(&known.versions);
                memo.push_front(known);
                return found;
            }
        }
    }
    let found = Arc::new(find(library));
    if let Ok(mut memo) = MEMO.lock() {
        memo.push_front(Known {
            docs: library
                .iter()
                .map(|d| (d.id.clone(), d.title.clone(), Arc::downgrade(&d.digest)))
                .collect(),
            versions: Arc::clone(&found),
        });
        memo.truncate(MEMO_LIBRARIES);
    }
    found
}

/// [`versions`] worked out.
fn find(library: &[Listed]) -> Versions {
    let n = library.len();
    let headers: Vec<&crate::docmodel::header::Header> =
        library.iter().map(|d| &d.digest.header).collect();
    // Families: the same family terms; then joined by "replaces <title>" statements.
    let mut family: Vec<usize> = (0..n).collect();
    for i in 0..n {
        if let Some(j) = (0..i)
            .find(|&j| !headers[i].family.is_empty() && headers[j].family == headers[i].family)
        {
            family[i] = family[j];
        }
    }
    // Explicit statements: (newer, older, sentence).
    let mut stated: Vec<(usize, usize, String)> = Vec::new();
    for i in 0..n {
        for s in &headers[i].supersedes {
            let target = if s.version.is_some() || s.year.is_some() {
                // "supersedes version 1.3", "replaces the 2024 edition": within the family.
                (0..n).find(|&j| {
                    j != i
                        && family[j] == family[i]
                        && (s.version.is_some() && headers[j].version == s.version
                            || s.version.is_none() && s.year.is_some() && headers[j].year == s.year)
                })
            } else {
                None
            };
            let target = target.or_else(|| {
                let others: Vec<crate::state::DocRef> = (0..n)
                    .filter(|&j| j != i)
                    .map(|j| library[j].doc_ref())
                    .collect();
                match match_name(&s.name, &others).as_slice() {
                    [one] => library.iter().position(|d| d.id == one.doc.id),
                    _ => None,
                }
            });
            if let Some(j) = target {
                if !stated.iter().any(|(a, b, _)| *a == i && *b == j) {
                    stated.push((i, j, s.sentence.clone()));
                }
                let (from, to) = (family[j], family[i]);
                if from != to {
                    for f in family.iter_mut() {
                        if *f == from {
                            *f = to;
                        }
                    }
                }
            }
        }
    }
    let mut entries: Vec<Entry> = library
        .iter()
        .zip(&headers)
        .enumerate()
        .map(|(i, (d, h))| Entry {
            doc: d.doc_ref(),
            label: h.label(),
            version: h.version.clone(),
            year: h.year.or(h.effective.map(|e| e.year)),
            effective: h.effective.map(|e| (e.year, e.month, e.day)),
            family: family[i],
            older: None,
            newer: None,
            statement: None,
        })
        .collect();
    let mut families: Vec<usize> = family.clone();
    families.sort_unstable();
    families.dedup();
    for f in families {
        let mut members: Vec<usize> = (0..n).filter(|&i| family[i] == f).collect();
        if members.len() < 2 {
            continue;
        }
        let says = |a: usize, b: usize| stated.iter().any(|(x, y, _)| *x == a && *y == b);
        let order = |a: usize, b: usize| -> Option<Ordering> {
            if says(a, b) {
                return Some(Ordering::Greater);
            }
            if says(b, a) {
                return Some(Ordering::Less);
            }
            headers[a].order(headers[b])
        };
        // Versions only where something tells them apart: documents of one family that no
        // version, date, year or statement orders are left standing alone.
        let ordered: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&a| members.iter().any(|&b| b != a && order(a, b).is_some()))
            .collect();
        for &lone in members.iter().filter(|m| !ordered.contains(m)) {
            entries[lone].family = n + lone;
        }
        members = ordered;
        if members.len() < 2 {
            if let Some(&m) = members.first() {
                entries[m].family = n + m;
            }
            continue;
        }
        members.sort_by(|&a, &b| {
            order(a, b).unwrap_or_else(|| library[a].created_at_ms.cmp(&library[b].created_at_ms))
        });
        for w in members.windows(2) {
            let (older, newer) = (w[0], w[1]);
            entries[older].newer = Some(newer);
            entries[newer].older = Some(older);
            entries[newer].statement = stated
                .iter()
                .find(|(a, b, _)| *a == newer && *b == older)
                .map(|(_, _, s)| s.clone());
        }
    }
    let by_id = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.doc.id.clone(), i))
        .collect();
    Versions { entries, by_id }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::{test_doc as doc, Document};

    /// The versions among documents, each analysed.
    fn versions(docs: &[Document]) -> Arc<Versions> {
        let entries: Vec<Listed> = docs.iter().map(Listed::of).collect();
        super::versions(&entries)
    }

    fn ids(v: &[DocRef]) -> Vec<&str> {
        v.iter().map(|d| d.id.as_str()).collect()
    }

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
        let r = versions(&library).replacements();
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].newer.id.as_str(), r[0].older.id.as_str()), ("b", "a"));
        assert_eq!(r[0].statement, "Replaces the Data Retention Policy 2023.");
        assert!(r[0].stated);
        let v = versions(&library);
        assert_eq!(v.in_force("a").unwrap().id, "b");
        assert!(v.is_superseded("a"));
        assert!(!v.is_superseded("c"));
        assert!(v.edition("c").unwrap().in_force);
    }

    /// Two versions of one title, told apart by the version and date in their openings.
    fn dealing_versions() -> [Document; 2] {
        [
            doc(
                "v5",
                "Personal Account Dealing Policy",
                "Version 5 — effective 1 September 2025\n\nRules.",
            ),
            doc(
                "v4",
                "Personal Account Dealing Policy",
                "Version 4 — effective 1 January 2024\n\nRules.",
            ),
        ]
    }

    #[test]
    fn the_version_in_force_on_a_date_is_the_last_to_take_effect_by_then() {
        let library = dealing_versions();
        let v = versions(&library);
        assert_eq!(v.in_force_on("v5", (2024, 11, 0)).unwrap().id, "v4");
        assert_eq!(v.in_force_on("v4", (2025, 9, 1)).unwrap().id, "v5");
        assert!(v.in_force_on("v4", (2023, 6, 1)).is_none());
    }

    #[test]
    fn versions_in_titles_bodies_and_editions_order_a_family() {
        let [v5, v4] = dealing_versions();
        let library = [
            v5,
            v4,
            doc(
                "e25",
                "Complaints Handling Procedure (2025 edition)",
                "Replaces the 2024 edition.",
            ),
            doc(
                "e22",
                "Complaints Handling Procedure (2022 edition)",
                "First.",
            ),
            doc(
                "e24",
                "Complaints Handling Procedure (2024 edition)",
                "Replaces the 2022 edition.",
            ),
            doc("reg", "Gifts Register Procedure", "Version 1."),
            doc(
                "g2",
                "Gifts and Hospitality Policy v2.0",
                "This version supersedes version 1.3.",
            ),
            doc("g1", "Gifts and Hospitality Policy v1.3", "Rules."),
        ];
        let v = versions(&library);
        assert_eq!(ids(&v.family("v4")), ["v4", "v5"]);
        assert_eq!(ids(&v.family("e24")), ["e22", "e24", "e25"]);
        assert_eq!(v.previous("e25").unwrap().id, "e24");
        assert_eq!(ids(&v.family("g1")), ["g1", "g2"]);
        assert_eq!(ids(&v.family("reg")), ["reg"]);
        assert!(!v.same_family("reg", "g1"));
        let stated: Vec<bool> = v.replacements().iter().map(|r| r.stated).collect();
        assert_eq!(
            stated.iter().filter(|s| **s).count(),
            3,
            "{:?}",
            v.replacements()
        );
        assert_eq!(v.edition("v4").unwrap().label.as_deref(), Some("v4"));
    }

    #[test]
    fn one_title_with_nothing_to_order_it_is_not_a_version() {
        let library = [
            doc("x", "Vendor Policy", "Rules."),
            doc("y", "Vendor Policy", "Other rules."),
        ];
        let v = versions(&library);
        assert!(v.replacements().is_empty());
        assert!(!v.same_family("x", "y"));
    }

    #[test]
    fn a_library_changed_in_a_title_or_a_text_is_looked_at_again() {
        let older = doc("versions-memo-a", "Travel Policy 2023", "Version 1.");
        let newer = doc(
            "versions-memo-b",
            "Travel Policy 2024",
            "Version 2. Replaces the Travel Policy 2023.",
        );
        let first = versions(&[older.clone(), newer.clone()]).replacements();
        assert_eq!(first.len(), 1);
        let renamed = doc("versions-memo-a", "Expense Policy 2023", "Version 1.");
        assert!(versions(&[renamed, newer.clone()])
            .replacements()
            .is_empty());
        assert_eq!(versions(&[older, newer]).replacements(), first);
    }
}
