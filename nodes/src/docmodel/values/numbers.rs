//! Numbers as a text writes them: in digits ("1,000", "4.5", "12th", "5k") or words
//! ("seven", "twenty-four", "one hundred", "a dozen"), vague ("a few", "several"), as
//! ranges ("two to three") and with halves and quarters ("one and a half", "a quarter of
//! an hour"); and shares written as fractions ("a fifth", "two thirds of the alerts").

use super::unit_words::duration_unit;
use super::Word;

const ONES: [&str; 20] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];
const TENS: [&str; 8] = [
    "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
];

/// A number written as one word: digits ("1,000", "4.5", "12th"), or a number word up to
/// ninety-nine ("seven", "twenty"), "a dozen" counted by its noun.
pub(crate) fn number_word(w: &str) -> Option<f64> {
    if let Some(i) = ONES.iter().position(|o| *o == w) {
        return Some(i as f64);
    }
    if let Some(i) = TENS.iter().position(|t| *t == w) {
        return Some(20.0 + 10.0 * i as f64);
    }
    match w {
        "dozen" => return Some(12.0),
        "hundred" => return Some(100.0),
        "thousand" => return Some(1000.0),
        "once" => return Some(1.0),
        "twice" => return Some(2.0),
        _ => {}
    }
    let first = w.chars().next()?;
    if !first.is_ascii_digit() {
        return None;
    }
    let digits: String = w.chars().filter(|c| *c != ',').collect();
    let digits = digits
        .trim_end_matches("st")
        .trim_end_matches("nd")
        .trim_end_matches("rd")
        .trim_end_matches("th");
    // "5k", "2m": thousands and millions.
    if let Some(n) = digits.strip_suffix('k') {
        return n.parse::<f64>().ok().map(|v| v * 1e3);
    }
    if let Some(n) = digits.strip_suffix('m') {
        return n.parse::<f64>().ok().map(|v| v * 1e6);
    }
    digits.parse().ok()
}

/// The number starting at word `i`, and the index of the word after it: digits, number
/// words, "twenty-four" (split at the hyphen), "one hundred", "a"/"an" before a unit, "a
/// couple of", "a few", "half a", "one and a half", "a week and a half" is read by the
/// caller.
pub(super) fn number_at(ws: &[Word], i: usize) -> Option<(f64, f64, usize)> {
    let w = ws.get(i)?.text.as_str();
    let next = ws.get(i + 1).map(|w| w.text.as_str()).unwrap_or("");
    let after = ws.get(i + 2).map(|w| w.text.as_str()).unwrap_or("");
    // "a quarter of an hour", "three quarters of an hour".
    if matches!(next, "quarter" | "quarters")
        && after == "of"
        && ws
            .get(i + 3)
            .is_some_and(|w| matches!(w.text.as_str(), "a" | "an"))
    {
        let n = if matches!(w, "a" | "an") {
            Some(1.0)
        } else {
            number_word(w)
        };
        if let Some(n) = n {
            return Some((n / 4.0, n / 4.0, i + 4));
        }
    }
    match (w, next) {
        ("a" | "an", "couple") if after == "of" => return Some((2.0, 2.0, i + 3)),
        ("a" | "an", "few") => return Some((2.0, 4.0, i + 2)),
        ("several", _) => return Some((3.0, 7.0, i + 1)),
        ("half", "a" | "an") => return Some((0.5, 0.5, i + 2)),
        ("a" | "an" | "one", "half") => return Some((0.5, 0.5, i + 2)),
        ("a" | "an", "dozen") => return Some((12.0, 12.0, i + 2)),
        ("a" | "an", _) => return Some((1.0, 1.0, i + 1)),
        _ => {}
    }
    let mut n = number_word(w)?;
    let mut j = i + 1;
    // "twenty four", "twenty-four" (split at the hyphen).
    if (20.0..100.0).contains(&n) && n % 10.0 == 0.0 {
        if let Some(k) = ws
            .get(j)
            .and_then(|w| ONES.iter().position(|o| *o == w.text))
        {
            if (1..10).contains(&k) {
                n += k as f64;
                j += 1;
            }
        }
    }
    // "one hundred", "five thousand", "2 million".
    while let Some(m) = ws.get(j).and_then(|w| match w.text.as_str() {
        "hundred" => Some(100.0),
        "thousand" => Some(1e3),
        "million" | "mn" => Some(1e6),
        "billion" | "bn" => Some(1e9),
        _ => None,
    }) {
        n *= m;
        j += 1;
    }
    // "one and a half".
    if ws.get(j).is_some_and(|w| w.text == "and")
        && ws.get(j + 1).is_some_and(|w| w.text == "a")
        && ws.get(j + 2).is_some_and(|w| w.text == "half")
    {
        n += 0.5;
        j += 3;
    }
    // "two to three", "2-3" (the hyphen split it), "between 5 and 10".
    if let Some((hi, _, k)) = ws
        .get(j)
        .filter(|w| matches!(w.text.as_str(), "to" | "or"))
        .and_then(|_| number_word(ws.get(j + 1)?.text.as_str()).map(|v| (v, v, j + 2)))
    {
        if hi > n {
            return Some((n, hi, k));
        }
    }
    Some((n, n, j))
}

