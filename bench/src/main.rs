//! palgraph's benchmark: the same work as the LangGraph reference
//! (`../shared/bench/langgraph/bench.py`), section by section, with the same keys, so the two
//! result files can be joined row by row (`bench/compare.py`).
//!
//! ```text
//! cargo run --release -p palgraph-bench -- [--quick] [--only a,b,...] [--out DIR]
//! ```
//!
//! Sections: `a` in-memory turn; `b` Postgres turn, per checkpoint, and what a turn writes;
//! `d` SQLite turn; `e` interrupt round trip (Postgres); `f` growth over 1,000 turns on one
//! thread (time and bytes per turn); `g` the floor: as many bare single-row INSERT + COMMIT
//! round trips (sqlx) as a turn commits; `h` throughput with N = 1, 8, 32 concurrent
//! conversations; `i` the composed shapes: a `Send` fan-out over 100 items and a two-level
//! subgraph turn, in memory and on Postgres (time and bytes per turn); `j` flat cost with
//! database size (load and turn, fresh vs 10M checkpoint rows, Postgres and SQLite). Postgres comes from `BENCH_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`); each run uses a fresh schema.

#![allow(unreachable_pub)]

mod compose;
mod section_f;
mod section_g;
mod section_i;
mod section_j;
mod shape;

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use palgraph::checkpoint::{MemoryCheckpointer, PostgresCheckpointer, SqliteCheckpointer};
use palgraph::testkit::backends::{remove_sqlite_files, temp_db_path, PgSchema};
use palgraph::{Resume, RunConfig, RunInput};
use serde_json::{json, Value};

use palgraph::testkit::counting::Counting;
use shape::{graph, turn_input, Variant};

/// What `--help` prints, and an unknown argument's error after it.
const USAGE: &str = "\
Usage: palgraph-bench [--quick] [--only a,b,...] [--out DIR]

Sections (all by default): a in-memory turn; b Postgres turn; d SQLite turn; e interrupt
round trip; f growth over 1,000 turns; g the floor of bare commits; h throughput at N = 1, 8,
32; i composed shapes (Send fan-out, subgraphs); j flat cost with database size.
Postgres comes from BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres),
a fresh schema per run; figures go to DIR/palgraph-results.json (default target/bench).
";

struct Args {
    quick: bool,
    only: Option<Vec<String>>,
    out: PathBuf,
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        quick: false,
        only: None,
        out: PathBuf::from("target/bench"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        match x.as_str() {
            "--help" | "-h" => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            "--quick" => a.quick = true,
            "--only" => {
                a.only = Some(
                    it.next()
                        .context("--only needs a list")?
                        .split(',')
                        .map(str::to_string)
                        .collect(),
                )
            }
            "--out" => a.out = PathBuf::from(it.next().context("--out needs a directory")?),
            other => anyhow::bail!("unknown argument {other}\n\n{USAGE}"),
        }
    }
    Ok(a)
}

#[derive(Default)]
struct Report {
    figures: BTreeMap<String, Value>,
    extra: BTreeMap<String, Value>,
}

fn pct(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let k = (sorted.len() - 1) as f64 * q;
    let lo = k.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (k - lo as f64)
}

impl Report {
    fn fig(&mut self, key: &str, label: &str, mut samples: Vec<f64>, unit: &str, notes: Value) {
        samples.sort_by(|a, b| a.total_cmp(b));
        let (median, p10, p90) = (pct(&samples, 0.5), pct(&samples, 0.1), pct(&samples, 0.9));
        println!("  {key:<28} {label:<62} median={median:>10.1} p10={p10:>10.1} p90={p90:>10.1} {unit} (n={})", samples.len());
        let mut v = json!({"label": label, "median": median, "p10": p10, "p90": p90, "n": samples.len(), "unit": unit});
        if let (Some(o), Some(n)) = (v.as_object_mut(), notes.as_object()) {
            for (k, x) in n {
                o.insert(k.clone(), x.clone());
            }
        }
        self.figures.insert(key.to_string(), v);
    }
}

