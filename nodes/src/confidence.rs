//! Confidence as the chat contract shows it: `"high" | "medium" | "low"`, from the 0..1
//! scores the nodes compute, with the score itself kept as a plain number.
//!
//! The thresholds:
//!
//! | score | retrieval (how well the passages match the request) | inference (how sure the doc resolver is of the documents) |
//! |---|---|---|
//! | high | >= 0.7 | >= 0.8 ([`RESOLVED`](crate::doc_resolver::RESOLVED): taken without asking) |
//! | medium | >= 0.4 | >= 0.5 ([`ASK`](crate::doc_resolver::ASK): asked about) |
//! | low | below | below |
//!
//! Retrieval scores are weighted term coverage: on the evaluation set, passages that hold
//! the answer score 0.45 to 1.0 (most above 0.85), off-topic requests below 0.4 (the staff
//! canteen audited against compliance policies: 0.38; a tax question: 0). Inference scores
//! are 1.0 for mentions and choices, >= 0.85 for titles matched by similarity, 0.8 to 1.0
//! for the conversation's registry, and the retrieval score for documents found by their
//! content.

use serde::{Deserialize, Serialize};

/// A retrieval score at least this high is `high`.
pub const RETRIEVAL_HIGH: f64 = 0.7;
/// A retrieval score at least this high (and below [`RETRIEVAL_HIGH`]) is `medium`.
pub const RETRIEVAL_MEDIUM: f64 = 0.4;
/// An inference score at least this high is `high` (the doc resolver's `RESOLVED`).
pub const INFERENCE_HIGH: f64 = crate::doc_resolver::RESOLVED;
/// An inference score at least this high (and below [`INFERENCE_HIGH`]) is `medium` (the
/// doc resolver's `ASK`).
pub const INFERENCE_MEDIUM: f64 = crate::doc_resolver::ASK;

/// A confidence level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// Sure.
    High,
    /// Fairly sure.
    Medium,
    /// Unsure.
    Low,
}

impl Confidence {
    /// The level of a score against two thresholds (a score that is not a number is low).
    fn of(score: f64, high: f64, medium: f64) -> Self {
        if score >= high {
            Confidence::High
        } else if score >= medium {
            Confidence::Medium
        } else {
            Confidence::Low
        }
    }

    /// The level of a retrieval score (how well the passages used match the request).
    pub fn of_retrieval(score: f64) -> Self {
        Self::of(score, RETRIEVAL_HIGH, RETRIEVAL_MEDIUM)
    }

    /// The level of an inference score (how sure the doc resolver is of the documents).
    pub fn of_inference(score: f64) -> Self {
        Self::of(score, INFERENCE_HIGH, INFERENCE_MEDIUM)
    }

    /// `high`, `medium` or `low`.
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::High => "high",
            Confidence::Medium => "medium",
            Confidence::Low => "low",
        }
    }
}

impl std::fmt::Display for Confidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A score as the contract shows it: within 0..1, rounded to three decimals, never `-0.0`
/// nor NaN (both read 0).
pub fn score(x: f64) -> f64 {
    if !x.is_finite() {
        return 0.0;
    }
    let rounded = (x.clamp(0.0, 1.0) * 1000.0).round() / 1000.0;
    // `-0.0 + 0.0` is `+0.0`.
    rounded + 0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retrieval_levels() {
        assert_eq!(Confidence::of_retrieval(1.0), Confidence::High);
        assert_eq!(Confidence::of_retrieval(0.7), Confidence::High);
        assert_eq!(Confidence::of_retrieval(0.69), Confidence::Medium);
        assert_eq!(Confidence::of_retrieval(0.4), Confidence::Medium);
        assert_eq!(
            Confidence::of_retrieval(0.36258161003552053),
            Confidence::Low
        );
        assert_eq!(Confidence::of_retrieval(-0.0), Confidence::Low);
        assert_eq!(Confidence::of_retrieval(f64::NAN), Confidence::Low);
    }

    #[test]
    fn inference_levels_follow_the_doc_resolver() {
        assert_eq!(Confidence::of_inference(1.0), Confidence::High);
        assert_eq!(Confidence::of_inference(0.8), Confidence::High);
        assert_eq!(Confidence::of_inference(0.79), Confidence::Medium);
        assert_eq!(Confidence::of_inference(0.5), Confidence::Medium);
        assert_eq!(Confidence::of_inference(0.49), Confidence::Low);
        assert_eq!(Confidence::of_inference(0.0), Confidence::Low);
    }

    #[test]
    fn scores_are_clean_numbers() {
        assert_eq!(score(0.36258161003552053), 0.363);
        assert!(score(-0.0).is_sign_positive());
        assert_eq!(serde_json::to_string(&score(-0.0)).unwrap(), "0.0");
        assert_eq!(score(1.7), 1.0);
        assert_eq!(score(-3.0), 0.0);
        assert_eq!(score(f64::NAN), 0.0);
        assert_eq!(
            serde_json::to_value(Confidence::Medium).unwrap(),
            serde_json::json!("medium")
        );
    }
}
