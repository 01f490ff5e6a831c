//! What a document says about itself: its family (the title without its version, year or
//! edition: "Gifts and Hospitality Policy v2.0" and "... v1.3" are one family), its
//! version ("v2.0", "Version: 3.1", "Version 4 — effective ..."), its edition year, its
//! effective date, and the documents it says it supersedes ("This version supersedes
//! version 1.3", "Replaces the Data Retention Policy 2023.", "replaces the 2024 edition").

use std::cmp::Ordering;

use super::values::words;
use crate::text::{name_terms, sentences};
use crate::version_words::is_version_word;

/// A version number, compared part by part ("1.10" after "1.9").
#[derive(Clone, Debug)]
pub(crate) struct Version(pub(crate) Vec<u32>);

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Version {}

impl Version {
    /// Reads "1.3", "v2.0", "4" (at most four parts of at most four digits each).
    pub(crate) fn parse(s: &str) -> Option<Version> {
        let s = s
            .trim()
            .trim_start_matches(['v', 'V'])
            .trim_end_matches('.');
        if s.is_empty() || s.len() > 19 {
            return None;
        }
        let parts: Option<Vec<u32>> = s
            .split('.')
            .map(|p| {
                (!p.is_empty() && p.len() <= 4 && p.chars().all(|c| c.is_ascii_digit()))
                    .then(|| p.parse().ok())
                    .flatten()
            })
            .collect();
        let parts = parts?;
        (parts.len() <= 4).then_some(Version(parts))
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        let n = self.0.len().max(other.0.len());
        for i in 0..n {
            let (a, b) = (
                self.0.get(i).copied().unwrap_or(0),
                other.0.get(i).copied().unwrap_or(0),
            );
            match a.cmp(&b) {
                Ordering::Equal => {}
                o => return o,
            }
        }
        Ordering::Equal
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.0.iter().map(u32::to_string).collect();
        f.write_str(&parts.join("."))
    }
}

/// A date as precise as the text gives it (month and day 0 when not given), ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Date {
    pub(crate) year: u16,
    pub(crate) month: u8,
    pub(crate) day: u8,
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// The number of the month `w` (lower case) names, from 1.
pub(crate) fn month_number(w: &str) -> Option<u8> {
    MONTHS
        .iter()
        .position(|m| *m == w)
        .and_then(|i| u8::try_from(i + 1).ok())
}

/// Whether `w` (lower case) names a month.
pub(crate) fn is_month(w: &str) -> bool {
    MONTHS.contains(&w)
}

fn month(w: &str) -> Option<u8> {
    let w = w.trim_end_matches('.');
    MONTHS
        .iter()
        .position(|m| {
            *m == w
                || (w.len() >= 3 && m.starts_with(w) && w != "mar" || w == "mar" && *m == "march")
        })
        .and_then(|i| u8::try_from(i + 1).ok())
}

fn year(w: &str) -> Option<u16> {
    let y: u16 = w.parse().ok()?;
    (w.len() == 4 && (1950..=2100).contains(&y)).then_some(y)
}

