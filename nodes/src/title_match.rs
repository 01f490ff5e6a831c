//! Matching names to document titles with string similarity (strsim): a word of a name
//! matches a word of a title when their normalized Levenshtein similarity is at least
//! [`SIMILARITY`] (0.85), so "retension" still finds "Retention"; numbers must match
//! exactly, so "2023" never finds "2024". A parenthesized part of a title is an alias:
//! "Capital Requirements Regulation (CRR)" is found by its words or by "CRR"; a part that
//! only says which version ("(2024 edition)") is not an alias.

use std::cell::RefCell;
use std::collections::HashSet;

use foldhash::{HashMap, HashMapExt as _};
use std::sync::{Arc, LazyLock, Mutex};

use crate::state::DocRef;
use crate::text::{name_terms as terms, singular, tokens};
use crate::version_words::is_version_word;

/// The similarity at or above which two words, or a name and a title, match.
pub(crate) const SIMILARITY: f64 = 0.85;

/// Scores within this of the best count as a tie (an ambiguous name).
const TIE: f64 = 0.01;

/// Title words that do not tell documents apart.
const FILLER: [&str; 7] = [
    "excerpt", "extract", "draft", "final", "version", "copy", "v",
];

/// A document and how well it matched.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Scored {
    /// The document.
    pub(crate) doc: DocRef,
    /// The match score (0..1).
    pub(crate) score: f64,
}

/// A title's terms: its main words, and each parenthesized alias, each with its number
/// among all the titles' terms (see [`term_id`]).
struct TitleTerms {
    main: Vec<Term>,
    aliases: Vec<Vec<Term>>,
    all: Vec<Term>,
}

/// A title's term and its number.
struct Term {
    id: u32,
    text: String,
}

impl Term {
    fn of(text: String) -> Term {
        Term {
            id: term_id(&text),
            text,
        }
    }
}

/// Each title term's number, the same for the same term in every title: a text's words
/// are matched to a term once, and looked up by number for every title that has it.
fn term_id(term: &str) -> u32 {
    static IDS: LazyLock<Mutex<HashMap<String, u32>>> =
        LazyLock::new(|| Mutex::new(HashMap::new()));
    let mut ids = IDS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&id) = ids.get(term) {
        return id;
    }
    let id = u32::try_from(ids.len()).unwrap_or(u32::MAX);
    ids.insert(term.to_string(), id);
    id
}

/// A title's terms, from a memo of the titles seen (a library's titles are matched on
/// every turn; taking each apart once is most of the matching's cost saved).
static TITLE_MEMO: LazyLock<Mutex<HashMap<String, Arc<TitleTerms>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn title_terms(title: &str) -> Arc<TitleTerms> {
    if let Some(t) = TITLE_MEMO.lock().ok().and_then(|m| m.get(title).cloned()) {
        return t;
    }
    let made = Arc::new(read_title_terms(title));
    if let Ok(mut memo) = TITLE_MEMO.lock() {
        if memo.len() >= MEMO_TITLES {
            memo.clear();
        }
        memo.insert(title.to_string(), Arc::clone(&made));
    }
    made
}

/// The terms of each of `docs`' titles, the memo locked once for them all.
fn terms_of(docs: &[DocRef]) -> Vec<Arc<TitleTerms>> {
    let mut found: Vec<Option<Arc<TitleTerms>>> = match TITLE_MEMO.lock() {
        Ok(m) => docs.iter().map(|d| m.get(&d.title).cloned()).collect(),
        Err(_) => vec![None; docs.len()],
    };
    for (d, slot) in docs.iter().zip(found.iter_mut()) {
        if slot.is_none() {
            *slot = Some(title_terms(&d.title));
        }
    }
    found.into_iter().flatten().collect()
}

/// At most this many titles' terms are kept.
const MEMO_TITLES: usize = 16_384;

fn read_title_terms(title: &str) -> TitleTerms {
    let mut main_text = String::new();
    let mut aliases = Vec::new();
    let mut extra = Vec::new();
    let mut rest = title;
    while let Some(open) = rest.find('(') {
        main_text.push_str(&rest[..open]);
        match rest[open..].find(')') {
            Some(close) => {
                let alias = terms(&rest[open + 1..open + close]);
                // "(2024 edition)" says which version, not another name.
                if alias.iter().all(|t| is_version_word(t)) {
                    extra.extend(alias);
                } else {
                    aliases.push(alias);
                }
                rest = &rest[open + close + 1..];
            }
            None => {
                rest = &rest[open + 1..];
            }
        }
    }
    main_text.push_str(rest);
    let main: Vec<String> = terms(&main_text)
        .into_iter()
        .filter(|t| !FILLER.contains(&t.as_str()))
        .collect();
    let mut all: HashSet<String> = main.iter().cloned().collect();
    for a in &aliases {
        all.extend(a.iter().cloned());
    }
    all.extend(extra);
    // The initials of its runs of capitalised words: "the SAR policy" names the
    // "Transaction Monitoring and Suspicious Activity Reporting Policy".
    all.extend(initialisms(&main_text));
    let mut all: Vec<String> = all.into_iter().collect();
    all.sort_unstable();
    TitleTerms {
        main: main.into_iter().map(Term::of).collect(),
        aliases: aliases
            .into_iter()
            .map(|a| a.into_iter().map(Term::of).collect())
            .collect(),
        all: all.into_iter().map(Term::of).collect(),
    }
}