/// Calls `f(i)` `warmup` times untimed, then up to `reps` times (or `max` seconds);
/// returns microseconds per call.
async fn measure<F, Fut>(warmup: usize, reps: usize, max: Duration, mut f: F) -> Vec<f64>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = ()>,
{
    for i in 0..warmup {
        f(1_000_000 + i).await;
    }
    let mut out = Vec::with_capacity(reps);
    let deadline = Instant::now() + max;
    for i in 0..reps {
        let t0 = Instant::now();
        f(i).await;
        out.push(t0.elapsed().as_secs_f64() * 1e6);
        if Instant::now() > deadline {
            break;
        }
    }
    out
}

/// CPU time this process has used (all threads, user + system), microseconds.
fn cpu_us() -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return f64::NAN;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .sum::<f64>()
        / 1e3
}

fn tid(prefix: &str) -> String {
    format!("{prefix}-{}", uuid_like())
}

fn uuid_like() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{:x}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

struct Sizes {
    mem: (usize, usize, u64),
    pg: (usize, usize, u64),
    growth_threads: usize,
    growth_turns: usize,
    tput: (f64, f64),
}

/// The server's current WAL position.
async fn wal_lsn(pool: &sqlx::PgPool) -> anyhow::Result<String> {
    Ok(sqlx::query_scalar("SELECT pg_current_wal_lsn()::text")
        .fetch_one(pool)
        .await?)
}

async fn wal_diff(pool: &sqlx::PgPool, a: &str, b: &str) -> anyhow::Result<i64> {
    Ok(
        sqlx::query_scalar("SELECT pg_wal_lsn_diff($2::pg_lsn, $1::pg_lsn)::bigint")
            .bind(a)
            .bind(b)
            .fetch_one(pool)
            .await?,
    )
}

async fn run_turn(g: &palgraph::CompiledGraph<shape::BenchState>, thread: &str, i: usize) {
    run_turn_with(g, RunConfig::new(thread), i).await
}

/// [`run_turn`] with a given configuration.
async fn run_turn_with(g: &palgraph::CompiledGraph<shape::BenchState>, cfg: RunConfig, i: usize) {
    if let Err(e) = g.invoke(cfg, turn_input(i)).await {
        panic!("turn failed: {e}");
    }
}

async fn sec_a(r: &mut Report, s: &Sizes) {
    let g = graph(Arc::new(MemoryCheckpointer::new()), Variant::Plain);
    let cpu0 = cpu_us();
    let samples = measure(s.mem.0, s.mem.1, Duration::from_secs(s.mem.2), |i| {
        let g = &g;
        async move { run_turn(g, &tid("mem"), i).await }
    })
    .await;
    let cpu = (cpu_us() - cpu0) / (samples.len() + s.mem.0) as f64;
    r.fig(
        "a_inmem_turn",
        "in-memory checkpointer, invoke, per turn (fresh thread)",
        samples,
        "us",
        json!({"checkpoints_per_turn": 6, "process_cpu_us_per_op": cpu}),
    );
}

