//! The extractive answer to a question: the best-ranked passages of the documents in play
//! (those within reach of the best), each cut to the sentences that answer (the question's
//! terms, and the kind of value it asks for); then, for each, what another version of its
//! document says on the same point when that differs: the version before the one in force
//! ("the previous version said 10 business days"), or, when the question is about a
//! superseded version, the one in force. A question nothing matches says so, as does one
//! that asks the value of a thing no passage names ("the probation period"), and a
//! question about the library lists the documents.

use std::collections::HashSet;
use std::fmt::Write as _;

use super::{edition, focus, named};
use crate::docmodel::rules;
use crate::docmodel::values::values;
use crate::llm::AnswerRequest;
use crate::passages::Passage;
use crate::question::Question;
use crate::state::DocRef;
use crate::text::{asks_for_library, sentences, shorten, terms};

/// Passages scoring at least this share of the best one are used.
const NEAR_BEST: f64 = 0.8;
/// The factor of a sentence that holds none of a follow-up's own terms.
const FOLLOW_UP_ELSEWHERE: f64 = 0.6;
/// At most this many passages answer.
const MAX_PASSAGES: usize = 3;
/// Below this score, nothing in the documents answers ...
const NOTHING: f64 = 0.3;
/// ... and down to this, the nearest passages are shown as such.
const NEAREST: f64 = 0.15;
/// At most this many nearest passages are shown.
const MAX_NEAREST: usize = 2;
/// Another version's passage must share this much of a passage's terms to be its
/// counterpart.
const SAME_POINT: f64 = 0.35;
/// Words that ask for a kind of value rather than name a thing.
const VALUE_WORDS: [&str; 24] = [
    "longest",
    "shortest",
    "most",
    "least",
    "maximum",
    "minimum",
    "max",
    "min",
    "share",
    "proportion",
    "percentage",
    "amount",
    "number",
    "rate",
    "limit",
    "period",
    "time",
    "deadline",
    "highest",
    "lowest",
    "largest",
    "smallest",
    "biggest",
    "total",
];
/// The longest opening shown for a document in a library listing.
const OPENING_CHARS: usize = 160;

pub(crate) fn inquire(request: &AnswerRequest) -> String {
    if asks_for_library(&request.question) {
        return library(request);
    }
    let q = focus(request);
    if q.topic.is_empty() && q.context.is_empty() && !request.documents.is_empty() {
        return standing(request);
    }
    let in_play = |p: &Passage| request.documents.iter().any(|d| d.id == p.doc_id);
    let mut main: Vec<&Passage> = request.passages.iter().filter(|p| in_play(p)).collect();
    main.sort_by(|a, b| b.score.total_cmp(&a.score));
    let best = main.first().map_or(0.0, |p| p.score);
    if best < NEAREST {
        return nothing_matches(request);
    }
    // What the question asks the value of ("the probation period", "the minimum age"),
    // in words no passage uses: the documents do not say it.
    if let Some(thing) = asked_thing(&request.question) {
        // What the documents name: their titles, headings and text.
        let named_words: HashSet<String> = request
            .documents
            .iter()
            .flat_map(|d| terms(&d.title))
            .chain(request.passages.iter().flat_map(|p| {
                terms(&p.text)
                    .into_iter()
                    .chain(p.heading.as_deref().map(terms).unwrap_or_default())
            }))
            .collect();
        let said = |w: &String| named_words.contains(w);
        // The words of the kind of value asked ("the longest", "what share") and of
        // versions ("the current rate") name no thing.
        let words: Vec<String> = thing
            .split_whitespace()
            .filter(|w| !VALUE_WORDS.contains(w) && !crate::version_words::is_version_word(w))
            .flat_map(terms)
            .collect();
        if !words.is_empty() && !words.iter().all(said) {
            return unsaid(request, &thing, &main);
        }
    }
    if best < NOTHING {
        return nearest(request, &main);
    }
    let mut chosen: Vec<&Passage> = main
        .into_iter()
        .filter(|p| p.score >= best * NEAR_BEST)
        .take(MAX_PASSAGES)
        .collect();
    // A document's passages together, in the order the documents are given.
    chosen.sort_by_key(|p| {
        (
            request.documents.iter().position(|d| d.id == p.doc_id),
            std::cmp::Reverse((p.score * 1e6) as i64),
        )
    });
    let mut out = String::new();
    let mut doc: Option<&str> = None;
    for p in &chosen {
        if doc != Some(p.doc_id.as_str()) {
            doc = Some(p.doc_id.as_str());
            let d = DocRef {
                id: p.doc_id.clone(),
                title: p.title.clone(),
            };
            let _ = writeln!(
                out,
                "{}{} says:\n",
                if out.is_empty() { "" } else { "\n" },
                named(request, &d)
            );
        }
        let place = p
            .heading
            .as_deref()
            .map(|h| format!("{h}: "))
            .unwrap_or_default();
        let _ = writeln!(out, "- {place}{} [{}]", answering(&p.text, &q), p.number);
    }
    let notes = version_notes(request, &chosen, &q);
    if !notes.is_empty() {
        out.push('\n');
        out.push_str(&notes);
    }
    out
}