/// The initials of each run of three or four capitalised words of a title, as terms
/// ("Suspicious Activity Reporting": "sar"; "and", "of" may sit inside a run).
fn initialisms(title: &str) -> Vec<String> {
    let words: Vec<&str> = title
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let mut out = Vec::new();
    for start in 0..words.len() {
        let mut letters = String::new();
        for w in &words[start..] {
            if matches!(*w, "and" | "of" | "&") && !letters.is_empty() {
                continue;
            }
            let Some(first) = w.chars().next().filter(|c| c.is_uppercase()) else {
                break;
            };
            letters.extend(first.to_lowercase());
            if (3..=4).contains(&letters.chars().count()) {
                out.extend(terms(&letters));
            }
            if letters.chars().count() >= 4 {
                break;
            }
        }
    }
    out
}

fn is_number(w: &str) -> bool {
    w.chars().all(|c| c.is_ascii_digit())
}

/// How alike two words are: 1 when equal, 0 when either is a number and they differ,
/// else their normalized Levenshtein similarity.
fn word_similarity(a: &str, b: &str) -> f64 {
    if a == b {
        1.0
    } else if is_number(a) || is_number(b) {
        0.0
    } else {
        strsim::normalized_levenshtein(a, b)
    }
}

/// Whether two words match: [`word_similarity`] at least [`SIMILARITY`].
///
/// Two words whose lengths differ by more than that share of the longer cannot: their
/// Levenshtein distance is at least the difference. They are not compared letter by letter.
/// Most pairs of a message's words and a title's differ so; with the message's words taken
/// apart once ([`TextWords`]), finding the titles a PalAssist chat message names skips
/// most of the letter-by-letter work.
fn alike(a: &str, b: &str) -> bool {
    let (la, lb) = (a.chars().count(), b.chars().count());
    let (short, long) = (la.min(lb) as f64, la.max(lb) as f64);
    // A margin, so that a pair exactly at the threshold is still compared.
    if short < (SIMILARITY - 1e-9) * long {
        return false;
    }
    word_similarity(a, b) >= SIMILARITY
}

/// A few words (a name's, a message's) that many titles' terms are matched against: which
/// of them each term is alike ([`alike`]), worked out once per term.
struct Words {
    words: Vec<String>,
    /// For each title term met (by its number), whether it is alike one of the words:
    /// 0 not worked out yet, 1 no, 2 yes.
    any: RefCell<Vec<u8>>,
    /// For each title term met (by its number), a bit per word it is alike (for at most 64
    /// words: a name's), and whether it was worked out.
    which: RefCell<Vec<Option<u64>>>,
}

impl Words {
    fn of(mut words: Vec<String>) -> Self {
        words.sort_unstable();
        words.dedup();
        Words {
            words,
            any: RefCell::new(Vec::new()),
            which: RefCell::new(Vec::new()),
        }
    }

    /// Whether `term` is alike one of the words.
    fn has(&self, term: &Term) -> bool {
        let at = term.id as usize;
        if let Some(&m) = self.any.borrow().get(at).filter(|m| **m != 0) {
            return m == 2;
        }
        let m = self.words.iter().any(|w| alike(&term.text, w));
        let mut any = self.any.borrow_mut();
        if any.len() <= at {
            any.resize(at + 1, 0);
        }
        any[at] = if m { 2 } else { 1 };
        m
    }

    /// The words `term` is alike, a bit each (the first 64 words).
    fn alike(&self, term: &Term) -> u64 {
        let at = term.id as usize;
        if let Some(&Some(m)) = self.which.borrow().get(at) {
            return m;
        }
        let m = self
            .words
            .iter()
            .take(64)
            .enumerate()
            .filter(|(_, w)| alike(&term.text, w))
            .fold(0u64, |m, (i, _)| m | (1 << i));
        let mut which = self.which.borrow_mut();
        if which.len() <= at {
            which.resize(at + 1, None);
        }
        which[at] = Some(m);
        m
    }

    /// The share of `wanted` alike one of these words.
    fn share_of(&self, wanted: &[Term]) -> f64 {
        if wanted.is_empty() {
            return 0.0;
        }
        let hits = wanted.iter().filter(|t| self.has(t)).count();
        hits as f64 / wanted.len() as f64
    }

