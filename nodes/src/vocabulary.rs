//! Words as retrieval compares them: an irregular verb form is first taken back to its
//! verb ("told" to "tell", "flew" to "fly", "kept" to "keep": the stemmer only knows
//! regular endings), then mapped to the common word of its group of synonyms (a small
//! compliance thesaurus: "kept" and "stored" mean "retain", "phone" means "telephone",
//! "client" means "customer", "boss" means "manager", "sign-off" means "approval", ...),
//! then reduced to its stem by the Snowball English stemmer (`rust-stemmers`), so plurals
//! and inflections meet: "emails" and "email", "reported" and "report", "deletion" and
//! "deleted".

// Hashed with foldhash (seeded per process): see `crate::text::is_stopword`.
use foldhash::{HashMap, HashMapExt as _};
use std::sync::{OnceLock, RwLock};

use rust_stemmers::{Algorithm, Stemmer};

/// Groups of words that mean the same in compliance text; the first word of a group is
/// the one the others stand for.
const SYNONYMS: &[&[&str]] = &[
    &[
        "retain",
        "retains",
        "retained",
        "retaining",
        "retention",
        "keep",
        "keeps",
        "kept",
        "keeping",
        "store",
        "stores",
        "stored",
        "storing",
        "preserve",
        "preserved",
        "archive",
        "archived",
    ],
    &[
        "telephone",
        "telephones",
        "telephoned",
        "phone",
        "phones",
        "phoned",
        "phoning",
        "rang",
        "call",
    ],
    &[
        "update", "updates", "updated", "patch", "patches", "patched", "patching",
    ],
    &["email", "emails", "mail", "mails"],
    &["customer", "customers", "client", "clients"],
    &[
        "delete",
        "deleted",
        "deletes",
        "deleting",
        "deletion",
        "erase",
        "erased",
        "erasure",
        "destroy",
        "destroyed",
        "destruction",
        "dispose",
        "disposed",
        "disposal",
        "purge",
        "purged",
        "wipe",
        "wiped",
        "wipes",
    ],
    &[
        "employee",
        "employees",
        "staff",
        "personnel",
        "worker",
        "workers",
    ],
    &[
        "notify",
        "notifies",
        "notified",
        "notifying",
        "notification",
        "notifications",
        "inform",
        "informs",
        "informed",
        "tell",
        "tells",
        "telling",
        "emailed",
        "messaged",
        "declare",
        "declares",
        "declared",
        "declaring",
    ],
    // A minister or a politician is a politically exposed person by definition.
    &[
        "pep",
        "peps",
        "politically",
        "minister",
        "ministers",
        "politician",
        "politicians",
    ],
    &["vendor", "vendors", "supplier", "suppliers"],
    &[
        "approve",
        "approves",
        "approved",
        "approval",
        "approvals",
        "authorise",
        "authorised",
        "authorize",
        "authorized",
        "authorisation",
        "authorization",
        "authoriser",
        "authorisers",
        "authorizer",
        "authorizers",
        "approver",
        "approvers",
    ],
    &[
        "review",
        "reviews",
        "reviewed",
        "reassess",
        "reassessed",
        "reassessment",
    ],
    &[
        "manager",
        "managers",
        "boss",
        "bosses",
        "supervisor",
        "supervisors",
    ],
    &["gift", "gifts", "present", "presents"],
    &["hospitality", "entertainment", "entertaining"],
    &[
        "breach",
        "breaches",
        "breached",
        "violation",
        "violations",
        "infringement",
    ],
    &[
        "fee",
        "fees",
        "charge",
        "charges",
        "commission",
        "commissions",
    ],
    &["advance", "ahead", "beforehand"],
    &["fly", "flies", "flying", "flight", "flights"],
    &[
        "leave",
        "leaves",
        "leaving",
        "departure",
        "depart",
        "departs",
        "departing",
    ],
    &[
        "start",
        "starts",
        "started",
        "begin",
        "begins",
        "beginning",
        "commence",
        "commencement",
    ],
    &[
        "terminate",
        "terminated",
        "termination",
        "expiry",
        "expire",
        "expired",
    ],
    &[
        "buy",
        "buys",
        "buying",
        "purchase",
        "purchases",
        "purchased",
        "purchasing",
    ],
    &["complaint", "complaints", "grievance", "grievances"],
    &["error", "errors", "mistake", "mistakes"],
    &[
        "complete",
        "completes",
        "completed",
        "completing",
        "completion",
        "finish",
        "finishes",
        "finished",
        "finishing",
    ],
    &[
        "refuse",
        "refuses",
        "refused",
        "refusal",
        "reject",
        "rejects",
        "rejected",
        "rejection",
        "decline",
        "declines",
        "declined",
    ],
    &["theft", "thefts", "steal", "steals", "stealing", "stolen"],
    &[
        "meal",
        "meals",
        "lunch",
        "lunches",
        "dinner",
        "dinners",
        "breakfast",
        "breakfasts",
    ],
    &["money", "cash", "funds"],
    &["inactivity", "inactive", "idle", "dormant"],
    &[
        "install",
        "installs",
        "installed",
        "installation",
        "deploy",
        "deploys",
        "deployed",
        "deployment",
    ],
    &[
        "shareholding",
        "shareholdings",
        "stake",
        "stakes",
        "shareholder",
        "shareholders",
        "owns",
        "owned",
        "owning",
    ],
    &[
        "lost",
        "lose",
        "loses",
        "losing",
        "misplace",
        "misplaced",
        "mislaid",
    ],
    &[
        "quotation",
        "quotations",
        "bid",
        "bids",
        "tender",
        "tenders",
    ],
    // The moment a deadline so often counts from: becoming aware of something.
    &[
        "aware",
        "awareness",
        "discover",
        "discovers",
        "discovered",
        "discovery",
        "realise",
        "realised",
        "realize",
        "realized",
        "noticed",
        "noticing",
        "spot",
        "spotted",
        "detect",
        "detected",
        "detection",
    ],
    &[
        "trade", "trades", "traded", "trading", "deal", "deals", "dealing",
    ],
    // Making something public: "announced", "published", "made public".
    &[
        "announce",
        "announces",
        "announced",
        "announcing",
        "announcement",
        "announcements",
        "publish",
        "publishes",
        "published",
        "publishing",
        "publication",
    ],
];

