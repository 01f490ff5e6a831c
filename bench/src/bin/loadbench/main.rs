//! Server load benchmark: `palgraph serve` on loopback with the offline LLM, on Postgres
//! (the default) or on an embedded SQLite file (`--backend sqlite`), N concurrent chats
//! through `POST /chat` (each SSE stream read to its terminal event).
//!
//! ```text
//! cargo build --release -p palgraph-app -p palgraph-bench
//! target/release/palgraph-loadbench [--backend postgres|sqlite] [--quick] [--out DIR]
//!     [--server PATH] [--watchers N] [--sizes 0,100000,1000000] [--soak SECS]
//!     [--grow-limit SECS] [--observability] [--thread-turns K]
//! ```
//!
//! `--thread-turns K` (default 1) makes each chat a conversation of K turns on one thread
//! before it starts a new one: a cost that grows with the conversation (its history read
//! or written on every turn) shows in the load, which a new thread per turn never shows.
//! The report says it (`meta.thread_turns`).
//!
//! `--observability` measures only what tracing and metrics cost: N = 1 and 32 with
//! tracing off, with traces exported to a local OTLP receiver, and with `/metrics` scraped
//! every second, interleaved (see `observability.rs`); it writes
//! `observability.json` (`observability-sqlite.json` on SQLite).
//!
//! `--sizes` (default `0,100000`; `--quick`: `0`) repeats the load at each database size:
//! the database is grown to that many finished runs between the rounds, each run on a
//! thread of its own with a real chat turn's checkpoints (copied in bulk, see `database.rs`
//! for Postgres, `database_sqlite.rs` for SQLite). Postgres grows under the idle server;
//! SQLite's file is grown with the server stopped, which is then started again on the
//! bigger file (the report says so: `server_restarted_after_growing`). `--grow-limit SECS`
//! starts no batch of growing after SECS: the load then runs at the size reached
//! (`runs_before`, next to `size_asked`).
//!
//! Each load also reports what the database adds per turn, over every turn the load made
//! (warm-up and wind-down included). Postgres: the CPU of every `postgres` process of the
//! machine per turn and the bytes the run events, the run tables and the checkpoint tables
//! grew by; and the load client's own CPU per turn (it shares the machine's cores with the
//! server and the database, so it bounds what they can use). SQLite (whose work is in the
//! server's own CPU): the bytes the database grew by as its pages count (`sqlite_logical_bytes_per_turn`: `page_count` times `page_size`,
//! pages still only in the WAL included) and as its files on disk do
//! (`sqlite_file_bytes_per_turn`: the main file plus `-wal`, and `-wal` alone: the WAL
//! keeps its largest size until a truncating checkpoint, so this one is coarse). `--soak
//! SECS` then holds N = 32 for SECS in 20 s windows and reports each window's turns/s, and
//! each minute's (three windows): the last and the slowest minute against the first.
//!
//! Reports turns/s, time to the first `status` event and turn latency (p50/p99) for
//! N = 1, 8, 32 chats, and the server's resident memory at idle, after the load, and with
//! `--watchers` (default 1,000) idle SSE watchers open (`GET /threads/{id}/stream` on threads
//! with nothing running), plus the CPU the server burns while they wait; then, on Postgres
//! only, N = 32 chats spread over two replicas on the same database (on SQLite the report
//! says why not: `"two_replicas": {"skipped": ...}`). Postgres comes from
//! `BENCH_DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`); the server
//! gets a fresh schema. SQLite: the server gets a fresh `palgraph.db` in a temporary
//! directory (`PALGRAPH_DB`; removed at the end) and the benchmark reads it through a pool
//! of its own. Writes `server-load.json` (Postgres) or `server-load-sqlite.json`
//! (SQLite) in the output directory.
//!
//! The servers inherit the environment: `PALGRAPH_WORKERS=1 palgraph-loadbench ...` runs
//! them with one worker thread (the report's `server_workers`).
//!
//! `--drive URL ...` is another mode: one window of load against any server speaking
//! LangGraph's Agent Server API (the client of `bench/compare.py server`; see `drive.rs`).

#![allow(unreachable_pub)]

mod backend;
mod database;
mod database_sqlite;
mod drive;
mod observability;
mod procs;
mod server;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use backend::{Backend, Kind};
use futures_util::StreamExt;
use serde_json::{json, Value};
use server::Server;

