//! The served `palgraph` binary's log lines (stderr): a line written inside a run names the
//! run (its id and thread) but not the finer spans that traces keep (each checkpoint write,
//! durable step and LLM call), and a log that is not a terminal carries no ANSI colours.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use palgraph::testkit::backends::PgSchema;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_line_in_a_run_names_the_run_but_not_its_checkpoint_writes() {
    // The workspace builds reqwest with rustls and no default crypto provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let schema = PgSchema::create().await;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_palgraph"));
    cmd.arg("serve")
        .env("PALGRAPH_PORT", "0")
        .env("DATABASE_URL", schema.schema_url())
        .env("PALGRAPH_DB_CONNECTIONS", "6")
        // Every statement sqlx runs is logged at debug, inside the (info) spans that run it.
        .env("RUST_LOG", "info,sqlx::query=debug")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().expect("start palgraph");
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let sink = lines.clone();
    tokio::spawn(async move {
        while let Ok(Some(l)) = stderr.next_line().await {
            sink.lock().unwrap().push(l);
        }
    });
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(60), stdout.next_line())
        .await
        .expect("palgraph printed its address in time")
        .unwrap()
        .expect("palgraph exited before listening");
    let base = first
        .strip_prefix("palgraph listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {first}"))
        .trim()
        .to_string();
    tokio::spawn(async move { while let Ok(Some(_)) = stdout.next_line().await {} });

    let resp = reqwest::Client::new()
        .post(format!("{base}/chat"))
        .json(&json!({"message": "summarize the AML and KYC policy"}))
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    let thread = resp.headers()["x-thread-id"].to_str().unwrap().to_string();
    let body = resp.text().await.unwrap();
    assert!(body.contains(r#""type":"response""#), "{body}");
    // Every event's id is `{run_id}:{seq}`.
    let run_id = body
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .and_then(|id| id.split(':').next())
        .expect("an event id")
        .to_string();
    let run_span = format!("run{{run_id={run_id} thread_id={thread}");

    // The run's checkpoint inserts, logged by sqlx inside the run.
    let deadline = Instant::now() + Duration::from_secs(10);
    let inserts = loop {
        let found: Vec<String> = lines
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains("INSERT INTO checkpoints") && l.contains(&run_span))
            .cloned()
            .collect();
        if found.len() >= 2 || Instant::now() > deadline {
            break found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    child.kill().await.unwrap();
    let all = lines.lock().unwrap().join("\n");
    assert!(
        inserts.len() >= 2,
        "the run's checkpoint inserts were logged inside {run_span}:\n{all}"
    );
    for l in &inserts {
        for left in ["checkpoint.put", "checkpoint.batch", "durable_step"] {
            assert!(!l.contains(left), "{left} is a trace-only span: {l}");
        }
    }
    assert!(
        !all.contains('\u{1b}'),
        "no ANSI escapes in a piped log:\n{all}"
    );
}
