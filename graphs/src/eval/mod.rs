//! PalAssist's evaluation: sets of conversations over a library of documents ([`EvalSet`]),
//! run through the real graph with any [`Llm`] (the offline model, or an OpenAI-compatible
//! one) and scored per category ([`Report`]). Two sets are shipped ([`Part`]): the
//! development set (`graphs/eval/dev`) and the held-out set (`graphs/eval/heldout`), over
//! one library (`graphs/eval/library`, with the samples: more than 60 documents, families
//! in several versions and look-alike titles); see `graphs/eval/README.md`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), palgraph_graphs::eval::EvalError> {
//! use std::sync::Arc;
//! use palgraph_graphs::eval::{self, EvalSet};
//! use palgraph_nodes::llm::OfflineLlm;
//!
//! let set = EvalSet::shipped(eval::Part::Dev)?;
//! let report = eval::run(&set, Arc::new(OfflineLlm::new())).await?;
//! println!("{}", report.table());
//! # Ok(()) }
//! ```
//!
//! The `palassist-eval` binary does the same with the LLM the environment configures
//! (`OPENAI_API_KEY`, `OPENAI_BASE_URL`, `OPENAI_MODEL`; offline without a key).

mod cases;
mod checks;
mod report;
mod runner;

use std::path::PathBuf;
use std::sync::Arc;

use palgraph_nodes::{DocumentError, Llm};

pub use cases::{Case, Category, EvalSet, Expect, ExpectedVerdict, Fact, Part, Turn, Verdict};
pub use checks::{findings, markers_in, score_turn, unverified_quotes, Check, FALSE_MEETS};
pub use report::{CaseReport, CategoryScore, CheckReport, Report};
pub use runner::{Runner, TurnEnd, TurnResult, USER};

/// Why an evaluation could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// A file of the set could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `cases.json` is not a valid set.
    #[error("{} is not a valid evaluation set: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// A case mentions a document the user does not have.
    #[error("no document's title starts with \"{0}\"")]
    UnknownDocument(String),
    /// The document store failed.
    #[error(transparent)]
    Documents(#[from] DocumentError),
    /// The graph could not be built.
    #[error(transparent)]
    Graph(#[from] palgraph::GraphError),
}

/// Runs every case of `set` with `llm` and scores the answers.
///
/// # Errors
/// See [`EvalError`]; a case whose run fails is scored as failed, not returned.
pub async fn run(set: &EvalSet, llm: Arc<dyn Llm>) -> Result<Report, EvalError> {
    run_matching(set, llm, |_| true).await
}

/// Like [`run`], for the cases `keep` selects.
///
/// # Errors
/// See [`run`].
pub async fn run_matching(
    set: &EvalSet,
    llm: Arc<dyn Llm>,
    keep: impl Fn(&Case) -> bool,
) -> Result<Report, EvalError> {
    let model = llm.describe();
    let runner = Runner::new(set, llm).await?;
    let mut cases = Vec::new();
    for (n, case) in set.cases.iter().filter(|c| keep(c)).enumerate() {
        let thread = format!("eval-{n}-{}", case.id);
        let turns = runner.run_case(case, &thread).await?;
        let mut said = Vec::new();
        let mut checks = Vec::new();
        let mut answers = Vec::new();
        let mut answered_by = Vec::new();
        for (turn, result) in case.turns.iter().zip(&turns) {
            said.push(result.message.clone());
            if let Some(expect) = &turn.expect {
                checks.extend(score_turn(expect, result, &said, &runner));
                // What it asked first, when it asked (the answer alone hides why a turn
                // stopped or what it chose).
                answers.push(match (&result.asked, &result.prompt) {
                    (Some(kind), Some(p)) => format!("(asked {kind}: {p})\n{}", result.response),
                    _ => result.response.clone(),
                });
                answered_by.push(result.answered_by.clone().unwrap_or_default());
            }
        }
        cases.push(CaseReport {
            id: case.id.clone(),
            category: case.category,
            checks: checks.into_iter().map(CheckReport::from).collect(),
            answers,
            answered_by,
        });
    }
    Ok(Report {
        set: set.name.clone(),
        model,
        cases,
    })
}