/// What `--help` prints, and an unknown argument's error after it.
const USAGE: &str = "\
Usage: palgraph-loadbench [--backend postgres|sqlite] [--quick] [--out DIR] [--server PATH]
           [--watchers N] [--sizes 0,100000,1000000] [--soak SECS] [--grow-limit SECS]
           [--observability] [--thread-turns K]
       palgraph-loadbench --drive URL --graph G [--n N] [--secs S] [--warm W] [--words K]
           [--pid PID]... [--database-url URL]
       palgraph-loadbench --create-database URL

Postgres comes from BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres);
each load gets a fresh schema. What each option measures: bench/src/bin/loadbench/main.rs.
";

struct Args {
    backend: Kind,
    quick: bool,
    out: PathBuf,
    server: PathBuf,
    watchers: usize,
    sizes: Option<Vec<i64>>,
    soak: Option<f64>,
    grow_limit: Option<Duration>,
    observability: bool,
    thread_turns: usize,
}

/// How many turns each chat makes on one thread before it starts another
/// (`--thread-turns`; set once, before any load).
static THREAD_TURNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        backend: Kind::Postgres,
        quick: false,
        out: PathBuf::from("target/bench"),
        server: server::default_path()?,
        watchers: 1000,
        sizes: None,
        soak: None,
        grow_limit: None,
        observability: false,
        thread_turns: 1,
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        match x.as_str() {
            "--backend" => a.backend = Kind::parse(&it.next().context("--backend needs a name")?)?,
            "--quick" => a.quick = true,
            "--observability" => a.observability = true,
            "--out" => a.out = it.next().context("--out needs a directory")?.into(),
            "--server" => a.server = it.next().context("--server needs a path")?.into(),
            "--watchers" => a.watchers = it.next().context("--watchers needs a number")?.parse()?,
            "--sizes" => {
                let list = it.next().context("--sizes needs a list")?;
                a.sizes = Some(
                    list.split(',')
                        .map(|n| n.trim().parse::<i64>())
                        .collect::<Result<_, _>>()?,
                );
            }
            "--soak" => a.soak = Some(it.next().context("--soak needs seconds")?.parse()?),
            "--grow-limit" => {
                let secs: f64 = it.next().context("--grow-limit needs seconds")?.parse()?;
                a.grow_limit = Some(Duration::from_secs_f64(secs));
            }
            "--thread-turns" => {
                a.thread_turns = it
                    .next()
                    .context("--thread-turns needs a number")?
                    .parse()?;
                if a.thread_turns == 0 {
                    bail!("--thread-turns must be at least 1");
                }
            }
            other => bail!("unknown argument {other}\n\n{USAGE}"),
        }
    }
    Ok(a)
}

/// One chat turn's timings, microseconds.
struct Turn {
    first_status_us: f64,
    total_us: f64,
    /// The turn's thread (`x-thread-id`).
    thread_id: Option<String>,
}

/// A chat event's `type`.
#[derive(serde::Deserialize)]
struct EventType {
    #[serde(rename = "type")]
    kind: Option<String>,
}

