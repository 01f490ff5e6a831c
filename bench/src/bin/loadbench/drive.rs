//! The load client of the server comparison (`bench/compare.py server`): one window of
//! N clients against any server speaking LangGraph's Agent Server API, palgraph's or the
//! official one, each turn a new thread and a streamed run.
//!
//! ```text
//! palgraph-loadbench --drive URL --graph G [--n N] [--secs S] [--warm W] [--words K]
//!     [--pid PID]... [--database-url URL]
//! palgraph-loadbench --create-database URL
//! ```
//!
//! A turn is `POST /threads` then `POST /threads/{id}/runs/stream` with `{"assistant_id": G,
//! "input": ..., "stream_mode": ["values", "custom"]}`, read to the end of the stream; it
//! counts when the stream had no `error` event and its last `values` ends with an AI
//! message. Times run from the stream request: the first `custom` event (a node's status
//! line) and the end of the stream. A turn counts in the window when it ends in it (after
//! `--warm` seconds of the same load); when the window closes the clients finish their turn
//! in flight, so the server is idle again before the next window.
//!
//! `--pid` (repeatable): the server's processes, with all their descendants, for CPU per
//! turn and resident memory. `--database-url`: the server's database, for the CPU of its
//! Postgres backends and the bytes its tables grew by. Prints one JSON object on stdout.
//! `--create-database URL` drops and creates the database URL names (it must start with
//! `servercmp`), for a fresh server.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use futures_util::StreamExt;
use serde_json::{json, Value};
use sqlx::ConnectOptions;

use crate::{database, procs};

/// One window's settings.
pub(crate) struct Drive {
    base: String,
    graph: String,
    n: usize,
    secs: f64,
    warm: f64,
    words: usize,
    pids: Vec<u32>,
    database_url: Option<String>,
}

/// Parses `--drive` arguments (everything after the program name).
pub(crate) fn parse(args: &[String]) -> anyhow::Result<Drive> {
    let mut d = Drive {
        base: String::new(),
        graph: "fanout".into(),
        n: 1,
        secs: 10.0,
        warm: 1.0,
        words: 100,
        pids: Vec::new(),
        database_url: None,
    };
    let mut it = args.iter();
    while let Some(x) = it.next() {
        let mut value = |what: &str| it.next().with_context(|| format!("{x} needs {what}"));
        match x.as_str() {
            "--drive" => d.base = value("a URL")?.trim_end_matches('/').to_string(),
            "--graph" => d.graph = value("a graph id")?.clone(),
            "--n" => d.n = value("a number")?.parse()?,
            "--secs" => d.secs = value("seconds")?.parse()?,
            "--warm" => d.warm = value("seconds")?.parse()?,
            "--words" => d.words = value("a number")?.parse()?,
            "--pid" => d.pids.push(value("a process id")?.parse()?),
            "--database-url" => d.database_url = Some(value("a URL")?.clone()),
            other => bail!("unknown argument {other} for --drive; see drive.rs"),
        }
    }
    if d.base.is_empty() || d.n == 0 || d.secs <= 0.0 {
        bail!("--drive needs a URL, --n above 0 and --secs above 0");
    }
    Ok(d)
}

/// Drops and creates the database `url` names, for a fresh server.
pub(crate) async fn create_database(url: &str) -> anyhow::Result<()> {
    let opts: sqlx::postgres::PgConnectOptions = url.parse().context("--create-database URL")?;
    let name = opts
        .get_database()
        .context("the URL names no database")?
        .to_string();
    if !name.starts_with("servercmp")
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        bail!("refusing to drop {name:?}: the database must be named servercmp[_a-z0-9]*");
    }
    let mut admin = opts.database("postgres").connect().await?;
    // The name was checked above: letters, digits and underscores only.
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
    )))
    .execute(&mut admin)
    .await?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut admin)
        .await?;
    eprintln!("database {name} created");
    Ok(())
}

/// The run input of one turn of `graph`.
fn input(graph: &str, words: usize) -> Value {
    match graph {
        "streaming" => json!({
            "messages": [{"type": "human", "content": "Tell me about the capital requirements"}],
            "delay_ms": 0,
            "words": words,
        }),
        _ => json!({"messages": [{"type": "human", "content": "We guarantee 99.9% uptime"}]}),
    }
}

/// One turn's timings, microseconds from the stream request, and when it ended.
struct Turn {
    thread_us: f64,
    first_status_us: f64,
    end_us: f64,
    ended: Instant,
}

/// Reads one SSE frame's event name and data.
fn frame(text: &str) -> (String, String) {
    let (mut event, mut data) = (String::from("message"), String::new());
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("event:") {
            event = v.trim().to_string();
        } else if let Some(v) = line.strip_prefix("data:") {
            data.push_str(v.strip_prefix(' ').unwrap_or(v));
        }
    }
    (event, data)
}

