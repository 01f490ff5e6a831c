//! What a run stores (the book's `docs/src/operations/retention.md`), through the real
//! server on SQLite and Postgres: only the events its clients need (no state snapshots, node
//! updates or checkpoints unless asked for); a run's events of a flush window in one row,
//! token deltas coalesced, yet a replay from any event id on another replica gives exactly
//! the events that followed it; a finished run's events expire, and a replay then still ends
//! with the run's outcome.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::{Backend, SseEvent, TestServer};
use palgraph_server::store::stored_event;
use serde_json::{json, Value};

/// The stored events of a run, in order (each row's content as the server reads it: packed
/// since migration 7).
async fn stored(s: &TestServer, run: &str) -> Vec<Value> {
    type Stored = (Option<sqlx::types::Json<Value>>, Option<Vec<u8>>);
    const ROWS: &str = "SELECT event, packed FROM run_events WHERE run_id = $1 ORDER BY seq";
    let rows: Vec<Stored> = match s.sqlite_path() {
        Some(path) => {
            let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
                .await
                .unwrap();
            let rows = sqlx::query_as(ROWS)
                .bind(run)
                .fetch_all(&pool)
                .await
                .unwrap();
            pool.close().await;
            rows
        }
        None => {
            let pool = s.pg_pool().await.unwrap();
            let rows = sqlx::query_as(ROWS)
                .bind(run)
                .fetch_all(&pool)
                .await
                .unwrap();
            pool.close().await;
            rows
        }
    };
    rows.into_iter()
        .map(|(event, packed)| {
            assert!(event.is_none(), "new rows are stored packed");
            stored_event(None, packed.as_deref()).unwrap()
        })
        .collect()
}

/// The kinds of the events stored rows hold, in order: a row is a run's events of one flush
/// window (an array of `[code, ...]` items, numbers for ids not stored) or one event object
/// (the terminal event).
fn kinds(rows: &[Value]) -> Vec<&'static str> {
    let name = |code: &str| match code {
        "r" => "run_started",
        "n" => "node_started",
        "s" => "status",
        "c" => "custom",
        "d" => "message_delta",
        "x" => "message_reset",
        "f" => "node_finished",
        "v" => "values",
        "k" => "checkpoint",
        other => panic!("unknown stored event code {other}"),
    };
    let object = |e: &Value| -> &'static str {
        match e["type"].as_str().unwrap() {
            "completed" => "completed",
            "interrupted" => "interrupted",
            "failed" => "failed",
            "cancelled" => "cancelled",
            other => panic!("{other} is stored in short form"),
        }
    };
    rows.iter()
        .flat_map(|row| match row.as_array() {
            Some(items) => items
                .iter()
                .filter(|i| !i.is_number())
                .map(|i| match i.as_array() {
                    Some(a) => name(a[0].as_str().unwrap()),
                    None => object(i),
                })
                .collect::<Vec<_>>(),
            None => vec![object(row)],
        })
        .collect()
}

async fn streaming_thread(s: &TestServer) -> String {
    let (code, t) = s
        .post_json("/threads", json!({"metadata": {"graph_id": "streaming"}}))
        .await;
    assert_eq!(code, 200, "{t}");
    t["thread_id"].as_str().unwrap().to_string()
}

/// A finished chat turn of the streaming graph: its run id and every event it streamed.
async fn chat_turn(s: &TestServer, t: &str, words: u64) -> (String, Vec<SseEvent>) {
    let mut sse = s
        .sse(s.client.post(s.url("/chat")).json(&json!({
            "message": "alpha beta gamma delta",
            "thread_id": t,
            "words": words,
            "delay_ms": 1,
        })))
        .await;
    let run = sse
        .headers
        .get("x-run-id")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let events = sse.all().await;
    assert_eq!(
        events.last().unwrap().data["type"],
        "response",
        "{events:?}"
    );
    (run, events)
}

fn text(events: &[SseEvent]) -> String {
    events
        .iter()
        .filter(|e| e.data["type"] == "token")
        .map(|e| e.data["content"].as_str().unwrap())
        .collect()
}

async fn replay(s: &TestServer, t: &str, from: &str) -> Vec<SseEvent> {
    s.sse(
        s.client
            .get(s.url(&format!("/chat/stream/{t}")))
            .header("last-event-id", from),
    )
    .await
    .all()
    .await
}