/// Posts one message (on `thread`, else on a new thread) and reads the SSE stream to its
/// terminal event.
async fn chat_turn(
    http: &reqwest::Client,
    base: &str,
    message: &str,
    thread: Option<&str>,
) -> anyhow::Result<Turn> {
    let t0 = Instant::now();
    let body = match thread {
        Some(t) => json!({ "message": message, "thread_id": t }),
        None => json!({ "message": message }),
    };
    let resp = http.post(format!("{base}/chat")).json(&body).send().await?;
    if !resp.status().is_success() {
        bail!("POST /chat: {}", resp.status());
    }
    let thread_id = resp
        .headers()
        .get("x-thread-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut body = resp.bytes_stream();
    let mut buf = String::new();
    let mut first_status = None;
    let mut seen: Vec<String> = Vec::new();
    while let Some(chunk) = body.next().await {
        buf.push_str(&String::from_utf8_lossy(&chunk?));
        while let Some(end) = buf.find("\n\n") {
            let frame: String = buf.drain(..end + 2).collect();
            for line in frame.lines() {
                let Some(data) = line.strip_prefix("data:") else {
                    continue;
                };
                // Only the event's type is read (the rest is skipped, not built): the client
                // shares the machine's cores with the server under test.
                let kind = serde_json::from_str::<EventType>(data.trim())
                    .ok()
                    .and_then(|k| k.kind);
                seen.push(kind.as_deref().unwrap_or("?").to_string());
                match kind.as_deref() {
                    Some("status") if first_status.is_none() => {
                        first_status = Some(t0.elapsed().as_secs_f64() * 1e6)
                    }
                    Some("response") => {
                        return Ok(Turn {
                            first_status_us: first_status.unwrap_or(f64::NAN),
                            total_us: t0.elapsed().as_secs_f64() * 1e6,
                            thread_id,
                        })
                    }
                    Some(other @ ("error" | "interrupt" | "cancelled")) => {
                        bail!("turn ended with {other}: {}", data.trim())
                    }
                    _ => {}
                }
            }
        }
    }
    seen.dedup();
    bail!(
        "the stream ended before the response (events: {})",
        seen.join(" ")
    )
}

fn pct(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// N clients chat back to back for `secs` (after `warm` seconds), client i on replica
/// `i % servers.len()`; turns/s and timings (server CPU summed over the replicas).
async fn load(
    servers: &[&Server],
    db: &Backend,
    n: usize,
    warm: f64,
    secs: f64,
) -> anyhow::Result<Value> {
    let cpu_s = || servers.iter().map(|s| s.cpu_s()).sum::<f64>();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()?;
    let stop = Arc::new(AtomicBool::new(false));
    let measuring = Arc::new(AtomicBool::new(false));
    let cpu0 = Arc::new(std::sync::Mutex::new(0.0f64));
    // Bytes are spread over every turn made meanwhile (warm-up and wind-down included:
    // the tables do not know which turns were measured), so both are read outside.
    let before = db.mark().await?;
    let mut tasks = Vec::new();
    for i in 0..n {
        let (http, base, stop, measuring) = (
            http.clone(),
            servers[i % servers.len()].base.clone(),
            stop.clone(),
            measuring.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut turns = Vec::new();
            let mut errors = 0usize;
            let per_thread = THREAD_TURNS.load(Ordering::Relaxed).max(1);
            let (mut thread, mut on_thread) = (None::<String>, 0usize);
            while !stop.load(Ordering::Relaxed) {
                let counted = measuring.load(Ordering::Relaxed);
                if on_thread >= per_thread {
                    (thread, on_thread) = (None, 0);
                }
                let asked = "What are the capital requirements?";
                match chat_turn(&http, &base, asked, thread.as_deref()).await {
                    Ok(t) => {
                        on_thread += 1;
                        if thread.is_none() {
                            thread = t.thread_id.clone();
                        }
                        if counted && measuring.load(Ordering::Relaxed) {
                            turns.push(t);
                        }
                    }
                    Err(e) => {
                        errors += 1;
                        if errors <= 3 {
                            eprintln!("turn failed: {e:#}");
                        }
                    }
                }
            }
            (turns, errors)
        }));
    }
    tokio::time::sleep(Duration::from_secs_f64(warm)).await;
    *cpu0.lock().unwrap_or_else(|e| e.into_inner()) = cpu_s();
    let db_cpu0 = db.cpu_s();
    let client_cpu0 = procs::own_cpu_s();
    measuring.store(true, Ordering::Relaxed);
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    measuring.store(false, Ordering::Relaxed);
    let elapsed = t0.elapsed().as_secs_f64();
    let cpu = cpu_s() - *cpu0.lock().unwrap_or_else(|e| e.into_inner());
    let db_cpu = db.cpu_s().zip(db_cpu0).map(|(b, a)| b - a);
    let client_cpu = procs::own_cpu_s() - client_cpu0;
    stop.store(true, Ordering::Relaxed);
    let (mut first, mut total, mut errors) = (Vec::new(), Vec::new(), 0);
    for t in tasks {
        let (turns, e) = t.await?;
        errors += e;
        for t in turns {
            first.push(t.first_status_us);
            total.push(t.total_us);
        }
    }
    let tput = total.len() as f64 / elapsed;
    let (grown, grown_line) = Backend::grown(&before, &db.mark().await?);
    let count = total.len();
    let per_turn_ms = move |c: f64| {
        if count == 0 {
            f64::NAN
        } else {
            c * 1e3 / count as f64
        }
    };
    let mut out = json!({
        "n": n,
        "replicas": servers.len(),
        "turns": total.len(),
        "errors": errors,
        "turns_per_s": tput,
        "first_status_us_p50": pct(&mut first, 0.5),
        "first_status_us_p99": pct(&mut first, 0.99),
        "turn_us_p50": pct(&mut total, 0.5),
        "turn_us_p99": pct(&mut total, 0.99),
        "server_cpu_cores": cpu / elapsed,
        "server_cpu_ms_per_turn": per_turn_ms(cpu),
        "client_cpu_ms_per_turn": per_turn_ms(client_cpu),
    });
    if let Some(o) = out.as_object_mut() {
        if let Some(c) = db_cpu {
            o.insert("postgres_cpu_ms_per_turn".into(), json!(per_turn_ms(c)));
        }
        o.extend(grown);
    }
    println!("  N={n:<3} {tput:>8.1} turns/s  first status p50 {:>7.0} us p99 {:>7.0} us  turn p50 {:>7.0} us p99 {:>7.0} us  server {:.2} cores  errors {errors}  replicas {}",
        out["first_status_us_p50"].as_f64().unwrap_or(f64::NAN),
        out["first_status_us_p99"].as_f64().unwrap_or(f64::NAN),
        out["turn_us_p50"].as_f64().unwrap_or(f64::NAN),
        out["turn_us_p99"].as_f64().unwrap_or(f64::NAN),
        cpu / elapsed,
        servers.len());
    let db_cpu = db_cpu
        .map(|c| format!(", Postgres {:.2} ms", per_turn_ms(c)))
        .unwrap_or_default();
    println!(
        "         CPU per turn: server {:.2} ms{db_cpu}, load client {:.2} ms;  bytes per turn: {grown_line}",
        per_turn_ms(cpu),
        per_turn_ms(client_cpu),
    );
    Ok(out)
}

