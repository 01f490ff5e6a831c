//! `palassist-eval`: runs PalAssist's evaluation sets through the graph and prints the
//! scores per category, one table per set.
//!
//! ```text
//! palassist-eval [--set dev|heldout|DIR]... [--case TEXT]... [--alone] [--failures] [--json FILE]
//! ```
//!
//! - `--set`: a shipped set (`dev`, `heldout`) or a set's folder (case files and the
//!   library they name); repeatable; default: both shipped sets;
//! - `--case TEXT`: only the cases whose id contains TEXT (repeatable);
//! - `--alone`: each case file that names its family runs against that family's documents
//!   and the samples only, as on a new team's server (one table per set, over those files);
//! - `--failures`: print every failed check with the answer it was made on;
//! - `--json FILE`: write every case, check and answer to FILE.
//!
//! The LLM comes from the environment: `OPENAI_API_KEY` (with `OPENAI_BASE_URL` for any
//! OpenAI-compatible server and `OPENAI_MODEL`) for a model, the offline model without.

use std::path::PathBuf;
use std::process::ExitCode;

use palgraph_graphs::eval::{self, EvalSet, Part};
use palgraph_nodes::llm;

struct Args {
    sets: Vec<String>,
    cases: Vec<String>,
    failures: bool,
    alone: bool,
    json: Option<PathBuf>,
}

const USAGE: &str =
    "usage: palassist-eval [--set dev|heldout|DIR]... [--case TEXT]... [--alone] [--failures] [--json FILE]";

/// The folder of the set `name` stands for: a shipped one, or a folder.
fn folder(name: &str) -> PathBuf {
    match name {
        "dev" => EvalSet::shipped_dir().join(Part::Dev.as_str()),
        "heldout" => EvalSet::shipped_dir().join(Part::HeldOut.as_str()),
        dir => PathBuf::from(dir),
    }
}

/// The set `name` stands for, run over its whole library, or as its families alone: one
/// report either way.
async fn run(
    name: &str,
    alone: bool,
    llm: std::sync::Arc<dyn llm::Llm>,
    keep: &(dyn Fn(&eval::Case) -> bool + Sync),
) -> Result<eval::Report, eval::EvalError> {
    let dir = folder(name);
    if !alone {
        return eval::run_matching(&EvalSet::load(&dir)?, llm, keep).await;
    }
    let mut report = eval::Report {
        set: format!("{name}, each family alone"),
        model: llm.describe(),
        cases: Vec::new(),
    };
    for family in EvalSet::families(&dir)? {
        let part = eval::run_matching(&family, llm.clone(), keep).await?;
        report.cases.extend(part.cases);
    }
    Ok(report)
}

fn args() -> Result<Args, String> {
    let mut out = Args {
        sets: Vec::new(),
        cases: Vec::new(),
        failures: false,
        alone: false,
        json: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--set" => out.sets.push(value("--set")?),
            "--case" => out.cases.push(value("--case")?),
            "--json" => out.json = Some(value("--json")?.into()),
            "--failures" => out.failures = true,
            "--alone" => out.alone = true,
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    Ok(out)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let names = if args.sets.is_empty() {
        Part::ALL.iter().map(|p| p.as_str().to_string()).collect()
    } else {
        args.sets.clone()
    };
    let llm = match llm::from_env() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("palassist-eval: {e}");
            return ExitCode::FAILURE;
        }
    };
    let keep = |c: &eval::Case| {
        args.cases.is_empty() || args.cases.iter().any(|t| c.id.contains(t.as_str()))
    };
    let mut reports = Vec::new();
    for name in &names {
        let report = run(name, args.alone, llm.clone(), &keep).await;
        match report {
            Ok(r) if args.alone && r.cases.is_empty() => {
                eprintln!("palassist-eval: {name}: no case file names its family");
            }
            Ok(r) => reports.push(r),
            Err(e) => {
                eprintln!("palassist-eval: {name}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    for report in &reports {
        if args.failures {
            print!("{}", report.failures());
        }
        println!("{}", report.table());
    }
    if let Some(path) = args.json {
        let written = serde_json::to_string_pretty(&reports)
            .map_err(|e| e.to_string())
            .and_then(|j| std::fs::write(&path, j).map_err(|e| e.to_string()));
        if let Err(e) = written {
            eprintln!("palassist-eval: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
