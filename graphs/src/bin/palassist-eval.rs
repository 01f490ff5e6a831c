//! `palassist-eval`: runs PalAssist's evaluation set through the graph and prints the
//! scores per category.
//!
//! ```text
//! palassist-eval [--set DIR] [--case TEXT]... [--failures] [--json FILE]
//! ```
//!
//! - `--set DIR`: the set's folder (default: the shipped `graphs/eval`);
//! - `--case TEXT`: only the cases whose id contains TEXT (repeatable);
//! - `--failures`: print every failed check with the answer it was made on;
//! - `--json FILE`: write every case, check and answer to FILE.
//!
//! The LLM comes from the environment: `OPENAI_API_KEY` (with `OPENAI_BASE_URL` for any
//! OpenAI-compatible server and `OPENAI_MODEL`) for a model, the offline model without.

use std::path::PathBuf;
use std::process::ExitCode;

use palgraph_graphs::eval::{self, EvalSet};
use palgraph_nodes::llm;

struct Args {
    set: Option<PathBuf>,
    cases: Vec<String>,
    failures: bool,
    json: Option<PathBuf>,
}

const USAGE: &str = "usage: palassist-eval [--set DIR] [--case TEXT]... [--failures] [--json FILE]";

fn args() -> Result<Args, String> {
    let mut out = Args {
        set: None,
        cases: Vec::new(),
        failures: false,
        json: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--set" => out.set = Some(value("--set")?.into()),
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
    let set = match args.set.map_or_else(EvalSet::shipped, EvalSet::load) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("palassist-eval: {e}");
            return ExitCode::FAILURE;
        }
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
    let report = match eval::run_matching(&set, llm, keep).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("palassist-eval: {e}");
            return ExitCode::FAILURE;
        }
    };
    if args.failures {
        print!("{}", report.failures());
    }
    print!("{}", report.table());
    if let Some(path) = args.json {
        let written = serde_json::to_string_pretty(&report)
            .map_err(|e| e.to_string())
            .and_then(|j| std::fs::write(&path, j).map_err(|e| e.to_string()));
        if let Err(e) = written {
            eprintln!("palassist-eval: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