/// Phrases that mean one word of the thesaurus ("turn away" an applicant is refusing one;
/// "three weeks in a row" are consecutive).
const PHRASES: &[(&[&str], &str)] = &[
    (&["in", "a", "row"], "consecutive"),
    (&["turn", "away"], "refuse"),
    (&["turned", "away"], "refuse"),
    (&["turn", "down"], "refuse"),
    (&["turned", "down"], "refuse"),
    (&["roll", "out"], "install"),
    (&["rolled", "out"], "install"),
    (&["sign", "off"], "approve"),
    (&["signed", "off"], "approve"),
    // Common phrasal verbs and the word a policy uses for them.
    (&["put", "in"], "submit"),
    (&["hand", "in"], "submit"),
    (&["handed", "in"], "submit"),
    (&["send", "in"], "submit"),
    (&["sent", "in"], "submit"),
    (&["hang", "on", "to"], "retain"),
    (&["hold", "on", "to"], "retain"),
    (&["held", "on", "to"], "retain"),
    (&["get", "rid", "of"], "delete"),
    (&["got", "rid", "of"], "delete"),
    (&["find", "out"], "discover"),
    (&["found", "out"], "discover"),
    (&["look", "into"], "investigate"),
    (&["looked", "into"], "investigate"),
    (&["flagged", "it", "to"], "escalate"),
    (&["flagged", "to"], "escalate"),
    (&["flag", "it", "to"], "escalate"),
    (&["flag", "to"], "escalate"),
    // "On call" (available to be called) is a duty, not a telephone call.
    (&["on", "call"], "standby"),
    // "Sort out" a problem: what a policy calls remediating it.
    (&["sort", "out"], "remediate"),
    (&["sort", "it", "out"], "remediate"),
    (&["sorted", "out"], "remediate"),
    (&["made", "public"], "announce"),
    (&["make", "public"], "announce"),
    (&["makes", "public"], "announce"),
];

