//! Who acted, against who a rule names: one member of a body, a stand-in allowed only in
//! another's absence, an approval of another thing, a practice that speaks of asking leave.

use super::*;

/// The body a practice's clause says one member of acted: "one member of the Disclosure
/// Committee decided" gives "Disclosure Committee" (its capitalised words).
pub(super) fn member_of(text: &str) -> Option<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| matches!(w.to_lowercase().as_str(), "member" | "members"))?;
    if words.get(at + 1).map(|w| w.to_lowercase()) != Some("of".to_string()) {
        return None;
    }
    let name: Vec<&str> = words[at + 2..]
        .iter()
        .skip_while(|w| matches!(w.to_lowercase().as_str(), "the" | "our" | "its"))
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .take_while(|w| w.chars().next().is_some_and(char::is_uppercase))
        .collect();
    (!name.is_empty()).then(|| name.join(" "))
}

/// Who a rule lets act only in another's absence, and that other, as the rule writes them: "the
/// Deputy MLRO in the MLRO's absence", "or, in the absence of the CFO, the Finance
/// Director".
pub(super) fn stand_in(rule_text: &str) -> Option<(String, String)> {
    let lower = rule_text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .collect();
    let at = words.iter().position(|w| *w == "absence")?;
    let stop = |w: &str| matches!(w, "the" | "or" | "and" | "a" | "an" | "by" | "of");

    // The name that starts at word `from`: past "the", "of" and the like, up to three words.
    let name_from = |from: usize| -> Vec<&str> {
        words
            .get(from..)
            .unwrap_or_default()
            .iter()
            .skip_while(|w| stop(w))
            .take_while(|w| !stop(w))
            .take(3)
            .copied()
            .collect()
    }; // Whose absence: "in the MLRO's absence" or "in the absence of the MLRO".
    let absent: Vec<&str> = if at > 0 && words[at - 1].ends_with("'s") {
        words[..at]
            .iter()
            .rev()
            .take_while(|w| !stop(w) && **w != "in")
            .copied()
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect()
    } else {
        name_from(at + 1)
    };
    let absent = absent.join(" ").trim_end_matches("'s").to_string();
    // The stand-in: the words before "in ... absence", else those after it.
    let opening = words[..at].iter().rposition(|w| *w == "in")?;
    let before: Vec<&str> = words[..opening]
        .iter()
        .rev()
        .take_while(|w| !stop(w))
        .take(3)
        .copied()
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let stand_in: Vec<&str> = if before.is_empty() {
        let from = if words[at - 1].ends_with("'s") {
            at + 1
        } else {
            let skipped = words[at + 1..].iter().take_while(|w| stop(w)).count();
            at + 1 + skipped + absent.split(' ').count()
        };
        name_from(from)
    } else {
        before
    };
    let stand_in = stand_in.join(" ");
    if absent.is_empty() || stand_in.is_empty() || stand_in == absent {
        return None;
    }
    // As the rule writes them, when lower case kept the text's length.
    let as_written = |phrase: &str| {
        lower
            .find(phrase)
            .filter(|_| lower.len() == rule_text.len())
            .and_then(|i| rule_text.get(i..i + phrase.len()))
            .unwrap_or(phrase)
            .to_string()
    };
    Some((as_written(&stand_in), as_written(&absent)))
}

/// Whether a fact's approval is of another thing than the rule's: its own words, past who
/// approved and the act, are two or more and none is the rule's ("the Board approved this
/// year's operations budget" against "material outsourcing must be approved by the
/// Board"); "the Board approved it" says nothing else and is not.
pub(super) fn of_another_thing(fact: &Fact, earlier: &[&Fact], rule: &Rule<'_>, who: &str) -> bool {
    let acts: HashSet<String> = [
        "approve",
        "approved",
        "approval",
        "signed",
        "sign",
        "off",
        "authorised",
        "agreed",
        "cleared",
        "consent",
    ]
    .iter()
    .map(|w| crate::vocabulary::term(w))
    .collect();
    let theirs: HashSet<String> = terms(who).into_iter().collect();
    // What was approved: the clause up to a comma or a relative pronoun.
    let lower = fact.text.to_lowercase();
    let cut = [", ", " which ", " that ", " who "]
        .iter()
        .filter_map(|p| lower.find(p))
        .min()
        .unwrap_or(lower.len());
    let rest: Vec<String> = terms(&fact.text[..cut.min(fact.text.len())])
        .into_iter()
        .filter(|t| !acts.contains(t) && !theirs.contains(t))
        .collect();
    // A thing told before is the matter at hand ("we are moving ... the Board approved the
    // move").
    let told_before = |t: &String| {
        earlier
            .iter()
            .filter(|f| f.sentence < fact.sentence)
            .any(|f| f.terms.contains(t))
    };
    rest.len() >= 2
        && !rest
            .iter()
            .any(|t| rule.own.contains(t) || rule.words.contains(t) || told_before(t))
}