/// A share written as a fraction at word `i` ("a fifth", "one third", "two thirds",
/// "half"), as a part of one and how many words it takes: only where it is a share of
/// something ("a third of the alerts", not "a quarter of an hour") or a change by it ("cut
/// by about a fifth").
pub(super) fn fraction_at(ws: &[Word], i: usize) -> Option<(f64, usize)> {
    let word = |k: usize| ws.get(k).map(|w| w.text.as_str()).unwrap_or("");
    let denominator = |w: &str| match w {
        "half" | "halves" => Some(2.0),
        "third" | "thirds" => Some(3.0),
        "quarter" | "quarters" => Some(4.0),
        "fifth" | "fifths" => Some(5.0),
        "tenth" | "tenths" => Some(10.0),
        _ => None,
    };
    let (share, n) = match (word(i), word(i + 1)) {
        ("a" | "an" | "one", d) if !d.ends_with('s') || d == "halves" => (1.0 / denominator(d)?, 2),
        ("two" | "three" | "four", d) if d.ends_with('s') => {
            (number_word(word(i))? / denominator(d)?, 2)
        }
        ("half", "of") => (0.5, 1),
        _ => return None,
    };
    // "of" a thing, not of a time ("a quarter of an hour", "half of the year").
    let mut after = i + n;
    let of = word(after) == "of" && {
        after += 1;
        while matches!(
            word(after),
            "the" | "a" | "an" | "its" | "our" | "their" | "all"
        ) {
            after += 1;
        }
        duration_unit(word(after)).is_none() && !matches!(word(after), "" | "it" | "them")
    };
    // "by" a share, perhaps roughly: "by about a fifth", "by more than a third".
    let mut k = i;
    while k > 0
        && matches!(
            word(k - 1),
            "about"
                | "around"
                | "roughly"
                | "nearly"
                | "almost"
                | "some"
                | "over"
                | "under"
                | "approximately"
                | "just"
                | "than"
                | "more"
                | "less"
        )
    {
        k -= 1;
    }
    let by = k > 0 && word(k - 1) == "by";
    (of || by).then_some((share, n))
}

#[cfg(test)]
mod tests {
    use crate::docmodel::values::test_support::one;
    use crate::docmodel::values::{values, Unit};

    #[test]
    fn a_share_in_words_is_a_percentage_and_a_quarter_of_an_hour_is_not() {
        let fifth = one("the vendor expects it to cut alert volume by about a fifth");
        assert_eq!((fifth.unit, fifth.low), (Unit::Percent, 20.0));
        let thirds = one("two thirds of the alerts were closed");
        assert_eq!((thirds.unit, thirds.low.round()), (Unit::Percent, 67.0));
        assert!(values("a third party").is_empty());
        assert!(values("within a quarter of an hour")
            .iter()
            .all(|v| v.unit != Unit::Percent));
        assert!(values("half of the year")
            .iter()
            .all(|v| v.unit != Unit::Percent));
    }
}