/// One turn: a new thread, a streamed run read to its end, checked.
async fn turn(
    http: &reqwest::Client,
    base: &str,
    graph: &str,
    body: &Value,
) -> anyhow::Result<Turn> {
    let t0 = Instant::now();
    let r = http
        .post(format!("{base}/threads"))
        .json(&json!({}))
        .send()
        .await?;
    if !r.status().is_success() {
        bail!("POST /threads: {}", r.status());
    }
    let thread: Value = r.json().await?;
    let id = thread["thread_id"].as_str().context("no thread_id")?;
    let thread_us = t0.elapsed().as_secs_f64() * 1e6;
    let t1 = Instant::now();
    let resp = http
        .post(format!("{base}/threads/{id}/runs/stream"))
        .header("accept", "text/event-stream")
        .json(&json!({"assistant_id": graph, "input": body, "stream_mode": ["values", "custom"]}))
        .send()
        .await?;
    if !resp.status().is_success() {
        bail!("POST /threads/{{id}}/runs/stream: {}", resp.status());
    }
    let mut stream = resp.bytes_stream();
    let (mut buf, mut first_status, mut last_values) = (Vec::<u8>::new(), None, Value::Null);
    while let Some(chunk) = stream.next().await {
        // Bytes, not text: a chunk may end inside a character. CR never occurs unescaped
        // inside JSON data, so dropping it turns CRLF line ends into LF.
        buf.extend(chunk?.iter().filter(|&&b| b != b'\r'));
        while let Some(end) = buf.windows(2).position(|w| w == b"\n\n") {
            let bytes: Vec<u8> = buf.drain(..end + 2).collect();
            let (event, data) = frame(&String::from_utf8_lossy(&bytes));
            match event.as_str() {
                "custom" if first_status.is_none() => {
                    first_status = Some(t1.elapsed().as_secs_f64() * 1e6)
                }
                "values" => last_values = serde_json::from_str(&data).unwrap_or(Value::Null),
                "error" => bail!("the run failed: {data}"),
                _ => {}
            }
        }
    }
    let end_us = t1.elapsed().as_secs_f64() * 1e6;
    let last = last_values["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or(Value::Null);
    if last["type"] != "ai" {
        bail!("the stream ended without an AI answer (last message {last})");
    }
    Ok(Turn {
        thread_us,
        first_status_us: first_status.context("no custom (status) event")?,
        end_us,
        ended: Instant::now(),
    })
}

fn pct(v: &mut [f64], q: f64) -> Value {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return Value::Null;
    }
    json!(v[((v.len() - 1) as f64 * q).round() as usize])
}

/// What the server's Postgres has done so far: its backends' CPU ticks and its tables' bytes.
struct PgMark {
    backends: HashMap<u32, u64>,
    all_cpu_s: f64,
    events: i64,
    runs: i64,
    checkpoints: i64,
}