/// Whether a text speaks of asking leave: approval, permission, consent, sign-off,
/// clearance, asking ("without asking anyone").
pub(super) fn asks_leave(text: &str) -> bool {
    let lower = text.to_lowercase();
    [
        "approv",
        "permission",
        "consent",
        "sign-off",
        "signoff",
        "sign off",
        "clearance",
        "asking",
        "ask ",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// Whether a role is a body named only by its common noun ("committee", "the panel", "our
/// team"): no name of its own tells which body it is.
pub(super) fn unnamed_body(who: &str) -> bool {
    let words: Vec<&str> = who
        .split_whitespace()
        .filter(|w| {
            !matches!(
                w.to_lowercase().as_str(),
                "the" | "our" | "a" | "an" | "its"
            )
        })
        .collect();
    matches!(
        words.as_slice(),
        [w] if matches!(*w, "committee" | "panel" | "forum" | "council" | "team" | "group")
    )
}

/// Whether the one who acted could act for the rule: one member of a body where the rule
/// names the body, a stand-in where the rule allows one only in someone's absence. Adds
/// what breaks the rule to `breaks` and what it leaves open to `open`.
pub(super) fn acting_for(
    fact: &Fact,
    scope: &[&Fact],
    rule: &str,
    breaks: &mut Vec<String>,
    open: &mut Vec<String>,
) {
    // One member of a body where the rule names the body ("the Disclosure Committee shall
    // decide"): the body did not act; broken when the practice says it did not.
    if let Some(body) = member_of(&fact.text) {
        let rule_lower = rule.to_lowercase();
        let body_lower = body.to_lowercase();
        let names_body = rule_lower.contains(&body_lower)
            && !rule_lower
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| matches!(w, "member" | "members"));
        if names_body {
            let last = body_lower.split_whitespace().last().unwrap_or("");
            let body_did_not = scope
                .iter()
                .any(|f| f.reading.negated && f.text.to_lowercase().contains(last));
            if body_did_not {
                breaks.push(format!(
                    "one member of the {body} acted and the practice says the {body} did not"
                ));
            } else {
                open.push(format!(
                    "whether the {body} acted, not only one of its members"
                ));
            }
        }
    }

    // A stand-in the rule allows only in someone's absence ("the Deputy MLRO in the MLRO's
    // absence"): their act meets the rule only when the practice says the other was away.
    if let Some((stand_in, absent)) = stand_in(rule) {
        let acted = fact.text.to_lowercase().contains(&stand_in.to_lowercase());
        let away = scope.iter().any(|f| {
            f.text
                .to_lowercase()
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| {
                    matches!(
                        w,
                        "absent"
                            | "absence"
                            | "away"
                            | "leave"
                            | "holiday"
                            | "unavailable"
                            | "sick"
                            | "vacation"
                    )
                })
        });
        if acted && !away && breaks.is_empty() {
            open.push(format!(
                "whether the {absent} was absent, as the rule asks before the {stand_in} acts"
            ));
        }
    }
}

/// Whether `who`'s approval is the exception to the rule's limit ("No more than 15 people
/// may be on a section without the approval of the Head of Compliance", "unless approved
/// by the CFO"), not a requirement of its own.
pub(super) fn excepts(rule: &str, who: &str) -> bool {
    let lower = rule.to_lowercase();
    let who = who.to_lowercase();
    [
        "without the approval of",
        "without approval of",
        "without the prior approval of",
        "without the written approval of",
        "without the prior written approval of",
        "without the agreement of",
        "without the consent of",
        "unless approved by",
        "unless authorised by",
        "unless authorized by",
    ]
    .iter()
    .filter_map(|p| lower.find(p).map(|i| i + p.len()))
    .any(|at| lower[at..].contains(&who))
}

