//! `--observability`: what tracing and metrics cost the server, in one run.
//!
//! Three set-ups, each a fresh server process on the same database, interleaved round by
//! round, each round starting at the next set-up, so that drift (the database growing, the
//! machine warming) falls on all alike:
//!
//! - **off**: no OTLP endpoint, `PALGRAPH_METRICS=false`;
//! - **traces**: `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at a local OTLP/HTTP receiver
//!   ([`OtlpSink`], `POST /v1/traces` answered 200 and discarded), metrics off;
//! - **metrics**: metrics on and `GET /metrics` scraped every second, no OTLP.
//!
//! At N = 1 and N = 32 chats each, it reports turns/s and each set-up's ratio to **off**,
//! plus what the receiver got and how many scrapes were made (so a set-up that silently
//! exported nothing shows).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

use super::load;
use crate::backend::Backend;
use crate::server::Server;

/// A local OTLP/HTTP receiver: answers every `POST /v1/traces` with an empty 200
/// (`ExportTraceServiceResponse` with nothing rejected) and counts what it got.
pub struct OtlpSink {
    /// `http://127.0.0.1:<port>`
    pub endpoint: String,
    requests: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for OtlpSink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl OtlpSink {
    /// Binds 127.0.0.1:0 and serves.
    pub async fn start() -> anyhow::Result<OtlpSink> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let endpoint = format!("http://{}", listener.local_addr()?);
        let (requests, bytes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (r, b) = (requests.clone(), bytes.clone());
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let (r, b) = (r.clone(), b.clone());
                tokio::spawn(async move {
                    let _ = serve_connection(conn, &r, &b).await;
                });
            }
        });
        Ok(OtlpSink {
            endpoint,
            requests,
            bytes,
            task,
        })
    }

    /// Requests and body bytes received so far.
    pub fn received(&self) -> (u64, u64) {
        (
            self.requests.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
        )
    }
}

/// HTTP/1.1 requests on one connection, kept alive; bodies by `content-length`.
async fn serve_connection(
    conn: tokio::net::TcpStream,
    requests: &AtomicU64,
    bytes: &AtomicU64,
) -> anyhow::Result<()> {
    let (read, mut write) = conn.into_split();
    let mut read = BufReader::new(read);
    loop {
        let mut line = String::new();
        if read.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let path_ok = line.starts_with("POST /v1/traces");
        let mut length = 0usize;
        loop {
            let mut h = String::new();
            if read.read_line(&mut h).await? == 0 {
                return Ok(());
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().context("content-length")?;
                } else if k.eq_ignore_ascii_case("transfer-encoding") {
                    bail!("chunked bodies are not read here");
                }
            }
        }
        let mut body = vec![0u8; length];
        read.read_exact(&mut body).await?;
        let status = if path_ok {
            requests.fetch_add(1, Ordering::Relaxed);
            bytes.fetch_add(length as u64, Ordering::Relaxed);
            "200 OK"
        } else {
            "404 Not Found"
        };
        write
            .write_all(
                format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n"
                )
                .as_bytes(),
            )
            .await?;
    }
}

/// Scrapes `GET /metrics` every second until dropped; counts the good scrapes.
struct Scraper {
    ok: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Scraper {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Scraper {
    fn start(base: &str) -> Scraper {
        let url = format!("{base}/metrics");
        let (ok, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (o, f) = (ok.clone(), failed.clone());
        let task = tokio::spawn(async move {
            let http = reqwest::Client::new();
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                let good = match http.get(&url).send().await {
                    Ok(r) if r.status().is_success() => r.bytes().await.is_ok(),
                    _ => false,
                };
                if good { &o } else { &f }.fetch_add(1, Ordering::Relaxed);
            }
        });
        Scraper { ok, failed, task }
    }
}

/// One set-up of the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Setup {
    Off,
    Traces,
    Metrics,
}

impl Setup {
    fn name(self) -> &'static str {
        match self {
            Setup::Off => "off",
            Setup::Traces => "traces",
            Setup::Metrics => "metrics",
        }
    }
}