/// Returns the payload bytes per commit and the commits per turn (for the floor).
async fn sec_b(r: &mut Report, s: &Sizes, schema: &PgSchema) -> anyhow::Result<(f64, usize)> {
    let pool = schema.pool(2).await;
    let counting = Arc::new(Counting::new(Arc::new(PostgresCheckpointer::new(
        pool.clone(),
    ))));
    let g = graph(counting.clone(), Variant::Plain);
    for i in 0..20 {
        run_turn(&g, &tid("pgwarm"), i).await;
    }
    // What one turn costs on the wire and on disk.
    let k = if s.pg.1 > 100 { 100 } else { 20 };
    let l0 = wal_lsn(&pool).await?;
    let before = counting.snapshot();
    for i in 0..k {
        run_turn(&g, &tid("pgchar"), i).await;
    }
    let after = counting.snapshot();
    let l1 = wal_lsn(&pool).await?;
    let wal = wal_diff(&pool, &l0, &l1).await? as f64 / k as f64;
    let per = |a: u64, b: u64| (b - a) as f64 / k as f64;
    // Every put and put_writes is one transaction: one commit and one WAL flush. (The
    // server's counters are no help here: a backend reports them when it goes idle, and the
    // checkpointer's own connections hardly ever do.)
    let commits_per_turn = per(before.0, after.0) + per(before.1, after.1);
    let character = json!({
        "puts_per_turn": per(before.0, after.0),
        "put_writes_per_turn": per(before.1, after.1),
        "reads_per_turn": per(before.2, after.2),
        "commits_per_turn": commits_per_turn,
        "payload_bytes_per_turn": per(before.3, after.3),
        "wal_bytes_per_turn": wal,
    });
    println!("  characterization: {character}");
    r.extra.insert("pg_turn_characterization".into(), character);
    // Timed without the counting wrapper (it serializes what it counts).
    let g = graph(
        Arc::new(PostgresCheckpointer::new(pool.clone())),
        Variant::Plain,
    );
    let cpu0 = cpu_us();
    let samples = measure(s.pg.0, s.pg.1, Duration::from_secs(s.pg.2), |i| {
        let g = &g;
        async move { run_turn(g, &tid("pg"), i).await }
    })
    .await;
    let cpu = (cpu_us() - cpu0) / (samples.len() + s.pg.0) as f64;
    let per_cp: Vec<f64> = samples.iter().map(|x| x / 6.0).collect();
    r.fig(
        "b_pg_turn",
        "Postgres checkpointer, invoke, per turn (fresh thread)",
        samples,
        "us",
        json!({"checkpoints_per_turn": 6, "process_cpu_us_per_op": cpu}),
    );
    r.fig(
        "b_pg_per_checkpoint",
        "Postgres, per checkpoint (= per turn / 6)",
        per_cp,
        "us",
        json!({}),
    );
    let t = tid("pgstate");
    run_turn(&g, &t, 0).await;
    let cold = g.clone().with_state_cache(0);
    let get2 = measure(10, 300, Duration::from_secs(5), |_| {
        let (cold, t) = (&cold, &t);
        async move {
            let _ = cold.get_state(t).await;
        }
    })
    .await;
    r.fig(
        "b_pg_get_state",
        "Postgres, get_state (latest checkpoint, uncached), 1-turn thread",
        get2,
        "us",
        json!({}),
    );
    let payload = r.extra["pg_turn_characterization"]["payload_bytes_per_turn"]
        .as_f64()
        .unwrap_or(1000.0);
    let commits = commits_per_turn.round().max(1.0);
    Ok((payload / commits, commits as usize))
}

async fn sec_d(r: &mut Report, s: &Sizes) -> anyhow::Result<()> {
    let path = temp_db_path();
    let cp = SqliteCheckpointer::open(&path).await?;
    let pragmas: (String, i64) = (
        sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(cp.pool())
            .await?,
        sqlx::query_scalar("PRAGMA synchronous")
            .fetch_one(cp.pool())
            .await?,
    );
    let version: String = sqlx::query_scalar("SELECT sqlite_version()")
        .fetch_one(cp.pool())
        .await?;
    r.extra.insert(
        "sqlite".into(),
        json!({"journal_mode": pragmas.0, "synchronous": pragmas.1, "sqlite_version": version}),
    );
    let g = graph(Arc::new(cp), Variant::Plain);
    let samples = measure(s.pg.0, s.pg.1, Duration::from_secs(s.pg.2), |i| {
        let g = &g;
        async move { run_turn(g, &tid("sqlite"), i).await }
    })
    .await;
    let per_cp: Vec<f64> = samples.iter().map(|x| x / 6.0).collect();
    r.fig(
        "d_sqlite_turn",
        "SQLite checkpointer (file, WAL, synchronous=FULL), per turn",
        samples,
        "us",
        json!({}),
    );
    r.fig(
        "d_sqlite_per_checkpoint",
        "SQLite, per checkpoint (= per turn / 6)",
        per_cp,
        "us",
        json!({}),
    );
    remove_sqlite_files(&path);
    Ok(())
}

