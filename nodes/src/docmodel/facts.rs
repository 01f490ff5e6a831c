//! A described practice read as facts, for an audit: its sentences cut into clauses ("...
//! in economy, and submitted the claim five weeks later"), each read like a rule
//! ([`super::rules::read`]): its values with the events they count from ("a week and a half
//! after the purchase", "a month ahead of the launch", "the next working day"), the roles
//! it names (who approved, who was told), and whether it says something did not happen
//! ("nobody informed the clients", "no approval was sought").

use super::rules::{self, Reading};
use crate::text::{sentences, terms};

/// One clause of a practice.
#[derive(Clone, Debug)]
pub(crate) struct Fact {
    /// The clause as written.
    pub(crate) text: String,
    /// The sentence it is in (its index among the practice's sentences).
    pub(crate) sentence: usize,
    /// Its retrieval terms.
    pub(crate) terms: Vec<String>,
    /// What it says, read like a rule.
    pub(crate) reading: Reading,
}

/// The facts of a practice, in order.
pub(crate) fn read(practice: &str) -> Vec<Fact> {
    let mut out = Vec::new();
    for (n, s) in sentences(practice).iter().enumerate() {
        for c in clauses(s) {
            out.push(Fact {
                terms: terms(&c),
                reading: rules::read(&c),
                sentence: n,
                text: c,
            });
        }
    }
    out
}

/// The clauses of a sentence, verbatim: cut at semicolons and at ", and", ", but", ", so",
/// ", while", ", whereas", ", then" (a piece too short to stand alone stays with the one
/// before it).
pub(crate) fn clauses(sentence: &str) -> Vec<String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docmodel::rules::{Anchor, RoleKind};

    #[test]
    fn a_practice_reads_into_clauses_with_values_events_and_roles() {
        let f = read("Anna booked her hotel eight days before leaving; nobody had said the trip was urgent. Tom declared it eight business days later, and the COO signed it off.");
        let texts: Vec<&str> = f.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Anna booked her hotel eight days before leaving",
                "nobody had said the trip was urgent.",
                "Tom declared it eight business days later",
                "the COO signed it off."
            ]
        );
        let b = &f[0].reading.bounds[0];
        assert_eq!(b.value.written, "eight days");
        assert!(matches!(b.anchor, Some(Anchor::Before(_))));
        assert!(f[1].reading.negated);
        assert!(matches!(
            f[2].reading.bounds[0].anchor,
            Some(Anchor::After(_))
        ));
        assert_eq!(f[3].reading.roles[0].kind, RoleKind::Approves);
        assert_eq!(f[3].reading.roles[0].who, "COO");
    }
}
