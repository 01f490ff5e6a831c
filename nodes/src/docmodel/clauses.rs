//! A described practice's sentences cut into clauses, one act each: at semicolons, at the
//! conjunctions and commas that start another clause, where " and " starts another act of
//! the subject, and where one clause tells two acts on two dates or at two times of day.
//! Each clause is then read as a fact ([`super::facts`]).

use crate::text::terms;

/// Words that open a condition: the clause they open belongs to the clause after it.
const CONDITIONS: [&str; 7] = [
    "if", "where", "when", "whenever", "unless", "once", "provided",
];

/// The clauses of a sentence, verbatim: cut at semicolons and at ", and", ", but", ", so",
/// ", while", ", whereas", ", then", and at a comma that starts another clause ("...
/// every eighteen months, our payroll vendor has two days ...", "... she booked business
/// class, took a taxi ..."); a piece too short to stand alone stays with the one before it.
pub(crate) fn clauses(sentence: &str) -> Vec<String> {
    let mut out = Vec::new();
    for piece in joined_clauses(sentence) {
        let mut rest = piece.as_str();
        while let Some(at) = comma_clause(rest) {
            push(&mut out, &rest[..at]);
            rest = &rest[at + 2..];
        }
        push(&mut out, rest);
    }
    // "Where the reviewer considers it a match, they must escalate it ...": one clause.
    let mut joined: Vec<String> = Vec::new();
    let mut open: Option<String> = None;
    for c in out {
        let c = match open.take() {
            Some(cond) => format!("{cond}, {c}"),
            None => c,
        };
        let first = c.split_whitespace().next().unwrap_or("").to_lowercase();
        if CONDITIONS.contains(&first.as_str()) && !c.contains(", ") {
            open = Some(c);
        } else {
            joined.push(c);
        }
    }
    joined.extend(open);
    joined
}

/// A practice's clause cut where " and " starts another act of its subject (see
/// [`and_clause`]): each act is a fact of its own, with its own time.
pub(super) fn acts(clause: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = clause;
    while let Some((at, skip)) = and_clause(rest) {
        push(&mut out, &rest[..at]);
        rest = &rest[at + skip..];
    }
    push(&mut out, rest);
    out
}

/// A clause that tells two acts on two dates ("Two agents who joined the team on Monday 1
/// September completed their training on Friday 12 September", "Her statement, dated 31
/// March, was reconciled on 8 April"), cut after the first date: each act its own fact,
/// with its own time. A clause with one date, or a range ("between 3 and 7 March"), stays
/// whole.
pub(super) fn dated_apart(clause: &str) -> Vec<String> {
    let dates: Vec<crate::docmodel::values::Value> = crate::docmodel::values::values(clause)
        .into_iter()
        .filter(|v| v.unit == crate::docmodel::values::Unit::Date && v.low == v.high)
        .collect();
    let acts = |t: &str| {
        t.split(|c: char| !c.is_alphanumeric())
            .any(|w| crate::vocabulary::is_past_form(&w.to_lowercase()))
    };
    match dates.as_slice() {
        [first, second, ..] if first.low != second.low && first.span.end <= second.span.start => {
            // At an "and" between the two, else after the first date and its year.
            let between = &clause[first.span.end..second.span.start];
            let (at, skip) = match between.find(" and ") {
                Some(i) => (first.span.end + i, 5),
                None => {
                    let rest = &clause[first.span.end..];
                    let year = rest
                        .trim_start()
                        .split(|c: char| !c.is_ascii_digit())
                        .next()
                        .filter(|y| y.len() == 4)
                        .map_or(0, |y| rest.find(y).map_or(0, |i| i + 4));
                    (first.span.end + year, 0)
                }
            };
            if !clause.is_char_boundary(at) || !clause.is_char_boundary(at + skip) {
                return vec![clause.to_string()];
            }
            let (a, b) = (&clause[..at], &clause[at + skip..]);
            if acts(a) && acts(b) {
                let b = b.trim_start_matches([',', ' ']);
                vec![a.to_string(), b.to_string()]
            } else {
                vec![clause.to_string()]
            }
        }
        [only] => relative_apart(clause, only).unwrap_or_else(|| timed_apart(clause)),
        _ => timed_apart(clause),
    }
}