/// The sentences of `text` that answer `q`: the one covering most of its terms (with the
/// kind of value asked for), and the next when it answers nearly as well; the whole text
/// when it is short.
pub(crate) fn answering(text: &str, q: &Question) -> String {
    let all = sentences(text);
    if all.len() <= 1 {
        return text.to_string();
    }
    // The conversation's terms count for half the request's own ("and for contractors?"
    // after a question on the training deadline: the sentence on contractors).
    let own: HashSet<&String> = q.topic.iter().collect();
    let before: HashSet<&String> = q.context.iter().filter(|t| !own.contains(t)).collect();
    // "The PAC is chaired by ..." speaks of the Product Approval Committee the clause
    // defines.
    let defined = crate::docmodel::acronyms(text);
    let gives = |s: &str| !q.expects.is_empty() && q.answered_by(&rules::read(s));
    let scored: Vec<(f64, &String)> = all
        .iter()
        .map(|s| {
            let mut t: HashSet<String> = terms(s).into_iter().collect();
            crate::docmodel::expand(&mut t, &defined);
            let mut score = own.iter().filter(|w| t.contains(w.as_str())).count() as f64
                + 0.5 * before.iter().filter(|w| t.contains(w.as_str())).count() as f64;
            if gives(s) {
                score += 1.5;
            }
            // A follow-up asks of its own words: a sentence with none of them answers the
            // question before it.
            if !own.is_empty() && !before.is_empty() && !own.iter().any(|w| t.contains(w.as_str()))
            {
                score *= FOLLOW_UP_ELSEWHERE;
            }
            (score, s)
        })
        .collect();
    let top = scored.iter().map(|(s, _)| *s).fold(0.0, f64::max);
    if top <= 0.0 {
        return text.to_string();
    }
    let mut kept: Vec<usize> = scored
        .iter()
        .enumerate()
        .filter(|(_, (s, _))| *s >= top * 0.75)
        .take(2)
        .map(|(k, _)| k)
        .collect();
    // The value asked for, when the sentences kept do not give it and another on the
    // question does ("The firm may keep some of its own money ... The amount must not
    // exceed 3%").
    if !kept.iter().any(|&k| gives(&all[k])) {
        let giving = scored
            .iter()
            .enumerate()
            .filter(|(_, (s, text))| *s > 0.0 && gives(text))
            .max_by(|a, b| a.1 .0.total_cmp(&b.1 .0).then(b.0.cmp(&a.0)))
            .map(|(k, _)| k);
        if let Some(k) = giving {
            kept.push(k);
            kept.sort_unstable();
        }
    }
    // A sentence that goes on with one kept ("Such posts are passed to the Head of
    // Corporate Communications") belongs with it.
    let mut k = 0;
    while k < kept.len() {
        let next = kept[k] + 1;
        if next < all.len() && !kept.contains(&next) && continues(&all[next]) {
            kept.insert(k + 1, next);
        }
        k += 1;
    }
    kept.iter()
        .map(|&k| all[k].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether a sentence goes on with the one before it: it opens by pointing back ("Such
/// posts", "This", "They", "In that case").
fn continues(sentence: &str) -> bool {
    let first = sentence
        .split_whitespace()
        .next()
        .unwrap_or("")
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    matches!(
        first.as_str(),
        "such" | "this" | "these" | "that" | "those" | "they" | "it" | "otherwise"
    ) || sentence.to_lowercase().starts_with("in that case")
        || sentence.to_lowercase().starts_with("in such cases")
}

/// The values of a text as written, in order.
fn figures(text: &str) -> Vec<String> {
    values(text)
        .into_iter()
        .map(|v| v.written.to_lowercase())
        .collect()
}

/// What another version of each chosen passage's document says on the same point, when it
/// says something else: the version before one in force, or the version in force after a
/// superseded one.
fn version_notes(request: &AnswerRequest, chosen: &[&Passage], q: &Question) -> String {
    let mut out = String::new();
    let mut said: HashSet<u32> = HashSet::new();
    for p in chosen {
        let Some(e) = edition(request, &p.doc_id) else {
            continue;
        };
        let (other, newer) = match (&e.superseded_by, &e.supersedes) {
            (Some(newer), _) => (newer, true),
            (None, Some(older)) => (older, false),
            (None, None) => continue,
        };
        let Some(counterpart) = counterpart(request, p, &other.id) else {
            if newer {
                let _ = writeln!(
                    out,
                    "Note: {} has been superseded by {}.",
                    named(request, &e.doc),
                    named(request, other)
                );
            }
            continue;
        };
        if !said.insert(counterpart.number) {
            continue;
        }
        let same = figures(&p.text) == figures(&counterpart.text);
        let quote = answering(&counterpart.text, q);
        if newer {
            let _ = writeln!(
                out,
                "Note: {} has been superseded by {}, which says{}: {} [{}]",
                named(request, &e.doc),
                named(request, other),
                if same { " the same" } else { "" },
                quote,
                counterpart.number
            );
        } else if !same {
            let _ = writeln!(
                out,
                "The previous version, {}, said: {} [{}]",
                named(request, other),
                quote,
                counterpart.number
            );
        }
    }
    out
}

/// The passage of document `other` on the same point as `p`: the given passage of it that
/// shares most of `p`'s terms, if it shares enough.
fn counterpart<'a>(request: &'a AnswerRequest, p: &Passage, other: &str) -> Option<&'a Passage> {
    let mine: HashSet<String> = terms(&p.text)
        .into_iter()
        .filter(|t| !t.chars().any(|c| c.is_ascii_digit()))
        .collect();
    request
        .passages
        .iter()
        .filter(|c| c.doc_id == other)
        .map(|c| {
            let theirs: HashSet<String> = terms(&c.text)
                .into_iter()
                .filter(|t| !t.chars().any(|c| c.is_ascii_digit()))
                .collect();
            let union = mine.union(&theirs).count().max(1);
            (mine.intersection(&theirs).count() as f64 / union as f64, c)
        })
        .filter(|(sim, _)| *sim >= SAME_POINT)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// A question about the documents themselves ("Is it still in force?"): where each stands
/// among its versions, and how it describes itself.
fn standing(request: &AnswerRequest) -> String {
    let mut out = String::new();
    for d in &request.documents {
        let line = match edition(request, &d.id) {
            Some(e) => match (&e.superseded_by, &e.supersedes) {
                (Some(newer), _) => format!(
                    "{} is not the current version: it has been superseded by {}.",
                    named(request, d),
                    named(request, newer)
                ),
                (None, Some(older)) => format!(
                    "{} is the version in force; it replaces {}.",
                    named(request, d),
                    named(request, older)
                ),
                (None, None) => format!(
                    "{} is the only version of it among your documents.",
                    named(request, d)
                ),
            },
            None => format!("{}:", named(request, d)),
        };
        let _ = writeln!(out, "{line}");
        if let Some(p) = request.passages.iter().find(|p| p.doc_id == d.id) {
            let _ = writeln!(out, "- {} [{}]", shorten(&p.text, OPENING_CHARS), p.number);
        }
        out.push('\n');
    }
    for r in request.versions.iter().filter(|r| r.stated) {
        if request
            .documents
            .iter()
            .any(|d| d.id == r.newer.id || d.id == r.older.id)
        {
            let _ = writeln!(out, "{} says: \"{}\"", r.newer.title, r.statement);
        }
    }
    out
}

/// The user's documents, each with its opening.
fn library(request: &AnswerRequest) -> String {
    if request.documents.is_empty() {
        return "You have no documents yet. Upload a .txt or .md file on the documents page."
            .to_string();
    }
    let n = request.documents.len();
    let mut out = format!(
        "You have {n} document{}:\n\n",
        if n == 1 { "" } else { "s" }
    );
    for (i, d) in request.documents.iter().enumerate() {
        let opening = request.passages.iter().find(|p| p.doc_id == d.id);
        match opening {
            Some(p) => {
                let _ = writeln!(
                    out,
                    "{}. {}: {} [{}]",
                    i + 1,
                    named(request, d),
                    shorten(&p.text, OPENING_CHARS),
                    p.number
                );
            }
            None => {
                let _ = writeln!(out, "{}. {}", i + 1, named(request, d));
            }
        }
    }
    out
}

/// The thing a question asks the value of: the noun phrase after "what is the", "how
/// long is the", "what" ("what minimum shareholding ...", "what rate of interest"), with
/// an "of" phrase that completes it; none for other questions.
fn asked_thing(question: &str) -> Option<String> {
    let words: Vec<String> = question
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let w = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
    let how = w(0) == "how" && matches!(w(1), "long" | "much" | "many");
    // "How much notice ...", "how many quotations ...": the thing follows; a unit ("how
    // many days") or a verb ("how much can ...") names none.
    let counted = how
        && w(1) != "long"
        && !crate::text::is_stopword(w(2))
        && !matches!(
            w(2),
            "can"
                | "could"
                | "may"
                | "might"
                | "must"
                | "should"
                | "shall"
                | "will"
                | "would"
                | "do"
                | "does"
                | "did"
                | "have"
                | "has"
                | "need"
                | "needs"
        )
        && !crate::docmodel::values::is_unit_word(w(2));
    let mut opener = match (w(0), w(1)) {
        ("what's", _) => 1,
        ("what", "is" | "are" | "was") => 2,
        ("what", _) => 1,
        _ if how && matches!(w(2), "is" | "are" | "must" | "should") => 3,
        _ if counted => 2,
        _ => return None,
    };
    // "How long are we supposed to keep the CCTV footage?": the thing follows the first
    // article after the verb.
    if how && crate::text::is_stopword(w(opener)) {
        opener = (opener..words.len().min(opener + 8))
            .find(|&k| matches!(w(k), "the" | "our" | "a" | "an" | "your" | "their"))?;
    }
    let mut i = opener;
    if matches!(w(i), "the" | "a" | "an" | "our" | "your") {
        i += 1;
    }
    let stop = |x: &str| {
        crate::text::is_stopword(x)
            || matches!(
                x,
                "do" | "does"
                    | "did"
                    | "must"
                    | "should"
                    | "can"
                    | "need"
                    | "needs"
                    | "have"
                    | "has"
            )
    };
    let start = i;
    while i < words.len() && !stop(w(i)) && i - start < 4 {
        i += 1;
    }
    if i == start {
        return None;
    }
    let mut end = i;
    // "rate of interest", "bonuses of material risk takers"; "the limit on gifts and
    // hospitality", "the deadline for complaints": a kind of value names its thing after it.
    let of_value = i - start == 1 && VALUE_WORDS.contains(&w(start));
    if w(i) == "of" || (of_value && matches!(w(i), "on" | "for")) {
        let mut j = i + 1;
        while j < words.len() && j - i <= 4 && (!stop(w(j)) || (w(j) == "and" && j > i + 1)) {
            j += 1;
        }
        if words[j - 1] == "and" {
            j -= 1;
        }
        if j > i + 1 {
            end = if of_value { j } else { i + 2 };
        }
    }
    Some(words[start..end].join(" "))
}

/// The question asks the value of something no passage of the documents in play names: say
/// they do not mention it, and show the nearest passages for the user to judge.
fn unsaid(request: &AnswerRequest, thing: &str, ranked: &[&Passage]) -> String {
    let titles = super::join_titles(&request.documents);
    let mut out = if request.documents.len() == 1 {
        format!("{titles} does not mention \"{thing}\", so it does not say.")
    } else {
        format!("{titles} do not mention \"{thing}\" and do not say: none of them covers it.")
    };
    out.push_str(" The nearest passages:\n\n");
    for p in ranked.iter().take(MAX_NEAREST) {
        let d = DocRef {
            id: p.doc_id.clone(),
            title: p.title.clone(),
        };
        let _ = writeln!(out, "- {}: {} [{}]", named(request, &d), p.text, p.number);
    }
    out
}

/// Nothing answers in the request's words, but some passages come near: say so, and show
/// them as they are written, for the user to judge.
fn nearest(request: &AnswerRequest, ranked: &[&Passage]) -> String {
    let mut out = format!(
        "I found nothing about \"{}\" in those words. The nearest passages:\n\n",
        request.question.trim()
    );
    for p in ranked.iter().take(MAX_NEAREST) {
        let d = DocRef {
            id: p.doc_id.clone(),
            title: p.title.clone(),
        };
        let place = p
            .heading
            .as_deref()
            .map(|h| format!("{h}: "))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "- {}, {place}{} [{}]",
            named(request, &d),
            p.text,
            p.number
        );
    }
    out
}

/// Nothing in the documents answers: say so, with no figure the documents do not give.
fn nothing_matches(request: &AnswerRequest) -> String {
    if request.documents.is_empty() {
        return format!(
            "I found nothing about \"{}\" in your documents: none of them covers it. Mention the document to look in with @, or ask with other words.",
            request.question.trim()
        );
    }
    let titles = super::join_titles(&request.documents);
    format!(
        "I found nothing about \"{}\" in {titles}: {} not cover it in those words. Try other words, or name the document to look in.",
        request.question.trim(),
        if request.documents.len() == 1 { "it does" } else { "they do" }
    )
}

#[cfg(test)]
mod tests {
    use super::{answering, asked_thing};

    #[test]
    fn the_thing_a_question_asks_the_value_of() {
        for (question, thing) in [
            (
                "How long is the probation period for new joiners?",
                Some("probation period"),
            ),
            (
                "What's the minimum age for a customer to open an account?",
                Some("minimum age"),
            ),
            (
                "What rate of interest do we pay clients?",
                Some("rate of interest"),
            ),
            ("What is the leverage ratio?", Some("leverage ratio")),
            (
                "How much notice do we have to give before we outsource a service?",
                Some("notice"),
            ),
            (
                "How much research spend are we allowed to charge clients?",
                Some("research spend"),
            ),
            ("How many days do we have to reply?", None),
            ("How much can a manager spend on a dinner?", None),
            ("Who approves a gift above EUR 100?", None),
            ("How long do we have to keep emails?", None),
            (
                "What's the limit on gifts and hospitality we can accept?",
                Some("limit on gifts and hospitality"),
            ),
            (
                "How long are we supposed to keep the CCTV footage from the cameras?",
                Some("cctv footage"),
            ),
            (
                "What is the data retention period for customer records?",
                Some("data retention period"),
            ),
        ] {
            assert_eq!(asked_thing(question).as_deref(), thing, "{question}");
        }
    }

    #[test]
    fn the_sentence_with_the_value_asked_for_is_kept() {
        let q = crate::question::read(
            "What's the cap on the buffer of the firm's own money that we keep in client bank accounts?",
        );
        let clause = "The firm may keep some of its own money in client bank accounts as a \
                      prudent segregation amount. The amount must not exceed 3% of the client \
                      money requirement.";
        assert!(answering(clause, &q).contains("3%"));
    }

    #[test]
    fn a_follow_up_is_answered_by_the_sentence_with_its_own_words() {
        let q = crate::question::read_in_context(
            "And for contractors?",
            Some("By when must staff finish the yearly financial crime e-learning?"),
            &Default::default(),
        );
        let clause = "All employees must complete the annual financial crime e-learning by \
                      31 October each year. Contractors must complete it within 14 days of \
                      their start date.";
        assert!(answering(clause, &q).contains("within 14 days"));
    }

    #[test]
    fn the_answering_sentences_read_acronyms_and_keep_what_goes_on_with_them() {
        let q = crate::question::read("Who chairs the product approval committee?");
        let clause = "The Product Approval Committee (PAC) approves every new product. \
                      The PAC is chaired by the Chief Risk Officer. Minutes are kept for 7 years.";
        let a = answering(clause, &q);
        assert!(
            a.contains("chaired by the Chief Risk Officer") && !a.contains("Minutes"),
            "{a}"
        );
        let q = crate::question::read("Can our accounts answer rumours about the share price?");
        let clause = "Corporate accounts must not reply to rumours about the share price. \
                      Such posts are passed to the Head of Corporate Communications. \
                      Accounts are monitored on business days.";
        assert!(answering(clause, &q).ends_with("Head of Corporate Communications."));
    }
}
