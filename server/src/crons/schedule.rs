//! When a cron's ticks fall: its cron expression (5 fields, or 6 with seconds first) read by
//! `croner`, in its IANA time zone (UTC when it has none) from `chrono-tz`.

use std::str::FromStr;

use chrono::{DateTime, TimeZone};
use chrono_tz::Tz;

/// Why a schedule cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ScheduleError {
    /// The cron expression does not parse.
    #[error("schedule `{0}` is not a cron expression: {1}")]
    Expression(String, String),
    /// The time zone is not an IANA name.
    #[error("timezone `{0}` is not an IANA time zone (e.g. America/New_York)")]
    Timezone(String),
}

/// A parsed schedule.
#[derive(Debug)]
pub(crate) struct Schedule {
    cron: croner::Cron,
    tz: Tz,
}

impl Schedule {
    /// Parses `expression` in `timezone` (UTC when `None`).
    ///
    /// # Errors
    /// A bad expression or time zone.
    pub(crate) fn parse(expression: &str, timezone: Option<&str>) -> Result<Self, ScheduleError> {
        let cron = croner::Cron::from_str(expression)
            .map_err(|e| ScheduleError::Expression(expression.to_string(), e.to_string()))?;
        let tz = match timezone {
            None => Tz::UTC,
            Some(t) => Tz::from_str(t).map_err(|_| ScheduleError::Timezone(t.to_string()))?,
        };
        Ok(Schedule { cron, tz })
    }

    /// The first tick strictly after `after_ms` (ms since the epoch), if there is one.
    pub(crate) fn next_after(&self, after_ms: i64) -> Option<i64> {
        let utc = DateTime::from_timestamp_millis(after_ms)?;
        let local = self.tz.from_utc_datetime(&utc.naive_utc());
        self.cron
            .find_next_occurrence(&local, false)
            .ok()
            .map(|t| t.timestamp_millis())
    }

    /// The first tick strictly after `after_ms` that is not past `end_ms`.
    pub(crate) fn next_until(&self, after_ms: i64, end_ms: Option<i64>) -> Option<i64> {
        self.next_after(after_ms)
            .filter(|t| end_ms.is_none_or(|end| *t <= end))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::Schedule;

    #[test]
    fn ticks_fall_in_the_time_zone() {
        // 2024-07-01T00:00:00Z.
        let start = 1_719_792_000_000;
        let utc = Schedule::parse("0 9 * * *", None).unwrap();
        assert_eq!(utc.next_after(start), Some(start + 9 * 3_600_000));
        // 09:00 in New York in July is 13:00 UTC.
        let ny = Schedule::parse("0 9 * * *", Some("America/New_York")).unwrap();
        assert_eq!(ny.next_after(start), Some(start + 13 * 3_600_000));
        let secs = Schedule::parse("*/5 * * * * *", None).unwrap();
        assert_eq!(secs.next_after(start), Some(start + 5_000));
        assert_eq!(utc.next_until(start, Some(start + 3_600_000)), None);
    }

    #[test]
    fn bad_schedules_are_refused() {
        assert!(Schedule::parse("every day", None).is_err());
        assert!(Schedule::parse("0 9 * * *", Some("Mars/Olympus")).is_err());
    }
}
