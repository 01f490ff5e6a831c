//! A rule's modality: whether it says an action must, must not or may be done, or only
//! states how things are ("Entries are retained for 7 years"). The first modal word of the
//! sentence decides ("must", "shall not", "is required", "is prohibited", "has to",
//! "permitted"); the words of [`MUST`] and [`MAY`] also mark where a sentence's modal verb
//! is, which ends a condition clause.

/// What a rule does with an action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Modality {
    /// "must", "shall", "is required", "requires".
    Must,
    /// "must not", "may not", "shall not", "is prohibited".
    MustNot,
    /// "may", "can", "is permitted".
    May,
    /// A statement of fact or of how things are done ("Entries are retained for 7 years").
    States,
}

pub(super) const MUST: [&str; 12] = [
    "must",
    "shall",
    "required",
    "requires",
    "require",
    "mandatory",
    "needs",
    "need",
    "obliged",
    "has",
    "have",
    "will",
];
pub(super) const MAY: [&str; 4] = ["may", "can", "permitted", "allowed"];

pub(super) fn modality(lower: &[&str]) -> Modality {
    for (i, w) in lower.iter().enumerate() {
        let next = lower.get(i + 1).copied().unwrap_or("");
        let after = lower.get(i + 2).copied().unwrap_or("");
        if matches!(*w, "must" | "shall" | "may" | "can" | "cannot") {
            if *w == "cannot" || next == "not" || next == "never" {
                return Modality::MustNot;
            }
            return if matches!(*w, "may" | "can") {
                Modality::May
            } else {
                Modality::Must
            };
        }
        if matches!(*w, "prohibited" | "forbidden" | "banned") {
            return Modality::MustNot;
        }
        if *w == "never" && i > 0 {
            return Modality::MustNot;
        }
        if matches!(
            *w,
            "required" | "requires" | "require" | "mandatory" | "obliged"
        ) || (*w == "is" && next == "to")
            || (matches!(*w, "has" | "have") && next == "to")
        {
            return Modality::Must;
        }
        if matches!(*w, "permitted" | "allowed") {
            return if i > 0 && lower[i - 1] == "not" {
                Modality::MustNot
            } else {
                Modality::May
            };
        }
        let _ = after;
    }
    Modality::States
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docmodel::rules::read;

    #[test]
    fn modality() {
        assert_eq!(
            read("Staff must not accept cash.").modality,
            Modality::MustNot
        );
        assert_eq!(read("Taxis may be used at night.").modality, Modality::May);
        assert_eq!(
            read("Business class always requires the prior approval of the CFO.").modality,
            Modality::Must
        );
        assert_eq!(
            read("Entries are kept for 7 years.").modality,
            Modality::States
        );
        assert_eq!(
            read("Cash gifts are prohibited.").modality,
            Modality::MustNot
        );
    }
}
