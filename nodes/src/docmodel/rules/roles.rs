//! The roles a sentence names and what each does: who approves ("approved by the Head of
//! Compliance", "senior management approval", "the COO signed off") and who is told
//! ("notify the DPO", "report to Compliance", "the team received the referral"), each name
//! read forwards or backwards from the words that say so, with whether the sentence says it
//! did not happen ("without senior management approval"). Whether two names mean the same
//! people is [`super::same_role`]'s.

use crate::docmodel::values::Word;
use crate::text::terms;

/// What a role does in a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RoleKind {
    /// Approves, signs off, authorises.
    Approves,
    /// Is told: notified, informed, reported or declared to.
    Told,
}

/// A role a sentence names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Role {
    /// Who, as written ("the Head of Compliance", "senior management").
    pub(crate) who: String,
    /// What they do.
    pub(crate) kind: RoleKind,
    /// The sentence says it does not happen ("without senior management approval", "nobody
    /// told the client").
    pub(crate) negated: bool,
}

/// Who a role noun phrase may end with.
const ROLE_NOUNS: [&str; 34] = [
    "manager",
    "management",
    "officer",
    "committee",
    "board",
    "team",
    "department",
    "head",
    "director",
    "directors",
    "owner",
    "compliance",
    "supervisor",
    "regulator",
    "authority",
    "partner",
    "lead",
    "leader",
    "desk",
    "hr",
    "finance",
    "legal",
    "audit",
    "ciso",
    "cfo",
    "ceo",
    "coo",
    "dpo",
    "mlro",
    "controller",
    "secretary",
    "executive",
    "client",
    "customer",
];

/// Words that end a role's name when reading it forwards.
const NAME_ENDS: [&str; 36] = [
    "and", "or", "before", "after", "within", "if", "when", "for", "unless", "to", "in", "on",
    "at", "is", "are", "must", "will", "was", "who", "which", "that", "of", "the", "a", "an",
    "their", "his", "her", "its", "our", "your", "this", "these", "those", "any", "all",
];

/// Where "by" follows an act, past the words that say how ("off", "in advance", "in
/// writing", "jointly"): at `from` or up to three words on.
fn by_after(lower: &[&str], from: usize) -> Option<usize> {
    (from..lower.len().min(from + 4))
        .take_while(|k| {
            matches!(
                lower[*k],
                "by" | "off"
                    | "in"
                    | "advance"
                    | "writing"
                    | "beforehand"
                    | "first"
                    | "also"
                    | "jointly"
                    | "separately"
                    | "personally"
                    | "formally"
            )
        })
        .find(|k| lower[*k] == "by")
}

/// Whether a word can be part of a role's name.
/// The "from" or "by" within a few words after `from` that says who gave something
/// ("given beforehand by email from the Head of Compliance"): the last of them.
fn from_after(lower: &[&str], from: usize) -> Option<usize> {
    let end = (from + 6).min(lower.len());
    (from..end)
        .rev()
        .find(|&k| matches!(lower[k], "from" | "by"))
        .filter(|&k| k + 1 < lower.len() && lower[k + 1] != "email")
}

fn namey(w: &str) -> bool {
    let first = w.chars().next();
    first.is_some_and(|c| c.is_uppercase())
        || ROLE_NOUNS.contains(&crate::text::singular(&w.to_lowercase()).as_str())
}

