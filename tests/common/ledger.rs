//! The `ledger` fault-test graph (`PALGRAPH_FAULT_GRAPH=1`, see `app/src/fault.rs`):
//! starting its runs, waiting for them, and the tally that checks every run ended, no
//! node's work was applied twice and no durable step whose result was recorded ran again.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sqlx::Row;

use super::TestServer;

pub const FAULT: (&str, &str) = ("PALGRAPH_FAULT_GRAPH", "1");

pub fn ledger_input(pause_ms: u64) -> Value {
    json!({"messages": [{"type": "human", "content": "pay"}], "pause_ms": pause_ms})
}

pub async fn start_ledger_run(s: &TestServer, pause_ms: u64) -> (String, String) {
    start_run(s, "ledger", ledger_input(pause_ms)).await
}

/// Starts a background run of `graph` on a new thread; returns (thread, run).
pub async fn start_run(s: &TestServer, graph: &str, input: Value) -> (String, String) {
    let t = s.new_thread().await;
    let (code, run) = s
        .post_json(
            &format!("/threads/{t}/runs"),
            json!({"assistant_id": graph, "input": input}),
        )
        .await;
    assert_eq!(code, 200, "{run}");
    (t, run["run_id"].as_str().unwrap().to_string())
}

/// Polls until every run is final; returns the statuses.
pub async fn wait_all_final(
    s: &TestServer,
    runs: &[(String, String)],
    deadline: Duration,
) -> Vec<String> {
    let until = Instant::now() + deadline;
    loop {
        let mut statuses = Vec::new();
        for (t, r) in runs {
            let (code, run) = s.get_json(&format!("/threads/{t}/runs/{r}")).await;
            statuses.push(if code == 200 {
                run["status"].as_str().unwrap_or("?").to_string()
            } else {
                format!("http {code}")
            });
        }
        if statuses.iter().all(|st| st != "pending" && st != "running") {
            return statuses;
        }
        assert!(
            Instant::now() < until,
            "runs did not finish in time: {statuses:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[derive(Default, Debug)]
#[allow(dead_code)] // printed with {:?} for the record
pub struct Tally {
    pub runs: usize,
    pub kills: usize,
    pub lost: usize,
    pub duplicated_messages: usize,
    pub steps_recorded: usize,
    pub reran_after_recorded: usize,
    pub reran_before_recorded: usize,
}

/// The ledger rows: (run, step) -> exec ids in time order.
pub async fn ledger_rows_pg(pool: &sqlx::PgPool) -> HashMap<(String, String), Vec<(String, i64)>> {
    let rows = sqlx::query(
        "SELECT run_id, step, exec_id, pid FROM ledger_effects ORDER BY at_ms, exec_id",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let mut out: HashMap<(String, String), Vec<(String, i64)>> = HashMap::new();
    for r in rows {
        out.entry((r.get("run_id"), r.get("step")))
            .or_default()
            .push((r.get("exec_id"), r.get("pid")));
    }
    out
}

pub async fn ledger_rows_sqlite(
    path: &std::path::Path,
) -> HashMap<(String, String), Vec<(String, i64)>> {
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    let rows =
        sqlx::query("SELECT run_id, step, exec_id, pid FROM ledger_effects ORDER BY at_ms, rowid")
            .fetch_all(&pool)
            .await
            .unwrap();
    let mut out: HashMap<(String, String), Vec<(String, i64)>> = HashMap::new();
    for r in rows {
        out.entry((r.get("run_id"), r.get("step")))
            .or_default()
            .push((r.get("exec_id"), r.get("pid")));
    }
    out
}

/// Checks every thread's messages and the ledger (the `ledger` graph's three steps);
/// returns the tally.
pub async fn check(
    s: &TestServer,
    runs: &[(String, String)],
    ledger: &HashMap<(String, String), Vec<(String, i64)>>,
    statuses: &[String],
) -> Tally {
    check_steps(s, runs, ledger, statuses, &["reserve", "charge", "notify"]).await
}

/// Checks that every thread has one message per step of `expected`, in that order, each
/// naming the first execution of its durable effect, and counts the effects that ran again
/// after one was recorded; returns the tally.
pub async fn check_steps(
    s: &TestServer,
    runs: &[(String, String)],
    ledger: &HashMap<(String, String), Vec<(String, i64)>>,
    statuses: &[String],
    expected: &[&str],
) -> Tally {
    let mut tally = Tally {
        runs: runs.len(),
        lost: statuses.iter().filter(|s| *s != "success").count(),
        ..Default::default()
    };
    for (t, r) in runs {
        let (_, st) = s.get_json(&format!("/threads/{t}/state")).await;
        let msgs = st["values"]["messages"].as_array().unwrap();
        let ai: Vec<&Value> = msgs.iter().filter(|m| m["type"] == "ai").collect();
        let ids: BTreeSet<&str> = msgs.iter().map(|m| m["id"].as_str().unwrap()).collect();
        tally.duplicated_messages += msgs.len() - ids.len();
        let contents: Vec<&str> = ai.iter().map(|m| m["content"].as_str().unwrap()).collect();
        let steps: Vec<&str> = contents
            .iter()
            .map(|c| c.split(' ').next().unwrap())
            .collect();
        assert_eq!(
            steps, expected,
            "thread {t}: each node's message once: {contents:?}"
        );
        for c in contents {
            let step = c.split(' ').next().unwrap();
            let recorded = c.split('(').nth(1).unwrap().trim_end_matches(')');
            let rows = ledger
                .get(&(r.clone(), step.to_string()))
                .cloned()
                .unwrap_or_default();
            tally.steps_recorded += 1;
            let pos = rows
                .iter()
                .position(|(e, _)| e == recorded)
                .unwrap_or_else(|| {
                    panic!("run {r} step {step}: recorded execution {recorded} has no ledger row")
                });
            tally.reran_after_recorded += rows.len() - pos - 1;
            tally.reran_before_recorded += pos;
        }
    }
    tally
}
