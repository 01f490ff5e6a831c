//! Whether a rule applies to the practice: the conditions it states ("above EUR 25,000"),
//! and those of an earlier sentence of its clause it goes on under, against the practice's
//! values: the fact's own, those of the sentences around it, or the case's value told
//! anywhere in the practice.

use super::pairing::*;
use super::*;

/// What a rule's conditions say of a fact.
pub(super) struct Applies {
    /// Its own conditions hold (or cannot be told).
    pub(super) applies: bool,
    /// A condition it goes on under fails: the rule speaks of other cases.
    pub(super) elsewhere: bool,
    /// Why it does not apply, when it does not.
    pub(super) said: Vec<String>,
    /// What the practice leaves open of them.
    pub(super) unknown: Vec<String>,
}

/// The rule's conditions against `fact`, `scope` (the sentences around it) and `practice`
/// (all its facts).
pub(super) fn applies(
    rule: &Rule<'_>,
    fact: &Fact,
    scope: &[&Fact],
    practice: &[&Fact],
) -> Applies {
    let own = [fact];
    let mut applies = true;
    let mut said = Vec::new();
    let mut unknown = Vec::new();

    // Conditions: does the rule apply to what the practice did? A fact's value decides
    // only when it speaks of the same thing (a word around it in common).
    let mut elsewhere = false;
    for (b, inherited) in rule
        .reading
        .bounds
        .iter()
        .map(|b| (b, false))
        .chain(rule.inherited.iter().map(|b| (b, true)))
        .filter(|(b, _)| matches!(b.binding, Binding::Applies { .. }))
    {
        let Binding::Applies { above } = b.binding else {
            continue;
        };
        // A condition of an earlier sentence decides only when the practice's value is
        // outside it: the rule then says nothing of the practice.
        if inherited {
            let told = counterpart(b, &own)
                .or_else(|| counterpart(b, scope))
                .filter(|(_, shared)| *shared > 0)
                .or_else(|| {
                    pairs_alone(practice, b)
                        .then(|| counterpart(b, practice))
                        .flatten()
                });
            let limit = if above { Limit::AtLeast } else { Limit::AtMost };
            elsewhere |= told.is_some_and(|(f, _)| f.value.keeps(limit, &b.value) == Some(false));
            continue;
        }
        // The case's value may be told anywhere in the practice ("We bought 40 laptops for
        // £38,400. ... Sarah approved the PO"): the practice's only value of the kind.
        let told = pairs_alone(practice, b)
            .then(|| counterpart(b, practice))
            .flatten()
            .map(|(f, _)| (f, 0));
        let found = counterpart(b, &own)
            .or_else(|| counterpart(b, scope))
            .or(told);
        match found {
            Some((f, shared)) if shared > 0 || pairs_alone(&own, b) || pairs_alone(practice, b) => {
                let limit = if above { Limit::AtLeast } else { Limit::AtMost };
                // "Where gifts ... from a single source ... total more than £750": one amount
                // under the figure does not show the total is, when the practice tells others.
                let of_a_total = above && totals(&rule.text) && {
                    practice
                        .iter()
                        .flat_map(|p| p.reading.bounds.iter())
                        .filter(|v| can_pair(v, b))
                        .count()
                        > 1
                };
                match f.value.keeps(limit, &b.value) {
                    Some(true) => {}
                    Some(false) if of_a_total => unknown.push(format!(
                        "whether the amounts the practice tells together are above {}",
                        b.value.written
                    )),
                    Some(false) => {
                        applies = false;
                        said.push(format!(
                            "the rule applies {} {}; the practice states {}",
                            if above { "above" } else { "below" },
                            b.value.written,
                            f.value.written
                        ));
                    }
                    None => unknown.push(format!(
                        "whether {} is {} {}",
                        f.value.written,
                        if above { "above" } else { "below" },
                        b.value.written
                    )),
                }
            }
            _ => unknown.push(format!(
                "the amount the rule applies to ({} {})",
                if above { "above" } else { "below" },
                b.value.written
            )),
        }
    }
    Applies {
        applies,
        elsewhere,
        said,
        unknown,
    }
}

/// Whether a rule's condition is on a total of many amounts ("total more than £750",
/// "cumulative", "in aggregate").
fn totals(rule: &str) -> bool {
    let lower = rule.to_lowercase();
    lower.split(|c: char| !c.is_alphanumeric()).any(|w| {
        matches!(
            w,
            "total"
                | "totals"
                | "totalling"
                | "cumulative"
                | "cumulatively"
                | "aggregate"
                | "combined"
                | "altogether"
        )
    })
}

/// A sentence of the rule's clause that takes a case out of it ("No provisional start is
/// allowed for a Critical third party"), when the practice speaks of that case in words
/// the rule itself does not use ("a processor that supports one of our critical business
/// services"): the rule may not be the practice's to meet.
pub(super) fn excluded_case(rule: &Rule<'_>, practice: &[&Fact]) -> Option<String> {
    const MARKERS: [&str; 7] = [
        " is not allowed",
        " are not allowed",
        " is not permitted",
        " are not permitted",
        " does not apply",
        " do not apply",
        " may not be used",
    ];
    let said: HashSet<&String> = practice
        .iter()
        .flat_map(|f| f.terms.iter().chain(&f.carried))
        .collect();
    let marker_terms = terms("allowed permitted apply used no not");
    sentences(&rule.passage.text)
        .into_iter()
        .filter(|s| {
            !s.contains(rule.text.trim_end_matches('.'))
                && !rule.text.contains(s.trim_end_matches('.'))
        })
        .find(|s| {
            let lower = s.to_lowercase();
            let at = if lower.starts_with("no ") {
                lower.find(" allowed")
            } else {
                MARKERS.iter().filter_map(|m| lower.find(m)).min()
            };
            let Some(at) = at else {
                return false;
            };
            // What it takes out is what the rule is about ("No provisional start ..."
            // of "... may approve a provisional start"), for a case after the marker.
            let subject: Vec<&str> = lower[..at].split_whitespace().rev().take(3).collect();
            let of_the_rule = terms(&subject.join(" "))
                .iter()
                .any(|t| rule.own.contains(t));
            of_the_rule
                && terms(&lower[at..])
                    .iter()
                    .any(|t| !rule.own.contains(t) && !marker_terms.contains(t) && said.contains(t))
        })
        .map(|s| s.trim_end_matches('.').to_string())
}
