//! The actions a message asks for, read from its words: "summarize", "main points" and
//! "in brief" a summary; "compare", "what changed" and "what was dropped in v4" a
//! comparison; "audit", "check ... against", "does this comply" and "is this in line with
//! our policy" an audit. A question about what the user may do ("can I paste a file into
//! ChatGPT to get a summary?") asks for none of them: it is a question.

use crate::state::Action;
use crate::text::tokens;

/// The actions a text asks for, in order of first appearance (inquire is never listed:
/// it is what a question wants when nothing else is asked).
pub(crate) fn requested_actions(text: &str) -> Vec<Action> {
    let words = tokens(text);
    // "Can I paste a client file into ChatGPT to get a summary?": a question about what the
    // user may do, whatever it names doing; PalAssist is asked nothing but to answer.
    let asks_leave = matches!(
        words.iter().take(3).map(String::as_str).collect::<Vec<_>>().as_slice(),
        ["can" | "may" | "could" | "should", "i" | "we", ..]
            | ["am", "i", "allowed" | "permitted"]
            | ["are", "we", "allowed" | "permitted"]
            | ["is", "it", "ok" | "okay" | "allowed" | "permitted" | "fine"]
    ) && sentences(text) == 1
        // "Can I get a summary", "can we compare them": asked of PalAssist.
        && !words.iter().skip(2).take(2).any(|w| {
            matches!(
                w.as_str(),
                "get" | "have" | "see" | "ask" | "request" | "do" | "please" | "you"
            ) || w.starts_with("summar")
                || w.starts_with("compar")
                || matches!(w.as_str(), "audit" | "check" | "review" | "read")
        });
    if asks_leave {
        return Vec::new();
    }
    let raw: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let mut found: Vec<(usize, Action)> = Vec::new();
    let mut note = |pos: usize, a: Action| {
        if !found.iter().any(|(_, f)| *f == a) {
            found.push((pos, a));
        }
    };
    let within = |i: usize, n: usize, list: &[&str]| {
        words[i + 1..words.len().min(i + 1 + n)]
            .iter()
            .any(|w| list.contains(&w.as_str()))
    };
    // "which rules were added in the 2025 revision", "what was dropped in v1.1": a change
    // between versions.
    let names_a_version = !crate::question::versions_asked(text).is_empty()
        || words.iter().any(|w| {
            matches!(
                w.as_str(),
                "revision" | "revised" | "version" | "versions" | "edition" | "editions" | "issue"
            )
        });
    for (i, w) in words.iter().enumerate() {
        let next = words.get(i + 1).map(String::as_str).unwrap_or("");
        // Asked ("what was added", "which rules were dropped", "anything removed"), not
        // told ("the model was added to the inventory on 2 April 2025").
        let asked = (i.saturating_sub(10)..i).any(|k| {
            matches!(
                words[k].as_str(),
                "what" | "which" | "anything" | "any" | "whether" | "what's"
            )
        });
        let added_or_dropped = names_a_version
            && (asked
                && matches!(
                    w.as_str(),
                    "added" | "dropped" | "removed" | "introduced" | "deleted" | "scrapped"
                )
                // "Did the 2025 version add anything, or drop anything?"
                || matches!(
                    words.first().map(String::as_str),
                    Some("did" | "does" | "has" | "have")
                ) && matches!(
                    w.as_str(),
                    "add" | "drop" | "remove" | "introduce" | "delete" | "scrap"
                ));
        // "a change to a threshold", "a material change to our arrangements": a thing,
        // not a question of what changed; "have to change their passwords": a duty.
        let indefinite = |k: usize| {
            matches!(
                words[k].as_str(),
                "a" | "an" | "any" | "each" | "every" | "such" | "no"
            )
        };
        let a_thing =
            i > 0 && (indefinite(i - 1) || words[i - 1] == "to" || (i > 1 && indefinite(i - 2)));
        let a_change = a_thing || i > 0 && matches!(words[i - 1].as_str(), "the" | "this" | "that");
        if w.starts_with("summar")
            || matches!(
                w.as_str(),
                "overview" | "tldr" | "gist" | "recap" | "rundown" | "run-down" | "digest" | "synopsis"
            )
            // "run me through", "walk me through", "talk me through" the policy.
            || (matches!(w.as_str(), "run" | "walk" | "talk" | "take")
                && matches!(next, "me" | "us")
                && words.get(i + 2).is_some_and(|x| x == "through"))
            || (matches!(w.as_str(), "key" | "main")
                && ["point", "step", "rule", "requirement", "obligation", "provision", "takeaway"]
                    .iter()
                    .any(|p| next.starts_with(p)))
            // "what does it say, in brief?", "briefly", "in short", "in a nutshell".
            || w == "briefly"
            || (w == "in" && matches!(next, "brief" | "short" | "nutshell"))
            || (w == "a" && next == "nutshell")
        {
            note(i, Action::Summarize);
        }
        // "what changed", "how did the limits change", "changes between", "what is new in".
        let asks_change = !a_thing
            && w.starts_with("chang")
            && (i.checked_sub(4).map_or(0, |k| k)..i).any(|k| {
                matches!(
                    words[k].as_str(),
                    "what" | "how" | "did" | "has" | "have" | "what's"
                )
            })
            || w.starts_with("chang") && matches!(next, "between" | "since" | "from")
            // "How have the testing and release rules changed?": the question's own verb.
            || (w.starts_with("chang")
                && matches!(words.first().map(String::as_str), Some("how" | "what"))
                && matches!(
                    words.get(1).map(String::as_str),
                    Some("have" | "has" | "had" | "did")
                )
                && matches!(next, "" | "in" | "over" | "since" | "between" | "from"))
            // "How did the deadlines ... change in v4?"
            || (names_a_version
                && !a_change
                // Asked how or what ("how did the deadlines change"), not who approves
                // "threshold changes".
                && (i.saturating_sub(20)..i).any(|k| {
                    matches!(
                        words[k].as_str(),
                        "how" | "what" | "which" | "did" | "has" | "have" | "were" | "was"
                    )
                })
                && matches!(w.as_str(), "change" | "changed" | "changes")
                && matches!(next, "in" | "to" | "with" | "after" | ""))
            || (w == "new" && matches!(next, "in" | "since"))
            // "Anything in version 2.0 that wasn't in 1.4?": what one version has and the
            // other had not.
            || (names_a_version
                && w == "in"
                && i > 0
                && (words[i - 1] == "not"
                    || (i > 1
                        && words[i - 1] == "t"
                        && matches!(words[i - 2].as_str(), "wasn" | "weren" | "isn" | "aren"))))
            // "Did the new version of the SAR policy change when ...?": asked whether a
            // document changed.
            || (names_a_version
                && !a_change
                && matches!(w.as_str(), "change" | "changed" | "alter" | "altered")
                && matches!(
                    words.first().map(String::as_str),
                    Some("did" | "has" | "have" | "does")
                ));
        // "differ", "how is v2 different from v1", "the differences between": not "a
        // reconciliation difference that turns up".
        let differ = w.starts_with("differ")
            && (!matches!(w.as_str(), "difference" | "differences" | "different")
                || matches!(
                    next,
                    "between"
                        | "from"
                        | "in"
                        | "to"
                        | "with"
                        | "before"
                        | "previously"
                        | "earlier"
                        | "then"
                        | "now"
                        | ""
                )
                || (i > 0
                    && matches!(
                        words[i - 1].as_str(),
                        "what"
                            | "the"
                            | "key"
                            | "main"
                            | "any"
                            | "what's"
                            | "major"
                            | "that"
                            | "this"
                            | "it"
                            | "anything"
                    )));
        // "compared with their salary": a measure of a figure, not of documents; "compared
        // with the old one", "compared to v1.4": documents.
        let measured = matches!(w.as_str(), "compared" | "comparing")
            && matches!(next, "with" | "to" | "against")
            && !words[i + 1..words.len().min(i + 7)].iter().any(|n| {
                crate::references::is_doc_noun_term(&crate::vocabulary::term(n))
                    || crate::version_words::is_version_word(n)
                    || matches!(
                        n.as_str(),
                        "one" | "ones" | "it" | "them" | "that" | "this" | "those" | "other"
                    )
            })
            && text.matches('@').count() < 2;
        if w.starts_with("compar") && !measured
            || differ
            || matches!(w.as_str(), "contrast" | "versus" | "vs" | "diff")
            || asks_change
            || added_or_dropped
        {
            note(i, Action::Compare);
        }
        // Asked for ("please review", "can you check", "review this"), not named ("the
        // access review rules", "the credit check").
        let asked_verb = i == 0
            || matches!(
                words[i - 1].as_str(),
                "please"
                    | "pls"
                    | "you"
                    | "to"
                    | "and"
                    | "then"
                    | "can"
                    | "could"
                    | "would"
                    | "we"
                    | "i"
                    | "us"
                    | "also"
                    | "just"
                    | "now"
                    | "a"
                    | "an"
                    | "quickly"
                    | "me"
                    | "should"
                    | "must"
            );
        if asks_for_audit(&words, &raw, i)
            || (asked_verb
                && matches!(
                    w.as_str(),
                    "check" | "review" | "assess" | "evaluate" | "verify" | "test" | "vet"
                )
                && (within(i, 4, &AUDIT_OBJECTS)
                // "check how we handled the factsheet against the procedure".
                // "check how we handled a tax red flag on our client Mr Osei against the
                // policy": anywhere in the request's clause.
                || within(i, 20, &["against"])))
        {
            note(i, Action::Audit);
        }
        // "does this comply", "is this allowed", "whether our practice is OK", "is this in
        // line with", "have we followed the policy".
        if matches!(
            w.as_str(),
            "does"
                | "do"
                | "did"
                | "is"
                | "are"
                | "was"
                | "were"
                | "have"
                | "has"
                | "would"
                | "will"
                | "whether"
                | "if"
        ) && words.get(i + 1).is_some_and(|n| {
            matches!(
                n.as_str(),
                "this" | "that" | "it" | "these" | "our" | "my" | "we" | "they" | "the"
            )
        }) && within(i, 5, &AUDIT_JUDGEMENTS)
            && !asks_permission(&words, i)
        {
            note(i, Action::Audit);
        }
        // "Is what we did with Priya's claim okay under our rules? The conference was on
        // ...": a judgement of a practice the message goes on to tell, however long the
        // words between (not "is it OK under our rules to ...?", a question).
        if matches!(
            w.as_str(),
            "ok" | "okay" | "fine" | "acceptable" | "allowed" | "permitted" | "compliant"
        ) && matches!(
            words.first().map(String::as_str),
            Some("is" | "was" | "are" | "were")
        ) && within(
            i,
            4,
            &[
                "rules",
                "policy",
                "policies",
                "procedure",
                "standard",
                "guidelines",
            ],
        ) && sentences(text) > 1
        {
            note(i, Action::Audit);
        }
        // "Is what we did with the new venue in line with our dealing rules?": asked of a
        // practice, however long the words between.
        if w == "line"
            && i > 0
            && words[i - 1] == "in"
            && next == "with"
            && matches!(
                words.first().map(String::as_str),
                Some("is" | "was" | "are" | "were" | "does" | "did" | "do" | "has" | "have")
            )
        {
            note(i, Action::Audit);
        }
    }
    found.sort_by_key(|(pos, _)| *pos);
    found.into_iter().map(|(_, a)| a).collect()
}