/// Lower-case words with the phrases of the thesaurus folded into their word.
pub(crate) fn fold_phrases(words: Vec<String>) -> Vec<String> {
    if !words
        .iter()
        .any(|w| PHRASES.iter().any(|(p, _)| p[0] == w.as_str()))
    {
        return words;
    }
    let mut out = Vec::with_capacity(words.len());
    let mut i = 0;
    'words: while i < words.len() {
        for (phrase, word) in PHRASES {
            if words.len() - i >= phrase.len()
                && phrase.iter().zip(&words[i..]).all(|(p, w)| p == w)
            {
                out.push((*word).to_string());
                i += phrase.len();
                continue 'words;
            }
        }
        out.push(words[i].clone());
        i += 1;
    }
    out
}

/// Irregular verb forms and the verb they belong to (the stemmer reads only regular
/// endings: "told" would not meet "tell").
const IRREGULAR: &[(&str, &str)] = &[
    ("told", "tell"),
    ("flew", "fly"),
    ("flown", "fly"),
    ("kept", "keep"),
    ("sent", "send"),
    ("paid", "pay"),
    ("repaid", "repay"),
    ("prepaid", "prepay"),
    ("overpaid", "overpay"),
    ("underpaid", "underpay"),
    ("withheld", "withhold"),
    ("upheld", "uphold"),
    ("undertook", "undertake"),
    ("undertaken", "undertake"),
    ("rewrote", "rewrite"),
    ("rewritten", "rewrite"),
    ("resent", "resend"),
    ("mistook", "mistake"),
    ("bought", "buy"),
    ("made", "make"),
    ("took", "take"),
    ("taken", "take"),
    ("gave", "give"),
    ("given", "give"),
    ("held", "hold"),
    ("froze", "freeze"),
    ("frozen", "freeze"),
    ("met", "meet"),
    ("left", "leave"),
    ("sold", "sell"),
    ("spent", "spend"),
    ("wrote", "write"),
    ("written", "write"),
    ("chose", "choose"),
    ("chosen", "choose"),
    ("began", "begin"),
    ("begun", "begin"),
    ("brought", "bring"),
    ("thought", "think"),
    ("found", "find"),
    ("went", "go"),
    ("gone", "go"),
    ("got", "get"),
    ("gotten", "get"),
    ("knew", "know"),
    ("known", "know"),
    ("saw", "see"),
    ("seen", "see"),
    ("drove", "drive"),
    ("driven", "drive"),
    ("stood", "stand"),
    ("understood", "understand"),
    ("withdrew", "withdraw"),
    ("withdrawn", "withdraw"),
    ("forgot", "forget"),
    ("forgotten", "forget"),
    ("lent", "lend"),
    ("lost", "lose"),
    ("shown", "show"),
    ("ran", "run"),
    ("dealt", "deal"),
    ("did", "do"),
];

/// Nouns made from a verb whose stem the stemmer does not take back to the verb's ("the
/// Panel decides" and "a decision", "within 3 days of receipt" and "received"), with the
/// verb.
const DERIVED: &[(&str, &str)] = &[
    ("decision", "decide"),
    ("decisions", "decide"),
    ("receipt", "receive"),
    ("receipts", "receive"),
    ("referral", "refer"),
    ("referrals", "refer"),
    ("submission", "submit"),
    ("submissions", "submit"),
    ("permission", "permit"),
    ("admission", "admit"),
    ("omission", "omit"),
    ("extension", "extend"),
    ("extensions", "extend"),
    ("suspension", "suspend"),
    ("conclusion", "conclude"),
    ("exclusion", "exclude"),
    ("inclusion", "include"),
    ("revision", "revise"),
    ("failure", "fail"),
    ("failures", "fail"),
    ("closure", "close"),
    ("disclosure", "disclose"),
    ("disclosures", "disclose"),
    ("departure", "depart"),
    ("refusal", "refuse"),
    ("renewal", "renew"),
    ("removal", "remove"),
    ("dismissal", "dismiss"),
    ("proposal", "propose"),
    ("denial", "deny"),
];

/// Whether `word` (lower case) is a past form of a verb: a regular "-ed" form, or an
/// irregular one ("took", "sent").
pub(crate) fn is_past_form(word: &str) -> bool {
    (word.len() > 4 && word.ends_with("ed")) || irregular().contains_key(word)
}

