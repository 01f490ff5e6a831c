//! Deadlines at a time of day on a day counted from the rule's event: "by 17:00 on the same
//! day", "by 10:00 on the next business day", "by the end of the next working day". A
//! duration cannot say them ("the same day" is no number of hours), so they are checked
//! on the practice's timeline: the day of the act against the day of the event, counted in
//! calendar or business days, and on the deadline's day, the time of day.

use super::events::event_of;
use super::*;
use crate::docmodel::timeline::clock;

/// A deadline at a time of day, `days` after the day of the rule's event.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct ClockDeadline {
    /// Days after the event's day: 0 for "the same day", 1 for "the next day".
    days: i32,
    /// Counted in business days ("the next business day").
    business: bool,
    /// The time of day, in minutes after midnight; `None` for the end of the day.
    minute: Option<u32>,
    /// The words of the day ("the same day"), as the rule's bound writes them.
    day_words: String,
    /// The deadline as the rule writes it ("by 17:00 on the same day").
    pub(super) written: String,
}

impl ClockDeadline {
    /// Whether this deadline is what the rule's bound `written` says ("the same day" of
    /// "by 17:00 on the same day").
    pub(super) fn is(&self, written: &str) -> bool {
        self.written
            .to_lowercase()
            .contains(&written.to_lowercase())
            || written.to_lowercase().contains(&self.day_words)
    }
}

/// The deadline at a time of day a rule's clause sets ("by 17:00 on the same day"), or at
/// the end of the event's day ("on the same day"), if it sets one.
pub(super) fn deadline(rule: &str) -> Option<ClockDeadline> {
    by_deadline(rule).or_else(|| day_deadline(rule))
}

/// A rule's words as written, and lower case without the punctuation around them.
fn words(rule: &str) -> (Vec<&str>, Vec<String>) {
    let raw: Vec<&str> = rule.split_whitespace().collect();
    let lower = raw
        .iter()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric() && c != ':' && c != '.')
                .trim_end_matches('.')
                .to_lowercase()
        })
        .collect();
    (raw, lower)
}

/// The end of the event's day: "on the same day", "on the day it is received".
fn day_deadline(rule: &str) -> Option<ClockDeadline> {
    let (raw, lower) = words(rule);
    let w = |i: usize| lower.get(i).map(String::as_str).unwrap_or("");
    // "on the same day", "on the day it is received": by the end of the event's day.
    let on = (0..lower.len()).find(|&i| {
        w(i) == "on"
            && w(i + 1) == "the"
            && (w(i + 2) == "same" && (w(i + 3) == "day" || w(i + 4) == "day")
                || w(i + 2) == "day" && matches!(w(i + 3), "it" | "they" | "of"))
    })?;
    let business = matches!(w(on + 3), "business" | "working");
    let end = if w(on + 2) == "day" {
        on + 3
    } else if business {
        on + 5
    } else {
        on + 4
    };
    Some(ClockDeadline {
        days: 0,
        business,
        minute: None,
        day_words: lower[on + 1..end].join(" "),
        written: raw[on..end]
            .join(" ")
            .trim_end_matches(|c: char| !c.is_alphanumeric())
            .to_string(),
    })
}

/// A deadline "by" a time of day on a day counted from the event.
fn by_deadline(rule: &str) -> Option<ClockDeadline> {
    let (raw, lower) = words(rule);
    let w = |i: usize| lower.get(i).map(String::as_str).unwrap_or("");
    let by = (0..lower.len()).find(|&i| w(i) == "by")?;
    // "by 17:00", "by 5pm", "by the end of", "by close of business".
    let (minute, mut i) = if let Some(m) = clock(w(by + 1)) {
        (Some(m), by + 2)
    } else if w(by + 1) == "the" && w(by + 2) == "end" && w(by + 3) == "of" {
        (None, by + 4)
    } else if w(by + 1) == "end" && w(by + 2) == "of" {
        (None, by + 3)
    } else {
        return None;
    };
    if w(i) == "on" {
        i += 1;
    }
    if matches!(w(i), "the" | "that") {
        i += 1;
    }
    let (days, at) = match w(i) {
        "same" | "that" => (0, i + 1),
        "next" | "following" => (1, i + 1),
        "day" if w(i + 1) == "after" => (1, i),
        "day" if w(i - 1) == "that" => (0, i),
        _ => return None,
    };
    let (business, end) = match (w(at), w(at + 1)) {
        ("business" | "working", "day") => (true, at + 2),
        ("day", _) => (false, at + 1),
        _ if w(at - 1) == "day" => (false, at),
        _ => return None,
    };
    let start = if w(i - 1) == "the" || w(i - 1) == "that" {
        i - 1
    } else {
        i
    };
    let day_words = lower[start..end].join(" ");
    let written = raw[by..end]
        .join(" ")
        .trim_end_matches(|c: char| !c.is_alphanumeric())
        .to_string();
    Some(ClockDeadline {
        days,
        business,
        minute,
        day_words,
        written,
    })
}