async fn sec_e(r: &mut Report, s: &Sizes, schema: &PgSchema) -> anyhow::Result<()> {
    let pool = schema.pool(8).await;
    let g = graph(
        Arc::new(PostgresCheckpointer::new(pool)),
        Variant::AskForDocs,
    );
    let (mut to_int, mut resume, mut total) = (Vec::new(), Vec::new(), Vec::new());
    let reps = s.pg.1 / 2;
    for i in 0..(reps + 10) {
        let t = tid("hitl");
        let t0 = Instant::now();
        let out = g.invoke(RunConfig::new(&t), turn_input(i)).await?;
        let t1 = Instant::now();
        anyhow::ensure!(out.interrupts().len() == 1, "expected an interrupt");
        let out = g
            .invoke(
                RunConfig::new(&t),
                RunInput::Resume(Resume::value(json!({"doc_ids": ["doc-1", "doc-4"]}))),
            )
            .await?;
        let t2 = Instant::now();
        anyhow::ensure!(out.interrupts().is_empty(), "expected completion");
        if i >= 10 {
            to_int.push((t1 - t0).as_secs_f64() * 1e6);
            resume.push((t2 - t1).as_secs_f64() * 1e6);
            total.push((t2 - t0).as_secs_f64() * 1e6);
        }
    }
    r.fig(
        "e_hitl_run_to_interrupt",
        "Postgres: run until interrupt() in doc_resolver",
        to_int,
        "us",
        json!({"checkpoints": 2}),
    );
    r.fig(
        "e_hitl_resume_to_end",
        "Postgres: resume to completion",
        resume,
        "us",
        json!({"checkpoints": 4}),
    );
    r.fig(
        "e_hitl_round_trip",
        "Postgres: interrupt round trip total (run + resume)",
        total,
        "us",
        json!({}),
    );
    Ok(())
}

async fn sec_h(r: &mut Report, s: &Sizes, schema: &PgSchema) -> anyhow::Result<()> {
    for n in [1usize, 8, 32] {
        let pool = schema.pool(n as u32).await;
        let g = graph(
            Arc::new(PostgresCheckpointer::new(pool.clone())),
            Variant::Plain,
        );
        let stop = Arc::new(AtomicBool::new(false));
        let measuring = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for w in 0..n {
            let (g, stop, measuring) = (g.clone(), stop.clone(), measuring.clone());
            tasks.push(tokio::spawn(async move {
                let mut lat = Vec::new();
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let t0 = Instant::now();
                    run_turn(&g, &tid(&format!("tput{w}")), i).await;
                    if measuring.load(Ordering::Relaxed) {
                        lat.push(t0.elapsed().as_secs_f64() * 1e6);
                    }
                    i += 1;
                }
                lat
            }));
        }
        tokio::time::sleep(Duration::from_secs_f64(s.tput.0)).await;
        measuring.store(true, Ordering::Relaxed);
        let t0 = Instant::now();
        tokio::time::sleep(Duration::from_secs_f64(s.tput.1)).await;
        measuring.store(false, Ordering::Relaxed);
        let elapsed = t0.elapsed().as_secs_f64();
        stop.store(true, Ordering::Relaxed);
        let mut lat = Vec::new();
        for t in tasks {
            lat.extend(t.await?);
        }
        let tput = lat.len() as f64 / elapsed;
        r.fig(
            &format!("h_tput_N{n}"),
            &format!(
                "throughput, N={n} concurrent conversations, one checkpointer over a pool of {n}"
            ),
            vec![tput],
            "turns/s",
            json!({"overall": tput}),
        );
        r.fig(
            &format!("h_latency_N{n}"),
            &format!("per-turn latency under load, N={n}"),
            lat,
            "us",
            json!({}),
        );
        pool.close().await;
    }
    Ok(())
}

