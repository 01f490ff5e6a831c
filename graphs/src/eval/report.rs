//! The scores of a run: per case (the share of its checks passed), per category (the mean
//! of its cases' scores, and how many cases passed every check) and overall.

use std::fmt::Write as _;

use serde::Serialize;

use super::cases::Category;
use super::checks::Check;

/// One case's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct CaseReport {
    /// The case.
    pub id: String,
    /// Its category.
    pub category: Category,
    /// Every check, with whether it passed.
    pub checks: Vec<CheckReport>,
    /// The answer of each turn that had expectations.
    pub answers: Vec<String>,
    /// How each of those answers was made (the state's `answered_by`; null when unset).
    pub answered_by: Vec<serde_json::Value>,
}

/// A check as reported.
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    /// What was checked.
    pub name: String,
    /// Whether it passed.
    pub passed: bool,
}

impl From<Check> for CheckReport {
    fn from(c: Check) -> Self {
        CheckReport {
            name: c.name,
            passed: c.passed,
        }
    }
}

impl CaseReport {
    /// The share of its checks passed (1 for a case with no checks).
    pub fn score(&self) -> f64 {
        if self.checks.is_empty() {
            return 1.0;
        }
        self.checks.iter().filter(|c| c.passed).count() as f64 / self.checks.len() as f64
    }

    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }
}

/// A category's figures.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CategoryScore {
    /// The category.
    pub category: Category,
    /// Its cases.
    pub cases: usize,
    /// Those that passed every check.
    pub passed: usize,
    /// The mean of its cases' scores (0..1).
    pub score: f64,
}

/// A whole run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The set's name.
    pub set: String,
    /// What answered (`Llm::describe`).
    pub model: String,
    /// Every case, in the set's order.
    pub cases: Vec<CaseReport>,
}

impl Report {
    /// The figures of `category` (`None` when the set has no case of it).
    pub fn category(&self, category: Category) -> Option<CategoryScore> {
        let cases: Vec<&CaseReport> = self
            .cases
            .iter()
            .filter(|c| c.category == category)
            .collect();
        if cases.is_empty() {
            return None;
        }
        Some(CategoryScore {
            category,
            cases: cases.len(),
            passed: cases.iter().filter(|c| c.passed()).count(),
            score: cases.iter().map(|c| c.score()).sum::<f64>() / cases.len() as f64,
        })
    }

    /// How many audit findings said "meets" of a rule the practice breaks or leaves
    /// unverifiable (a false "consistent").
    pub fn false_meets(&self) -> usize {
        self.cases
            .iter()
            .flat_map(|c| &c.checks)
            .filter(|k| !k.passed && k.name.starts_with(super::FALSE_MEETS))
            .count()
    }

    /// How many cases passed every check.
    pub fn passed(&self) -> usize {
        self.cases.iter().filter(|c| c.passed()).count()
    }

    /// The mean score over every case.
    pub fn overall(&self) -> f64 {
        if self.cases.is_empty() {
            return 0.0;
        }
        self.cases.iter().map(CaseReport::score).sum::<f64>() / self.cases.len() as f64
    }

    /// The per-category table, as printed by `palassist-eval`.
    pub fn table(&self) -> String {
        let mut out = format!(
            "PalAssist evaluation, set {}, answered by {}\n\n{:<14}{:>7}{:>9}{:>8}\n",
            self.set, self.model, "category", "cases", "passed", "score"
        );
        for c in Category::ALL.iter().filter_map(|c| self.category(*c)) {
            let _ = writeln!(
                out,
                "{:<14}{:>7}{:>9}{:>8.3}",
                c.category.as_str(),
                c.cases,
                c.passed,
                c.score
            );
        }
        let _ = writeln!(
            out,
            "{:<14}{:>7}{:>9}{:>8.3}",
            "overall",
            self.cases.len(),
            self.passed(),
            self.overall()
        );
        let _ = writeln!(out, "false \"meets\" in audits: {}", self.false_meets());
        out
    }

    /// The failed checks of every case that has one, with its answers.
    pub fn failures(&self) -> String {
        let mut out = String::new();
        for c in self.cases.iter().filter(|c| !c.passed()) {
            let _ = writeln!(out, "✗ {} ({}, {:.2})", c.id, c.category, c.score());
            for check in c.checks.iter().filter(|k| !k.passed) {
                let _ = writeln!(out, "    failed: {}", check.name);
            }
            for a in &c.answers {
                for line in a.lines() {
                    let _ = writeln!(out, "    | {line}");
                }
            }
            out.push('\n');
        }
        out
    }
}
