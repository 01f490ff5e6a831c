//! When the events of a practice happened, as far as its text says: a weekday ("on
//! Thursday afternoon", "the following Tuesday", "the Monday after that"), a date ("on
//! Monday 3 March"), a time of day ("at 13:30", "that evening"), or a time after the event
//! before ("two days later", "the next day"). Each event placed after another is given the
//! time since the events before it ([`Since`]) and, as its value, at least the time since
//! the event just before, with no upper end: which event a rule counts from is not known
//! (it may be one told with no time), so the value can show a deadline missed, never one
//! kept. A rule that names its event ("within 72 hours of the escalation") is checked
//! against the time since the event whose words it shares. With weekdays known, the
//! business days crossed are counted too ("the same business day").
//!
//! An event the text places with nothing to relate it to (a weekday after a date, a date
//! after a weekday) starts the timeline again.

use std::collections::HashSet;

use super::rules::{Anchor, Binding, Bound, Reading};
use super::values::{values, Limit, Unit, Value};
use crate::text::{terms, tokens};

/// Minutes in a day.
const DAY: f64 = 1440.0;
/// The time an event may be after the one a rule counts from, in days, when nothing bounds
/// it.
const UNBOUNDED: f64 = 36_500.0;

/// The time from an earlier event of a practice to a later one.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Since {
    /// The earlier event's clause, its terms.
    pub(crate) event: HashSet<String>,
    /// The days between, as a range.
    pub(crate) days: (f64, f64),
    /// The business days between, when the weekdays are known.
    pub(crate) business: Option<(f64, f64)>,
    /// The calendar days from the earlier event's day to the later's ("the next morning":
    /// 1), whatever the hours.
    pub(crate) gap: i32,
    /// The later event's weekday, when known (0 is Monday).
    pub(crate) weekday: Option<u8>,
    /// The minutes of the later event's day it may have been at.
    pub(crate) minutes: (u32, u32),
}

/// The parts of a day, in minutes after midnight.
const PARTS: [(&str, u32, u32); 7] = [
    ("morning", 6 * 60, 12 * 60),
    ("lunchtime", 12 * 60, 14 * 60),
    ("midday", 12 * 60, 12 * 60),
    ("noon", 12 * 60, 12 * 60),
    ("afternoon", 12 * 60, 18 * 60),
    ("evening", 18 * 60, 23 * 60),
    ("night", 20 * 60, 24 * 60),
];

const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// When an event happened: its day (counted from the timeline's first day), its weekday
/// when known (0 is Monday), its day of the year when known, and the minutes of the day it
/// may have been at.
#[derive(Clone, Debug, PartialEq)]
struct Point {
    day: i32,
    weekday: Option<u8>,
    date: Option<i32>,
    minutes: (u32, u32),
}

/// What a clause says of when it happened.
#[derive(Default)]
struct Said {
    weekday: Option<u8>,
    /// "the following Tuesday", "the Monday after that": the next such day, not today.
    later_weekday: bool,
    /// "last Thursday": a day before now, which starts a story but follows no event.
    before_now: bool,
    date: Option<i32>,
    /// Days after the event before ("the next day": 1, "that evening": 0).
    days_after: Option<i32>,
    minutes: Option<(u32, u32)>,
}

impl Said {
    fn places(&self) -> bool {
        self.weekday.is_some()
            || self.date.is_some()
            || self.days_after.is_some()
            || self.minutes.is_some()
    }
}

/// A practice's events in order (see the module's documentation).
#[derive(Default)]
pub(crate) struct Timeline {
    /// The events placed so far, with their clauses' terms.
    events: Vec<(Point, HashSet<String>)>,
    last: Option<Point>,
}

