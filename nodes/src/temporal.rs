//! The temporal keyword scan: words that ask about the present ("latest", "recent",
//! "current", "now", "today") and this year or last year written as numbers turn web search
//! on, whatever the LLM thinks. A word that only says which version of a document ("the
//! current policy", "the latest edition", "the retention policy now in force", "the 2025
//! edition") asks about the user's library, not the world: it turns nothing on.

use crate::text::tokens;

const WORDS: [&str; 7] = [
    "latest",
    "recent",
    "recently",
    "current",
    "currently",
    "now",
    "today",
];

/// Whether `text` asks about the present: a temporal word, or `year` or `year - 1` as a
/// number.
pub fn asks_about_present(text: &str, year: i32) -> bool {
    let this_year = year.to_string();
    let last_year = (year - 1).to_string();
    let words = tokens(text);
    words.iter().enumerate().any(|(i, w)| {
        let temporal = WORDS.contains(&w.as_str()) || *w == this_year || *w == last_year;
        temporal && !names_a_version(&words, i)
    })
}

/// Words that name a document or one of its versions.
const DOCUMENT_WORDS: [&str; 16] = [
    "policy",
    "procedure",
    "standard",
    "regulation",
    "rules",
    "version",
    "edition",
    "document",
    "guideline",
    "memo",
    "handbook",
    "manual",
    "framework",
    "one",
    "text",
    "revision",
];

/// Whether the word at `i` only says which version of a document: a document word within
/// the next three words or the one before ("the current retention policy", "policy 2025"),
/// or "now in force".
fn names_a_version(words: &[String], i: usize) -> bool {
    let doc = |w: &String| DOCUMENT_WORDS.contains(&crate::text::singular(w).as_str());
    words[i + 1..words.len().min(i + 4)].iter().any(doc)
        || i.checked_sub(1).is_some_and(|k| doc(&words[k]))
        || (words[i] == "now"
            && words.get(i + 1).is_some_and(|w| w == "in")
            && words.get(i + 2).is_some_and(|w| w == "force"))
}

/// The current year (UTC), from the system clock.
pub fn current_year() -> i32 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    year_of_day(i64::try_from(secs / 86_400).unwrap_or(0))
}

/// The proleptic Gregorian year of a day counted from 1970-01-01 (Howard Hinnant's
/// civil-from-days algorithm).
fn year_of_day(days: i64) -> i32 {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    i32::try_from(year).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporal_words_and_recent_years_ask_about_the_present() {
        assert!(asks_about_present("What is the latest guidance?", 2026));
        assert!(asks_about_present("rules as of today", 2026));
        assert!(asks_about_present("changes in 2025", 2026));
        assert!(asks_about_present("changes in 2026", 2026));
        assert!(!asks_about_present("changes in 2023", 2026));
        assert!(!asks_about_present("I know the policy", 2026));
        assert!(!asks_about_present("Is this still enforced?", 2026));
        assert!(!asks_about_present(
            "What does the current conflicts policy say?",
            2026
        ));
        assert!(!asks_about_present(
            "Under the retention policy now in force",
            2026
        ));
        assert!(!asks_about_present("Summarize the 2026 edition", 2026));
        assert!(asks_about_present(
            "What is the current CET1 requirement in the news?",
            2026
        ));
    }

    #[test]
    fn years_of_days() {
        assert_eq!(year_of_day(0), 1970);
        assert_eq!(year_of_day(19_722), 2023); // 2023-12-31
        assert_eq!(year_of_day(19_723), 2024); // 2024-01-01
        assert_eq!(year_of_day(20_513), 2026); // 2026-03-01
        assert!(current_year() >= 2024);
    }
}