/// The first date in `text`: "1 January 2024", "January 12, 2024", "March 2025",
/// "2024-01-31", "31/01/2024" (day first), "Q3 2024".
pub(crate) fn first_date(text: &str) -> Option<Date> {
    let ws: Vec<String> = words(text).into_iter().map(|w| w.text).collect();
    for (i, w) in ws.iter().enumerate() {
        // ISO dates and slashed dates survive as one word only when not split: read the
        // raw text for them below.
        if let Some(m) = month(w) {
            let day_before = i
                .checked_sub(1)
                .and_then(|k| ws.get(k))
                .and_then(|d| {
                    d.trim_end_matches(|c: char| c.is_alphabetic())
                        .parse::<u8>()
                        .ok()
                })
                .filter(|d| (1..=31).contains(d));
            let day_after = ws
                .get(i + 1)
                .and_then(|d| {
                    d.trim_end_matches(|c: char| c.is_alphabetic())
                        .parse::<u8>()
                        .ok()
                })
                .filter(|d| (1..=31).contains(d));
            let y = ws
                .get(i + 1)
                .and_then(|y| year(y))
                .or_else(|| ws.get(i + 2).and_then(|y| year(y)));
            if let Some(y) = y {
                return Some(Date {
                    year: y,
                    month: m,
                    day: day_before.or(day_after).unwrap_or(0),
                });
            }
        }
    }
    // 2024-01-31 and 31/01/2024 (words() splits at '-' and '/': read the raw text).
    for token in text.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '|'))
    {
        let t = token.trim_matches(|c: char| !c.is_ascii_digit());
        let parts: Vec<&str> = t.split(['-', '/', '.']).collect();
        if parts.len() != 3 {
            continue;
        }
        let nums: Option<Vec<u16>> = parts.iter().map(|p| p.parse().ok()).collect();
        let Some(n) = nums else { continue };
        let (y, m, d) = if parts[0].len() == 4 {
            (n[0], n[1], n[2])
        } else if parts[2].len() == 4 {
            (n[2], n[1], n[0])
        } else {
            continue;
        };
        if (1950..=2100).contains(&y) && (1..=12).contains(&m) && (1..=31).contains(&d) {
            return Some(Date {
                year: y,
                month: u8::try_from(m).ok()?,
                day: u8::try_from(d).ok()?,
            });
        }
    }
    None
}

/// Words of a title that say which issue it is, besides the shared version words.
const ISSUE_WORDS: [&str; 3] = ["issue", "rev", "ed"];

/// What a document's title and opening say about its version.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Header {
    /// The title without version, year and edition words, as its name terms (singular, no
    /// stop words): documents of one family share it.
    pub(crate) family: Vec<String>,
    /// The version number, from the title or the opening lines.
    pub(crate) version: Option<Version>,
    /// The year the title gives ("Data Retention Policy 2024", "(2022 edition)").
    pub(crate) year: Option<u16>,
    /// The effective (or approval) date the opening gives.
    pub(crate) effective: Option<Date>,
    /// What it says it supersedes: the words after "supersedes", "replaces", "repeals"
    /// or "in place of", each with the sentence that says it.
    pub(crate) supersedes: Vec<Superseded>,
}

/// A document a text says it supersedes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Superseded {
    /// The sentence, verbatim.
    pub(crate) sentence: String,
    /// What follows the verb (a title, "version 1.3", "the 2024 edition").
    pub(crate) name: String,
    /// A version it names ("version 1.3", "v1.3").
    pub(crate) version: Option<Version>,
    /// A year it names ("the 2024 edition", "Policy 2023").
    pub(crate) year: Option<u16>,
}

/// Words that say a document replaces another (lower case, each ending its phrase).
const REPLACES: [&str; 8] = [
    "supersedes ",
    "replaces ",
    "repeals ",
    "supersede ",
    "replace ",
    "in place of ",
    "superseding ",
    "replacing ",
];

/// How many lines from the top the version and date are looked for.
const OPENING_LINES: usize = 14;

impl Header {
    /// Reads a document's header from its title and text.
    pub(crate) fn read(title: &str, content: &str) -> Header {
        let (family, title_version, title_year) = read_title(title);
        let opening: Vec<&str> = content
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .take(OPENING_LINES)
            .collect();
        let opening_text = opening.join("\n");
        let version = title_version.or_else(|| opening_version(&opening));
        let effective = opening
            .iter()
            .find(|l| {
                let l = l.to_lowercase();
                l.contains("effective") || l.contains("in force") || l.contains("valid from")
            })
            .and_then(|l| first_date(l))
            .or_else(|| {
                opening
                    .iter()
                    .find(|l| {
                        let l = l.to_lowercase();
                        l.contains("approved")
                            || l.contains("issued")
                            || l.contains("dated")
                            || l.contains("date")
                    })
                    .and_then(|l| first_date(l))
            });
        let mut supersedes = Vec::new();
        for s in sentences(content) {
            if let Some(name) = replaced_name(&s) {
                let name = name.trim().trim_end_matches(['.', ';', ',']).to_string();
                let version = version_in(&name);
                let year = words(&name).iter().find_map(|w| year(&w.text));
                supersedes.push(Superseded {
                    sentence: s.clone(),
                    name,
                    version,
                    year,
                });
            }
        }
        // A version-history table or an opening that only states the versions is read for
        // the version, never for supersession: "1.3 | 2023 | superseded" names the old one.
        let _ = opening_text;
        Header {
            family,
            version,
            year: title_year,
            effective,
            supersedes,
        }
    }

