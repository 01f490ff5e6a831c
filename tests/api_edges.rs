//! Requests at the edges of what the API accepts, on SQLite and Postgres: offsets past the
//! end of every list (an empty page, never a wrapped-around `x-pagination-next`; an offset
//! beyond the field's range is a JSON 4xx), and a thread's state asked for at a checkpoint
//! it does not have (404, with or without a graph).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Backend, TestServer};
use serde_json::{json, Value};

/// Just below `u64::MAX`: `offset + limit` wraps around in 64 bits.
const HUGE: u64 = 18_446_744_073_709_551_611;
/// The largest offset a signed 64-bit field holds.
const I64_MAX: i64 = i64::MAX;

async fn post(s: &TestServer, path: &str, body: Value) -> reqwest::Response {
    s.client.post(s.url(path)).json(&body).send().await.unwrap()
}

/// A JSON error with this status.
async fn json_error(r: reqwest::Response, status: u16, what: &str) {
    assert_eq!(r.status().as_u16(), status, "{what}");
    let body: Value = r.json().await.unwrap();
    assert!(body["detail"].is_string(), "{what}: {body}");
}

async fn offsets_past_the_end(b: Backend) {
    let s = TestServer::start(b).await;
    let t = s.new_thread().await;
    let (code, _) = s
        .post_json(
            &format!("/threads/{t}/runs/wait"),
            json!({"assistant_id": "jokes", "input": {"topic": "cats"}}),
        )
        .await;
    assert_eq!(code, 200);
    let (code, _) = s
        .post_json(
            "/runs/crons",
            json!({"assistant_id": "jokes", "schedule": "0 0 1 1 *", "input": {"topic": "x"}}),
        )
        .await;
    assert_eq!(code, 200);
    let r = s
        .client
        .put(s.url("/store/items"))
        .json(&json!({"namespace": ["notes"], "key": "k", "value": {"v": 1}}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());

    // Assistants: a page in the middle names the next; one past the end, none.
    let r = post(&s, "/assistants/search", json!({"limit": 2})).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-pagination-next"], "2");
    for offset in [HUGE, u64::MAX, HUGE - 2] {
        for limit in [1, 10, 1000] {
            let r = post(
                &s,
                "/assistants/search",
                json!({"offset": offset, "limit": limit}),
            )
            .await;
            assert_eq!(r.status(), 200, "offset {offset}, limit {limit}");
            assert!(
                r.headers().get("x-pagination-next").is_none(),
                "offset {offset}, limit {limit}: {:?}",
                r.headers().get("x-pagination-next")
            );
            assert_eq!(r.json::<Value>().await.unwrap(), json!([]));
        }
    }

    // Threads: in the store's order and in another (sorted in memory).
    for sort in [
        json!({}),
        json!({"sort_by": "thread_id", "sort_order": "asc"}),
    ] {
        let mut body = sort.clone();
        body["offset"] = json!(I64_MAX);
        let (code, page) = s.post_json("/threads/search", body).await;
        assert_eq!((code, page), (200, json!([])), "{sort}");
        let mut body = sort.clone();
        body["offset"] = json!(HUGE);
        json_error(post(&s, "/threads/search", body).await, 422, "threads").await;
    }

    // A thread's runs, with and without a status filter.
    for query in ["", "&status=success"] {
        let (code, page) = s
            .get_json(&format!("/threads/{t}/runs?offset={I64_MAX}{query}"))
            .await;
        assert_eq!((code, page), (200, json!([])), "{query}");
        let r = s
            .client
            .get(s.url(&format!("/threads/{t}/runs?offset={HUGE}{query}")))
            .send()
            .await
            .unwrap();
        json_error(r, 400, "runs").await;
    }

    // Crons.
    let (code, page) = s
        .post_json("/runs/crons/search", json!({"offset": I64_MAX}))
        .await;
    assert_eq!((code, page), (200, json!([])));
    json_error(
        post(&s, "/runs/crons/search", json!({"offset": HUGE})).await,
        422,
        "crons",
    )
    .await;

    // The long-term store: items and namespaces.
    for offset in [HUGE, u64::MAX] {
        let (code, page) = s
            .post_json(
                "/store/items/search",
                json!({"namespace_prefix": ["notes"], "offset": offset}),
            )
            .await;
        assert_eq!((code, page), (200, json!({"items": []})));
        let (code, page) = s
            .post_json("/store/namespaces", json!({"offset": offset}))
            .await;
        assert_eq!((code, page), (200, json!({"namespaces": []})));
    }
    // The pages before the end are still there.
    let (_, page) = s
        .post_json(
            "/store/items/search",
            json!({"namespace_prefix": ["notes"]}),
        )
        .await;
    assert_eq!(page["items"].as_array().map(Vec::len), Some(1), "{page}");
}
both_backends!(offsets_past_the_end_give_empty_pages_, offsets_past_the_end);

async fn a_checkpoint_the_thread_does_not_have(b: Backend) {
    let s = TestServer::start(b).await;
    let unknown = uuid::Uuid::new_v4().to_string();

    // A thread made without a graph: its latest state is empty; no checkpoint is there.
    let bare = s.new_thread().await;
    let (code, state) = s.get_json(&format!("/threads/{bare}/state")).await;
    assert_eq!(code, 200);
    assert_eq!(state["values"], json!({}));
    let (code, err) = s
        .get_json(&format!("/threads/{bare}/state/{unknown}"))
        .await;
    assert_eq!(code, 404, "{err}");
    assert_eq!(err["code"], "not_found");
    assert!(err["detail"].as_str().unwrap().contains(&unknown), "{err}");
    let (code, err) = s
        .post_json(
            &format!("/threads/{bare}/state/checkpoint"),
            json!({"checkpoint": {"checkpoint_id": unknown}}),
        )
        .await;
    assert_eq!((code, &err["code"]), (404, &json!("not_found")), "{err}");
    let (code, err) = s
        .post_json(
            &format!("/threads/{bare}/state/checkpoint"),
            json!({"checkpoint_id": unknown}),
        )
        .await;
    assert_eq!(code, 404, "{err}");

    // A thread that ran: its checkpoints are there, others are not.
    let t = s.new_thread().await;
    let (code, _) = s
        .post_json(
            &format!("/threads/{t}/runs/wait"),
            json!({"assistant_id": "jokes", "input": {"topic": "cats"}}),
        )
        .await;
    assert_eq!(code, 200);
    let (_, latest) = s.get_json(&format!("/threads/{t}/state")).await;
    let known = latest["checkpoint"]["checkpoint_id"].as_str().unwrap();
    let (code, at) = s.get_json(&format!("/threads/{t}/state/{known}")).await;
    assert_eq!(code, 200);
    assert_eq!(at["values"], latest["values"]);
    let (code, at) = s
        .post_json(
            &format!("/threads/{t}/state/checkpoint"),
            json!({"checkpoint": {"checkpoint_id": known}}),
        )
        .await;
    assert_eq!(code, 200);
    assert_eq!(at["values"], latest["values"]);
    let (code, err) = s.get_json(&format!("/threads/{t}/state/{unknown}")).await;
    assert_eq!((code, &err["code"]), (404, &json!("not_found")), "{err}");
    let (code, err) = s
        .post_json(
            &format!("/threads/{t}/state/checkpoint"),
            json!({"checkpoint": {"checkpoint_id": unknown}}),
        )
        .await;
    assert_eq!((code, &err["code"]), (404, &json!("not_found")), "{err}");
}
both_backends!(
    a_checkpoint_the_thread_does_not_have_is_not_found_,
    a_checkpoint_the_thread_does_not_have
);