fn irregular() -> &'static HashMap<&'static str, &'static str> {
    static MAP: OnceLock<HashMap<&'static str, &'static str>> = OnceLock::new();
    MAP.get_or_init(|| IRREGULAR.iter().copied().collect())
}

fn derived() -> &'static HashMap<&'static str, &'static str> {
    static MAP: OnceLock<HashMap<&'static str, &'static str>> = OnceLock::new();
    MAP.get_or_init(|| DERIVED.iter().copied().collect())
}

fn synonyms() -> &'static HashMap<&'static str, &'static str> {
    static MAP: OnceLock<HashMap<&'static str, &'static str>> = OnceLock::new();
    MAP.get_or_init(|| {
        SYNONYMS
            .iter()
            .flat_map(|group| group.iter().map(move |w| (*w, group[0])))
            .collect()
    })
}

fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// Words whose stems are kept (the same documents' words are stemmed on every turn;
/// stemming was the offline model's largest cost). Past this many the memo starts over.
const STEMS_KEPT: usize = 50_000;

fn stems() -> &'static RwLock<HashMap<String, String>> {
    static STEMS: OnceLock<RwLock<HashMap<String, String>>> = OnceLock::new();
    STEMS.get_or_init(|| RwLock::new(HashMap::new()))
}

/// The retrieval term of a lower-case word: its group's common word, stemmed.
pub(crate) fn term(word: &str) -> String {
    let word = irregular().get(word).copied().unwrap_or(word);
    let word = derived().get(word).copied().unwrap_or(word);
    let word = synonyms().get(word).copied().unwrap_or(word);
    if let Some(stem) = stems().read().unwrap_or_else(|e| e.into_inner()).get(word) {
        return stem.clone();
    }
    let stem = stemmer().stem(word).into_owned();
    let mut memo = stems().write().unwrap_or_else(|e| e.into_inner());
    if memo.len() >= STEMS_KEPT {
        memo.clear();
    }
    memo.insert(word.to_string(), stem.clone());
    stem
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_and_inflections_share_a_stem() {
        assert_eq!(term("emails"), term("email"));
        assert_eq!(term("reported"), term("report"));
        assert_eq!(term("deletion"), term("deleted"));
        assert_eq!(term("suspected"), term("suspects"));
        assert_ne!(term("record"), term("report"));
    }

    #[test]
    fn a_noun_made_from_a_verb_meets_the_verb() {
        assert_eq!(term("decision"), term("decides"));
        assert_eq!(term("receipt"), term("received"));
        assert_eq!(term("referral"), term("referred"));
    }

    #[test]
    fn a_phrasal_verb_is_the_word_a_policy_uses() {
        let t = |s: &str| crate::text::terms(s);
        assert!(t("how long to put in a claim").contains(&term("submitted")));
        assert!(t("hang on to paperwork").contains(&term("retained")));
        assert!(t("we found out on Monday").contains(&term("discovered")));
        assert!(t("how long to sort it out").contains(&term("remediated")));
        assert!(!t("put the file in the cabinet").contains(&term("submitted")));
        // A telephone call is a call; the on-call manager is not one.
        assert!(t("within 15 minutes of the call").contains(&term("phoned")));
        assert!(!t("the on-call Incident Manager").contains(&term("phoned")));
    }

    #[test]
    fn synonyms_meet() {
        assert_eq!(term("kept"), term("retained"));
        assert_eq!(term("retention"), term("keep"));
        assert_eq!(term("phone"), term("telephone"));
        assert_eq!(term("call"), term("phoned"));
        assert_eq!(term("bids"), term("quotations"));
        assert_eq!(term("mislaid"), term("lost"));
        assert_eq!(term("shareholders"), term("stake"));
        assert_eq!(term("owns"), term("shareholding"));
        assert_ne!(term("owner"), term("shareholding"));
        assert_eq!(term("clients"), term("customer"));
        assert_eq!(term("staff"), term("employees"));
        assert_eq!(term("minister"), term("PEPs".to_lowercase().as_str()));
        assert_eq!(term("told"), term("notified"));
        assert_eq!(term("boss"), term("managers"));
        assert_eq!(term("flew"), term("flight"));
        assert_eq!(term("realised"), term("awareness"));
        assert_ne!(term("notice"), term("awareness"));
    }
}