/// Whether an act at the later end of `since` keeps a deadline counted from the event at
/// its earlier end: `None` when the times told cannot say.
fn keeps(deadline: &ClockDeadline, since: &Since) -> Option<bool> {
    // Which day after the event's the act was on, in the deadline's count, and whether
    // it was on the deadline's day itself (not a weekend day after it).
    let (count, on_the_day) = if deadline.business {
        let (n, _) = since.business?;
        let weekday = since.weekday?;
        (
            n as i32,
            weekday < 5 || deadline.days == 0 && since.gap == 0,
        )
    } else {
        (since.gap, true)
    };
    let count = if deadline.business && deadline.days == 0 {
        since.gap
    } else {
        count
    };
    if count < deadline.days {
        return Some(true);
    }
    if count > deadline.days || !on_the_day {
        return Some(false);
    }
    let Some(minute) = deadline.minute else {
        return Some(true);
    };
    let (from, to) = since.minutes;
    if to <= minute {
        Some(true)
    } else if from > minute {
        Some(false)
    } else {
        None
    }
}

/// The check of a deadline at a time of day, or at the end of a day, against a fact the
/// practice places in time:
/// `Some(Ok(why))` when it is kept, `Some(Err(why))` when it is missed, `None` when the
/// fact has no time, no event told before it is the rule's, or the times cannot say.
pub(super) fn check_deadline(
    deadline: &ClockDeadline,
    fact: &Fact,
    time: &Bound,
    rule: &Bound,
    actor: &[String],
    object: &[String],
) -> Option<Result<String, String>> {
    if fact.since.is_empty() {
        return None;
    }
    // The rule's event: the one its words or its subject name ("each sounding"), else
    // the event told just before in the same breath ("gave him access at 18:40 and
    // emailed the Control Room at 09:30 the next morning").
    let named = Bound {
        anchor: rule
            .anchor
            .clone()
            .or_else(|| Some(Anchor::After(actor.to_vec()))),
        ..rule.clone()
    };
    let since = event_of(fact, &named, actor, object).or_else(|| fact.since.last())?;
    let when = &time.value.written;
    match keeps(deadline, since)? {
        true => Some(Ok(format!("{when} (the rule: {})", deadline.written))),
        false => Some(Err(format!(
            "{when} is after the rule's {}",
            deadline.written
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_at_a_time_of_day_are_read_with_their_day() {
        let d = deadline("A written record must reach the Control Room by 17:00 on the same day.")
            .expect("read");
        assert_eq!((d.days, d.business, d.minute), (0, false, Some(17 * 60)));
        assert_eq!(d.written, "by 17:00 on the same day");
        assert!(d.is("the same day"));
        let d = deadline("must notify the Control Room by 10:00 on the next business day.")
            .expect("read");
        assert_eq!((d.days, d.business, d.minute), (1, true, Some(600)));
        let d = deadline("must be entered by the end of the following working day").expect("read");
        assert_eq!((d.days, d.business, d.minute), (1, true, None));
        assert!(deadline("must be reported within 2 hours").is_none());
        let d = deadline("must be notified to the Chief Executive Officer on the same day.")
            .expect("read");
        assert_eq!((d.days, d.business, d.minute), (0, false, None));
        assert!(d.is("the same day"));
        let d = deadline("must be logged by Compliance on the day it is received").expect("read");
        assert_eq!((d.days, d.minute), (0, None));
        assert_eq!(d.written, "on the day");
        assert!(deadline("by 31 March each year").is_none());
    }

    #[test]
    fn the_act_is_checked_on_the_deadlines_day_and_time() {
        let next_business = deadline("by 10:00 on the next business day").expect("read");
        let since = |gap: i32, business: f64, weekday: u8, at: u32| Since {
            event: HashSet::new(),
            days: (0.0, 0.0),
            business: Some((business, business)),
            gap,
            weekday: Some(weekday),
            minutes: (at, at),
        };
        // Thursday evening to Friday 09:30; to Friday 10:30; to Monday 09:00 after a
        // Friday; to Saturday after a Thursday.
        assert_eq!(keeps(&next_business, &since(1, 1.0, 4, 570)), Some(true));
        assert_eq!(keeps(&next_business, &since(1, 1.0, 4, 630)), Some(false));
        assert_eq!(keeps(&next_business, &since(3, 1.0, 0, 540)), Some(true));
        assert_eq!(keeps(&next_business, &since(2, 1.0, 5, 540)), Some(false));
        let same_day = deadline("by 17:00 on the same day").expect("read");
        assert_eq!(keeps(&same_day, &since(0, 0.0, 2, 1110)), Some(false));
        assert_eq!(keeps(&same_day, &since(0, 0.0, 2, 900)), Some(true));
        assert_eq!(keeps(&same_day, &since(1, 1.0, 3, 600)), Some(false));
    }
}