    /// How this document's version orders against another of its family: by version
    /// number when both have one, else by effective date, else by the title's year.
    pub(crate) fn order(&self, other: &Header) -> Option<Ordering> {
        if let (Some(a), Some(b)) = (&self.version, &other.version) {
            if a != b {
                return Some(a.cmp(b));
            }
        }
        if let (Some(a), Some(b)) = (self.effective, other.effective) {
            if a != b {
                return Some(a.cmp(&b));
            }
        }
        if let (Some(a), Some(b)) = (self.year, other.year) {
            if a != b {
                return Some(a.cmp(&b));
            }
        }
        None
    }

    /// A short label of the version: "v2.0", "2024 edition", "effective March 2025".
    pub(crate) fn label(&self) -> Option<String> {
        if let Some(v) = &self.version {
            return Some(format!("v{v}"));
        }
        if let Some(y) = self.year {
            return Some(y.to_string());
        }
        self.effective.map(|d| {
            if d.month > 0 {
                format!(
                    "effective {} {}",
                    capitalized(MONTHS[usize::from(d.month - 1)]),
                    d.year
                )
            } else {
                format!("effective {}", d.year)
            }
        })
    }
}

fn capitalized(w: &str) -> String {
    let mut c = w.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

/// What follows the first word of [`REPLACES`] that `sentence` holds, any case.
pub(crate) fn replaced_name(sentence: &str) -> Option<&str> {
    let bytes = sentence.as_bytes();
    REPLACES.iter().find_map(|w| {
        let w = w.as_bytes();
        let at = bytes
            .windows(w.len())
            .position(|window| window.eq_ignore_ascii_case(w))?;
        // "will be replaced", "is replaced by": passive forms say the opposite.
        let before = sentence[..at].to_lowercase();
        if before.trim_end().ends_with(" be")
            || before.trim_end().ends_with(" is")
            || before.trim_end().ends_with(" been")
        {
            return None;
        }
        sentence.get(at + w.len()..)
    })
}

/// A version number a text names: "version 1.3", "v1.3", "Version: 2".
pub(crate) fn version_in(text: &str) -> Option<Version> {
    let lower = text.to_lowercase();
    let tokens: Vec<&str> = lower
        .split(|c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    ',' | ';' | ':' | '(' | ')' | '|' | '—' | '–' | '*' | '_' | '#'
                )
        })
        .filter(|t| !t.is_empty())
        .collect();
    for (i, t) in tokens.iter().enumerate() {
        let t = t.trim_end_matches('.');
        if let Some(rest) = t.strip_prefix('v') {
            if rest.chars().next().is_some_and(|c| c.is_ascii_digit()) {
                if let Some(v) = Version::parse(rest) {
                    return Some(v);
                }
            }
        }
        if matches!(t, "version" | "ver" | "rev" | "revision" | "issue") {
            if let Some(v) = tokens.get(i + 1).and_then(|n| {
                let n = n
                    .trim_start_matches(['n', 'o', '.', '#'])
                    .trim_end_matches('.');
                Version::parse(n)
            }) {
                return Some(v);
            }
        }
    }
    None
}

/// The version the opening lines give ("Version: 3.1", "Version 4 — effective ...",
/// "Document ID: POL-7 | Version 3"); a version-history table's rows are skipped.
fn opening_version(opening: &[&str]) -> Option<Version> {
    opening
        .iter()
        .filter(|l| !l.trim_start().starts_with('|'))
        .find_map(|l| version_in(l))
}