/// A clause that tells an event on a date and an act a relative day after it ("an alert
/// generated on Wednesday 5 June at 16:30 was closed by the team the following Monday"),
/// cut before the act's verb: each its own fact, the second placed after the first.
fn relative_apart(clause: &str, date: &crate::docmodel::values::Value) -> Option<Vec<String>> {
    let rest = clause.get(date.span.end..)?;
    let lower = rest.to_lowercase();
    let relative = ["the following ", "the next ", "the day after", " later"]
        .iter()
        .filter_map(|r| lower.find(r))
        .min()?;
    // "was closed", "were sent": the act's verb between the date and the relative day.
    let verb = [" was ", " were "]
        .iter()
        .filter_map(|v| lower.find(v))
        .filter(|&i| i < relative)
        .min()?;
    let at = date.span.end + verb;
    let (a, b) = (clause.get(..at)?, clause.get(at + 1..)?);
    (a.split_whitespace().count() >= 4).then(|| vec![a.to_string(), b.to_string()])
}

/// A clause that tells one act at two times of day, the second with its verb left out
/// ("alerted the Deal Lead at 10:20 and the Head of Compliance at 11:15"), as two acts,
/// the verb said again: each has its own time.
fn timed_apart(clause: &str) -> Vec<String> {
    let is_clock = |w: &str| {
        let w = w
            .trim_matches(|c: char| !c.is_alphanumeric())
            .trim_end_matches("am")
            .trim_end_matches("pm");
        w.split_once(':')
            .or_else(|| w.split_once('.'))
            .is_some_and(|(h, m)| {
                (1..=2).contains(&h.len())
                    && m.len() == 2
                    && h.chars().chain(m.chars()).all(|c| c.is_ascii_digit())
            })
    };
    let words: Vec<&str> = clause.split_whitespace().collect();
    let clocks = words.iter().filter(|w| is_clock(w)).count();
    let (Some(and), Some(first)) = (clause.find(" and "), words.first()) else {
        return vec![clause.to_string()];
    };
    let (a, b) = (&clause[..and], &clause[and + 5..]);
    let verb = first.to_lowercase();
    let has_verb = |t: &str| {
        t.split(|c: char| !c.is_alphanumeric())
            .any(|w| crate::vocabulary::is_past_form(&w.to_lowercase()))
    };
    if clocks == 2
        && a.split_whitespace().any(is_clock)
        && b.split_whitespace().any(is_clock)
        && crate::vocabulary::is_past_form(&verb)
        && !has_verb(b)
    {
        vec![a.to_string(), format!("{first} {b}")]
    } else {
        vec![clause.to_string()]
    }
}

/// Where " and " in `text` starts another act of the same subject: a verb in the past
/// follows ("spotted it at nine in the morning and told Compliance at three"), after a
/// clause of four words or more. Gives the position of " and " and its length.
fn and_clause(text: &str) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(i) = text[from..].find(" and ").map(|i| from + i) {
        from = i + 5;
        let words = next_words(&text[i + 5..], 8);
        let timed = text[i + 5..].split_whitespace().any(|w| {
            w.trim_matches(|c: char| !c.is_ascii_digit())
                .split_once(':')
                .is_some_and(|(h, m)| !h.is_empty() && m.len() == 2)
        });
        let next = words.first().cloned().unwrap_or_default();
        let before = text[..i].split_whitespace().count();
        if before >= 4 && crate::vocabulary::is_past_form(&next) && !next.ends_with("ly") {
            return Some((i, 5));
        }
        // Another subject and its act: "and the Level 1 analyst escalated it", "and we paid
        // it": a pronoun, or a determiner and up to six words of a name, then a verb in the
        // past.
        let verb_at = |k: usize| {
            words
                .get(k)
                .is_some_and(|w| crate::vocabulary::is_past_form(w) && !w.ends_with("ly"))
        };
        let subject = match words.first().map(String::as_str) {
            // "and it was taken down at 6pm", "and we paid it".
            Some("we" | "he" | "she" | "they" | "i" | "it") => {
                verb_at(1)
                    || words
                        .get(1)
                        .is_some_and(|w| matches!(w.as_str(), "was" | "were" | "had" | "has"))
                        && verb_at(2)
            }
            // "and the Head of Operational Resilience presented": "of" inside a name.
            // "and the order was in the system at 11:12": a state dated at its own time.
            Some("the" | "our" | "his" | "her" | "their" | "its") => (2..=7).any(|k| {
                (verb_at(k) || timed && words.get(k).is_some_and(|w| w == "was" || w == "were"))
                    && words[1..k].iter().all(|w| {
                        (w == "of" || !crate::text::is_stopword(w))
                            && !crate::vocabulary::is_past_form(w)
                    })
                    && words.get(1).is_some_and(|w| w != "of")
            }),
            _ => false,
        };
        if before >= 4 && subject {
            return Some((i, 5));
        }
    }
    None
}