async fn pg_mark(pool: &sqlx::PgPool) -> anyhow::Result<PgMark> {
    let pids: Vec<i32> = sqlx::query_scalar(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .fetch_all(pool)
    .await?;
    let pids: Vec<u32> = pids
        .into_iter()
        .filter_map(|p| u32::try_from(p).ok())
        .collect();
    Ok(PgMark {
        backends: procs::each_ticks(&pids),
        all_cpu_s: database::postgres_cpu_s(),
        events: database::bytes(pool, &["run_events"]).await?,
        runs: database::bytes(pool, &["runs", "threads"]).await?,
        checkpoints: database::bytes(pool, &["checkpoints", "checkpoint_writes"]).await?,
    })
}

/// Runs one window and returns its figures (with every counted turn's times, ms).
pub(crate) async fn run(d: Drive) -> anyhow::Result<Value> {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(d.n * 2)
        .build()?;
    let pool = match &d.database_url {
        Some(url) => Some(
            sqlx::postgres::PgPoolOptions::new()
                .max_connections(1)
                .connect(url)
                .await
                .context("--database-url")?,
        ),
        None => None,
    };
    let body = Arc::new(input(&d.graph, d.words));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for _ in 0..d.n {
        let (http, base, graph, body, stop) = (
            http.clone(),
            d.base.clone(),
            d.graph.clone(),
            body.clone(),
            stop.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let (mut turns, mut errors) = (Vec::new(), Vec::new());
            while !stop.load(Ordering::Relaxed) {
                match turn(&http, &base, &graph, &body).await {
                    Ok(t) => turns.push(t),
                    Err(e) => {
                        errors.push((Instant::now(), format!("{e:#}")));
                        // A server that refuses at once is not hammered in a tight loop.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
            (turns, errors)
        }));
    }
    tokio::time::sleep(Duration::from_secs_f64(d.warm)).await;
    let pg0 = match &pool {
        Some(p) => Some(pg_mark(p).await?),
        None => None,
    };
    let cpu0 = procs::tree_cpu_s(&d.pids);
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(d.secs)).await;
    let t_end = Instant::now();
    let cpu = procs::tree_cpu_s(&d.pids) - cpu0;
    let rss_kib = procs::tree_rss_kib(&d.pids);
    let pg1 = match &pool {
        Some(p) => Some(pg_mark(p).await?),
        None => None,
    };
    let elapsed = (t_end - t0).as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let (mut thread, mut first, mut end) = (Vec::new(), Vec::new(), Vec::new());
    let (mut errors, mut samples) = (0usize, Vec::new());
    let drain = Duration::from_secs(120);
    for t in tasks {
        let (turns, errs) = tokio::time::timeout(drain, t)
            .await
            .context("a client's last turn did not end in 120 s")??;
        for t in turns
            .into_iter()
            .filter(|t| t.ended >= t0 && t.ended <= t_end)
        {
            thread.push(t.thread_us / 1e3);
            first.push(t.first_status_us / 1e3);
            end.push(t.end_us / 1e3);
        }
        for (at, e) in errs {
            if at >= t0 && at <= t_end {
                errors += 1;
                if samples.len() < 3 {
                    samples.push(e);
                }
            }
        }
    }
    let turns = end.len();
    let per_turn = |x: f64| {
        if turns == 0 {
            Value::Null
        } else {
            json!(x / turns as f64)
        }
    };
    let mut out = json!({
        "graph": d.graph,
        "n": d.n,
        "secs": elapsed,
        "turns": turns,
        "errors": errors,
        "error_samples": samples,
        "turns_per_s": turns as f64 / elapsed,
        "first_status_ms_p50": pct(&mut first, 0.5),
        "first_status_ms_p99": pct(&mut first, 0.99),
        "end_ms_p50": pct(&mut end, 0.5),
        "end_ms_p99": pct(&mut end, 0.99),
        "thread_create_ms_p50": pct(&mut thread, 0.5),
        "server_cpu_s": cpu,
        "server_cpu_cores": cpu / elapsed,
        "server_cpu_ms_per_turn": per_turn(cpu * 1e3),
        "server_rss_kib": rss_kib,
        "first_status_ms": first,
        "end_ms": end,
    });
    if let (Some(a), Some(b), Some(o)) = (pg0, pg1, out.as_object_mut()) {
        let backends = procs::cpu_s_between(&a.backends, &b.backends);
        let all = b.all_cpu_s - a.all_cpu_s;
        let (events, runs, checkpoints) = (
            (b.events - a.events) as f64,
            (b.runs - a.runs) as f64,
            (b.checkpoints - a.checkpoints) as f64,
        );
        for (key, value) in [
            ("postgres_cpu_s", json!(backends)),
            ("postgres_cpu_ms_per_turn", per_turn(backends * 1e3)),
            ("postgres_all_cpu_s", json!(all)),
            ("postgres_all_cpu_ms_per_turn", per_turn(all * 1e3)),
            ("event_bytes", json!(events)),
            ("event_bytes_per_turn", per_turn(events)),
            ("run_bytes", json!(runs)),
            ("run_bytes_per_turn", per_turn(runs)),
            ("checkpoint_bytes", json!(checkpoints)),
            ("checkpoint_bytes_per_turn", per_turn(checkpoints)),
        ] {
            o.insert(key.into(), value);
        }
    }
    let ms = |k: &str| out[k].as_f64().unwrap_or(f64::NAN);
    eprintln!(
        "  {} N={:<3} {:>7.1} turns/s  first status p50 {:.1} ms  end p50 {:.1} ms  server {:.2} cores  errors {errors}",
        d.graph,
        d.n,
        ms("turns_per_s"),
        ms("first_status_ms_p50"),
        ms("end_ms_p50"),
        cpu / elapsed,
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_gives_its_event_name_and_its_data_lines_joined() {
        assert_eq!(
            frame("event: custom\ndata: {\"type\":\"status\"}\nid: 3\n\n"),
            ("custom".to_string(), "{\"type\":\"status\"}".to_string())
        );
        assert_eq!(
            frame("data:{\"a\":\ndata: 1}\n\n"),
            ("message".to_string(), "{\"a\":1}".to_string())
        );
    }

    #[test]
    fn drive_arguments_are_checked() {
        let args = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
        let d = parse(&args(
            "--drive http://127.0.0.1:1/ --graph streaming --n 8 --secs 2 --pid 7 --pid 9",
        ))
        .expect("valid arguments");
        assert_eq!(d.base, "http://127.0.0.1:1");
        assert_eq!(
            (d.graph.as_str(), d.n, d.pids.as_slice()),
            ("streaming", 8, &[7, 9][..])
        );
        assert_eq!(input(&d.graph, d.words)["words"], 100);
        assert!(parse(&args("--drive http://x --n 0")).is_err());
        assert!(parse(&args("--drive http://x --bogus 1")).is_err());
        assert!(parse(&args("--graph fanout")).is_err(), "no URL");
    }
}
