//! The words that name what a number measures: calendar and business durations ("hours",
//! "weeks", "years") with their length in days, frequencies ("annually", "quarterly") as
//! the interval they mean, and currencies by code, name or sign ("EUR", "euros", "€").

/// A calendar or business unit word, singular, and its length in days (`None` for
/// business days).
pub(super) fn duration_unit(w: &str) -> Option<(&'static str, Option<f64>)> {
    Some(match w {
        "minute" | "minutes" | "min" | "mins" => ("minute", Some(1.0 / 1440.0)),
        "hour" | "hours" | "hr" | "hrs" | "h" => ("hour", Some(1.0 / 24.0)),
        "day" | "days" => ("day", Some(1.0)),
        "week" | "weeks" => ("week", Some(7.0)),
        "fortnight" | "fortnights" => ("fortnight", Some(14.0)),
        "month" | "months" => ("month", Some(365.25 / 12.0)),
        "quarter" | "quarters" => ("quarter", Some(365.25 / 4.0)),
        "year" | "years" | "yr" | "yrs" => ("year", Some(365.25)),
        _ => return None,
    })
}

/// Words that state a frequency, as the interval they mean (singular unit, number).
pub(super) fn frequency_word(w: &str) -> Option<(&'static str, f64)> {
    Some(match w {
        "annually" | "yearly" | "annual" => ("year", 1.0),
        "biannually" | "semiannually" => ("month", 6.0),
        "quarterly" => ("quarter", 1.0),
        "monthly" => ("month", 1.0),
        "weekly" => ("week", 1.0),
        "daily" => ("day", 1.0),
        "hourly" => ("hour", 1.0),
        _ => return None,
    })
}

pub(super) fn currency(w: &str) -> Option<&'static str> {
    Some(match w {
        "eur" | "euro" | "euros" | "€" => "EUR",
        "usd" | "dollar" | "dollars" | "$" | "us$" => "USD",
        "gbp" | "pound" | "pounds" | "£" | "sterling" => "GBP",
        "chf" | "franc" | "francs" => "CHF",
        "jpy" | "yen" => "JPY",
        "sek" | "nok" | "dkk" => "SEK",
        _ => return None,
    })
}
