//! `palassist-eval`: runs PalAssist's evaluation sets through the graph and prints the
//! scores per category, one table per set.
//!
//! ```text
//! palassist-eval [--set dev|heldout|DIR]... [--case TEXT]... [--failures] [--json FILE]
//! ```
//!
//! - `--set`: a shipped set (`dev`, `heldout`) or a set's folder (case files and the
//!   library they name); repeatable; default: both shipped sets;
//! - `--case TEXT`: only the cases whose id contains TEXT (repeatable);
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
    json: Option<PathBuf>,
}

const USAGE: &str =
    "usage: palassist-eval [--set dev|heldout|DIR]... [--case TEXT]... [--failures] [--json FILE]";

/// The set `name` stands for: a shipped one, or a folder.
fn load(name: &str) -> Result<EvalSet, eval::EvalError> {
    match name {
        "dev" => EvalSet::shipped(Part::Dev),
        "heldout" => EvalSet::shipped(Part::HeldOut),
        dir => EvalSet::load(PathBuf::from(dir)),
    }
}

fn args() -> Result<Args, String> {
    let mut out = Args {
        sets: Vec::new(),
        cases: Vec::new(),
        failures: false,
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
        let report = match load(name) {
            Ok(set) => eval::run_matching(&set, llm.clone(), keep).await,
            Err(e) => Err(e),
        };
        match report {
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