    /// The share of these words alike one of `among`.
    fn share_in(&self, among: &[Term]) -> f64 {
        if self.words.is_empty() {
            return 0.0;
        }
        let hits = if self.words.len() <= 64 {
            among
                .iter()
                .fold(0u64, |m, t| m | self.alike(t))
                .count_ones() as usize
        } else {
            self.words
                .iter()
                .filter(|w| among.iter().any(|t| alike(&t.text, w)))
                .count()
        };
        hits as f64 / self.words.len() as f64
    }
}

/// How well `name` (e.g. "the data retention policy") fits `title`: the share of the
/// name's terms the title contains.
pub(crate) fn name_score(name: &str, title: &str) -> f64 {
    Words::of(terms(name)).share_in(&title_terms(title).all)
}

/// A text's words, as titles are looked for in it: taken apart once for all the titles.
pub(crate) struct TextWords(Words);

impl TextWords {
    /// `text`'s words.
    pub(crate) fn of(text: &str) -> Self {
        TextWords(Words::of(terms(text)))
    }

    /// How fully `title` appears in the text: the share of the title's main words the text
    /// contains, or 1 when a parenthesized alias appears whole.
    pub(crate) fn title_score(&self, title: &str) -> f64 {
        self.score(&title_terms(title))
    }

    fn score(&self, t: &TitleTerms) -> f64 {
        let main = self.0.share_of(&t.main);
        let alias = t
            .aliases
            .iter()
            .map(|a| self.0.share_of(a))
            .fold(0.0, f64::max);
        main.max(alias)
    }
}

fn best_group(mut scored: Vec<Scored>) -> Vec<Scored> {
    scored.retain(|s| s.score >= SIMILARITY);
    scored.sort_by(|a, b| b.score.total_cmp(&a.score));
    let Some(top) = scored.first().map(|s| s.score) else {
        return scored;
    };
    scored.retain(|s| s.score >= top - TIE);
    scored
}

/// The documents a name fits best (several when it fits them equally), or none.
pub(crate) fn match_name(name: &str, docs: &[DocRef]) -> Vec<Scored> {
    let words = Words::of(terms(name));
    best_group(
        docs.iter()
            .zip(terms_of(docs))
            .map(|(d, t)| (d, words.share_in(&t.all)))
            .filter(|(_, score)| *score >= SIMILARITY)
            .map(|(d, score)| Scored {
                doc: d.clone(),
                score,
            })
            .collect(),
    )
}

/// The documents whose titles appear in `text` (all of them, best first).
pub(crate) fn titles_in_text(text: &str, docs: &[DocRef]) -> Vec<Scored> {
    let words = TextWords::of(text);
    let mut scored: Vec<Scored> = docs
        .iter()
        .zip(terms_of(docs))
        .map(|(d, t)| (d, words.score(&t)))
        .filter(|(_, score)| *score >= SIMILARITY)
        .map(|(d, score)| Scored {
            doc: d.clone(),
            score,
        })
        .collect();
    scored.sort_by(|a, b| b.score.total_cmp(&a.score));
    scored
}

/// Reads a typed answer to "which document?": a document id, or one or more names
/// (split on "and", commas, "&", "with"). Returns one group of best matches per part
/// that matched something; an empty list when nothing matched.
pub(crate) fn match_answer(answer: &str, docs: &[DocRef]) -> Vec<Vec<Scored>> {
    let answer = answer.trim();
    if let Some(d) = docs.iter().find(|d| d.id == answer) {
        return vec![vec![Scored {
            doc: d.clone(),
            score: 1.0,
        }]];
    }
    if let Some(d) = docs
        .iter()
        .find(|d| d.title.trim().eq_ignore_ascii_case(answer))
    {
        return vec![vec![Scored {
            doc: d.clone(),
            score: 1.0,
        }]];
    }
    let mut groups: Vec<Vec<Scored>> = Vec::new();
    for part in split_names(answer) {
        let group = match_name(&part, docs);
        if !group.is_empty() && !groups.contains(&group) {
            groups.push(group);
        }
    }
    if groups.is_empty() {
        groups.extend(titles_in_text(answer, docs).into_iter().map(|s| vec![s]));
    }
    groups
}

/// Splits "the AML policy and the CRR, plus X" into names.
pub(crate) fn split_names(text: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    for word in text.split_whitespace() {
        let bare = word.trim_matches(|c: char| !c.is_alphanumeric());
        let lower = bare.to_ascii_lowercase();
        let separator = matches!(
            lower.as_str(),
            "and" | "with" | "plus" | "&" | "vs" | "versus"
        ) || word == "&";
        if separator {
            parts.push(String::new());
            continue;
        }
        let ends_part = word.ends_with(',') || word.ends_with(';');
        if let Some(last) = parts.last_mut() {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word.trim_end_matches([',', ';']));
        }
        if ends_part {
            parts.push(String::new());
        }
    }
    parts.into_iter().filter(|p| !terms(p).is_empty()).collect()
}