/// The first `n` words of `text`, lower case, without the punctuation around them.
fn next_words(text: &str, n: usize) -> Vec<String> {
    text.split_whitespace()
        .take(n)
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .collect()
}

/// Where a comma in `text` starts another clause: the next words are a subject and a verb
/// ("our payroll vendor has"), or a verb in the past ("took a taxi"); the words before it
/// are a clause of four words or more.
fn comma_clause(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find(", ").map(|i| from + i) {
        from = i + 2;
        let before = text[..i].split_whitespace().count();
        let after = next_words(&text[i + 2..], 5);
        let Some(first) = after.first() else { break };
        if before < 4 {
            continue;
        }
        let verb = |w: &String| {
            crate::vocabulary::is_past_form(w)
                || matches!(
                    w.as_str(),
                    "has"
                        | "have"
                        | "had"
                        | "was"
                        | "were"
                        | "is"
                        | "are"
                        | "will"
                        | "must"
                        | "can"
                        | "may"
                        | "did"
                        | "does"
                        | "do"
                        | "keeps"
                        | "takes"
                        | "gets"
                )
        };
        let subject = matches!(
            first.as_str(),
            "we" | "they"
                | "she"
                | "he"
                | "it"
                | "our"
                | "their"
                | "his"
                | "her"
                | "its"
                | "the"
                | "this"
                | "that"
                | "nobody"
                | "no"
                | "everyone"
        );
        // "..., prizes may not exceed GBP 250": a bare noun and its modal start another
        // obligation.
        let modal = |w: &String| {
            matches!(
                w.as_str(),
                "must" | "may" | "shall" | "should" | "cannot" | "mustn't"
            )
        };
        let bare_subject = !crate::text::is_stopword(first)
            && !first.chars().all(|c| c.is_ascii_digit())
            && (after.get(1).is_some_and(modal)
                || after.get(2).is_some_and(modal)
                    && !after.get(1).is_some_and(|w| crate::text::is_stopword(w)));
        // "Eleven days later, on Friday 31 January, we paid ...": what comes before tells
        // only when; it belongs to the act after it.
        let head = next_words(&text[..i], 64);
        let tells_when = head.first().is_some_and(|w| {
            matches!(
                w.as_str(),
                "on" | "at"
                    | "in"
                    | "by"
                    | "after"
                    | "before"
                    | "during"
                    | "within"
                    | "since"
                    | "until"
                    | "later"
                    | "that"
                    | "next"
                    | "last"
                    | "early"
                    | "late"
                    | "the"
            ) || crate::docmodel::values::number_word(w).is_some()
                || crate::docmodel::header::is_month(w)
        });
        if tells_when && !head.iter().any(verb) {
            continue;
        }
        if (subject && after[1..].iter().take(3).any(verb))
            || bare_subject
            || (crate::vocabulary::is_past_form(first) && !first.ends_with("ly"))
        {
            return Some(i);
        }
    }
    None
}

/// The clauses of a sentence cut at semicolons and joined clauses (see [`clauses`]).
fn joined_clauses(sentence: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = sentence.trim();
    loop {
        let cut = [
            ";",
            ", and ",
            ", but ",
            ", so ",
            ", while ",
            ", whereas ",
            ", then ",
            " but ",
        ]
        .iter()
        .filter_map(|sep| rest.find(sep).map(|i| (i, sep.len())))
        .min_by_key(|(i, _)| *i);
        match cut {
            Some((i, len)) => {
                push(&mut out, &rest[..i]);
                rest = &rest[i + len..];
            }
            None => {
                push(&mut out, rest);
                return out;
            }
        }
    }
}

fn push(out: &mut Vec<String>, clause: &str) {
    let c = clause.trim().trim_end_matches([',', ';']).trim();
    if terms(c).len() >= 2 {
        out.push(c.to_string());
    } else if let Some(last) = out.last_mut() {
        last.push_str(", ");
        last.push_str(c);
    } else if !c.is_empty() {
        out.push(c.to_string());
    }
}