impl Timeline {
    /// Places the clause `text` (read as `reading`) on the timeline and returns the time
    /// since the events before it when it says when it happened: with a value of that
    /// time when it states none of its own, without one when it does ("the next
    /// morning" keeps its own); a clause that states a time after the event before ("two
    /// days later") moves the timeline on by it.
    pub(crate) fn place(
        &mut self,
        text: &str,
        reading: &mut Reading,
    ) -> Option<(Option<Bound>, Vec<Since>)> {
        // "asking to become a director from Monday 15 September", "the launch planned for 1
        // April": a date of what was asked or planned, not of something that happened.
        if planned(text) {
            return None;
        }
        let said = read(text);
        let own: HashSet<String> = terms(text).into_iter().collect();
        let stated = reading
            .bounds
            .iter()
            .position(|b| b.value.calendar_days().is_some());
        // "at 13:30 the same day": a time of day places the event, and the day words only
        // say which day; the time since each event before is what a rule counts.
        let clocked = said.minutes.is_some_and(|(a, b)| a == b)
            && stated.is_some_and(|k| reading.bounds[k].value.low < 2.0);
        if clocked {
            if let Some(k) = stated {
                reading.bounds.remove(k);
            }
        }
        if let Some(k) = stated.filter(|_| !clocked) {
            let b = reading.bounds[k].clone();
            if said.places() {
                // "the next day": its own value says how long after; the timeline moves,
                // and with the weekdays known, the business days it crosses are too ("the
                // next morning" after a Friday is no business day later).
                if self.last.is_none() && (said.date.is_some() || said.weekday.is_some()) {
                    // "On Wednesday 4 June ..., with a script approved the day before": a
                    // day of its own starts the story whatever else it counts.
                    let start = start(&said);
                    self.last = Some(start.clone());
                    self.events = vec![(start, own)];
                } else if let Some(last) = self.last.clone() {
                    if let Some(now) = after(&last, &said) {
                        if let (Some(n), None) =
                            (business_days(&last, &now), reading.bounds[k].value.business)
                        {
                            reading.bounds[k].value.business = Some((n, n));
                        }
                        // Its own value stays what it says; the days since each event
                        // before are there for a rule that counts days ("on the same
                        // day").
                        let since = self.since(&now);
                        self.events.push((now.clone(), own));
                        self.last = Some(now);
                        return Some((None, since));
                    }
                }
            } else if matches!(b.anchor, Some(Anchor::After(_))) {
                // "two days later" moves the timeline on; "a week before the launch" says
                // nothing of when this happened.
                self.last = match (&self.last, b.value.calendar_days()) {
                    // "forty minutes later", "an hour after that": later the same day, or
                    // into the next when the clock runs past midnight.
                    (Some(last), Some((low, high))) if low == high && low < 1.0 => {
                        let delta = (low * DAY).round() as u32;
                        let (from, to) = last.minutes;
                        let (day, minutes) = if to + delta < DAY as u32 {
                            (last.day, (from + delta, to + delta))
                        } else if from + delta >= DAY as u32 {
                            (
                                last.day + 1,
                                (from + delta - DAY as u32, to + delta - DAY as u32),
                            )
                        } else {
                            (last.day, (from + delta, DAY as u32))
                        };
                        let moved = day - last.day;
                        Some(Point {
                            day,
                            weekday: last
                                .weekday
                                .map(|w| ((i32::from(w) + moved).rem_euclid(7)) as u8),
                            date: last.date.map(|d| d + moved),
                            minutes,
                        })
                    }
                    (Some(last), Some((low, high))) if low == high && low.fract() == 0.0 => {
                        let days = low as i32;
                        Some(Point {
                            day: last.day + days,
                            weekday: last
                                .weekday
                                .map(|w| ((i32::from(w) + days).rem_euclid(7)) as u8),
                            date: last.date.map(|d| d + days),
                            minutes: (0, DAY as u32),
                        })
                    }
                    _ => None,
                };
                match &self.last {
                    Some(now) => self.events.push((now.clone(), own)),
                    None => self.events.clear(),
                }
            }
            return None;
        }
        if !said.places() {
            return None;
        }
        if said.before_now && self.last.is_some() {
            return None;
        }
        let now = self.last.as_ref().and_then(|last| after(last, &said));
        let (Some(last), Some(now)) = (self.last.clone(), now) else {
            let start = start(&said);
            self.last = Some(start.clone());
            self.events = vec![(start, own)];
            return None;
        };
        let since = self.since(&now);
        self.last = Some(now.clone());
        self.events.push((now.clone(), own));
        let low = between(&last, &now).0;
        let business = business_days(&last, &now).map(|n| (n, UNBOUNDED));
        let written = when_written(text);
        let span = text.find(&written).map_or(0..0, |i| i..i + written.len());
        let (number, shown_unit) = if low < 1.0 {
            (low * 24.0, "hour")
        } else {
            (low, "day")
        };
        let bound = Bound {
            value: Value {
                unit: Unit::Days,
                low,
                high: UNBOUNDED,
                shown_unit,
                number,
                written,
                span,
                frequency: false,
                business,
            },
            binding: Binding::Limit(Limit::Exactly),
            anchor: Some(Anchor::Since),
            context: terms(text).into_iter().collect::<HashSet<_>>(),
        };
        Some((Some(bound), since))
    }