/// Whether a title contains a word like `noun` (e.g. "regulation").
pub(crate) fn title_has_word(title: &str, noun: &str) -> bool {
    let noun = singular(&noun.to_lowercase());
    tokens(title).iter().any(|w| singular(w) == noun)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_by_the_initials_of_a_run_of_title_words_fits_it() {
        let docs = [
            DocRef {
                id: "tm".into(),
                title: "Transaction Monitoring and Suspicious Activity Reporting Policy v2.0"
                    .into(),
            },
            DocRef {
                id: "mrm".into(),
                title: "Model Risk Management Policy".into(),
            },
        ];
        let found = match_name("the SAR policy", &docs);
        assert_eq!(found.first().map(|s| s.doc.id.as_str()), Some("tm"));
        let found = match_name("the MRM policy", &docs);
        assert_eq!(found.first().map(|s| s.doc.id.as_str()), Some("mrm"));
    }

    fn docs() -> Vec<DocRef> {
        [
            ("crr", "Capital Requirements Regulation (CRR) — Excerpt"),
            (
                "aml",
                "Anti-Money Laundering (AML) and Know Your Customer (KYC) Policy",
            ),
            ("r23", "Data Retention Policy 2023"),
            ("r24", "Data Retention Policy 2024"),
        ]
        .iter()
        .map(|(id, t)| DocRef {
            id: id.to_string(),
            title: t.to_string(),
        })
        .collect()
    }

    fn ids(v: &[Scored]) -> Vec<&str> {
        v.iter().map(|s| s.doc.id.as_str()).collect()
    }

    #[test]
    fn a_name_matching_two_titles_equally_is_ambiguous() {
        assert_eq!(
            ids(&match_name("the data retention policy", &docs())),
            ["r23", "r24"]
        );
        assert_eq!(ids(&match_name("2024 retention policy", &docs())), ["r24"]);
    }

    #[test]
    fn words_too_different_in_length_are_not_compared_and_no_match_is_lost() {
        // Every pair, lengths 1 to 24 around the threshold (6 of 7 is within it, 5 of 6 not;
        // 17 of 20 exactly at it), letters beyond ASCII, numbers, and typos.
        let mut words: Vec<String> = (1..=24)
            .map(|n| "retention".repeat(3)[..n].into())
            .collect();
        words.extend((1..=24).map(|n| "abcdefghijklmnopqrstuvwx"[..n].to_string()));
        words.extend(
            [
                "retension",
                "retentions",
                "rétention",
                "café",
                "cafe",
                "cafés",
                "2023",
                "2024",
            ]
            .map(String::from),
        );
        words.extend([
            "x".repeat(17),
            "x".repeat(20),
            format!("{}yyy", "x".repeat(17)),
        ]);
        let mut matched = 0;
        for a in &words {
            for b in &words {
                let expected = word_similarity(a, b) >= SIMILARITY;
                assert_eq!(alike(a, b), expected, "{a} / {b}");
                matched += usize::from(expected && a != b);
            }
        }
        assert!(
            matched > 20,
            "the set has pairs that match without being equal: {matched}"
        );
    }

    #[test]
    fn typos_within_the_threshold_still_match_but_numbers_do_not() {
        assert_eq!(
            ids(&match_name("data retension policy 2023", &docs())),
            ["r23"]
        );
        assert!(match_name("travel expense policy", &docs()).is_empty());
        assert!(word_similarity("2023", "2024") < SIMILARITY);
    }

    #[test]
    fn aliases_in_parentheses_name_the_document() {
        assert_eq!(ids(&match_name("the AML policy", &docs())), ["aml"]);
        assert_eq!(
            ids(&titles_in_text("what does the CRR say", &docs())),
            ["crr"]
        );
        assert_eq!(
            ids(&titles_in_text(
                "the capital requirements regulation on buffers",
                &docs()
            )),
            ["crr"]
        );
        assert!(titles_in_text("what are the capital requirements?", &docs()).is_empty());
    }

    #[test]
    fn answers_name_documents_by_id_title_or_names() {
        assert_eq!(ids(&match_answer("r24", &docs())[0]), ["r24"]);
        assert_eq!(
            ids(&match_answer("Data Retention Policy 2023", &docs())[0]),
            ["r23"]
        );
        let two = match_answer("the AML policy and the CRR", &docs());
        assert_eq!(two.len(), 2);
        assert_eq!(ids(&two[1]), ["crr"]);
        assert!(match_answer("nothing like it", &docs()).is_empty());
    }
}
