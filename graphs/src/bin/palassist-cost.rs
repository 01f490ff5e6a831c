//! What a PalAssist turn costs as the user's library grows: the same turns (a question that
//! names no document, one that names it, a summary, a comparison of two versions, an
//! audit) through the real graph with the offline model, on the five samples alone and on
//! a library of `--docs` documents (the samples, the evaluation library, and copies of its
//! documents under titles of their own, each a document of its own to analyse), in one
//! process.
//!
//! ```text
//! palassist-cost [--docs 500] [--rounds 7] [--only TEXT] [--large N [--mib 7.5]]
//! ```
//!
//! `--only TEXT` times only the turns whose name holds TEXT (to profile one of them).
//! `--large N` makes the large library the samples and N handbooks of `--mib` MiB each
//! (the evaluation library's documents one after the other, each handbook for an entity of
//! its own), and prints how long storing them took (each is analysed as it is stored) and
//! the process's peak RSS.
//!
//! Each library is read once before timing (every document analysed, which is kept for the
//! turns after); then every turn runs `--rounds` times on a fresh thread each, the two
//! libraries alternating. Prints each turn's median in both libraries and their ratio, and
//! the time the first turn over the large library took to analyse it.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use palgraph_graphs::eval::{self, Case, EvalSet, Part, Runner};
use palgraph_nodes::llm::OfflineLlm;

const USAGE: &str =
    "usage: palassist-cost [--docs N] [--rounds N] [--only TEXT] [--large N [--mib X]]";

/// The turns timed: each a one-turn conversation about the samples.
const TURNS: [(&str, &str); 6] = [
    (
        "question, no document named",
        "How long must recorded telephone calls be kept?",
    ),
    (
        "question, document named",
        "What does the AML policy say about politically exposed persons?",
    ),
    ("summary", "Summarize the data retention policy 2024"),
    (
        "comparison of two versions",
        "What changed between the data retention policy 2023 and 2024?",
    ),
    (
        "audit",
        "Audit this against the data retention policy 2024: we delete email correspondence after two years and keep recorded calls for three years.",
    ),
    (
        "question about a figure",
        "What is the minimum CET1 capital ratio?",
    ),
];

struct Args {
    docs: usize,
    rounds: usize,
    only: Option<String>,
    large: usize,
    mib: f64,
}

fn args() -> Result<Args, String> {
    let mut out = Args {
        docs: 500,
        rounds: 7,
        only: None,
        large: 0,
        mib: 7.5,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut number = |name: &str| -> Result<usize, String> {
            it.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{name} needs a number\n{USAGE}"))
        };
        match a.as_str() {
            "--docs" => out.docs = number("--docs")?,
            "--rounds" => out.rounds = number("--rounds")?.max(1),
            "--only" => out.only = Some(it.next().ok_or_else(|| USAGE.to_string())?),
            "--large" => out.large = number("--large")?,
            "--mib" => {
                out.mib = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| format!("--mib needs a number\n{USAGE}"))?
            }
            _ => return Err(USAGE.to_string()),
        }
    }
    Ok(out)
}

fn case(n: usize, say: &str) -> Result<Case, String> {
    serde_json::from_value(serde_json::json!({
        "id": format!("cost-{n}"),
        "category": "inquire",
        "turns": [{"say": say}]
    }))
    .map_err(|e| e.to_string())
}

/// Copies of the library's documents (not the samples, which the turns are about) under
/// titles of their own, up to `count`: each copy names the subsidiary it is for in its
/// title and its first line, so it is a document of its own to analyse.
fn copies(runner: &Runner, samples: &Runner, count: usize) -> Vec<(String, String)> {
    let originals: Vec<_> = runner
        .library()
        .iter()
        .filter(|d| !d.content.is_empty())
        .filter(|d| !samples.library().iter().any(|s| s.title == d.title))
        .collect();
    (0..count)
        .map(|k| {
            let d = originals[k % originals.len()];
            let unit = k / originals.len() + 1;
            (
                format!("{} for Subsidiary {unit}", d.title),
                format!(
                    "This document applies to Subsidiary {unit} only.\n\n{}",
                    d.content
                ),
            )
        })
        .collect()
}

/// `count` documents of `mib` MiB each: the library's documents (not the samples) one
/// after the other, each a part of a handbook of its own, for a subsidiary of its own.
fn large_documents(
    runner: &Runner,
    samples: &Runner,
    count: usize,
    mib: f64,
) -> Vec<(String, String)> {
    let originals: Vec<_> = runner
        .library()
        .iter()
        .filter(|d| !d.content.is_empty())
        .filter(|d| !samples.library().iter().any(|s| s.title == d.title))
        .collect();
    let size = (mib * 1024.0 * 1024.0) as usize;
    let mut next = 0usize;
    (0..count)
        .map(|k| {
            let mut text = format!("This handbook applies to Group Entity {} only.\n\n", k + 1);
            while text.len() < size {
                let d = originals[next % originals.len()];
                let part = next / originals.len() + 1;
                next += 1;
                text.push_str(&format!("# {} (Part {part})\n\n{}\n\n", d.title, d.content));
            }
            text.truncate(text.floor_char_boundary(size));
            (format!("Group Entity {} Compliance Handbook", k + 1), text)
        })
        .collect()
}