/// Whether the judgement after word `i` asks leave for something to do ("are we allowed to
/// charge clients", "would we be allowed to put out a statement", "is it OK to"), a
/// question of what the rules permit, not a judgement of a practice told ("is this
/// allowed?").
fn asks_permission(words: &[String], i: usize) -> bool {
    let end = words.len().min(i + 6);
    (i + 1..end).any(|j| {
        matches!(
            words[j].as_str(),
            "allowed" | "permitted" | "ok" | "okay" | "fine" | "acceptable"
        ) && words.get(j + 1).is_some_and(|n| n == "to")
    })
}

/// How many sentences a text has.
fn sentences(text: &str) -> usize {
    crate::text::sentences(text).len()
}

/// Words after "check" or "review" that make it a check against rules.
const AUDIT_OBJECTS: [&str; 10] = [
    "against",
    "compliance",
    "comply",
    "complies",
    "compliant",
    "follows",
    "follow",
    "breach",
    "breaches",
    "rules",
];

/// What a question asks of a practice when it asks for an audit ("does this comply").
const AUDIT_JUDGEMENTS: [&str; 25] = [
    "followed",
    "complied",
    "breached",
    "violated",
    "line",
    "comply",
    "complies",
    "compliant",
    "follow",
    "follows",
    "meet",
    "meets",
    "satisfy",
    "conform",
    "breach",
    "breaches",
    "break",
    "violate",
    "allowed",
    "permitted",
    "ok",
    "okay",
    "acceptable",
    "fine",
    "consistent",
];

