//! The served `palgraph` binary's log lines (stderr): a line written inside a run names the
//! run (its id and thread) but not the finer spans that traces keep (each checkpoint write,
//! durable step and LLM call), and a log that is not a terminal carries no ANSI colours.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use crate::common;

use std::time::{Duration, Instant};

use common::{Backend, TestServer};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_line_in_a_run_names_the_run_but_not_its_checkpoint_writes() {
    // Every statement sqlx runs is logged at debug, inside the (info) spans that run it.
    let mut s =
        TestServer::start_logging(Backend::Postgres, &[("RUST_LOG", "info,sqlx::query=debug")])
            .await;

    let resp = s
        .post(
            "/chat",
            json!({"message": "summarize the AML and KYC policy"}),
        )
        .await;
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
        let found: Vec<String> = s
            .log_lines()
            .into_iter()
            .filter(|l| l.contains("INSERT INTO checkpoints") && l.contains(&run_span))
            .collect();
        if found.len() >= 2 || Instant::now() > deadline {
            break found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    s.kill().await;
    let all = s.log_lines().join("\n");
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