/// The roles a sentence names, each with what it does.
pub(super) fn roles(sentence: &str, ws: &[Word]) -> Vec<Role> {
    let raw: Vec<&str> = ws.iter().map(|w| &sentence[w.span.clone()]).collect();
    let lower: Vec<&str> = ws.iter().map(|w| w.text.as_str()).collect();
    let mut out: Vec<Role> = Vec::new();
    let negated_near = |i: usize| {
        lower[i.saturating_sub(5)..i].iter().any(|w| {
            matches!(
                *w,
                "without"
                    | "no"
                    | "not"
                    | "never"
                    | "nobody"
                    | "n't"
                    | "forgot"
                    | "failed"
                    | "omitted"
                    | "neglected"
                    | "skipped"
                    | "refused"
            )
        }) || lower.get(i + 1).is_some_and(|w| *w == "never")
    };
    fn add(out: &mut Vec<Role>, who: String, kind: RoleKind, negated: bool) {
        let who = who.trim().to_string();
        if who.is_empty() || terms(&who).is_empty() {
            return;
        }
        if !out
            .iter()
            .any(|r| r.who.eq_ignore_ascii_case(&who) && r.kind == kind)
        {
            out.push(Role { who, kind, negated });
        }
    }
    // A name read forwards from word `j`: "the Head of Compliance", "senior management".
    let forward = |j: usize| -> String {
        let mut k = j;
        while k < lower.len()
            && matches!(
                lower[k],
                "the"
                    | "a"
                    | "an"
                    | "their"
                    | "his"
                    | "her"
                    | "its"
                    | "our"
                    | "your"
                    | "both"
                    | "any"
                    | "some"
                    | "every"
                    | "each"
            )
        {
            k += 1;
        }
        let mut name = Vec::new();
        // "a member of the Executive Committee": one of a body, named with it.
        if matches!(lower.get(k), Some(&("member" | "members"))) && lower.get(k + 1) == Some(&"of")
        {
            name.extend([raw[k], raw[k + 1]]);
            k += 2;
            if matches!(lower.get(k), Some(&("the" | "our" | "its" | "their"))) {
                name.push(raw[k]);
                k += 1;
            }
        }
        while k < raw.len() && name.len() < 9 {
            let w = raw[k];
            // "the traveller's line manager": a possessive is part of who is meant.
            let l = lower[k].trim_end_matches("'s");
            let role_follows = k + 1 < raw.len()
                && (namey(raw[k + 1])
                    || lower
                        .get(k + 2)
                        .is_some_and(|n| ROLE_NOUNS.contains(&crate::text::singular(n).as_str())));
            if lower[k].ends_with("'s") && role_follows {
                name.push(w);
                k += 1;
                continue;
            }
            let joins = matches!(l, "of" | "and" | "&")
                && k + 1 < raw.len()
                && namey(raw[k + 1])
                && !name.is_empty();
            if joins
                || (namey(w) && !NAME_ENDS.contains(&l))
                || ((name.is_empty() || name.last().is_some_and(|n| n.ends_with("'s")))
                    && l.chars().all(char::is_alphabetic)
                    && lower
                        .get(k + 1)
                        .is_some_and(|n| ROLE_NOUNS.contains(&crate::text::singular(n).as_str())))
            {
                name.push(w);
                k += 1;
            } else {
                break;
            }
        }
        name.join(" ")
    };
    // A name read backwards from word `j` (exclusive): "senior management approval".
    let backward = |j: usize| -> String {
        // "the Head of Compliance then approved": past a word that says when or how.
        let mut k = if j > 1
            && matches!(
                lower[j - 1],
                "then"
                    | "later"
                    | "subsequently"
                    | "finally"
                    | "eventually"
                    | "also"
                    | "duly"
                    | "formally"
                    | "personally"
                    | "promptly"
                    | "immediately"
            )
            && namey(raw[j - 2])
        {
            j - 1
        } else {
            j
        };
        let mut name = Vec::new();
        while k > 0 && name.len() < 4 {
            let w = raw[k - 1];
            let l = lower[k - 1];
            if namey(w) && !NAME_ENDS.contains(&l)
                || (l.chars().all(char::is_alphabetic)
                    && !name.is_empty()
                    && name.len() < 2
                    && matches!(
                        l,
                        "senior" | "line" | "executive" | "risk" | "audit" | "general"
                    ))
            {
                name.insert(0, w);
                k -= 1;
            } else {
                break;
            }
        }
        // "the Head of Compliance Operations approved": the head, not the function.
        if !name.is_empty() && k >= 2 && lower[k - 1] == "of" && namey(raw[k - 2]) {
            let mut from = k - 2;
            while from > 0 && namey(raw[from - 1]) && k - from < 4 {
                from -= 1;
            }
            name.splice(0..0, raw[from..k].iter().copied());
            k = from;
        }
        // "a member of the Executive Committee approved": one of the body.
        if !name.is_empty() {
            let the = usize::from(k >= 1 && matches!(lower[k - 1], "the" | "our" | "its"));
            if k >= 2 + the
                && lower[k - 1 - the] == "of"
                && matches!(lower[k - 2 - the], "member" | "members")
            {
                let from = k - 2 - the;
                name.splice(0..0, raw[from..k].iter().copied());
            }
        }
        name.join(" ")
    };
    for i in 0..lower.len() {
        let w = lower[i];
        let next = lower.get(i + 1).copied().unwrap_or("");
        match w {
            // "approved by X", "authorised by X", "signed off by X", "approved in advance
            // by X", "approved in writing by X".
            "approved" | "authorised" | "authorized" | "sanctioned" | "agreed" | "signed"
            | "okayed" | "endorsed" | "ratified"
                if by_after(&lower, i + 1).is_some() =>
            {
                let j = by_after(&lower, i + 1).map_or(i + 2, |b| b + 1);
                add(&mut out, forward(j), RoleKind::Approves, negated_near(i));
            }
            // "... by her line manager and by a member of the Executive Committee", "and,
            // where the value exceeds £50,000, also by the Chief Financial Officer".
            "by" if i >= 1
                && matches!(lower[i - 1], "and" | "or" | "also")
                && out.last().is_some() =>
            {
                let kind = out.last().map_or(RoleKind::Approves, |r| r.kind);
                add(&mut out, forward(i + 1), kind, negated_near(i));
            }
            // A table's cell under an approver's column ("Approver: Chief Financial
            // Officer"), or "the approver is X".
            "approver" | "approvers" | "authoriser" | "authorisers" | "authorizer"
            | "authorizers" | "signatory" | "signatories"
                if sentence[ws[i].span.end..].starts_with(':') || matches!(next, "is" | "are") =>
            {
                let from = if next == "is" || next == "are" {
                    i + 2
                } else {
                    i + 1
                };
                let name = forward(from);
                if name.split_whitespace().any(namey) {
                    add(&mut out, name, RoleKind::Approves, negated_near(i));
                }
            }
            // "approval of X", "approval from X", "sign-off from X", "consent of X".
            "approval" | "authorisation" | "authorization" | "consent" | "sign" | "off"
                if matches!(next, "of" | "from" | "by") =>
            {
                add(
                    &mut out,
                    forward(i + 2),
                    RoleKind::Approves,
                    negated_near(i),
                );
            }
            // "approval given beforehand by email from X": who gave it, a few words on.
            "approval" | "authorisation" | "authorization" | "consent"
                if matches!(next, "given" | "granted" | "obtained" | "received")
                    && from_after(&lower, i + 2).is_some() =>
            {
                let j = from_after(&lower, i + 2).map_or(i + 2, |f| f + 1);
                add(&mut out, forward(j), RoleKind::Approves, negated_near(i));
            }
            // "it had not been through the Financial Promotions team": reviewed and passed
            // by them.
            "through" if i > 0 && matches!(lower[i - 1], "been" | "gone" | "went" | "passed") => {
                let name = forward(i + 1);
                if name.split_whitespace().any(namey) {
                    add(&mut out, name, RoleKind::Approves, negated_near(i));
                }
            }
            // "X approval", "X's approval", "X sign-off".
            "approval" | "authorisation" | "authorization" | "consent" => {
                let name = backward(i);
                if !name.is_empty() {
                    let at = i.saturating_sub(name.split_whitespace().count());
                    add(&mut out, name, RoleKind::Approves, negated_near(at));
                }
            }
            // "X approves", "X approved the move", "X signed off the directorship".
            "approves" | "approve" | "approved" | "authorises" | "authorizes" | "signed"
            | "signs" | "okayed" | "okays" | "endorsed" | "ratified" => {
                let name = backward(i);
                if !name.is_empty() && !matches!(next, "by") {
                    let negated =
                        negated_near(i) || i > 0 && matches!(lower[i - 1], "not" | "never");
                    add(&mut out, name, RoleKind::Approves, negated);
                }
            }
            // "notify X", "inform X", "tell X", "told X": the person told follows.
            "notify" | "notifies" | "notified" | "inform" | "informs" | "informed" | "tell"
            | "tells" | "told" | "alert" | "alerted" | "contact" | "contacted" | "consult"
            | "consulted" | "warn" | "warned" | "rang" | "phoned" | "emailed" | "messaged"
                if next != "by" && next != "of" && next != "that" =>
            {
                let name = forward(i + 1);
                let negated = negated_near(i);
                if !name.is_empty() {
                    add(&mut out, name, RoleKind::Told, negated);
                } else if i > 0
                    && matches!(lower[i - 1], "was" | "were" | "be" | "been" | "is" | "are")
                {
                    // "the DPO was told": the person told comes before.
                    let name = backward(i - 1);
                    add(&mut out, name, RoleKind::Told, negated);
                }
            }
            // "the Specialist Support Team received the referral": told, by what it got.
            "received" | "receives" | "receive" | "got"
                if lower
                    .get(i + 1..(i + 4).min(lower.len()))
                    .is_some_and(|after| {
                        after.iter().any(|a| {
                            [
                                "referral",
                                "report",
                                "notification",
                                "notice",
                                "escalation",
                                "alert",
                                "disclosure",
                                "declaration",
                                "complaint",
                                "request",
                            ]
                            .iter()
                            .any(|n| a.trim_end_matches('s') == *n)
                        })
                    }) =>
            {
                let name = backward(i);
                if !name.is_empty() {
                    add(&mut out, name, RoleKind::Told, negated_near(i));
                }
            }
            // "it never went to the Audit Committee", "put to the Board": submitted to them.
            "went" | "go" | "goes" | "gone" | "put" | "taken" | "brought" | "presented"
            | "escalated"
                if next == "to" =>
            {
                let name = forward(i + 2);
                if name.split_whitespace().any(namey) {
                    let negated = negated_near(i + 1);
                    add(&mut out, name, RoleKind::Told, negated);
                }
            }
            // "report to X", "declare ... to X", "escalate to X", "send ... to X".
            "to" if i > 0 => {
                let verb = lower[..i].iter().rev().take(8).find(|v| {
                    [
                        "report", "declar", "escalat", "notif", "submit", "sent", "send", "refer",
                        "pass", "disclos", "provid", "forward", "return", "hand", "flag", "rais",
                        "email", "mail", "took", "take", "brought", "bring", "present",
                    ]
                    .iter()
                    .any(|s| v.starts_with(s))
                });
                if let Some(verb) = verb {
                    let name = forward(i + 1);
                    if !name.is_empty() && name.split_whitespace().any(namey) {
                        let at = lower[..i].iter().rposition(|v| v == verb).unwrap_or(i);
                        let negated = negated_near(at + 1);
                        // "to their line manager and the Head of Compliance": both told.
                        let last = name.split_whitespace().last().unwrap_or("").to_string();
                        let end = (i + 1..raw.len().min(i + 12)).find(|&k| raw[k] == last);
                        add(&mut out, name, RoleKind::Told, negated);
                        if let Some(end) = end.filter(|e| lower.get(e + 1) == Some(&"and")) {
                            let second = forward(end + 2);
                            if second.split_whitespace().any(namey) {
                                add(&mut out, second, RoleKind::Told, negated);
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docmodel::rules::read;

    #[test]
    fn an_approvers_column_names_who_approves() {
        let who = |s: &str| {
            read(s)
                .roles
                .into_iter()
                .map(|r| (r.who, r.kind))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            who("Purchase value: £50,000.01 to £250,000, Approver: Chief Financial Officer"),
            [("Chief Financial Officer".to_string(), RoleKind::Approves)]
        );
        assert_eq!(
            who("For tier 1 models the approver is the Model Risk Committee."),
            [("Model Risk Committee".to_string(), RoleKind::Approves)]
        );
        // An approver's duty names no one.
        assert!(who("An approver must check the claim.").is_empty());
    }

    #[test]
    fn roles_that_approve_or_are_told() {
        let who = |s: &str| {
            read(s)
                .roles
                .into_iter()
                .map(|r| (r.who, r.kind, r.negated))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            who("Such roles are approved by the Chief Executive Officer after review."),
            [(
                "Chief Executive Officer".to_string(),
                RoleKind::Approves,
                false
            )]
        );
        assert_eq!(
            who("A business relationship with a PEP requires senior management approval."),
            [("senior management".to_string(), RoleKind::Approves, false)]
        );
        assert_eq!(
            who("We fast-tracked it without senior management approval."),
            [("senior management".to_string(), RoleKind::Approves, true)]
        );
        assert_eq!(
            who("Transactions above EUR 500,000 also require the approval of the Board."),
            [("Board".to_string(), RoleKind::Approves, false)]
        );
        assert_eq!(
            who("Every trip must be approved in advance by the traveller's line manager."),
            [(
                "traveller's line manager".to_string(),
                RoleKind::Approves,
                false
            )]
        );
        assert_eq!(
            who("Trips outside Europe must also be approved by a member of the Executive Committee."),
            [(
                "member of the Executive Committee".to_string(),
                RoleKind::Approves,
                false
            )]
        );
        assert_eq!(
            who("A member of the Executive Committee approved the trip in writing before she booked."),
            [(
                "member of the Executive Committee".to_string(),
                RoleKind::Approves,
                false
            )]
        );
        assert_eq!(
            who("The COO signed off the directorship."),
            [("COO".to_string(), RoleKind::Approves, false)]
        );
        assert_eq!(
            who("Staff must declare any conflict to Compliance within 5 business days."),
            [("Compliance".to_string(), RoleKind::Told, false)]
        );
        assert_eq!(
            who("Nobody informed the clients."),
            [("clients".to_string(), RoleKind::Told, true)]
        );
        assert_eq!(
            who("The Data Protection Officer was told the following afternoon."),
            [("Data Protection Officer".to_string(), RoleKind::Told, false)]
        );
        assert_eq!(
            who("The product owner took the results to the PAC on 20 May."),
            [("PAC".to_string(), RoleKind::Told, false)]
        );
        assert_eq!(
            who("Yesterday the Head of Trading okayed it in an email."),
            [("Head of Trading".to_string(), RoleKind::Approves, false)]
        );
        assert_eq!(
            who("He listened to the call, with approval given beforehand by email from the Head of Compliance Monitoring."),
            [("Head of Compliance Monitoring".to_string(), RoleKind::Approves, false)]
        );
        assert_eq!(
            who("The leaflet went out although it had not been through the Financial Promotions team."),
            [("Financial Promotions team".to_string(), RoleKind::Approves, true)]
        );
    }

    #[test]
    fn a_team_that_received_the_referral_was_told() {
        let r = read("the Specialist Support Team received the referral three hours later");
        assert!(r
            .roles
            .iter()
            .any(|x| x.who == "Specialist Support Team" && x.kind == RoleKind::Told));
    }

    #[test]
    fn two_people_reported_to_are_both_told() {
        let r = read("Staff who miss a training deadline must be reported to their line manager and the Head of Compliance.");
        let told: Vec<&str> = r
            .roles
            .iter()
            .filter(|x| x.kind == RoleKind::Told)
            .map(|x| x.who.as_str())
            .collect();
        assert_eq!(told, ["line manager", "Head of Compliance"]);
    }

    #[test]
    fn the_head_of_a_function_who_approved_is_the_head() {
        let r = read("In March the Head of Compliance Operations approved an exception.");
        assert!(r
            .roles
            .iter()
            .any(|x| x.who == "Head of Compliance Operations" && x.kind == RoleKind::Approves));
        let r = read("The Head of Financial Crime Compliance then approved the full engagement.");
        assert!(r
            .roles
            .iter()
            .any(|x| x.who.ends_with("Head of Financial Crime Compliance")
                && x.kind == RoleKind::Approves));
    }

    #[test]
    fn an_approver_added_under_a_condition_is_an_approver() {
        let r = read("It is approved by the Head of Procurement and, where the purchase value exceeds £50,000, also by the Chief Financial Officer.");
        assert!(r
            .roles
            .iter()
            .any(|x| x.who == "Chief Financial Officer" && x.kind == RoleKind::Approves));
    }
}
