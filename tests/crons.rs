//! Crons on many replicas of one Postgres database: each tick runs exactly once, whichever
//! replica's scheduler sees it first; a replica killed (SIGKILL) while it holds a tick's run
//! leaves the run to the other, which finishes it without repeating any step; a tick taken
//! by a replica that died before making its run is made once its claim runs out; on SQLite
//! a server SIGKILLed mid-tick starts again and its ticks go on, once each. Each test
//! checks the `ledger` graph's invariants on every tick's run: every run ends, no node's
//! work is applied twice, no durable step whose result was recorded ran again.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::ledger::{
    check, ledger_input, ledger_rows_pg, ledger_rows_sqlite, wait_all_final, FAULT,
};
use common::{Backend, TestServer};
use serde_json::json;
use sqlx::Row;

/// A tick's run, read from the database.
#[derive(Debug)]
struct TickRun {
    tick: i64,
    thread_id: String,
    run_id: String,
}

const TICK_RUNS: &str = "SELECT idempotency_key, thread_id, run_id FROM runs
     WHERE idempotency_key LIKE $1 ORDER BY idempotency_key";

fn by_tick(cron_id: &str, rows: Vec<(String, String, String)>) -> Vec<TickRun> {
    let prefix = format!("cron:{cron_id}:");
    let mut out: Vec<TickRun> = rows
        .into_iter()
        .map(|(key, thread_id, run_id)| TickRun {
            tick: key[prefix.len()..].parse().unwrap(),
            thread_id,
            run_id,
        })
        .collect();
    out.sort_by_key(|t| t.tick);
    out
}

/// Every run the cron made, by tick.
async fn tick_runs(pool: &sqlx::PgPool, cron_id: &str) -> Vec<TickRun> {
    let rows = sqlx::query_as(TICK_RUNS)
        .bind(format!("cron:{cron_id}:%"))
        .fetch_all(pool)
        .await
        .unwrap();
    by_tick(cron_id, rows)
}

/// Every run the cron made, by tick, on SQLite.
async fn tick_runs_sqlite(path: &std::path::Path, cron_id: &str) -> Vec<TickRun> {
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    let rows = sqlx::query_as(TICK_RUNS)
        .bind(format!("cron:{cron_id}:%"))
        .fetch_all(&pool)
        .await
        .unwrap();
    pool.close().await;
    by_tick(cron_id, rows)
}

/// A stateless cron of the ledger graph that keeps its tick threads (to check them).
async fn ledger_cron(s: &TestServer, schedule: &str, pause_ms: u64) -> String {
    let (code, cron) = s
        .post_json(
            "/runs/crons",
            json!({"assistant_id": "ledger", "schedule": schedule, "input": ledger_input(pause_ms),
                   "on_run_completed": "keep"}),
        )
        .await;
    assert_eq!(code, 200, "{cron}");
    cron["cron_id"].as_str().unwrap().to_string()
}

async fn delete_cron(s: &TestServer, cron_id: &str) {
    let code = s
        .client
        .delete(s.url(&format!("/runs/crons/{cron_id}")))
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(code.as_u16(), 204);
}

/// Every tick between the first and the last has its run, one each, on its own thread.
fn assert_each_tick_once(runs: &[TickRun], every_ms: i64) {
    let ticks: Vec<i64> = runs.iter().map(|r| r.tick).collect();
    let unique: BTreeSet<i64> = ticks.iter().copied().collect();
    assert_eq!(unique.len(), ticks.len(), "one run per tick: {ticks:?}");
    for w in ticks.windows(2) {
        assert_eq!(w[1] - w[0], every_ms, "no tick skipped: {ticks:?}");
    }
    let threads: BTreeSet<&str> = runs.iter().map(|r| r.thread_id.as_str()).collect();
    assert_eq!(threads.len(), runs.len(), "each tick on its own thread");
}

