//! The form a rule asks its act to take: in writing ("approved in writing", "a written
//! request"), and with the acts it joins to the first ("approved by X and recorded in the
//! register").

use super::*;

/// What the practice says of the form of an act a rule asks for in writing.
pub(super) enum Said {
    /// By word of mouth ("agreed verbally", "told them by phone").
    Spoken,
    /// In writing ("by email", "a signed letter").
    Written,
    /// Neither.
    Nothing,
}

/// What `fact` (and the sentences around it, `scope`) says of the form of the act, when
/// the rule asks for it in writing; `None` when the rule does not.
pub(super) fn in_writing(rule: &str, fact: &Fact, scope: &[&Fact]) -> Option<Said> {
    // An exception's form is not the rule's ("... apply unless an approver has agreed a
    // higher amount in writing"): the words up to "unless".
    let lower = rule.to_lowercase();
    let rule = lower.find(" unless ").map_or(rule, |at| &rule[..at]);
    let rule_words = words_of(rule);
    // "Written" asks for writing when it is of an act ("written approval", "a written
    // request"), not of a way to do something else ("an approved written channel").
    let asks = rule_words
        .windows(2)
        .any(|p| p[0] == "in" && p[1] == "writing")
        || rule_words.iter().enumerate().any(|(i, w)| {
            w == "written" && rule_words[i + 1..].iter().take(2).any(|n| written_act(n))
        });
    if !asks {
        return None;
    }
    let spoken_word = |w: &String| {
        matches!(
            w.as_str(),
            "verbal" | "verbally" | "oral" | "orally" | "phone" | "telephone" | "spoke"
        )
    };
    let written_word = |w: &String| {
        matches!(
            w.as_str(),
            "writing" | "written" | "email" | "emailed" | "letter" | "signed" | "form"
        )
    };
    // The fact's own clause first ("told the regulator by phone six weeks before we
    // signed": the telling was spoken, whatever was signed), then the sentences around.
    let own = words_of(&fact.text);
    let (spoken, written) = if own.iter().any(spoken_word) {
        (
            true,
            own.iter().any(|w| {
                matches!(
                    w.as_str(),
                    "writing" | "written" | "email" | "emailed" | "letter"
                )
            }),
        )
    } else {
        let said: Vec<String> = scope.iter().flat_map(|f| words_of(&f.text)).collect();
        (said.iter().any(spoken_word), said.iter().any(written_word))
    };
    Some(match (spoken, written) {
        (_, true) => Said::Written,
        (true, false) => Said::Spoken,
        (false, false) => Said::Nothing,
    })
}

/// Whether a noun after "written" is of an act that can be written ("approval",
/// "request", "notice").
fn written_act(w: &str) -> bool {
    matches!(
        w.trim_end_matches('s'),
        "approval"
            | "consent"
            | "confirmation"
            | "notice"
            | "notification"
            | "request"
            | "agreement"
            | "authorisation"
            | "authorization"
            | "permission"
            | "record"
            | "note"
            | "justification"
            | "statement"
            | "declaration"
            | "report"
            | "response"
            | "reply"
            | "explanation"
            | "acknowledgement"
            | "acknowledgment"
            | "evidence"
            | "instruction"
            | "undertaking"
            | "attestation"
            | "quotation"
            | "quote"
            | "rationale"
            | "sign"
            | "decision"
            | "mandate"
    )
}

fn words_of(t: &str) -> Vec<String> {
    t.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The acts a rule joins to the one its modal governs: the participles after "and" in a
/// passive rule ("must be approved by X and recorded in the register": recorded), each with
/// the terms of what follows it up to the next "and" (the register).
pub(super) fn joined_acts(rule: &str) -> Vec<(String, Vec<String>)> {
    let words: Vec<String> = words_of(rule);
    let Some(modal) = words
        .iter()
        .position(|w| matches!(w.as_str(), "must" | "shall" | "should"))
    else {
        return Vec::new();
    };
    if words.get(modal + 1).map(String::as_str) != Some("be") {
        return Vec::new();
    }
    (modal + 2..words.len().saturating_sub(1))
        .filter(|&i| words[i] == "and" && crate::vocabulary::is_past_form(&words[i + 1]))
        .map(|i| {
            let object: Vec<&str> = words[i + 2..]
                .iter()
                .take_while(|w| *w != "and")
                .map(String::as_str)
                .collect();
            (words[i + 1].clone(), crate::text::terms(&object.join(" ")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writing_is_asked_of_an_act_and_joined_acts_are_read() {
        assert!(words_of("an approved written channel")
            .windows(2)
            .all(|p| !(p[0] == "written" && written_act(&p[1]))));
        assert!(written_act("approval"));
        let joined = joined_acts("Exceptions must be approved by the Head of Compliance Operations and recorded in the exceptions register");
        assert_eq!(joined.len(), 1);
        assert_eq!(joined[0].0, "recorded");
        assert!(joined[0].1.contains(&crate::vocabulary::term("register")));
        assert!(joined_acts("Staff must report it and the manager decides").is_empty());
    }
}
