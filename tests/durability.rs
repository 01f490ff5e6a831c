//! Durability across crashes and replicas: SIGKILL at random points, replicas racing for
//! runs, a run watched / resumed / cancelled through another replica, SIGTERM handing runs
//! over (and ending the streams of runs that finished with their terminal event), SQLite
//! restart recovery. Each test checks the invariants on the `ledger` graph:
//! every run ends, no node's work is applied twice, and no durable step whose result was
//! recorded ran again.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::ledger::{
    check, ledger_rows_pg, ledger_rows_sqlite, start_ledger_run, wait_all_final, FAULT,
};
use common::{Backend, SseEvent, TestServer};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_replicas_at_random_points_loses_and_repeats_nothing() {
    let a_env = [FAULT, ("PALGRAPH_LEASE_SECS", "1")];
    let mut a = TestServer::start_with(Backend::Postgres, &a_env).await;
    let mut b = a.replica(&[]).await;
    let mut rng = 0x9e3779b97f4a7c15u64;
    let mut rand = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let mut runs = Vec::new();
    for i in 0..60 {
        let s = if i % 2 == 0 { &a } else { &b };
        runs.push(start_ledger_run(s, 60 + rand(240)).await);
    }
    let mut kills = 0;
    for _ in 0..8 {
        tokio::time::sleep(Duration::from_millis(150 + rand(500))).await;
        if rand(2) == 0 {
            a.restart().await;
        } else {
            b.restart().await;
        }
        kills += 1;
    }
    let statuses = wait_all_final(&a, &runs, Duration::from_secs(120)).await;
    let ledger = ledger_rows_pg(&a.pg_pool().await.unwrap()).await;
    let mut tally = check(&a, &runs, &ledger, &statuses).await;
    tally.kills = kills;
    println!("fault tally (SIGKILL, 2 replicas, Postgres): {tally:?}");
    assert_eq!(tally.lost, 0, "every run succeeded: {statuses:?}");
    assert_eq!(tally.duplicated_messages, 0);
    assert_eq!(
        tally.reran_after_recorded, 0,
        "no recorded durable step ran again"
    );
    assert_eq!(tally.steps_recorded, runs.len() * 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_never_run_one_run_at_once() {
    let a = TestServer::start_with(Backend::Postgres, &[FAULT]).await;
    let b = a.replica(&[]).await;
    let mut runs = Vec::new();
    for i in 0..40 {
        runs.push(start_ledger_run(if i % 2 == 0 { &a } else { &b }, 30).await);
    }
    let statuses = wait_all_final(&b, &runs, Duration::from_secs(60)).await;
    assert!(statuses.iter().all(|s| s == "success"), "{statuses:?}");
    let ledger = ledger_rows_pg(&a.pg_pool().await.unwrap()).await;
    let mut pids_per_run: BTreeMap<String, BTreeSet<i64>> = BTreeMap::new();
    for ((run, _), rows) in &ledger {
        assert_eq!(rows.len(), 1, "each step ran once");
        pids_per_run
            .entry(run.clone())
            .or_default()
            .extend(rows.iter().map(|r| r.1));
    }
    assert!(
        pids_per_run.values().all(|p| p.len() == 1),
        "one process executed each run"
    );
    let all: BTreeSet<i64> = pids_per_run.values().flatten().copied().collect();
    assert_eq!(all.len(), 2, "both replicas took runs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_followed_through_the_other_replica_ends_with_its_response() {
    // Many chats at once on two replicas, each also followed through the replica that is
    // not running it (`GET /chat/stream`), which reads the events table. The run's end is
    // recorded before its terminal event is stored: the follower must wait for it.
    let a = TestServer::start(Backend::Postgres).await;
    let b = a.replica(&[]).await;
    let kinds = |events: &[SseEvent]| {
        events
            .iter()
            .map(|e| e.data["type"].as_str().unwrap_or("?").to_string())
            .collect::<Vec<_>>()
    };
    let chats = (0..24).map(|i| {
        let (here, there) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        async move {
            let mut sse = here
                .sse(
                    here.client
                        .post(here.url("/chat"))
                        .json(&json!({"message": "What are the capital requirements?"})),
                )
                .await;
            let t = sse.headers["x-thread-id"].to_str().unwrap().to_string();
            let first = sse.next().await.unwrap();
            let (mut own, followed) = tokio::join!(sse.all(), async {
                there
                    .sse(there.client.get(there.url(&format!("/chat/stream/{t}"))))
                    .await
                    .all()
                    .await
            });
            own.insert(0, first);
            (kinds(&own), followed)
        }
    });
    for (own, followed) in futures_util::future::join_all(chats).await {
        assert_eq!(own.last().map(String::as_str), Some("response"), "{own:?}");
        let types = kinds(&followed);
        let finished_snapshot = followed.len() == 1
            && followed[0].data["type"] == "snapshot"
            && followed[0].data["result"]["type"] == "response";
        assert!(
            finished_snapshot || types.last().map(String::as_str) == Some("response"),
            "the follower saw the answer: {types:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_watched_resumed_and_cancelled_through_another_replica() {
    let a = TestServer::start(Backend::Postgres).await;
    let b = a.replica(&[]).await;
    // A prompt raised through A is seen and answered through B.
    let mut sse = a
        .sse(
            a.client
                .post(a.url("/chat"))
                .json(&json!({"message": "Summarize the policy"})),
        )
        .await;
    let t = sse
        .headers
        .get("x-thread-id")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let _ = sse.all().await;
    let (_, h) = b.get_json(&format!("/chat/history/{t}")).await;
    assert_eq!(h["pending_interrupt"]["interrupt_type"], "doc_choice");
    let events =
        b.sse(b.client.post(b.url("/chat/resume")).json(
            &json!({"thread_id": t, "resume_value": {"type": "doc_choice", "value": "all"}}),
        ))
        .await
        .all()
        .await;
    assert_eq!(events.last().unwrap().data["type"], "response");
    // A long run started on A, executed wherever, is streamed live through B and
    // cancelled through B.
    let t2 = a.new_thread().await;
    let (_, run) = a
        .post_json(&format!("/threads/{t2}/runs"), json!({"assistant_id": "streaming", "input": {"messages": [{"type": "human", "content": "go on"}], "delay_ms": 20, "words": 100000}, "stream_mode": ["messages-tuple"]}))
        .await;
    let rid = run["run_id"].as_str().unwrap().to_string();
    let mut watch = b
        .sse(
            b.client
                .get(b.url(&format!("/threads/{t2}/runs/{rid}/stream")))
                .header("last-event-id", "-1"),
        )
        .await;
    let mut got: Vec<SseEvent> = Vec::new();
    while got
        .iter()
        .filter(|e| e.event.as_deref() == Some("messages"))
        .count()
        < 5
    {
        got.push(watch.next().await.unwrap());
    }
    let r = b
        .client
        .post(b.url(&format!("/threads/{t2}/runs/{rid}/cancel")))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());
    let rest = tokio::time::timeout(Duration::from_secs(10), watch.all())
        .await
        .expect("the stream ended within 10 s of the cancel");
    let words_after = rest
        .iter()
        .filter(|e| e.event.as_deref() == Some("messages"))
        .count();
    assert!(
        words_after < 100_000,
        "the run stopped long before its 100,000 words ({words_after} streamed after the cancel)"
    );
    for _ in 0..100 {
        let (_, r) = a.get_json(&format!("/threads/{t2}/runs/{rid}")).await;
        if r["status"] == "interrupted" {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the run was not cancelled through the other replica");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_hands_unfinished_runs_to_another_replica() {
    let mut a = TestServer::start_with(
        Backend::Postgres,
        &[FAULT, ("PALGRAPH_SHUTDOWN_GRACE_SECS", "1")],
    )
    .await;
    // A short run started now finishes within the grace period; a long one is handed over.
    let short = start_ledger_run(&a, 150).await;
    let long = start_ledger_run(&a, 4000).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let b = a.replica(&[]).await;
    let status = a.terminate().await;
    assert!(
        status.success(),
        "the server exited cleanly on SIGTERM: {status:?}"
    );
    let runs = vec![short.clone(), long.clone()];
    let statuses = wait_all_final(&b, &runs, Duration::from_secs(60)).await;
    assert_eq!(statuses, vec!["success", "success"]);
    let ledger = ledger_rows_pg(&b.pg_pool().await.unwrap()).await;
    let tally = check(&b, &runs, &ledger, &statuses).await;
    assert_eq!(tally.reran_after_recorded, 0);
    let pids: BTreeSet<i64> = ["reserve", "charge", "notify"]
        .iter()
        .flat_map(|s| ledger[&(long.1.clone(), s.to_string())].iter().map(|r| r.1))
        .collect();
    assert_eq!(
        pids.len(),
        2,
        "the long run was started by one replica and finished by the other"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_restart_resumes_runs_left_running() {
    let mut s = TestServer::start_with(Backend::Sqlite, &[FAULT]).await;
    let mut runs = Vec::new();
    for _ in 0..8 {
        runs.push(start_ledger_run(&s, 400).await);
    }
    // Kill once a run is inside its steps (its first effect is recorded) and some are not
    // done: the kill lands mid-run, not before or after the work.
    let path = s.sqlite_path().unwrap().clone();
    let mid_run = loop {
        let ledger = ledger_rows_sqlite(&path).await;
        let started = runs
            .iter()
            .filter(|(_, r)| ledger.contains_key(&(r.clone(), "reserve".to_string())))
            .count();
        let finished = runs
            .iter()
            .filter(|(_, r)| ledger.contains_key(&(r.clone(), "notify".to_string())))
            .count();
        if started > 0 {
            break (started, finished);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(
        mid_run.1 < runs.len(),
        "runs were still in flight at the kill: {mid_run:?}"
    );
    let killed_at = Instant::now();
    s.restart().await;
    let statuses = wait_all_final(&s, &runs, Duration::from_secs(60)).await;
    println!(
        "SQLite: runs resumed and finished {:?} after the kill",
        killed_at.elapsed()
    );
    let ledger = ledger_rows_sqlite(s.sqlite_path().unwrap()).await;
    let tally = check(&s, &runs, &ledger, &statuses).await;
    println!("fault tally (SIGKILL, SQLite): {tally:?}");
    assert_eq!(tally.lost, 0, "{statuses:?}");
    assert_eq!(tally.duplicated_messages, 0);
    assert_eq!(tally.reran_after_recorded, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_of_a_dead_replica_continue_elsewhere_after_the_lease() {
    let mut a =
        TestServer::start_with(Backend::Postgres, &[FAULT, ("PALGRAPH_LEASE_SECS", "2")]).await;
    let b = a.replica(&[]).await;
    // Runs started through A; kill A once it is inside them.
    let mut runs = Vec::new();
    for _ in 0..4 {
        runs.push(start_ledger_run(&a, 3000).await);
    }
    let pool = a.pg_pool().await.unwrap();
    let a_pid = i64::from(a.pid().unwrap());
    // The runs A is inside of when it dies.
    let held: Vec<String> = loop {
        let held: Vec<String> =
            sqlx::query_scalar("SELECT DISTINCT run_id FROM ledger_effects WHERE pid = $1")
                .bind(a_pid)
                .fetch_all(&pool)
                .await
                .unwrap();
        if !held.is_empty() {
            break held;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let died = Instant::now();
    a.kill().await;
    loop {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM ledger_effects WHERE pid <> $1 AND run_id = ANY($2)",
        )
        .bind(a_pid)
        .bind(&held)
        .fetch_one(&pool)
        .await
        .unwrap();
        if n >= 1 {
            break;
        }
        assert!(
            died.elapsed() < Duration::from_secs(30),
            "no replica took over"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!(
        "takeover after a replica died: {:?} (lease 2 s, heartbeat every 667 ms)",
        died.elapsed()
    );
    let statuses = wait_all_final(&b, &runs, Duration::from_secs(60)).await;
    let ledger = ledger_rows_pg(&pool).await;
    let tally = check(&b, &runs, &ledger, &statuses).await;
    assert_eq!(tally.lost, 0, "{statuses:?}");
    assert_eq!(tally.reran_after_recorded, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_single_postgres_replica_takes_its_runs_back_in_seconds() {
    // The default 30 s lease: the restarted process must not wait for it, because the
    // killed process's connections are gone from the database.
    let mut s = TestServer::start_with(Backend::Postgres, &[FAULT]).await;
    let mut runs = Vec::new();
    for _ in 0..6 {
        runs.push(start_ledger_run(&s, 1500).await);
    }
    let pool = s.pg_pool().await.unwrap();
    // Once every run is inside its first step.
    loop {
        let n: i64 = sqlx::query_scalar("SELECT count(DISTINCT run_id) FROM ledger_effects")
            .fetch_one(&pool)
            .await
            .unwrap();
        if n as usize >= runs.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let killed = Instant::now();
    s.restart().await;
    let statuses = wait_all_final(&s, &runs, Duration::from_secs(25)).await;
    let took = killed.elapsed();
    println!("single Postgres replica killed and restarted: its runs finished {took:?} later");
    assert!(statuses.iter().all(|st| st == "success"), "{statuses:?}");
    assert!(
        took < Duration::from_secs(15),
        "recovered well within the 30 s lease ({took:?})"
    );
    let ledger = ledger_rows_pg(&pool).await;
    let tally = check(&s, &runs, &ledger, &statuses).await;
    assert_eq!(tally.reran_after_recorded, 0);
    assert_eq!(tally.duplicated_messages, 0);
}

/// One trial: chats of the `streaming` graph that end at different moments around a
/// SIGTERM (each within the shutdown grace); what each client received.
async fn chats_across_a_sigterm(b: Backend, chats: usize) -> Vec<Vec<String>> {
    let mut s = TestServer::start(b).await;
    let mut streams = Vec::new();
    for i in 0..chats {
        let (code, t) = s
            .post_json("/threads", json!({"metadata": {"graph_id": "streaming"}}))
            .await;
        assert_eq!(code, 200, "{t}");
        let sse = s
            .sse(s.client.post(s.url("/chat")).json(&json!({
                "message": "alpha beta gamma",
                "thread_id": t["thread_id"],
                "words": 4 + 3 * i,
                "delay_ms": 15,
            })))
            .await;
        streams.push(sse);
    }
    // Every answer is under way (its first word streamed) when the signal comes; they end
    // one after another while the server waits for them.
    let mut seen: Vec<Vec<String>> = vec![Vec::new(); chats];
    for (sse, kinds) in streams.iter_mut().zip(seen.iter_mut()) {
        loop {
            let e = sse
                .next()
                .await
                .expect("the chat streams until its first word");
            let kind = e.data["type"].as_str().unwrap_or_default().to_string();
            kinds.push(kind.clone());
            if kind == "token" {
                break;
            }
        }
    }
    let pid = s.pid().unwrap();
    let _ = std::process::Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status();
    for (sse, kinds) in streams.iter_mut().zip(seen.iter_mut()) {
        kinds.extend(
            sse.all()
                .await
                .iter()
                .map(|e| e.data["type"].as_str().unwrap_or_default().to_string()),
        );
    }
    let status = s.terminate().await;
    assert!(status.success(), "the server exited cleanly: {status:?}");
    seen
}

/// A run that finishes within the shutdown grace ends its client's stream with its terminal
/// event before the connection closes, however close to the shutdown it finished: several
/// trials, each with chats ending at staggered moments around the SIGTERM.
async fn sigterm_streams_end_with_their_terminal_event(b: Backend, trials: usize) {
    for trial in 0..trials {
        for (i, kinds) in chats_across_a_sigterm(b, 4).await.iter().enumerate() {
            assert_eq!(
                kinds.last().map(String::as_str),
                Some("response"),
                "trial {trial}, chat {i}: {kinds:?}"
            );
            assert_eq!(
                kinds.iter().filter(|k| *k == "response").count(),
                1,
                "trial {trial}, chat {i}: {kinds:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_finished_runs_streams_with_their_terminal_event_sqlite() {
    sigterm_streams_end_with_their_terminal_event(Backend::Sqlite, 6).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_finished_runs_streams_with_their_terminal_event_postgres() {
    sigterm_streams_end_with_their_terminal_event(Backend::Postgres, 4).await;
}

/// A running run of the `streaming` graph on `s` that takes about `ms` milliseconds, once it
/// is running here: (thread, run).
async fn running_run(s: &TestServer, ms: u64) -> (String, String) {
    let t = s.new_thread().await;
    let (code, run) = s
        .post_json(
            &format!("/threads/{t}/runs"),
            json!({"assistant_id": "streaming", "input": {"messages": [{"type": "human", "content": "go"}], "delay_ms": 20, "words": ms / 20}}),
        )
        .await;
    assert_eq!(code, 200, "{run}");
    let run_id = run["run_id"].as_str().unwrap().to_string();
    // Its stream's first word: the run is under way.
    let mut sse = s
        .sse(
            s.client
                .get(s.url(&format!("/threads/{t}/runs/{run_id}/stream")))
                .query(&[("stream_mode", "messages-tuple")]),
        )
        .await;
    while let Some(e) = sse.next().await {
        if e.event.as_deref() == Some("messages") {
            break;
        }
    }
    (t, run_id)
}

/// A client waiting for a run (`/join`, `/runs/wait`) that the shutdown grace hands back
/// gets a 503 saying where to join it, never the values of a run that has not ended; the
/// run ends on the other replica, where the join answers its values.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_that_sigterm_ends_first_says_where_the_run_continues() {
    let mut a =
        TestServer::start_with(Backend::Postgres, &[("PALGRAPH_SHUTDOWN_GRACE_SECS", "1")]).await;
    let (t, run) = running_run(&a, 6000).await;
    let join = a
        .client
        .get(a.url(&format!("/threads/{t}/runs/{run}/join")))
        .send();
    let t2 = a.new_thread().await;
    let wait = a
        .client
        .post(a.url(&format!("/threads/{t2}/runs/wait")))
        .json(&json!({"assistant_id": "streaming", "input": {"messages": [{"type": "human", "content": "go"}], "delay_ms": 20, "words": 300}}))
        .send();
    let (join, wait) = tokio::join!(join, async {
        let r = tokio::spawn(wait);
        // The awaited run is under way here before the signal.
        let b = a.replica(&[]).await;
        loop {
            let (_, runs) = a.get_json(&format!("/threads/{t2}/runs")).await;
            if runs[0]["status"] == "running" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let status = a.terminate().await;
        assert!(status.success(), "{status:?}");
        (r.await.unwrap(), b)
    });
    let (wait, b) = wait;
    for (what, r) in [("join", join.unwrap()), ("wait", wait.unwrap())] {
        assert_eq!(r.status(), 503, "{what}");
        assert!(r.headers().contains_key("retry-after"), "{what}");
        let err: serde_json::Value = r.json().await.unwrap();
        let detail = err["detail"].as_str().unwrap();
        assert!(
            detail.contains("continues on another replica") && detail.contains("/join"),
            "{what}: {detail}"
        );
    }
    let (code, values) = b.get_json(&format!("/threads/{t}/runs/{run}/join")).await;
    assert_eq!(code, 200, "{values}");
    assert_eq!(
        values["messages"].as_array().map(Vec::len),
        Some(2),
        "{values}"
    );
}
