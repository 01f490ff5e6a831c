//! A thread's history is streamed, not built whole: a request's memory is a page of states
//! whatever the size of the response, and a response ends after the state that takes it
//! past the server's response size, the rest a `before` away.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::HashSet;

use common::{Backend, TestServer};
use futures_util::StreamExt;
use serde_json::{json, Value};

const MIB: usize = 1024 * 1024;

/// A kibibyte figure of the process's `/proc/<pid>/status`.
fn status_kib(pid: u32, field: &str) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("{field} in /proc/{pid}/status"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A thread of the `fanout` graph with `n` checkpoints of about 1 MiB each (one message
/// replaced by its id every time).
async fn thread_of_big_states(s: &TestServer, n: usize) -> String {
    let (code, t) = s.post_json("/threads", json!({"graph_id": "fanout"})).await;
    assert_eq!(code, 200, "{t}");
    let t = t["thread_id"].as_str().unwrap().to_string();
    for i in 0..n {
        let letter = char::from(b'a' + (i % 26) as u8);
        let content = letter.to_string().repeat(MIB);
        let (code, r) = s
            .post_json(
                &format!("/threads/{t}/state"),
                json!({"values": {"messages": [{"id": "big", "type": "human", "content": content}]}}),
            )
            .await;
        assert_eq!(code, 200, "{r}");
    }
    t
}

/// The history's body, read as it comes.
async fn history(s: &TestServer, t: &str, body: Value) -> Vec<Value> {
    let r = s
        .client
        .post(s.url(&format!("/threads/{t}/history")))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let mut bytes = Vec::new();
    let mut chunks = r.bytes_stream();
    while let Some(c) = chunks.next().await {
        bytes.extend_from_slice(&c.unwrap());
    }
    serde_json::from_slice::<Vec<Value>>(&bytes).expect("a whole JSON array")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_history_of_big_states_is_streamed_in_bounded_memory_and_pages_by_bytes() {
    let s = TestServer::start_with(
        Backend::Sqlite,
        &[("PALGRAPH_MAX_RESPONSE_BYTES", "1073741824")],
    )
    .await;
    let n = 60;
    let t = thread_of_big_states(&s, n).await;
    let pid = s.pid().unwrap();

    // One response of about 60 MiB: the server's peak memory grows by a small part of it.
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").expect("reset the peak RSS");
    let before = status_kib(pid, "VmRSS:");
    let all = history(&s, &t, json!({"limit": 1000})).await;
    let peak = status_kib(pid, "VmHWM:");
    let grew_mib = peak.saturating_sub(before) / 1024;
    let body_mib: usize = all.iter().map(|v| v.to_string().len()).sum::<usize>() / MIB;
    println!(
        "history of {} states, {body_mib} MiB: the server's peak RSS grew {grew_mib} MiB",
        all.len()
    );
    assert_eq!(all.len(), n, "every update's checkpoint");
    assert!(body_mib >= n, "{body_mib} MiB");
    assert!(
        grew_mib < 40,
        "the response was streamed: {grew_mib} MiB more for {body_mib} MiB"
    );
    let ids: Vec<&str> = all
        .iter()
        .map(|v| v["checkpoint"]["checkpoint_id"].as_str().unwrap())
        .collect();

    // With an 8 MiB response size (another process on the same database), the same history
    // comes in responses of about 8 MiB, each continued with `before`, nothing repeated or
    // left out.
    let small = s
        .replica(&[("PALGRAPH_MAX_RESPONSE_BYTES", "8388608")])
        .await;
    let mut paged: Vec<String> = Vec::new();
    let mut responses = 0;
    loop {
        let mut body = json!({"limit": 1000});
        if let Some(last) = paged.last() {
            body["before"] = json!(last);
        }
        let page = history(&small, &t, body).await;
        if page.is_empty() {
            break;
        }
        responses += 1;
        let bytes: usize = page.iter().map(|v| v.to_string().len()).sum();
        assert!(
            bytes <= 8 * MIB + 2 * MIB,
            "a response ends after the state that crosses 8 MiB ({bytes} bytes)"
        );
        paged.extend(page.iter().map(|v| {
            v["checkpoint"]["checkpoint_id"]
                .as_str()
                .unwrap()
                .to_string()
        }));
        assert!(responses < 100, "paging ends");
    }
    assert!(responses >= 7, "{responses} responses");
    assert_eq!(paged.iter().collect::<HashSet<_>>().len(), paged.len());
    assert_eq!(paged, ids, "the pages make the whole history, in order");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_history_limit_select_and_filter_hold_across_storage_pages() {
    let s = TestServer::start(Backend::Postgres).await;
    let t = s.new_thread().await;
    for i in 0..12 {
        let (code, r) = s
            .post_json(
                &format!("/threads/{t}/runs/wait"),
                json!({"assistant_id": "fanout", "input": {"messages": [{"type": "human", "content": format!("turn {i}")}]}}),
            )
            .await;
        assert_eq!(code, 200, "{r}");
    }
    let all = history(&s, &t, json!({"limit": 1000})).await;
    assert!(all.len() >= 36, "{}", all.len());
    let some = history(
        &s,
        &t,
        json!({"limit": 25, "select": ["checkpoint", "metadata"]}),
    )
    .await;
    assert_eq!(some.len(), 25);
    for (a, b) in some.iter().zip(&all) {
        assert_eq!(a["checkpoint"], b["checkpoint"]);
        let keys: Vec<&String> = a.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["checkpoint", "metadata"], "{a}");
    }
    let inputs = history(
        &s,
        &t,
        json!({"limit": 1000, "metadata": {"source": "input"}}),
    )
    .await;
    assert_eq!(inputs.len(), 12, "one input checkpoint a turn");
    assert!(inputs.iter().all(|v| v["metadata"]["source"] == "input"));
    // The input checkpoints show the values their input was applied to: the turn before's.
    let turn = |v: &Value| v["values"]["messages"].as_array().map_or(0, Vec::len);
    assert_eq!(turn(&inputs[11]), 0, "the first turn's base is empty");
    assert!(turn(&inputs[0]) > turn(&inputs[1]), "{}", inputs[0]);
}

/// `POST /threads/search` as it comes.
async fn search(s: &TestServer, body: Value) -> Vec<Value> {
    let r = s
        .client
        .post(s.url("/threads/search"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let bytes = r.bytes().await.unwrap();
    serde_json::from_slice::<Vec<Value>>(&bytes).expect("a whole JSON array")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_of_threads_with_big_states_pages_by_bytes_in_every_order() {
    let s = TestServer::start_with(
        Backend::Sqlite,
        &[("PALGRAPH_MAX_RESPONSE_BYTES", "4194304")],
    )
    .await;
    let mut made = HashSet::new();
    for _ in 0..10 {
        made.insert(thread_of_big_states(&s, 1).await);
    }
    for order in [
        json!({}),
        json!({"sort_by": "state_updated_at", "sort_order": "asc"}),
    ] {
        let mut seen = Vec::new();
        loop {
            let mut body = json!({"limit": 100, "offset": seen.len()});
            body.as_object_mut()
                .unwrap()
                .extend(order.as_object().unwrap().clone());
            let page = search(&s, body).await;
            if page.is_empty() {
                break;
            }
            assert!(page.len() <= 4, "about 4 MiB a response: {}", page.len());
            for t in &page {
                assert_eq!(
                    t["values"]["messages"][0]["content"]
                        .as_str()
                        .unwrap()
                        .len(),
                    MIB
                );
                seen.push(t["thread_id"].as_str().unwrap().to_string());
            }
        }
        assert_eq!(
            seen.iter().cloned().collect::<HashSet<_>>(),
            made,
            "{order}"
        );
        assert_eq!(seen.len(), made.len(), "{order}");
    }
}