async fn ledger_tally(s: &TestServer, pool: Option<&sqlx::PgPool>, runs: &[TickRun]) {
    let pairs: Vec<(String, String)> = runs
        .iter()
        .map(|r| (r.thread_id.clone(), r.run_id.clone()))
        .collect();
    let statuses = wait_all_final(s, &pairs, Duration::from_secs(90)).await;
    let ledger = match pool {
        Some(p) => ledger_rows_pg(p).await,
        None => ledger_rows_sqlite(s.sqlite_path().unwrap()).await,
    };
    let tally = check(s, &pairs, &ledger, &statuses).await;
    println!("cron tally: {tally:?}");
    assert_eq!(tally.lost, 0, "every tick's run succeeded: {statuses:?}");
    assert_eq!(tally.duplicated_messages, 0);
    assert_eq!(tally.reran_after_recorded, 0, "no recorded step ran again");
    assert_eq!(tally.steps_recorded, runs.len() * 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tick_runs_once_with_two_replicas_on_one_postgres() {
    let env = [FAULT, ("PALGRAPH_CRON_POLL_MS", "20")];
    let a = TestServer::start_with(Backend::Postgres, &env).await;
    let b = a.replica(&[]).await;
    let pool = a.pg_pool().await.unwrap();
    let cron_id = ledger_cron(&a, "* * * * * *", 30).await;
    tokio::time::sleep(Duration::from_millis(6500)).await;
    delete_cron(&b, &cron_id).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let runs = tick_runs(&pool, &cron_id).await;
    assert!(runs.len() >= 5, "a tick a second for 6.5 s: {runs:?}");
    assert_each_tick_once(&runs, 1000);
    ledger_tally(&a, Some(&pool), &runs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_replica_holding_a_tick_runs_it_once() {
    let env = [
        FAULT,
        ("PALGRAPH_CRON_POLL_MS", "50"),
        ("PALGRAPH_LEASE_SECS", "1"),
        ("PALGRAPH_CRON_CLAIM_SECS", "1"),
    ];
    let mut a = TestServer::start_with(Backend::Postgres, &env).await;
    let mut b = a.replica(&[]).await;
    let pool = a.pg_pool().await.unwrap();
    // Ticks every 2 s; each run works 3 steps of 700 ms, so a tick's run is mid-flight
    // most of the time.
    let cron_id = ledger_cron(&a, "*/2 * * * * *", 700).await;
    // Wait for a tick's run to have done its first step, then kill the replica doing it.
    let until = Instant::now() + Duration::from_secs(20);
    let (held_run, pid) = loop {
        assert!(Instant::now() < until, "no tick's run started");
        let row = sqlx::query(
            "SELECT l.run_id, l.pid FROM ledger_effects l JOIN runs r ON r.run_id = l.run_id
             WHERE r.idempotency_key LIKE $1 AND r.status = 'running' LIMIT 1",
        )
        .bind(format!("cron:{cron_id}:%"))
        .fetch_optional(&pool)
        .await
        .unwrap();
        if let Some(r) = row {
            break (r.get::<String, _>("run_id"), r.get::<i64, _>("pid"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let killed_a = a.pid() == Some(u32::try_from(pid).unwrap());
    assert!(
        killed_a || b.pid() == Some(u32::try_from(pid).unwrap()),
        "the run is held by one of the replicas"
    );
    let killed_at = Instant::now();
    let survivor = if killed_a {
        a.kill().await;
        &b
    } else {
        b.kill().await;
        &a
    };
    println!("killed the replica (pid {pid}) holding run {held_run}");
    // The survivor goes on ticking, and takes the killed replica's run over.
    tokio::time::sleep(Duration::from_millis(6000)).await;
    delete_cron(survivor, &cron_id).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let runs = tick_runs(&pool, &cron_id).await;
    let after_kill = runs
        .iter()
        .filter(|r| {
            r.tick > palgraph::checkpoint::now_ms() - killed_at.elapsed().as_millis() as i64
        })
        .count();
    assert!(after_kill >= 2, "ticks after the kill ran: {runs:?}");
    assert_each_tick_once(&runs, 2000);
    ledger_tally(survivor, Some(&pool), &runs).await;
    let finisher: i64 = sqlx::query_scalar(
        "SELECT pid FROM ledger_effects WHERE run_id = $1 AND step = 'notify' ORDER BY at_ms DESC LIMIT 1",
    )
    .bind(&held_run)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_ne!(
        finisher, pid,
        "the other replica finished the killed replica's run"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tick_taken_by_a_replica_that_died_is_made_once_its_claim_ends() {
    let env = [FAULT, ("PALGRAPH_CRON_POLL_MS", "20")];
    let a = TestServer::start_with(Backend::Postgres, &env).await;
    let b = a.replica(&[]).await;
    let pool = a.pg_pool().await.unwrap();
    // A cron whose next tick is next year, then, as a replica would have left it when it
    // died holding a tick: the tick due now, claimed for 1.5 s more, no run made.
    let cron_id = ledger_cron(&a, "0 0 1 1 *", 10).await;
    let now = palgraph::checkpoint::now_ms();
    let tick = now - now % 1000;
    let claim_until = now + 1500;
    sqlx::query(
        "UPDATE crons SET next_run_at_ms = $2, claimed_tick_ms = $2, claim_until_ms = $3
         WHERE cron_id = $1",
    )
    .bind(&cron_id)
    .bind(tick)
    .bind(claim_until)
    .execute(&pool)
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(
        tick_runs(&pool, &cron_id).await.is_empty(),
        "nobody takes a tick while its claim holds"
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let runs = tick_runs(&pool, &cron_id).await;
    assert_eq!(
        runs.len(),
        1,
        "the tick was made once its claim ended: {runs:?}"
    );
    assert_eq!(runs[0].tick, tick);
    let created: i64 = sqlx::query_scalar("SELECT created_at_ms FROM runs WHERE run_id = $1")
        .bind(&runs[0].run_id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert!(created >= claim_until, "not before the claim ran out");
    let next: Option<i64> =
        sqlx::query_scalar("SELECT next_run_at_ms FROM crons WHERE cron_id = $1")
            .bind(&cron_id)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert!(
        next.unwrap() > now + 86_400_000,
        "and the cron moved on to its next tick"
    );
    ledger_tally(&b, Some(&pool), &runs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ticks_go_on_once_each_after_a_sigkill_on_sqlite() {
    let env = [
        FAULT,
        ("PALGRAPH_CRON_POLL_MS", "50"),
        ("PALGRAPH_CRON_CLAIM_SECS", "1"),
    ];
    let mut s = TestServer::start_with(Backend::Sqlite, &env).await;
    let path = s.sqlite_path().unwrap().clone();
    let cron_id = ledger_cron(&s, "* * * * * *", 300).await;
    // Kill once a tick's run is inside its steps.
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        assert!(Instant::now() < until, "no tick's run started");
        let ledger = ledger_rows_sqlite(&path).await;
        let runs = tick_runs_sqlite(&path, &cron_id).await;
        if runs
            .iter()
            .any(|r| ledger.contains_key(&(r.run_id.clone(), "reserve".to_string())))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before = tick_runs_sqlite(&path, &cron_id).await.len();
    s.restart().await;
    tokio::time::sleep(Duration::from_millis(4000)).await;
    delete_cron(&s, &cron_id).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let runs = tick_runs_sqlite(&path, &cron_id).await;
    assert!(
        runs.len() >= before + 2,
        "ticks went on after the restart: {runs:?}"
    );
    let ticks: BTreeSet<i64> = runs.iter().map(|r| r.tick).collect();
    assert_eq!(ticks.len(), runs.len(), "one run per tick");
    ledger_tally(&s, None, &runs).await;
}
