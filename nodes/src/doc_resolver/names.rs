//! Names in a request matched to the user's documents a family at a time: a name fits a
//! document when its words are in the title (typos within strsim's reach), but the
//! versions of one document are one answer, not a choice to ask about. Which version is
//! the request's: the ones it names ("v1.3", "the 2023 and 2024 editions"), the one
//! before the version in force ("the old policy", "was that different before?"), else the
//! one in force. A name that fits documents of several families equally is ambiguous.

use crate::question::VersionAsk;
use crate::state::DocRef;
use crate::text::tokens;
use crate::title_match::{match_name, Scored};
use crate::version_words::is_version_word;
use crate::versions::Versions;

/// What a name fits.
pub(super) enum Fit {
    /// These documents (with how well the name fits).
    Found(Vec<(DocRef, f64)>),
    /// The versions in force of several families, equally.
    Ambiguous(Vec<DocRef>),
    /// Nothing.
    Unknown,
}

/// A name without its version words, years and version numbers.
pub(super) fn bare(name: &str) -> String {
    let words: Vec<&str> = name.split_whitespace().collect();
    let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    // "last year's", "this year's": a year said relative to now.
    let relative_year = |i: usize| {
        let at = |k: usize| lower.get(k).map(String::as_str).unwrap_or("");
        let year = |k: usize| matches!(at(k), "year" | "year's" | "years");
        matches!(at(i), "last" | "this" | "next") && year(i + 1)
            || year(i) && i > 0 && matches!(at(i - 1), "last" | "this" | "next")
            || at(i) == "s" && i > 0 && year(i - 1)
    };
    words
        .iter()
        .enumerate()
        .filter(|(i, w)| {
            let t = tokens(w);
            !t.iter().all(|t| is_version_word(t)) && !relative_year(*i)
        })
        .map(|(_, w)| *w)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The versions of `id`'s family a request asks for (`asks`): those it names, else the one
/// its standing word asks for, else the one in force; every version when `several` and it
/// names none.
pub(super) fn editions(
    id: &str,
    versions: &Versions,
    asks: &[VersionAsk],
    several: bool,
) -> Vec<DocRef> {
    let named: Vec<&VersionAsk> = asks
        .iter()
        .filter(|a| matches!(a, VersionAsk::Named(_) | VersionAsk::Year(_)))
        .collect();
    let mut out: Vec<DocRef> = Vec::new();
    for a in &named {
        if let Some(d) = versions.asked(id, Some(a)) {
            if !out.iter().any(|x| x.id == d.id) {
                out.push(d);
            }
        }
    }
    if !out.is_empty() {
        return out;
    }
    if several && named.is_empty() && !asks.iter().any(|a| matches!(a, VersionAsk::Previous)) {
        let family = versions.family(id);
        if family.len() > 1 {
            return family;
        }
    }
    let standing = asks
        .iter()
        .find(|a| matches!(a, VersionAsk::Current | VersionAsk::Previous));
    versions
        .asked(id, standing)
        .or_else(|| versions.in_force(id))
        .into_iter()
        .collect()
}

/// Groups matches by family, each family by its best match, best first.
fn families(matches: &[Scored], versions: &Versions) -> Vec<(String, DocRef, f64)> {
    let mut out: Vec<(String, DocRef, f64)> = Vec::new();
    for m in matches {
        let root = versions
            .family(&m.doc.id)
            .first()
            .map_or_else(|| m.doc.id.clone(), |d| d.id.clone());
        match out.iter_mut().find(|(r, _, _)| *r == root) {
            Some(f) if f.2 < m.score => {
                f.1 = m.doc.clone();
                f.2 = m.score;
            }
            Some(_) => {}
            None => out.push((root, m.doc.clone(), m.score)),
        }
    }
    out.sort_by(|a, b| b.2.total_cmp(&a.2));
    out
}

/// What `matches` (the documents a name or a written title fits) come to.
pub(super) fn fit(
    matches: &[Scored],
    versions: &Versions,
    asks: &[VersionAsk],
    several: bool,
) -> Fit {
    let mut fams = families(matches, versions);
    // Versions or years the request names ("the 2026 policy compared with the 2024 one")
    // are those of the families that have them all.
    let named: Vec<&VersionAsk> = asks
        .iter()
        .filter(|a| matches!(a, VersionAsk::Named(_) | VersionAsk::Year(_)))
        .collect();
    if fams.len() > 1 && !named.is_empty() {
        let having: Vec<(String, DocRef, f64)> = fams
            .iter()
            .filter(|(_, d, _)| {
                named
                    .iter()
                    .all(|a| versions.asked(&d.id, Some(a)).is_some())
            })
            .cloned()
            .collect();
        if !having.is_empty() {
            fams = having;
        }
    }
    match fams.as_slice() {
        [] => Fit::Unknown,
        [(_, doc, score)] => Fit::Found(
            editions(&doc.id, versions, asks, several)
                .into_iter()
                .map(|d| (d, *score))
                .collect(),
        ),
        many if several => Fit::Found(
            many.iter()
                .flat_map(|(_, d, s)| {
                    editions(&d.id, versions, asks, false)
                        .into_iter()
                        .map(move |e| (e, *s))
                })
                .collect(),
        ),
        // Each family as the request asks for it ("the 2023 expenses policy": its 2023
        // version).
        many => Fit::Ambiguous(
            many.iter()
                .filter_map(|(_, d, _)| {
                    editions(&d.id, versions, asks, false)
                        .into_iter()
                        .next()
                        .or_else(|| versions.in_force(&d.id))
                })
                .collect(),
        ),
    }
}

/// What a name fits among `library` (see [`fit`]); the name's version words are left out
/// for the match, and say which version.
pub(super) fn resolve(
    name: &str,
    library: &[DocRef],
    versions: &Versions,
    asks: &[VersionAsk],
    several: bool,
) -> Fit {
    let bare = bare(name);
    if bare.trim().is_empty() {
        return Fit::Unknown;
    }
    fit(&match_name(&bare, library), versions, asks, several)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_words_leave_the_name() {
        assert_eq!(bare("current conflicts policy"), "conflicts policy");
        assert_eq!(
            bare("2022 edition of the complaints procedure"),
            "of the complaints procedure"
        );
        assert_eq!(bare("the retention policy v1.2"), "the retention policy");
        assert_eq!(bare("last year s sanctions policy"), "sanctions policy");
    }
}
