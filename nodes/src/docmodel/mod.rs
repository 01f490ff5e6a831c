//! The document model: what a compliance reader uses of a document, read once per
//! document (see `crate::analysis`) and shared by every answer.
//!
//! - [`header`]: its family, version, edition year, effective date, and what it says it
//!   supersedes;
//! - [`outline`]: its sections and clauses (numbered, lettered, list items, table rows);
//! - [`values`]: the values in a text (durations, frequencies, money, percentages, counts,
//!   times relative to an event), compared as ranges;
//! - [`rules`]: each sentence read as a rule: modality, values as limits or conditions,
//!   the events they count from, the roles that approve or are told;
//! - [`facts`]: a described practice read into the same terms, for audits.

pub(crate) mod clauses;
pub(crate) mod facts;
pub(crate) mod header;
pub(crate) mod outline;
pub(crate) mod rules;
pub(crate) mod timeline;
pub(crate) mod values;

use crate::text::{sentences, terms};

use header::Header;
use outline::Outline;
use rules::Reading;

/// A sentence of a document, where it is, and what it says.
#[derive(Clone, Debug)]
pub(crate) struct Sentence {
    /// The clause it is in (an index into the outline's clauses).
    pub(crate) clause: usize,
    /// The sentence as written.
    pub(crate) text: String,
    /// Its retrieval terms.
    pub(crate) terms: Vec<String>,
    /// It read as a rule.
    pub(crate) reading: Reading,
}

/// The acronyms a text defines ("Anti-Money Laundering (AML)", "Money Laundering
/// Reporting Officer (MLRO)"): each acronym's term and the terms of what it stands for.
pub(crate) fn acronyms(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut rest = text;
    let mut offset = 0;
    while let Some(open) = rest.find('(') {
        let after = &rest[open + 1..];
        let Some(close) = after.find(')') else { break };
        let inner = &after[..close];
        let letters: Vec<char> = inner.chars().filter(|c| c.is_ascii_uppercase()).collect();
        let is_acronym = (2..=6).contains(&inner.len())
            && letters.len() >= 2
            && inner
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
        if is_acronym {
            // The capitalised words before the bracket whose initials spell it, read back
            // from the bracket (only as far as they go: a long text has many brackets).
            let before = &text[..offset + open];
            let words = before
                .rsplit(|c: char| c.is_whitespace() || c == '-')
                .filter(|w| !w.is_empty());
            let mut initials = Vec::new();
            let mut taken = Vec::new();
            for w in words {
                if initials.len() == letters.len() {
                    break;
                }
                let first = w.chars().next().unwrap_or(' ');
                if matches!(w, "of" | "and" | "for" | "the" | "&") {
                    taken.push(w);
                    continue;
                }
                if !first.is_uppercase() {
                    break;
                }
                initials.push(first);
                taken.push(w);
            }
            initials.reverse();
            if initials == letters {
                taken.reverse();
                let expansion = terms(&taken.join(" "));
                let acronym = inner.to_lowercase();
                if !out.iter().any(|(a, _)| *a == acronym) {
                    out.push((acronym, expansion));
                }
            }
        }
        offset += open + 1;
        rest = &text[offset..];
    }
    out
}

/// `t` with what the acronyms of `defined` add: a text with an acronym gets the terms of
/// what it stands for, a text with all of those gets the acronym.
pub(crate) fn expand<S: std::hash::BuildHasher>(
    t: &mut std::collections::HashSet<String, S>,
    defined: &[(String, Vec<String>)],
) {
    for (acronym, expansion) in defined {
        if t.contains(acronym) {
            t.extend(expansion.iter().cloned());
        } else if !expansion.is_empty() && expansion.iter().all(|e| t.contains(e)) {
            t.insert(acronym.clone());
        }
    }
}

/// A document as a compliance reader sees it.
#[derive(Clone, Debug)]
pub(crate) struct DocModel {
    pub(crate) header: Header,
    pub(crate) outline: Outline,
    /// Every sentence of every clause, in order.
    pub(crate) sentences: Vec<Sentence>,
}

impl DocModel {
    /// Reads a document.
    pub(crate) fn read(title: &str, content: &str) -> DocModel {
        let header = Header::read(title, content);
        let outline = outline::read(content);
        let mut out = Vec::new();
        for (i, clause) in outline.clauses.iter().enumerate() {
            let meaning = outline::meaning(&clause.text, clause.lead.as_deref());
            for s in sentences(&meaning) {
                out.push(Sentence {
                    clause: i,
                    terms: terms(&s),
                    reading: rules::read(&s),
                    text: s,
                });
            }
        }
        DocModel {
            header,
            outline,
            sentences: out,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acronyms_defined_in_brackets_stand_for_their_words() {
        let a = acronyms("Anti-Money Laundering (AML) and Know Your Customer (KYC) Policy. The Money Laundering Reporting Officer (MLRO) files. In force (NOW).");
        let names: Vec<&str> = a.iter().map(|(a, _)| a.as_str()).collect();
        assert_eq!(names, ["aml", "kyc", "mlro"]);
        assert_eq!(a[0].1, terms("anti money laundering"));
        let mut t: std::collections::HashSet<String> = terms("AML training").into_iter().collect();
        expand(&mut t, &a);
        assert!(t.contains(&terms("laundering")[0]));
    }
}