/// Opens `count` idle SSE watchers (thread streams on threads with nothing running);
/// returns the memory and CPU the server spends while they wait.
async fn idle_watchers(server: &Server, count: usize) -> anyhow::Result<Value> {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()?;
    let before = server.rss_kib();
    let mut streams = Vec::with_capacity(count);
    for i in 0..count {
        let r = http
            .post(format!("{}/threads", server.base))
            .json(&json!({}))
            .send()
            .await?;
        let t: Value = r.json().await?;
        let id = t["thread_id"].as_str().context("thread_id")?.to_string();
        let resp = http
            .get(format!("{}/threads/{id}/stream", server.base))
            .send()
            .await?;
        if !resp.status().is_success() {
            bail!("watcher {i}: {}", resp.status());
        }
        streams.push(resp);
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let cpu0 = server.cpu_s();
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let cpu = (server.cpu_s() - cpu0) / t0.elapsed().as_secs_f64();
    let with = server.rss_kib();
    drop(streams);
    let out = json!({
        "watchers": count,
        "rss_kib_before": before,
        "rss_kib_with_watchers": with,
        "kib_per_watcher": (with as f64 - before as f64) / count as f64,
        "server_cpu_cores_while_idle": cpu,
    });
    println!(
        "  {count} idle watchers: RSS {before} KiB -> {with} KiB ({:.1} KiB each), server CPU {cpu:.3} cores while they wait",
        (with as f64 - before as f64) / count as f64
    );
    Ok(out)
}

/// N = 32 for `secs`, in 20 s windows: each window's turns/s, to see whether throughput
/// holds as the database grows under it; the server's RSS after each window and its growth
/// per turn after the first (a leak shows here); and the bytes stored per turn over the whole soak
/// (`stored`: with autovacuum's turns in it, nearer to what a database keeps for good than
/// a single window's growth, where dead row versions not yet vacuumed count in full).
async fn soak(server: &Server, db: &Backend, secs: f64) -> anyhow::Result<Value> {
    let windows = (secs / 20.0).ceil().max(1.0) as usize;
    let before = db.mark().await?;
    let mut out = Vec::new();
    for w in 0..windows {
        let mut r = load(&[server], db, 32, if w == 0 { 3.0 } else { 0.5 }, 20.0).await?;
        r["server_rss_kib_after"] = json!(server.rss_kib());
        out.push(r);
    }
    // The server's memory from the end of the first window (warmed up) to the end of the
    // last, per turn served in between: near 0 unless something keeps what each turn made.
    let rss_at = |r: &Value| r["server_rss_kib_after"].as_f64().unwrap_or(f64::NAN);
    let turns_after_first: f64 = out
        .iter()
        .skip(1)
        .map(|r| r["turns"].as_f64().unwrap_or(0.0))
        .sum();
    let rss_growth = match (out.first(), out.last()) {
        (Some(a), Some(b)) if out.len() > 1 => (rss_at(b) - rss_at(a)) * 1024.0 / turns_after_first,
        _ => f64::NAN,
    };
    println!(
        "soak: server RSS {:.0} -> {:.0} KiB after the first and last windows ({rss_growth:.1} B per turn between)",
        out.first().map(rss_at).unwrap_or(f64::NAN),
        out.last().map(rss_at).unwrap_or(f64::NAN),
    );
    let tput = |r: &Value| r["turns_per_s"].as_f64().unwrap_or(f64::NAN);
    let first = out.first().map(tput).unwrap_or(f64::NAN);
    let last = out.last().map(tput).unwrap_or(f64::NAN);
    println!(
        "soak: first window {first:.1} turns/s, last {last:.1} ({:.2}x)",
        last / first
    );
    let minutes = by_minute(&out.iter().map(tput).collect::<Vec<_>>());
    let (first_min, last_min, worst_min) = (
        minutes.first().copied().unwrap_or(f64::NAN),
        minutes.last().copied().unwrap_or(f64::NAN),
        minutes.iter().copied().fold(f64::INFINITY, f64::min),
    );
    println!(
        "soak by minute: first {first_min:.1} turns/s, last {last_min:.1} ({:.2}x), slowest {worst_min:.1} ({:.2}x)",
        last_min / first_min,
        worst_min / first_min
    );
    let (stored, stored_line) = Backend::grown(&before, &db.mark().await?);
    println!("soak: stored per turn over the whole soak: {stored_line}");
    Ok(json!({
        "windows": out,
        "stored": stored,
        "last_over_first": last / first,
        "minutes_turns_per_s": minutes,
        "last_minute_over_first": last_min / first_min,
        "slowest_minute_over_first": worst_min / first_min,
        "server_rss_growth_bytes_per_turn": rss_growth,
    }))
}

/// The mean turns/s of each minute: three 20 s windows at a time (a last, shorter group
/// if the windows do not divide by three).
fn by_minute(windows: &[f64]) -> Vec<f64> {
    windows
        .chunks(3)
        .map(|c| c.iter().sum::<f64>() / c.len() as f64)
        .collect()
}

fn main() -> anyhow::Result<()> {
    // reqwest is built without a bundled crypto provider (the workspace picks ring).
    let _ = rustls::crypto::ring::default_provider().install_default();
    // One worker: the load client shares the machine's cores with the server and its
    // database, and a second worker mostly wakes the first (0.19 ms of CPU per turn at 32
    // chats against 0.15 with one).
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let raw: Vec<String> = std::env::args().skip(1).collect();
    match raw.first().map(String::as_str) {
        Some("--drive") => {
            let d = drive::parse(&raw)?;
            let out = rt.block_on(drive::run(d))?;
            println!("{out}");
            Ok(())
        }
        Some("--create-database") => {
            let url = raw.get(1).context("--create-database needs a URL")?;
            rt.block_on(drive::create_database(url))
        }
        Some("--help" | "-h") => {
            print!("{USAGE}");
            Ok(())
        }
        _ => rt.block_on(run(args()?)),
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    THREAD_TURNS.store(args.thread_turns, Ordering::Relaxed);
    let db = Backend::create(args.backend).await?;
    println!("backend: {}", db.name());
    if args.observability {
        let (rounds, warm, secs) = if args.quick {
            (1, 2.0, 8.0)
        } else {
            (3, 3.0, 15.0)
        };
        let out = observability::compare(&args.server, &db, rounds, warm, secs).await?;
        std::fs::create_dir_all(&args.out)?;
        let path = args.out.join(match db.name() {
            "sqlite" => "observability-sqlite.json",
            _ => "observability.json",
        });
        std::fs::write(&path, serde_json::to_string_pretty(&out)?)?;
        println!("wrote {}", path.display());
        return Ok(());
    }
    let mut server = Server::start(&args.server, &db).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle_rss = server.rss_kib();
    println!("server idle: RSS {idle_rss} KiB");
    let mut meta = json!({
        "command": format!("palgraph-loadbench {}", std::env::args().skip(1).collect::<Vec<_>>().join(" ")),
        "nproc": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "backend": db.name(),
        "llm": "offline (no OPENAI_API_KEY)",
        "server_workers": std::env::var("PALGRAPH_WORKERS").unwrap_or_else(|_| "one per core".into()),
        "thread_turns": args.thread_turns,
    });
    if let (Some(m), Value::Object(extra)) = (meta.as_object_mut(), db.meta().await?) {
        m.extend(extra);
    }
    let report = |out: &Value| -> anyhow::Result<PathBuf> {
        std::fs::create_dir_all(&args.out)?;
        let path = args.out.join(db.report_name());
        std::fs::write(&path, serde_json::to_string_pretty(out)?)?;
        Ok(path)
    };
    let (warm, secs) = if args.quick { (1.0, 3.0) } else { (3.0, 15.0) };
    let sizes = args.sizes.clone().unwrap_or_else(|| {
        if args.quick {
            vec![0]
        } else {
            vec![0, 100_000]
        }
    });
    let mut loads = Vec::new();
    let mut by_size = Vec::new();
    for size in sizes {
        let mut runs = db.runs().await?;
        let mut grow_s = None;
        if size > runs {
            if runs == 0 {
                // A finished chat turn to copy.
                chat_turn(
                    &reqwest::Client::new(),
                    &server.base,
                    "What is uptime?",
                    None,
                )
                .await?;
            }
            let took = if db.grows_offline() {
                server.stop().await?;
                let took = db.grow(size, args.grow_limit).await;
                server = Server::start(&args.server, &db).await?;
                tokio::time::sleep(Duration::from_secs(1)).await;
                took?
            } else {
                db.grow(size, args.grow_limit).await?
            };
            runs = db.runs().await?;
            if let Some(took) = took {
                println!(
                    "database grown to {runs} runs (asked {size}) in {:.1} s{}",
                    took.as_secs_f64(),
                    if db.grows_offline() {
                        " (server stopped meanwhile, then started again)"
                    } else {
                        ""
                    }
                );
                grow_s = Some(took.as_secs_f64());
            }
        }
        println!("database: {runs} runs");
        let mut at = Vec::new();
        for n in [1, 8, 32] {
            at.push(load(&[&server], &db, n, warm, secs).await?);
        }
        if loads.is_empty() {
            loads = at.clone();
        }
        by_size.push(json!({
            "runs_before": runs,
            "size_asked": size,
            "grow_s": grow_s,
            "server_restarted_after_growing": grow_s.is_some() && db.grows_offline(),
            "tables": db.size().await?,
            "load": at,
        }));
        // What there is so far, should a long run be stopped at a bigger size.
        report(
            &json!({"meta": meta, "partial": true, "idle_rss_kib": idle_rss, "by_database_size": by_size}),
        )?;
    }
    let soaked = match args.soak {
        Some(s) => Some(soak(&server, &db, s).await?),
        None => None,
    };
    let after_rss = server.rss_kib();
    println!("server after the load: RSS {after_rss} KiB");
    let watchers = idle_watchers(&server, args.watchers).await?;
    let two = if db.shared() {
        // A second replica on the same database: the same 32 chats spread over both.
        let mut second = Server::start(&args.server, &db).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        println!("two replicas:");
        let two = load(&[&server, &second], &db, 32, warm, secs).await?;
        let _ = second.child.kill().await;
        two
    } else {
        println!("two replicas: skipped (an embedded SQLite file has one server process)");
        json!({"skipped": "SQLite is an embedded file owned by one server process; replicas share a database only on Postgres"})
    };
    server.stop().await?;
    let out = json!({
        "meta": meta,
        "idle_rss_kib": idle_rss,
        "after_load_rss_kib": after_rss,
        "load": loads,
        "by_database_size": by_size,
        "soak": soaked,
        "idle_watchers": watchers,
        "two_replicas": two,
    });
    println!("wrote {}", report(&out)?.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::by_minute;

    #[test]
    fn minutes_are_the_means_of_three_windows() {
        let m = by_minute(&[300.0, 330.0, 360.0, 390.0, 420.0, 450.0, 100.0]);
        assert_eq!(m, vec![330.0, 420.0, 100.0]);
        assert!(by_minute(&[]).is_empty());
    }
}