    /// The time from each event placed so far to `now`.
    fn since(&self, now: &Point) -> Vec<Since> {
        self.events
            .iter()
            .map(|(p, event)| Since {
                event: event.clone(),
                days: between(p, now),
                business: business_days(p, now).map(|n| (n, n)),
                gap: now.day - p.day,
                weekday: now.weekday,
                minutes: now.minutes,
            })
            .collect()
    }
}

/// Whether a clause dates what was asked for, planned or due rather than what happened.
fn planned(text: &str) -> bool {
    let lower = format!(" {} ", text.to_lowercase());
    [
        " asking to ",
        " asked to become ",
        " planned for ",
        " planning to ",
        " intended ",
        " intends to ",
        " due to start ",
        " will ",
        " would ",
        " is to ",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// The first event: day 0.
fn start(said: &Said) -> Point {
    Point {
        day: 0,
        weekday: said.weekday,
        date: said.date,
        minutes: said.minutes.unwrap_or((0, DAY as u32)),
    }
}

/// When an event happened after `last`, from what its clause says; `None` when nothing
/// relates the two.
fn after(last: &Point, said: &Said) -> Option<Point> {
    let day = if let Some(date) = said.date {
        last.day + (date - last.date?)
    } else if let Some(w) = said.weekday {
        let mut delta = (i32::from(w) - i32::from(last.weekday?)).rem_euclid(7);
        if delta == 0 && said.later_weekday {
            delta = 7;
        }
        last.day + delta
    } else {
        last.day + said.days_after.unwrap_or(0)
    };
    if day < last.day {
        return None;
    }
    let moved = day - last.day;
    let minutes = match said.minutes {
        Some(m) => m,
        // The same day with no time: after the event before.
        None if moved == 0 => (last.minutes.0, DAY as u32),
        None => (0, DAY as u32),
    };
    if moved == 0 && minutes.1 < last.minutes.0 {
        return None;
    }
    Some(Point {
        day,
        weekday: said.weekday.or_else(|| {
            last.weekday
                .map(|w| ((i32::from(w) + moved).rem_euclid(7)) as u8)
        }),
        date: said.date.or_else(|| last.date.map(|d| d + moved)),
        minutes,
    })
}

/// The days from `a` to `b`, as a range.
fn between(a: &Point, b: &Point) -> (f64, f64) {
    let days = f64::from(b.day - a.day);
    let low = days + (f64::from(b.minutes.0) - f64::from(a.minutes.1)) / DAY;
    let high = days + (f64::from(b.minutes.1) - f64::from(a.minutes.0)) / DAY;
    (low.max(0.0), high.max(0.0))
}

/// The business days from `a` to `b` (the weekdays after `a`'s day up to `b`'s), when
/// their weekdays are known.
fn business_days(a: &Point, b: &Point) -> Option<f64> {
    let w = a.weekday?;
    let n = (1..=(b.day - a.day))
        .filter(|k| (i32::from(w) + k).rem_euclid(7) < 5)
        .count();
    Some(n as f64)
}

/// How the clause says when it happened, as written: its day and time words
/// ("on Friday afternoon", "at 13:30", "that evening").
fn when_written(text: &str) -> String {
    let lower = text.to_lowercase();
    let words: Vec<&str> = text.split_whitespace().collect();
    let lowers: Vec<&str> = lower.split_whitespace().collect();
    let bare = |w: &str| {
        w.trim_matches(|c: char| !c.is_alphanumeric() && c != ':')
            .to_string()
    };
    let month = |i: usize| {
        lowers
            .get(i)
            .is_some_and(|w| crate::docmodel::header::is_month(&bare(w)))
    };
    // A day of the month is a number beside its month ("4 July", "July 4"), not any small
    // number ("Level 2").
    let is_when = |i: usize| {
        let w = bare(lowers[i]);
        let w = w.as_str();
        WEEKDAYS.contains(&w)
            || PARTS.iter().any(|(p, _, _)| *p == w)
            || clock(w).is_some()
            || matches!(w, "day" | "next" | "following" | "same" | "that")
            || crate::docmodel::header::is_month(w)
            || w.chars().all(|c| c.is_ascii_digit())
                && (1..=2).contains(&w.len())
                && (month(i + 1) || i > 0 && month(i - 1))
    };
    let Some(first) = (0..lowers.len()).find(|&i| is_when(i)) else {
        return text.to_string();
    };
    let last = (0..lowers.len())
        .rev()
        .find(|&i| is_when(i))
        .unwrap_or(first);
    let from = if first > 0
        && matches!(
            lowers[first - 1],
            "on" | "at" | "the" | "by" | "that" | "a" | "in"
        ) {
        first - 1
    } else {
        first
    };
    words[from..=last]
        .join(" ")
        .trim_end_matches(|c: char| !c.is_alphanumeric())
        .to_string()
}

/// A time of day written "13:30" or "9.15am": minutes after midnight.
pub(crate) fn clock(word: &str) -> Option<u32> {
    let w = word.trim_matches(|c: char| !c.is_alphanumeric());
    let (w, pm) = match w.strip_suffix("pm") {
        Some(x) => (x, Some(true)),
        None => (
            w.strip_suffix("am").unwrap_or(w),
            w.ends_with("am").then_some(false),
        ),
    };
    // "4pm", "11am": the hour alone, with its half of the day.
    let (h, m) = match w.split_once(':').or_else(|| w.split_once('.')) {
        Some(hm) => hm,
        None if pm.is_some() && (1..=2).contains(&w.len()) => (w, "0"),
        None => return None,
    };
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    if h > 23 || m > 59 || m.to_string().len() > 2 || pm.is_some() && !(1..=12).contains(&h) {
        return None;
    }
    let h = match pm {
        Some(true) if h < 12 => h + 12,
        Some(false) if h == 12 => 0,
        _ => h,
    };
    Some(h * 60 + m)
}

/// A time of day said in words, in minutes after midnight: "at nine in the morning", "at
/// three in the afternoon", "at half past eleven at night", "at 3 pm", "at ten o'clock".
fn spoken_clock(ws: &[String]) -> Option<u32> {
    const HOURS: [&str; 12] = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve",
    ];
    let hour = |w: &str| -> Option<u32> {
        HOURS
            .iter()
            .position(|h| *h == w)
            .map(|i| i as u32 + 1)
            .or_else(|| w.parse::<u32>().ok().filter(|h| (1..=12).contains(h)))
    };
    let at = ws.iter().position(|w| w == "at")?;
    let rest = &ws[at + 1..];
    let (h, past, k) = match rest {
        [q, p, h, ..] if matches!(q.as_str(), "half" | "quarter") && p == "past" => {
            (hour(h)?, if q == "half" { 30 } else { 15 }, 3)
        }
        [q, t, h, ..] if q == "quarter" && t == "to" => {
            let h = hour(h)?;
            (if h == 1 { 12 } else { h - 1 }, 45, 3)
        }
        [h, ..] => (hour(h)?, 0, 1),
        [] => return None,
    };
    let after: Vec<&str> = rest[k..].iter().take(3).map(String::as_str).collect();
    let pm = match after.as_slice() {
        ["pm", ..] | ["in", "the", "afternoon" | "evening"] | ["at", "night", ..] => Some(true),
        ["am", ..] | ["in", "the", "morning"] => Some(false),
        ["o'clock" | "oclock", ..] => None,
        _ => return None,
    };
    let h24 = match pm {
        Some(true) if h < 12 => h + 12,
        Some(false) if h == 12 => 0,
        _ => h,
    };
    Some(h24 * 60 + past)
}

/// What a clause says of when it happened.
fn read(text: &str) -> Said {
    let mut said = Said::default();
    let ws = tokens(text);
    let raw: Vec<&str> = text.split_whitespace().collect();
    for (i, r) in raw.iter().enumerate() {
        if let Some(m) = clock(r) {
            // "10:15 pm": the half of the day in the next word.
            let next = raw.get(i + 1).map(|w| {
                w.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase()
            });
            let m = match next.as_deref() {
                Some("pm" | "p.m") if m < 12 * 60 => m + 12 * 60,
                Some("am" | "a.m") if (12 * 60..13 * 60).contains(&m) => m - 12 * 60,
                _ => m,
            };
            said.minutes = Some((m, m));
            break;
        }
    }
    if said.minutes.is_none() {
        said.minutes = spoken_clock(&ws).map(|m| (m, m));
    }
    let has = |a: &str, b: &str| ws.windows(2).any(|p| p[0] == a && p[1] == b);
    for (i, w) in ws.iter().enumerate() {
        if let Some(d) = WEEKDAYS.iter().position(|x| x == w) {
            // "last Friday" is before now: it may start a story, never follow an event.
            if i > 0 && ws[i - 1] == "last" {
                said.before_now = true;
            }
            said.weekday = Some(d as u8);
            let before = &ws[i.saturating_sub(2)..i];
            let after = ws.get(i + 1).map(String::as_str).unwrap_or("");
            said.later_weekday = before
                .iter()
                .any(|b| matches!(b.as_str(), "following" | "next"))
                || after == "after";
        }
        if said.minutes.is_none() {
            if let Some((_, a, b)) = PARTS.iter().find(|(p, _, _)| p == w) {
                said.minutes = Some((*a, *b));
            }
        }
    }
    if has("next", "day")
        || has("following", "day")
        || has("day", "after")
        || has("next", "morning")
        || has("following", "morning")
        || has("next", "afternoon")
        || has("following", "afternoon")
    {
        said.days_after = Some(1);
    } else if has("same", "day")
        || has("that", "day")
        || has("that", "morning")
        || has("that", "afternoon")
        || has("that", "evening")
        || has("that", "night")
        || has("same", "morning")
        || has("same", "afternoon")
        || has("same", "evening")
    {
        said.days_after = Some(0);
    }
    // A date of the year: "on 3 March", "Thursday 20 March".
    if let Some(v) = values(text)
        .into_iter()
        .find(|v| v.unit == Unit::Date && v.low == v.high)
    {
        said.date = Some(v.low as i32);
    }
    if said.days_after.is_some() && said.weekday.is_none() && said.date.is_none() {
        return said;
    }
    if said.minutes.is_some() && said.weekday.is_none() && said.date.is_none() {
        said.days_after = Some(0);
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docmodel::rules;

    /// Each clause's value and the time since each event before it.
    fn timeline(clauses: &[&str]) -> Vec<Option<(Value, Vec<Since>)>> {
        let mut t = Timeline::default();
        clauses
            .iter()
            .map(|c| {
                t.place(c, &mut rules::read(c))
                    .and_then(|(b, s)| b.map(|b| (b.value, s)))
            })
            .collect()
    }

    fn since<'a>(s: &'a [Since], word: &str) -> &'a Since {
        s.iter()
            .find(|s| s.event.contains(word))
            .unwrap_or_else(|| panic!("{word}: {s:?}"))
    }

    #[test]
    fn minutes_later_keep_the_timeline_for_a_weekday_after() {
        let v = timeline(&[
            "On Monday at 09:00 a manager realised he had emailed a list to the wrong address",
            "He rang the Service Desk forty minutes later",
            "The DPO notified the supervisory authority on Friday morning that week",
        ]);
        let (_, s) = v[2].as_ref().expect("placed");
        let d = since(s, "manag").days;
        assert!(d.0 >= 3.8 && d.1 <= 4.2, "{d:?}");
    }

    #[test]
    fn a_dated_event_that_counts_another_day_still_starts_the_story() {
        let v = timeline(&[
            "On Wednesday 4 June 2025 the desk sounded out investors, using a script approved the day before",
            "The record reached the Control Room at 18:30 that evening",
        ]);
        let (_, s) = v[1].as_ref().expect("placed");
        let sounded = since(s, &crate::vocabulary::term("sounded"));
        assert_eq!(
            (sounded.gap, sounded.weekday, sounded.minutes),
            (0, Some(2), (1110, 1110))
        );
    }

    #[test]
    fn weekdays_and_parts_of_days_give_the_time_since() {
        let v = timeline(&[
            "On Thursday afternoon our reviewer decided that an alert might be a true match",
            "emailed the MLRO about it on Friday morning",
            "The MLRO confirmed the match on Friday afternoon",
            "The accounts were frozen on the following Tuesday",
            "the MLRO reported the freeze the Monday after that",
        ]);
        assert!(v[0].is_none());
        let (e, _) = v[1].as_ref().unwrap();
        assert_eq!((e.low, e.high), (0.5, UNBOUNDED));
        assert_eq!(e.business, Some((1.0, UNBOUNDED)));
        assert_eq!(e.written, "on Friday morning");
        let (c, s) = v[2].as_ref().unwrap();
        assert_eq!(c.low, 0.0);
        assert_eq!(since(s, "review").days, (0.75, 1.25));
        assert_eq!(since(s, "mlro").days, (0.0, 0.5));
        let (f, s) = v[3].as_ref().unwrap();
        assert!((f.low - 3.25).abs() < 1e-9, "{f:?}");
        assert_eq!(since(s, "review").business, Some((3.0, 3.0)));
        let (r, _) = v[4].as_ref().unwrap();
        assert_eq!(r.low, 5.0);
    }

    #[test]
    fn clock_times_dates_and_stated_delays_move_the_timeline() {
        let v = timeline(&[
            "A payment was held by screening at 10:00",
            "The analyst reviewed the alert at 13:30",
        ]);
        assert!((v[1].as_ref().unwrap().0.low * 24.0 - 3.5).abs() < 1e-9);
        let v = timeline(&[
            "The application reached us on Monday 3 March",
            "we finished verifying his identity on Thursday 20 March",
        ]);
        let (d, s) = v[1].as_ref().unwrap();
        assert_eq!(d.low, 16.0);
        assert_eq!(since(s, "applic").days, (16.0, 18.0));
        assert_eq!(since(s, "applic").business, Some((13.0, 13.0)));
        let v = timeline(&[
            "On Monday the clerk spotted it",
            "two days later she told her manager",
            "the manager escalated it on Thursday",
        ]);
        assert!(v[1].is_none());
        let (n, s) = v[2].as_ref().unwrap();
        assert_eq!(n.low, 0.0);
        assert_eq!(
            since(s, &crate::vocabulary::term("spotted")).business,
            Some((3.0, 3.0))
        );
        assert_eq!(since(s, "manag").business, Some((1.0, 1.0)));
        assert!(timeline(&["On Friday we met", "last Monday we had met"])[1].is_none());
        // "last Thursday" starts a story; "4pm" is a time of day.
        let v = timeline(&[
            "Last Thursday at 3pm Marketing published a post",
            "A compliance analyst spotted it at 4pm on Friday",
        ]);
        let (d, _) = v[1].as_ref().unwrap();
        assert!((d.low - 25.0 / 24.0).abs() < 1e-9, "{d:?}");
        let v = timeline(&[
            "IT Operations spotted it at nine in the morning",
            "told Compliance at three in the afternoon",
        ]);
        assert!((v[1].as_ref().unwrap().0.low * 24.0 - 6.0).abs() < 1e-9);
        let v = timeline(&[
            "The flight landed at 10:15 pm",
            "she took a taxi at half past eleven at night",
        ]);
        assert!((v[1].as_ref().unwrap().0.low * 24.0 - 1.25).abs() < 1e-9);
    }
}