/// A title's family terms, its version and its year.
fn read_title(title: &str) -> (Vec<String>, Option<Version>, Option<u16>) {
    let version = version_in(title).or_else(|| {
        // A bare "2.0" at the end of a title: "Access Control Standard 2.0".
        title
            .split_whitespace()
            .last()
            .filter(|w| w.contains('.'))
            .and_then(Version::parse)
    });
    let year = words(title).iter().find_map(|w| year(&w.text));
    let family: Vec<String> = name_terms(title)
        .into_iter()
        .filter(|t| !(is_version_word(t) || ISSUE_WORDS.contains(&t.as_str()) || is_month(t)))
        .collect();
    (family, version, year)
}

/// Words of a title that make a document binding: it sets rules.
const BINDING: [&str; 13] = [
    "policy",
    "procedure",
    "standard",
    "regulation",
    "directive",
    "code",
    "act",
    "law",
    "rulebook",
    "manual",
    "handbook",
    "framework",
    "charter",
];

/// Words of a title that make a document an aid to others: it explains, collects or
/// reminds, and the rules are elsewhere.
const AIDS: [&str; 20] = [
    "template",
    "form",
    "checklist",
    "note",
    "notes",
    "faq",
    "faqs",
    "guide",
    "guidance",
    "reference",
    "letter",
    "bulletin",
    "deck",
    "slides",
    "training",
    "newsletter",
    "reminder",
    "minutes",
    "tips",
    "log",
];

/// How much a document's own word counts when documents answer alike: less for an aid
/// (a template, a form, a checklist, training notes, an FAQ, a guide), whose title names
/// no binding kind of document, than for a policy, a procedure or a standard, which sets
/// the rules the aid points to.
pub(crate) fn authority(title: &str) -> f64 {
    let words: Vec<String> = title
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let binding = words.iter().any(|w| BINDING.contains(&w.as_str()));
    let aid = words.iter().any(|w| AIDS.contains(&w.as_str()));
    if aid && !binding {
        AID_AUTHORITY
    } else {
        1.0
    }
}

/// What an aid's answer counts for beside a binding document's (see [`authority`]).
const AID_AUTHORITY: f64 = 0.8;

/// Labels of a document's header lines ("Approved by: ...", "Effective: ...").
const HEADER_LABELS: [&str; 14] = [
    "version",
    "issue",
    "effective",
    "approved by",
    "applies to",
    "owner",
    "policy owner",
    "document owner",
    "supersedes",
    "replaces",
    "issued",
    "classification",
    "document id",
    "next review",
];