/// The roles a rule names against the fact and its sentences: someone told or approving as
/// the rule asks (meets), someone else or no one (breaks), or not said (open). Whether a
/// recipient the rule names is told in the fact's own sentence is returned: the fact is
/// then of the act the rule asks for, whatever its verb ("forwarded the email to Corporate
/// Communications" against "passed to Corporate Communications"). An approval that lets a
/// limit be passed is not asked for when `limits_kept`.
pub(super) fn check_roles(
    rule: &Rule<'_>,
    fact: &Fact,
    scope: &[&Fact],
    limits_kept: bool,
    breaks: &mut Vec<String>,
    meets: &mut Vec<String>,
    open: &mut Vec<String>,
) -> bool {
    let mut recipient_named = false;
    for role in &rule.reading.roles {
        if limits_kept && role.kind == RoleKind::Approves && excepts(&rule.text, &role.who) {
            continue;
        }
        let said: Vec<&rules::Role> = scope
            .iter()
            .flat_map(|f| f.reading.roles.iter())
            .filter(|r| r.kind == role.kind || role.kind == RoleKind::Approves)
            .collect();
        let named_it = said.iter().find(|r| same_role(&r.who, &role.who));
        // Met only by the same act in the fact's own sentence: someone told is not someone
        // who approved, and a name in the sentence before may be of another matter.
        // A member of a body is not the body ("a Board member agreed" is not the Board's
        // approval).
        let member = |who: &str| {
            who.split_whitespace()
                .any(|w| matches!(w.to_lowercase().as_str(), "member" | "members" | "one"))
        };
        let here = scope
            .iter()
            .filter(|f| f.sentence == fact.sentence)
            .flat_map(|f| f.reading.roles.iter())
            .any(|r| {
                r.kind == role.kind
                    && !r.negated
                    && same_role(&r.who, &role.who)
                    && member(&r.who) == member(&role.who)
            });
        recipient_named |= here
            && role.kind == RoleKind::Told
            && named_it.is_some_and(|r| !r.negated)
            && rule.reading.modality != Modality::MustNot;
        match named_it {
            Some(r) if r.negated => breaks.push(format!(
                "the practice says {} did not {}",
                role.who,
                if role.kind == RoleKind::Approves {
                    "approve"
                } else {
                    "hear of it"
                }
            )),
            // A rule that forbids it: done by them, it is broken.
            Some(_) if here && rule.reading.modality == Modality::MustNot => breaks.push(format!(
                "{} by {}, which the rule forbids",
                if role.kind == RoleKind::Approves {
                    "approved"
                } else {
                    "told"
                },
                role.who
            )),
            // Approval of something else ("the Board approved the budget, which includes
            // the contract's cost"): not the approval the rule asks for.
            Some(_)
                if here
                    && role.kind == RoleKind::Approves
                    && of_another_thing(fact, scope, rule, &role.who) =>
            {
                open.push(format!(
                    "whether what {} approved is what the rule asks them to approve",
                    role.who
                ))
            }
            Some(_) if here => meets.push(format!(
                "{} by {}",
                if role.kind == RoleKind::Approves {
                    "approved"
                } else {
                    "told"
                },
                role.who
            )),
            Some(_) => open.push(format!(
                "whether {} {} this",
                role.who,
                if role.kind == RoleKind::Approves {
                    "approved"
                } else {
                    "was told of"
                }
            )),
            None => {
                let others: Vec<&&rules::Role> =
                    said.iter().filter(|r| r.kind == role.kind).collect();
                // Named where the practice only supposes it ("we believe her line manager
                // approved it too"): open, whoever else approved.
                let supposed = scope.iter().any(|f| {
                    f.uncertain && {
                        let said = f.text.to_lowercase();
                        role.who
                            .to_lowercase()
                            .split_whitespace()
                            .filter(|w| !w.ends_with("'s"))
                            .all(|w| said.contains(w))
                    }
                });
                if supposed {
                    open.push(format!(
                        "whether {} {}",
                        role.who,
                        if role.kind == RoleKind::Approves {
                            "approved"
                        } else {
                            "was told"
                        }
                    ));
                } else if role.kind == RoleKind::Approves {
                    // A named approver before a body named only by its noun.
                    let other = others
                        .iter()
                        .filter(|r| !r.negated)
                        .min_by_key(|r| unnamed_body(&r.who));
                    if let Some(other) = other {
                        if unnamed_body(&other.who) {
                            // "The committee approved": the practice's committee may well
                            // be the one the rule names.
                            open.push(format!("whether the {} is {}", other.who, role.who));
                        } else {
                            breaks.push(format!(
                                "approved by {} where the rule names {}",
                                other.who, role.who
                            ));
                        }
                    } else if fact.reading.negated && asks_leave(&fact.text) {
                        breaks.push(format!(
                            "no approval by {}, which the rule asks for",
                            role.who
                        ));
                    } else {
                        open.push(format!("whether {} approved", role.who));
                    }
                } else {
                    open.push(format!("whether {} was told", role.who));
                }
            }
        }
    }
    recipient_named
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stand_in_and_whose_absence_it_waits_for() {
        assert_eq!(
            stand_in("The MLRO, or the Deputy MLRO in the MLRO's absence, decides within 72 hours"),
            Some(("Deputy MLRO".to_string(), "MLRO".to_string()))
        );
        assert_eq!(
            stand_in("Payments are approved by the CFO or, in the absence of the CFO, the Finance Director"),
            Some(("Finance Director".to_string(), "CFO".to_string()))
        );
        assert_eq!(stand_in("The MLRO decides within 72 hours"), None);
    }

    #[test]
    fn an_approval_that_lets_a_limit_be_passed_is_its_exception() {
        let rule = "No more than 15 people may be on a deal-specific section without the approval of the Head of Compliance.";
        assert!(super::excepts(rule, "Head of Compliance"));
        assert!(!super::excepts(
            "Business class requires the prior approval of the Chief Financial Officer.",
            "Chief Financial Officer"
        ));
    }
}