async fn time(runner: &Runner, case: &Case, thread: &str) -> Result<Duration, String> {
    let started = Instant::now();
    let results = runner
        .run_case(case, thread)
        .await
        .map_err(|e| e.to_string())?;
    let took = started.elapsed();
    match results.first().map(|r| &r.end) {
        Some(eval::TurnEnd::Answered) => Ok(took),
        other => Err(format!("\"{}\" did not answer: {other:?}", case.id)),
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn run(a: Args) -> Result<(), String> {
    let llm = || Arc::new(OfflineLlm::new());
    let set = EvalSet::shipped(Part::Dev).map_err(|e| e.to_string())?;
    let small = Runner::over(&[], &[], llm())
        .await
        .map_err(|e| e.to_string())?;
    let base = Runner::over(&set.libraries, &[], llm())
        .await
        .map_err(|e| e.to_string())?;
    let large = if a.large > 0 {
        let more = large_documents(&base, &small, a.large, a.mib);
        drop(base);
        let t = Instant::now();
        let r = Runner::over(&[], &more, llm())
            .await
            .map_err(|e| e.to_string())?;
        println!(
            "storing the {} handbooks of {} MiB (each analysed as it is stored): {:.0} ms",
            a.large,
            a.mib,
            ms(t.elapsed())
        );
        r
    } else {
        let more = copies(&base, &small, a.docs.saturating_sub(base.library().len()));
        drop(base);
        Runner::over(&set.libraries, &more, llm())
            .await
            .map_err(|e| e.to_string())?
    };
    let turns: Vec<(&str, &str)> = TURNS
        .iter()
        .filter(|(name, _)| a.only.as_deref().is_none_or(|o| name.contains(o)))
        .copied()
        .collect();
    if turns.is_empty() {
        return Err(format!("no turn's name holds the --only text\n{USAGE}"));
    }
    let cases: Vec<Case> = turns
        .iter()
        .enumerate()
        .map(|(n, (_, say))| case(n, say))
        .collect::<Result<_, _>>()?;

    // Every document analysed once: the first turn over each library.
    let started = Instant::now();
    time(&large, &cases[0], "warm-large").await?;
    let first_large = started.elapsed();
    time(&small, &cases[0], "warm-small").await?;
    for (n, c) in cases.iter().enumerate() {
        time(&small, c, &format!("warm-s-{n}")).await?;
        time(&large, c, &format!("warm-l-{n}")).await?;
    }

    let mut small_t: Vec<Vec<Duration>> = vec![Vec::new(); cases.len()];
    let mut large_t: Vec<Vec<Duration>> = vec![Vec::new(); cases.len()];
    for r in 0..a.rounds {
        for (n, c) in cases.iter().enumerate() {
            small_t[n].push(time(&small, c, &format!("s-{r}-{n}")).await?);
            large_t[n].push(time(&large, c, &format!("l-{r}-{n}")).await?);
        }
    }
    println!(
        "PalAssist offline turn, {} samples against {} documents, median of {} rounds\n",
        small.library().len(),
        large.library().len(),
        a.rounds
    );
    println!(
        "{:<30} {:>12} {:>14} {:>7}",
        "turn", "samples ms", "library ms", "ratio"
    );
    let (mut all_s, mut all_l) = (Vec::new(), Vec::new());
    for (n, (name, _)) in turns.iter().enumerate() {
        let (s, l) = (median(small_t[n].clone()), median(large_t[n].clone()));
        all_s.extend(small_t[n].iter().copied());
        all_l.extend(large_t[n].iter().copied());
        println!(
            "{name:<30} {:>12.2} {:>14.2} {:>6.2}x",
            ms(s),
            ms(l),
            ms(l) / ms(s)
        );
    }
    let total = |v: &[Vec<Duration>]| -> f64 { v.iter().map(|t| ms(median(t.clone()))).sum() };
    println!(
        "{:<30} {:>12.2} {:>14.2} {:>6.2}x",
        "all the turns",
        total(&small_t),
        total(&large_t),
        total(&large_t) / total(&small_t)
    );
    println!(
        "\nthe first turn over the {} documents: {:.0} ms",
        large.library().len(),
        ms(first_large)
    );
    if let Some(peak) = peak_rss() {
        println!("peak RSS of the process: {peak}");
    }
    Ok(())
}

/// The process's peak resident set (`VmHWM`), where /proc says it.
fn peak_rss() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    Some(line.trim_start_matches("VmHWM:").trim().to_string())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let a = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match run(a).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("palassist-cost: {e}");
            ExitCode::FAILURE
        }
    }
}