/// Whether a line says something of the document rather than a rule: a header line
/// ("Approved by: Executive Committee, 5 December 2023", "Version 1.2, approved by the COO
/// in May 2024") that binds nobody.
pub(crate) fn is_metadata_line(text: &str) -> bool {
    let lower = text
        .trim()
        .trim_start_matches(['*', '#', ' '])
        .to_lowercase();
    let labels = HEADER_LABELS.iter().filter(|l| lower.contains(*l)).count();
    let opens = HEADER_LABELS.iter().any(|l| lower.starts_with(l));
    let replaces = ["supersedes", "replaces"].iter().any(|l| lower.contains(l));
    // A modal verb ("may", not the month "May").
    let binds = text
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| matches!(w, "must" | "shall" | "should" | "may" | "required" | "MUST"));
    (labels >= 2 || (opens || replaces) && text.len() < 160) && !binds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_lines_are_metadata_and_rules_are_not() {
        for line in [
            "Approved by: Information Security Committee, 14 January 2025",
            "Approved by the Board Audit Committee on 11 February 2025.",
            "**Policy owner:** Chief Financial Officer",
            "Version 1.2, approved by the Chief Operating Officer in May 2024.",
            "This policy replaces the Data Retention Policy 2023.",
        ] {
            assert!(is_metadata_line(line), "{line}");
        }
        for line in [
            "List updates published by the list owners are loaded within 6 hours.",
            "Gifts above EUR 100 must be approved by the Head of Compliance.",
        ] {
            assert!(!is_metadata_line(line), "{line}");
        }
    }

    #[test]
    fn titles_give_families_versions_and_years() {
        let h = |t: &str| Header::read(t, "Body.");
        let a = h("Gifts and Hospitality Policy v1.3");
        let b = h("Gifts and Hospitality Policy v2.0");
        assert_eq!(a.family, b.family);
        assert_eq!(a.version, Version::parse("1.3"));
        assert_eq!(b.order(&a), Some(Ordering::Greater));
        assert_eq!(h("Data Retention Policy 2024").year, Some(2024));
        assert_eq!(
            h("Data Retention Policy 2024").family,
            h("Data Retention Policy 2023").family
        );
        assert_eq!(
            h("Complaints Handling Procedure (2022 edition)").family,
            h("Complaints Handling Procedure (2025 edition)").family
        );
        assert_eq!(
            h("Conflicts of Interest Policy — Revised 2025").family,
            h("Conflicts of Interest Policy").family
        );
        assert_eq!(
            h("Access Control Standard 2.0").version,
            Version::parse("2")
        );
        assert_eq!(
            h("Access Control Standard 2.0").family,
            h("Access Control Standard").family
        );
        assert_ne!(h("Gifts Register Procedure").family, a.family);
    }

    #[test]
    fn the_opening_gives_the_version_and_the_date() {
        let h = Header::read(
            "Personal Account Dealing Policy",
            "Owner: Compliance\nVersion 5 — effective 1 September 2025\n\n## 1. Purpose\n\nText.",
        );
        assert_eq!(h.version, Version::parse("5"));
        assert_eq!(
            h.effective,
            Some(Date {
                year: 2025,
                month: 9,
                day: 1
            })
        );
        let h = Header::read(
            "X",
            "Version 1.4, effective 1 May 2023. Applies to all staff.",
        );
        assert_eq!(h.version, Version::parse("1.4"));
        let h = Header::read(
            "X",
            "| Version | Date |\n|---|---|\n| 1.0 | 2020 |\nEffective date: 2024-03-01",
        );
        assert_eq!(
            h.version, None,
            "a history table is not the document's version"
        );
        assert_eq!(
            h.effective,
            Some(Date {
                year: 2024,
                month: 3,
                day: 1
            })
        );
    }

    #[test]
    fn supersession_sentences_name_a_title_a_version_or_an_edition() {
        let h = Header::read(
            "Gifts and Hospitality Policy v2.0",
            "This version supersedes version 1.3 dated 1 March 2023.\n\nGifts will be replaced by vouchers.",
        );
        assert_eq!(h.supersedes.len(), 1);
        assert_eq!(h.supersedes[0].version, Version::parse("1.3"));
        let h = Header::read(
            "Data Retention Policy 2024",
            "Version 4.0. Replaces the Data Retention Policy 2023.",
        );
        assert_eq!(h.supersedes[0].name, "the Data Retention Policy 2023");
        assert_eq!(h.supersedes[0].year, Some(2023));
        assert_eq!(
            replaced_name("This Standard SUPERSEDES the Vendor Policy."),
            Some("the Vendor Policy.")
        );
        assert_eq!(replaced_name("İ replaces é."), Some("é."));
    }

    #[test]
    fn dates_in_the_usual_spellings() {
        let d = |y, m, day| {
            Some(Date {
                year: y,
                month: m,
                day,
            })
        };
        assert_eq!(first_date("approved on 12 March 2023"), d(2023, 3, 12));
        assert_eq!(first_date("March 12, 2023"), d(2023, 3, 12));
        assert_eq!(first_date("in February 2024"), d(2024, 2, 0));
        assert_eq!(first_date("Effective: 2024-01-31"), d(2024, 1, 31));
        assert_eq!(first_date("from 31/01/2024"), d(2024, 1, 31));
        assert_eq!(first_date("no date here, May we?"), None);
    }
}