/// Nouns after "audit" that make it a name, not a request ("Audit Committee", "audit
/// rights").
const AUDIT_NOUNS: [&str; 14] = [
    "committee",
    "trail",
    "trails",
    "rights",
    "right",
    "report",
    "reports",
    "log",
    "logs",
    "team",
    "function",
    "department",
    "plan",
    "findings",
];

/// Whether word `i` is "audit" (or "violate", "comply" ...) used to ask for an audit: not
/// an "Audit Committee" mid-sentence, not "audit rights", "audited accounts".
fn asks_for_audit(words: &[String], raw: &[&str], i: usize) -> bool {
    let w = words[i].as_str();
    if w.starts_with("violat") || matches!(w, "noncompliant") {
        return true;
    }
    if w == "gap" {
        return words.get(i + 1).is_some_and(|n| n.starts_with("analys"));
    }
    if !matches!(w, "audit" | "audits" | "auditing") {
        return false;
    }
    let prev = i.checked_sub(1).map(|k| words[k].as_str()).unwrap_or("");
    let next = words.get(i + 1).map(String::as_str).unwrap_or("");
    let capitalised_mid_sentence = i > 0
        && raw
            .get(i)
            .is_some_and(|r| r.starts_with(char::is_uppercase));
    if AUDIT_NOUNS.contains(&next)
        || capitalised_mid_sentence && !matches!(prev, "please" | "and" | "then")
    {
        return false;
    }
    // Asked for ("audit this", "please audit", "can you audit our ..."), not named ("an
    // on-site audit", "the annual audit").
    i == 0
        || matches!(
            prev,
            "please" | "pls" | "you" | "to" | "and" | "then" | "now" | "also" | "just" | "quickly"
        )
        || matches!(
            next,
            "this"
                | "that"
                | "it"
                | "these"
                | "those"
                | "the"
                | "our"
                | "my"
                | "against"
                | "whether"
                | "if"
                | "following"
                | "me"
        )
}
