//! kill -9 inside the engine's composite shapes, on SQLite and Postgres: in the middle of
//! 50 mapped `Send` tasks (the `ledger_map` graph) and inside a subgraph (`ledger_sub`).
//! The server is killed while runs are inside that shape and started again on the same
//! database; the tally is the durability tests' one: every run ends, no node's work is
//! applied twice, and no durable step whose result was recorded ran again.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::ledger::{
    check_steps, ledger_rows_pg, ledger_rows_sqlite, start_run, wait_all_final, FAULT,
};
use common::{Backend, TestServer};
use serde_json::json;

type Ledger = HashMap<(String, String), Vec<(String, i64)>>;

/// Reads the effects table of the server's database.
struct Effects {
    pg: Option<sqlx::PgPool>,
    sqlite: Option<std::path::PathBuf>,
}

impl Effects {
    async fn of(s: &TestServer) -> Self {
        Effects {
            pg: s.pg_pool().await,
            sqlite: s.sqlite_path().cloned(),
        }
    }

    async fn rows(&self) -> Ledger {
        match (&self.pg, &self.sqlite) {
            (Some(pool), _) => ledger_rows_pg(pool).await,
            (None, Some(path)) => ledger_rows_sqlite(path).await,
            _ => panic!("no database"),
        }
    }

    /// Waits until `ready` says the runs are where the kill should land.
    async fn wait_for(&self, what: &str, ready: impl Fn(&Ledger) -> bool) -> Ledger {
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            let rows = self.rows().await;
            if ready(&rows) {
                return rows;
            }
            assert!(Instant::now() < until, "never reached: {what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

fn input(pause_ms: u64) -> serde_json::Value {
    json!({"messages": [{"type": "human", "content": "go"}], "pause_ms": pause_ms})
}

async fn kill_in_the_middle_of_fifty_sends(b: Backend) {
    let mut s = TestServer::start_with(b, &[FAULT, ("PALGRAPH_LEASE_SECS", "1")]).await;
    let mut runs = Vec::new();
    for _ in 0..3 {
        runs.push(start_run(&s, "ledger_map", input(3000)).await);
    }
    let effects = Effects::of(&s).await;
    // Item i works 300 ms * (i % 10 + 1). Kill 800 ms after every item began: the 300 ms
    // items are finished (recorded as pending writes), the 900 ms and longer ones are not.
    let at_kill = effects
        .wait_for("every item started", |l| l.len() >= 150)
        .await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    let finished_before = effects.rows().await;
    assert!(
        finished_before.len() == 150,
        "no item ran twice before the kill"
    );
    let killed = Instant::now();
    s.restart().await;
    let statuses = wait_all_final(&s, &runs, Duration::from_secs(120)).await;
    let took = killed.elapsed();
    let ledger = effects.rows().await;
    let items: Vec<String> = (0..50).map(|i| format!("item-{i}")).collect();
    let expected: Vec<&str> = items.iter().map(String::as_str).collect();
    let mut tally = check_steps(&s, &runs, &ledger, &statuses, &expected).await;
    tally.kills = 1;
    println!(
        "fault tally (SIGKILL mid 50-Send fan-out, {b:?}): {tally:?}; {} effects begun at the kill, finished {took:?} after it",
        at_kill.len()
    );
    assert_eq!(tally.lost, 0, "every run succeeded: {statuses:?}");
    assert_eq!(tally.duplicated_messages, 0);
    assert_eq!(
        tally.reran_after_recorded, 0,
        "no recorded durable step ran again"
    );
    assert_eq!(tally.steps_recorded, runs.len() * 50);
    for (_, r) in &runs {
        for i in (0..50).step_by(10) {
            let rows = &ledger[&(r.clone(), format!("item-{i}"))];
            assert_eq!(
                rows.len(),
                1,
                "run {r}: item {i} finished before the kill, ran once"
            );
        }
    }
    assert!(
        tally.reran_before_recorded > 0,
        "the kill landed inside unfinished items, which ran again"
    );
}
both_backends!(kill_mid_send_fan_out_, kill_in_the_middle_of_fifty_sends);

async fn kill_inside_a_subgraph(b: Backend) {
    let mut s = TestServer::start_with(b, &[FAULT, ("PALGRAPH_LEASE_SECS", "1")]).await;
    let mut runs = Vec::new();
    for _ in 0..6 {
        runs.push(start_run(&s, "ledger_sub", input(800)).await);
    }
    let effects = Effects::of(&s).await;
    // Kill once a run is inside the subgraph with a finished durable step there: its
    // `charge` effect is recorded (400 ms into the node) but the node has not finished
    // (800 ms). A restart must continue the subgraph, not start it again.
    effects
        .wait_for("a run inside the subgraph", |l| {
            l.keys().any(|(_, step)| step == "charge")
        })
        .await;
    tokio::time::sleep(Duration::from_millis(650)).await;
    let at_kill = effects.rows().await;
    let in_sub = at_kill.keys().filter(|(_, st)| st == "charge").count();
    let done = at_kill.keys().filter(|(_, st)| st == "notify").count();
    assert!(
        done < runs.len(),
        "runs still inside the subgraph at the kill"
    );
    s.restart().await;
    let statuses = wait_all_final(&s, &runs, Duration::from_secs(120)).await;
    let ledger = effects.rows().await;
    let mut tally = check_steps(
        &s,
        &runs,
        &ledger,
        &statuses,
        &["reserve", "charge", "notify"],
    )
    .await;
    tally.kills = 1;
    println!(
        "fault tally (SIGKILL inside a subgraph, {b:?}): {tally:?}; {in_sub} runs inside it at the kill"
    );
    assert_eq!(tally.lost, 0, "every run succeeded: {statuses:?}");
    assert_eq!(tally.duplicated_messages, 0);
    assert_eq!(
        tally.reran_after_recorded, 0,
        "no recorded durable step ran again"
    );
    assert_eq!(tally.steps_recorded, runs.len() * 3);
    for (_, r) in &runs {
        let charged = &ledger[&(r.clone(), "charge".to_string())];
        assert_eq!(
            charged.len(),
            1,
            "run {r}: `charge` was recorded inside the subgraph before the kill and ran once"
        );
    }
}
both_backends!(kill_inside_subgraph_, kill_inside_a_subgraph);
