//! Small text tools the resolvers and the offline answers share: words, terms (words
//! without stop words: stemmed with synonyms folded for retrieval, see
//! [`crate::vocabulary`], or only made singular for matching names to titles), sentences,
//! shortening, and removing mention labels from a message.

use std::collections::HashSet;
use std::sync::OnceLock;

/// Lower-case words: runs of letters and digits (`"CET1 ratio, 4.5%"` -> `cet1 ratio 4 5`).
pub(crate) fn tokens(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Folds a plural to its singular (`requirements` -> `requirement`, `policies` ->
/// `policy`): names and document nouns are compared this way, so a typo in a title still
/// matches by similarity (a stemmer would cut the words too short for that).
pub(crate) fn singular(word: &str) -> String {
    let n = word.chars().count();
    if n > 4 && word.ends_with("ies") {
        return format!("{}y", &word[..word.len() - 3]);
    }
    if word.ends_with("sses") {
        return word[..word.len() - 2].to_string();
    }
    if n > 3
        && word.ends_with('s')
        && !word.ends_with("ss")
        && !word.ends_with("us")
        && !word.ends_with("is")
    {
        return word[..word.len() - 1].to_string();
    }
    word.to_string()
}

const STOPWORDS: &str = "a about above after again all also am an and any are as at be because been \
before being below between both but by can could did do does doing done down during each either \
few for from further had has have having he her here hers him his how i if in into is it its itself \
just let like may me might more most must my myself no nor not now of off on once one only or other \
our ours out over own per please same shall she should so some such than that the their theirs them \
then there these they this those through to too under until up upon us very was we were what when \
where which while who whom whose why will with within would yes yet you your yours i'm it's tell say says \
said give show know want need could would long often quickly soon many much every anything \
something everything nothing anyone someone anybody somebody altogether including actually really \
ve ll re don isn wasn didn doesn aren weren haven hasn couldn wouldn shouldn";

/// Whether `word` (lower case) carries no meaning on its own.
///
/// The word lists here and in [`crate::vocabulary`] are looked up for every word of every
/// passage a turn reads: they hash with foldhash, not the standard library's SipHash, which
/// is slower for short keys and whose resistance to chosen keys fixed lists do not need.
pub(crate) fn is_stopword(word: &str) -> bool {
    static SET: OnceLock<foldhash::HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| STOPWORDS.split_whitespace().collect())
        .contains(word)
}

/// The retrieval terms of `s`: tokens without stop words, synonyms folded, stemmed.
pub(crate) fn terms(s: &str) -> Vec<String> {
    crate::vocabulary::fold_phrases(tokens(s))
        .into_iter()
        .filter(|w| !is_stopword(w))
        .map(|w| crate::vocabulary::term(&w))
        .collect()
}

/// A term of `text` as `text` writes it ("cleansing" for the term "cleans"), for showing a
/// request's words back to its user; the term itself when no word of `text` has it.
pub(crate) fn as_written(text: &str, term: &str) -> String {
    tokens(text)
        .into_iter()
        .find(|w| crate::vocabulary::term(w) == term)
        .unwrap_or_else(|| term.to_string())
}

/// The words of a name or a title: tokens without stop words, made singular.
pub(crate) fn name_terms(s: &str) -> Vec<String> {
    tokens(s)
        .into_iter()
        .filter(|w| !is_stopword(w))
        .map(|w| singular(&w))
        .collect()
}

const INSTRUCTION_WORDS: &str =
    "summarize summarise summary summaries overview compare comparison \
contrast difference differ versus vs audit check explain describe find list document doc file \
question answer change changed new old latest recent version against still current currently \
enforced valid";

/// The terms of a request that say what it is about, not what to do with it
/// (`"Summarize the retention periods"` -> `retention period`).
pub(crate) fn topic_terms(s: &str) -> Vec<String> {
    static SET: OnceLock<foldhash::HashSet<String>> = OnceLock::new();
    let set = SET.get_or_init(|| {
        INSTRUCTION_WORDS
            .split_whitespace()
            .map(crate::vocabulary::term)
            .collect()
    });
    let mut seen = HashSet::new();
    terms(s)
        .into_iter()
        .filter(|t| !set.contains(t))
        .filter(|t| seen.insert(t.clone()))
        .collect()
}

/// Words a question about the user's library may use besides document nouns.
const LIBRARY_WORDS: &str =
    "have got own upload uploaded available access library stored saved added there all";

/// Nouns that stand for the user's documents in a library question.
const LIBRARY_NOUNS: [&str; 12] = [
    "documents",
    "docs",
    "files",
    "policies",
    "regulations",
    "procedures",
    "standards",
    "memos",
    "texts",
    "uploads",
    "document",
    "file",
];

/// Whether `question` asks which documents the user has ("Which documents do I have?",
/// "List my files") rather than what they say.
pub(crate) fn asks_for_library(question: &str) -> bool {
    let words = tokens(question);
    if !words.iter().any(|w| LIBRARY_NOUNS.contains(&w.as_str())) {
        return false;
    }
    let allowed: HashSet<String> = LIBRARY_WORDS
        .split_whitespace()
        .chain(LIBRARY_NOUNS)
        .map(crate::vocabulary::term)
        .collect();
    topic_terms(question).iter().all(|t| allowed.contains(t))
}

/// The sentences of a text, one list item or line at a time; Markdown headings are left
/// out and list markers removed.
pub(crate) fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = strip_list_marker(line);
        let mut start = 0;
        let chars: Vec<(usize, char)> = line.char_indices().collect();
        for (k, &(i, c)) in chars.iter().enumerate() {
            if !matches!(c, '.' | '!' | '?') {
                continue;
            }
            let next = chars.get(k + 1).map(|p| p.1);
            let after = chars.get(k + 2).map(|p| p.1);
            let ends = match (next, after) {
                (None, _) => true,
                (Some(n), Some(a)) if n.is_whitespace() => {
                    (a.is_uppercase() || a.is_ascii_digit() || a == '"' || a == '(')
                        && !is_abbreviation(&line[start..i])
                }
                _ => false,
            };
            if ends {
                push_sentence(&mut out, &line[start..=i]);
                start = i + c.len_utf8();
            }
        }
        push_sentence(&mut out, &line[start..]);
    }
    out
}