/// Runs the comparison; `rounds` interleaved rounds of `warm` + `secs` per load.
pub async fn compare(
    server_path: &Path,
    db: &Backend,
    rounds: usize,
    warm: f64,
    secs: f64,
) -> anyhow::Result<Value> {
    let sink = OtlpSink::start().await?;
    let setups = [Setup::Off, Setup::Traces, Setup::Metrics];
    let ns = [1usize, 32];
    // turns/s per (setup, n), one entry per round.
    let mut tput: std::collections::BTreeMap<(usize, usize), Vec<f64>> = Default::default();
    let mut scrapes = (0u64, 0u64);
    for round in 0..rounds {
        println!("observability round {}/{rounds}:", round + 1);
        // Each round starts at another set-up, so that no set-up always runs last (on the
        // biggest database, the warmest machine).
        for k in 0..setups.len() {
            let si = (round + k) % setups.len();
            let setup = &setups[si];
            let endpoint = sink.endpoint.clone();
            let env: Vec<(&str, &str)> = match setup {
                Setup::Off => vec![("PALGRAPH_METRICS", "false")],
                Setup::Traces => vec![
                    ("PALGRAPH_METRICS", "false"),
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
                    ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
                    ("OTEL_SERVICE_NAME", "palgraph-loadbench"),
                ],
                Setup::Metrics => vec![("PALGRAPH_METRICS", "true")],
            };
            let mut server = Server::start_with(server_path, db, &env).await?;
            tokio::time::sleep(Duration::from_millis(500)).await;
            let scraper = (*setup == Setup::Metrics).then(|| Scraper::start(&server.base));
            println!("  {}:", setup.name());
            for (ni, &n) in ns.iter().enumerate() {
                let r = load(&[&server], db, n, warm, secs).await?;
                tput.entry((si, ni))
                    .or_default()
                    .push(r["turns_per_s"].as_f64().unwrap_or(f64::NAN));
            }
            if let Some(s) = scraper {
                scrapes.0 += s.ok.load(Ordering::Relaxed);
                scrapes.1 += s.failed.load(Ordering::Relaxed);
            }
            let _ = server.child.kill().await;
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let mut rows = Vec::new();
    println!("observability (turns/s, mean of {rounds} rounds; ratio to off):");
    for (ni, &n) in ns.iter().enumerate() {
        let base = mean(&tput[&(0, ni)]);
        for (si, setup) in setups.iter().enumerate() {
            let t = mean(&tput[&(si, ni)]);
            println!(
                "  N={n:<3} {:<8} {t:>8.1} turns/s  {:.3}x",
                setup.name(),
                t / base
            );
            rows.push(json!({
                "n": n,
                "setup": setup.name(),
                "turns_per_s": t,
                "turns_per_s_rounds": tput[&(si, ni)],
                "ratio_to_off": t / base,
            }));
        }
    }
    let (otlp_requests, otlp_bytes) = sink.received();
    println!(
        "  OTLP receiver: {otlp_requests} exports, {otlp_bytes} bytes; metrics scrapes: {} ok, {} failed",
        scrapes.0, scrapes.1
    );
    if otlp_requests == 0 {
        println!("  (no OTLP export arrived: this server build does not export traces)");
    }
    Ok(json!({
        "rounds": rounds,
        "setups": {
            "off": "no OTLP endpoint, PALGRAPH_METRICS=false",
            "traces": "OTEL_EXPORTER_OTLP_ENDPOINT at a local OTLP/HTTP receiver (discards), metrics off",
            "metrics": "metrics on, GET /metrics scraped every second",
        },
        "results": rows,
        "otlp_requests": otlp_requests,
        "otlp_bytes": otlp_bytes,
        "scrapes_ok": scrapes.0,
        "scrapes_failed": scrapes.1,
    }))
}