fn machine() -> Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| s.lines().next().map(str::to_string))
        .unwrap_or_default();
    json!({"nproc": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0), "cpu": cpu, "mem": mem})
}

async fn pg_settings(schema: &PgSchema) -> anyhow::Result<Value> {
    let pool = schema.pool(1).await;
    let mut out = serde_json::Map::new();
    for name in [
        "server_version",
        "fsync",
        "synchronous_commit",
        "wal_sync_method",
        "full_page_writes",
        "shared_buffers",
        "commit_delay",
        "max_connections",
    ] {
        let v: String = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SHOW {name}")))
            .fetch_one(&pool)
            .await?;
        out.insert(name.into(), v.into());
    }
    Ok(Value::Object(out))
}

fn main() -> anyhow::Result<()> {
    let args = args()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async_main(args))
}

async fn async_main(args: Args) -> anyhow::Result<()> {
    if std::env::var("PALGRAPH_TEST_DATABASE_URL").is_err() {
        if let Ok(url) = std::env::var("BENCH_DATABASE_URL") {
            std::env::set_var("PALGRAPH_TEST_DATABASE_URL", url);
        }
    }
    let s = if args.quick {
        Sizes {
            mem: (200, 2000, 5),
            pg: (10, 60, 5),
            growth_threads: 1,
            growth_turns: 100,
            tput: (0.5, 2.0),
        }
    } else {
        Sizes {
            mem: (2000, 20000, 20),
            pg: (50, 600, 30),
            growth_threads: 3,
            growth_turns: 1000,
            tput: (2.0, 10.0),
        }
    };
    let want = |x: &str| args.only.as_ref().is_none_or(|o| o.iter().any(|y| y == x));
    let started = Instant::now();
    let schema = PgSchema::create().await;
    let mut r = Report::default();
    let mut payload_per_commit = 1000.0;
    let mut commits_per_turn = 6;
    if want("a") {
        println!("\n== a: in-memory");
        sec_a(&mut r, &s).await;
    }
    if want("b") || want("g") {
        println!("\n== b: Postgres");
        (payload_per_commit, commits_per_turn) = sec_b(&mut r, &s, &schema).await?;
    }
    if want("d") {
        println!("\n== d: SQLite");
        sec_d(&mut r, &s).await?;
    }
    if want("e") {
        println!("\n== e: interrupt round trip");
        sec_e(&mut r, &s, &schema).await?;
    }
    if want("f") {
        println!("\n== f: growth");
        section_f::sec_f(&mut r, &s, &schema).await?;
    }
    if want("g") {
        println!("\n== g: floor");
        section_g::sec_g(&mut r, &s, &schema, payload_per_commit, commits_per_turn).await?;
    }
    if want("h") {
        println!("\n== h: throughput");
        sec_h(&mut r, &s, &schema).await?;
    }
    if want("i") {
        println!("\n== i: composed shapes (Send fan-out, subgraphs)");
        section_i::sec_i(&mut r, &s, &schema).await?;
    }
    if want("j") {
        println!("\n== j: flat cost with database size");
        section_j::sec_j(&mut r, &s, args.quick).await?;
    }
    let meta = json!({
        "command": format!("palgraph-bench {}", std::env::args().skip(1).collect::<Vec<_>>().join(" ")),
        "runtime_s": started.elapsed().as_secs_f64(),
        "machine": machine(),
        "postgres": pg_settings(&schema).await.unwrap_or(Value::Null),
        "quick": args.quick,
    });
    std::fs::create_dir_all(&args.out)?;
    let out = json!({"meta": meta, "figures": r.figures, "extra": r.extra});
    let path = args.out.join("palgraph-results.json");
    std::fs::write(&path, serde_json::to_string_pretty(&out)?)?;
    println!("\nwrote {}", path.display());
    Ok(())
}