fn push_sentence(out: &mut Vec<String>, s: &str) {
    let s = s.trim();
    if s.chars().any(char::is_alphanumeric) {
        out.push(s.to_string());
    }
}

fn is_abbreviation(before: &str) -> bool {
    let last = before.rsplit(' ').next().unwrap_or("").to_ascii_lowercase();
    matches!(
        last.as_str(),
        "e.g" | "i.e" | "no" | "art" | "nr" | "vs" | "etc" | "cf"
    )
}

/// Removes a leading `- `, `* ` or `1. ` list marker.
pub(crate) fn strip_list_marker(line: &str) -> &str {
    let t = line.trim_start();
    if let Some(rest) = t.strip_prefix("- ").or_else(|| t.strip_prefix("* ")) {
        return rest.trim_start();
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 {
        if let Some(rest) = t[digits..].strip_prefix(". ") {
            return rest.trim_start();
        }
    }
    t
}

/// `s` cut to at most `max` characters at a word boundary, with an ellipsis when cut.
pub(crate) fn shorten(s: &str, max: usize) -> String {
    let s = s.trim();
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max.saturating_sub(1)).collect();
    let cut = match cut.rfind(char::is_whitespace) {
        Some(i) if i > max / 2 => &cut[..i],
        _ => cut.as_str(),
    };
    format!("{}…", cut.trim_end_matches([',', ';', ':', ' ']))
}

/// Collapses runs of whitespace into single spaces.
pub(crate) fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The message without its mentions: every `@label` removed (ASCII case-insensitively,
/// whole words only). Nothing else of the user's text is touched: a title word used in a
/// sentence ("our vendors") stays.
pub(crate) fn strip_mentions(message: &str, labels: &[String]) -> String {
    let mut text = message.to_string();
    let mut labels: Vec<&String> = labels.iter().filter(|l| !l.trim().is_empty()).collect();
    labels.sort_by_key(|l| std::cmp::Reverse(l.len()));
    for label in labels {
        text = remove_ci(&text, &format!("@{label}"));
    }
    squash(&text)
}

/// `haystack` with every whole-word, ASCII case-insensitive occurrence of `needle`
/// replaced by a space.
fn remove_ci(haystack: &str, needle: &str) -> String {
    if needle.is_empty() {
        return haystack.to_string();
    }
    let word_char = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let mut out = String::with_capacity(haystack.len());
    let mut i = 0;
    while i < haystack.len() {
        let hit = haystack
            .get(i..i + needle.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(needle))
            && !word_char(haystack[..i].chars().next_back())
            && !word_char(haystack[i + needle.len()..].chars().next());
        if hit {
            out.push(' ');
            i += needle.len();
            continue;
        }
        let Some(c) = haystack[i..].chars().next() else {
            break;
        };
        out.push(c);
        i += c.len_utf8();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_drop_stopwords_and_fold_plurals() {
        assert_eq!(
            name_terms("What are the capital requirements for policies?"),
            ["capital", "requirement", "policy"]
        );
        assert_eq!(terms("emails kept"), terms("email retained"));
        assert_eq!(tokens("CET1 ratio: 4.5%"), ["cet1", "ratio", "4", "5"]);
    }

    #[test]
    fn topic_terms_leave_out_instructions() {
        assert_eq!(
            topic_terms("Summarize the retention periods of the document"),
            terms("retention periods")
        );
    }

    #[test]
    fn library_questions_are_about_documents_not_their_content() {
        assert!(asks_for_library("Which documents do I have?"));
        assert!(asks_for_library("List my files"));
        assert!(asks_for_library("What policies are available?"));
        assert!(!asks_for_library(
            "Which documents say how long emails are kept?"
        ));
        assert!(!asks_for_library("How long are emails kept?"));
    }

    #[test]
    fn sentences_split_lines_and_full_stops_but_not_abbreviations() {
        let s = sentences(
            "# Title\n\nFirst one. Second, e.g. this one! Third?\n- item five\n1. numbered",
        );
        assert_eq!(
            s,
            [
                "First one.",
                "Second, e.g. this one!",
                "Third?",
                "item five",
                "numbered"
            ]
        );
    }

    #[test]
    fn shorten_cuts_at_a_word() {
        assert_eq!(shorten("short", 10), "short");
        assert_eq!(shorten("one two three four five six", 15), "one two three…");
    }

    #[test]
    fn strip_mentions_removes_labels_case_insensitively() {
        let labels = vec!["CRR".to_string(), "AML Policy".to_string()];
        assert_eq!(
            strip_mentions("Compare @crr with @AML policy please", &labels),
            "Compare with please"
        );
    }

    #[test]
    fn strip_mentions_never_cuts_words_of_the_users_text() {
        let labels = vec!["vendor".to_string()];
        assert_eq!(
            strip_mentions(
                "Audit @vendor: Our critical vendors are reviewed; the vendor may keep our data.",
                &labels
            ),
            "Audit : Our critical vendors are reviewed; the vendor may keep our data."
        );
        assert_eq!(strip_mentions("see @vendors", &labels), "see @vendors");
    }
}