async fn stored_by_need_and_replayed_exactly(b: Backend) {
    // A wide flush window, so that the deltas of the turn surely share rows.
    let s = TestServer::start_with(b, &[("PALGRAPH_EVENT_FLUSH_MS", "200")]).await;
    let t = streaming_thread(&s).await;
    let (run, live) = chat_turn(&s, &t, 60).await;
    let tokens = live.iter().filter(|e| e.data["type"] == "token").count();
    assert_eq!(tokens, 60, "every delta streams live");

    let rows = stored(&s, &run).await;
    let kinds = kinds(&rows);
    assert_eq!(
        kinds
            .iter()
            .filter(|k| matches!(**k, "completed" | "interrupted" | "failed" | "cancelled"))
            .count(),
        1,
        "one terminal event: {kinds:?}"
    );
    assert!(
        rows.len() * 10 <= live.len(),
        "a turn's {} events take a row per flush window (200 ms), not {} rows",
        live.len(),
        rows.len()
    );
    for never in ["values", "node_finished", "checkpoint"] {
        assert!(
            !kinds.contains(&never),
            "a chat turn stores no {never}: {kinds:?}"
        );
    }
    let delta_rows = kinds.iter().filter(|k| **k == "message_delta").count();
    assert!(
        delta_rows * 4 <= tokens,
        "60 deltas stored in {delta_rows} rows"
    );
    let bytes: usize = rows.iter().map(|e| e.to_string().len()).sum();
    println!(
        "{b:?}: a 60-word chat turn stored {} rows, {bytes} bytes of events",
        rows.len()
    );

    // Another replica has no memory of the run: it replays from the table, from any id.
    let other = s.replica(&[]).await;
    let ids: Vec<String> = live.iter().map(|e| e.id.clone().unwrap()).collect();
    for cut in [0, 1, 7, 33, live.len() - 2] {
        let from = if cut == 0 {
            format!("{run}:0")
        } else {
            ids[cut - 1].clone()
        };
        let again = replay(&other, &t, &from).await;
        assert_eq!(again, live[cut..].to_vec(), "replayed from {from}");
    }
    assert_eq!(text(&replay(&other, &t, &ids[12]).await), text(&live[13..]));
}
both_backends!(
    stored_by_need_and_replayed_exactly_,
    stored_by_need_and_replayed_exactly
);

async fn finished_runs_events_expire(b: Backend) {
    let s = TestServer::start_with(b, &[("PALGRAPH_EVENT_RETENTION_SECS", "1")]).await;
    let t = streaming_thread(&s).await;
    let (run, live) = chat_turn(&s, &t, 10).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while !stored(&s, &run).await.is_empty() {
        assert!(
            Instant::now() < deadline,
            "the events of a finished run expire"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // A replay of the whole run still ends with its outcome, the answer it gave.
    let again = replay(&s, &t, &format!("{run}:0")).await;
    assert_eq!(again.len(), 1, "{again:?}");
    let end = &again[0].data;
    assert_eq!(end["type"], "response", "{end}");
    assert_eq!(end["response"], live.last().unwrap().data["response"]);
    // The thread itself is untouched: history has the turn.
    let (code, h) = s.get_json(&format!("/chat/history/{t}")).await;
    assert_eq!(code, 200, "{h}");
    assert_eq!(h["messages"].as_array().unwrap().len(), 2, "{h}");
    // A new turn on the same thread works as before.
    let (_, second) = chat_turn(&s, &t, 5).await;
    assert_eq!(text(&second).split_whitespace().count(), 5);
}
both_backends!(finished_runs_events_expire_, finished_runs_events_expire);

async fn a_langgraph_run_stores_its_modes_only(b: Backend) {
    let s = TestServer::start(b).await;
    let t = streaming_thread(&s).await;
    let mut sse = s
        .sse(
            s.client
                .post(s.url(&format!("/threads/{t}/runs/stream")))
                .json(&json!({
                    "assistant_id": "streaming",
                    "input": {"messages": [{"type": "human", "content": "one two three"}], "words": 6, "delay_ms": 0},
                    "stream_mode": ["updates"],
                })),
        )
        .await;
    let events = sse.all().await;
    assert!(
        events.iter().any(|e| e.event.as_deref() == Some("updates")),
        "{events:?}"
    );
    let run = events[0].data["run_id"].as_str().unwrap().to_string();
    let rows = stored(&s, &run).await;
    let kinds = kinds(&rows);
    assert!(kinds.contains(&"node_finished"), "{kinds:?}");
    for never in ["values", "checkpoint"] {
        assert!(
            !kinds.contains(&never),
            "`updates` stores no {never}: {kinds:?}"
        );
    }
}
both_backends!(
    a_langgraph_run_stores_its_modes_only_,
    a_langgraph_run_stores_its_modes_only
);
