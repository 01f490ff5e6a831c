//! What a busy or hostile client can do with size and time over HTTP: a body that never
//! finishes is answered 408 on every write route and its connection closed; slow clients
//! beyond the connection cap do not keep `/healthz` from answering; one address has a
//! capped share of connections; each client has a request rate; the health port answers
//! whatever the API's port is doing.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::{Backend, TestServer};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends `method path` with a `content-length` of 100,000 and only a few bytes of body.
async fn slow_body(base: &str, method: &str, path: &str) -> TcpStream {
    let addr = base.trim_start_matches("http://");
    let mut c = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: 100000\r\n\r\n{{\"a\":"
    );
    c.write_all(head.as_bytes()).await.unwrap();
    c
}

/// Reads what the server says on `c` until it closes the connection.
async fn read_to_close(c: &mut TcpStream, within: Duration) -> String {
    let mut out = Vec::new();
    tokio::time::timeout(within, c.read_to_end(&mut out))
        .await
        .expect("the server closed the connection in time")
        .unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_does_not_arrive_in_time_is_408_on_every_write_route() {
    let s = TestServer::start_with(Backend::Sqlite, &[("PALGRAPH_BODY_TIMEOUT_SECS", "2")]).await;
    let thread = s.new_thread().await;
    let routes = [
        ("POST", "/chat".to_string()),
        ("POST", "/chat/resume".to_string()),
        ("POST", "/documents".to_string()),
        ("POST", "/document-sets".to_string()),
        ("PUT", "/store/items".to_string()),
        ("POST", "/store/items/search".to_string()),
        ("POST", "/store/namespaces".to_string()),
        ("POST", "/runs/wait".to_string()),
        ("POST", "/runs/stream".to_string()),
        ("POST", "/runs/crons".to_string()),
        ("POST", "/threads".to_string()),
        ("POST", format!("/threads/{thread}/runs")),
        ("POST", format!("/threads/{thread}/history")),
    ];
    let mut open = Vec::new();
    for (method, path) in &routes {
        open.push((path, Instant::now(), slow_body(&s.base, method, path).await));
    }
    for (path, started, mut c) in open {
        let said = read_to_close(&mut c, Duration::from_secs(30)).await;
        let took = started.elapsed();
        assert!(
            said.starts_with("HTTP/1.1 408"),
            "{path}: a 408, not {said:?}"
        );
        assert!(said.contains("\"code\":\"body_timeout\""), "{path}: {said}");
        assert!(
            said.to_ascii_lowercase().contains("connection: close"),
            "{path}: {said}"
        );
        assert!(
            took >= Duration::from_millis(1900),
            "{path}: not before the deadline ({took:?})"
        );
    }
    // Nothing was made of the half-sent bodies.
    let (code, threads) = s.post_json("/threads/search", json!({})).await;
    assert_eq!(code, 200);
    assert_eq!(threads.as_array().unwrap().len(), 1, "{threads}");
    let (code, crons) = s.post_json("/runs/crons/search", json!({})).await;
    assert_eq!((code, crons), (200, json!([])));
}

/// Times `GET /healthz` on a new connection.
async fn healthz_on_new_connection(base: &str) -> Duration {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let t = Instant::now();
    let r = tokio::time::timeout(
        Duration::from_secs(30),
        client.get(format!("{base}/healthz")).send(),
    )
    .await
    .expect("healthz answered within 30 s")
    .unwrap();
    assert_eq!(r.status(), 200);
    t.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_answers_while_slow_clients_fill_every_connection() {
    let s = TestServer::start_with(
        Backend::Sqlite,
        &[
            ("PALGRAPH_BODY_TIMEOUT_SECS", "3"),
            ("PALGRAPH_MAX_CONNECTIONS", "50"),
        ],
    )
    .await;
    let mut slow = Vec::new();
    for _ in 0..200 {
        slow.push(slow_body(&s.base, "POST", "/chat").await);
    }
    let mut times = Vec::new();
    for _ in 0..10 {
        times.push(healthz_on_new_connection(&s.base).await);
    }
    times.sort();
    println!("/healthz with 200 slow bodies against a cap of 50: {times:?}");
    assert!(
        times[times.len() / 2] < Duration::from_secs(1),
        "healthz answered at once while the slots are full: {times:?}"
    );
    // Every slow client is answered and closed by the deadline: 408 in a slot, or 503 at
    // once in a reserved one (beyond the cap).
    let mut statuses = std::collections::BTreeMap::new();
    for mut c in slow {
        let said = read_to_close(&mut c, Duration::from_secs(30)).await;
        let status = said.get(9..12).unwrap_or("none").to_string();
        *statuses.entry(status).or_insert(0) += 1;
    }
    println!("the slow clients were answered: {statuses:?}");
    assert_eq!(
        statuses
            .keys()
            .filter(|k| *k != "408" && *k != "503")
            .count(),
        0,
        "{statuses:?}"
    );
    assert!(
        statuses.get("408").copied().unwrap_or(0) >= 40,
        "{statuses:?}"
    );
}

/// A client that opens a new connection for every request.
fn fresh_client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap()
}

/// `POST /threads/search` on new connections until one answers `status` (the server counts
/// connections as they open and close, a moment after the client's side), for up to 5 s.
async fn search_on_new_connections_until(s: &TestServer, status: u16) -> Option<reqwest::Response> {
    for _ in 0..100 {
        let r = fresh_client()
            .post(s.url("/threads/search"))
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        if r.status() == status {
            return Some(r);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_gets_its_share_of_connections_and_probes_still_answer() {
    let s = TestServer::start_with(
        Backend::Sqlite,
        &[("PALGRAPH_MAX_CONNECTIONS_PER_CLIENT", "4")],
    )
    .await;
    // Four connections each with a request under way (a body still coming).
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(slow_body(&s.base, "POST", "/threads/search").await);
    }
    // The fifth: the data routes are refused with a JSON 429, the probes answered.
    let refused = search_on_new_connections_until(&s, 429).await;
    let r = refused.expect("a fifth connection from the address is refused");
    assert!(r.headers().contains_key("retry-after"));
    let err: Value = r.json().await.unwrap();
    assert_eq!(err["code"], "too_many_connections", "{err}");
    assert!(
        err["detail"].as_str().unwrap().contains("at most 4"),
        "{err}"
    );
    let r = fresh_client().get(s.url("/healthz")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    // Once one closes, the address is served again.
    drop(held.pop());
    let served = search_on_new_connections_until(&s, 200).await;
    assert!(
        served.is_some(),
        "a freed connection slot is the address's again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_client_has_a_request_rate_and_one_client_does_not_spend_anothers() {
    let s = TestServer::start_with(
        Backend::Sqlite,
        &[
            ("PALGRAPH_API_KEYS", "ka=alice,kb=bob"),
            ("PALGRAPH_RATE_PER_SEC", "2"),
            ("PALGRAPH_RATE_BURST", "10"),
        ],
    )
    .await;
    let get = |key: &'static str| {
        s.client
            .post(s.url("/threads/search"))
            .header("x-api-key", key)
            .json(&json!({}))
            .send()
    };
    let started = Instant::now();
    let mut ok = 0;
    let refused = loop {
        let r = get("ka").await.unwrap();
        match r.status().as_u16() {
            200 => ok += 1,
            429 => break r,
            other => panic!("{other}"),
        }
        assert!(ok < 100, "the rate is enforced");
    };
    let refill = 2.0 * started.elapsed().as_secs_f64();
    assert!(
        ok >= 10 && f64::from(ok) <= 10.0 + refill + 1.0,
        "a burst of 10 and what refilled: {ok} in {:?}",
        started.elapsed()
    );
    let retry: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry), "{retry}");
    let err: Value = refused.json().await.unwrap();
    assert_eq!(err["code"], "rate_limited", "{err}");
    // Bob has his own budget, and the probes none.
    assert_eq!(get("kb").await.unwrap().status(), 200);
    for _ in 0..30 {
        assert_eq!(
            s.client
                .get(s.url("/healthz"))
                .send()
                .await
                .unwrap()
                .status(),
            200
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_health_port_answers_probes_when_the_api_port_is_full() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let port_s = port.to_string();
    let s = TestServer::start_with(
        Backend::Sqlite,
        &[
            ("PALGRAPH_HEALTH_PORT", port_s.as_str()),
            ("PALGRAPH_MAX_CONNECTIONS", "10"),
            ("PALGRAPH_HEADER_TIMEOUT_SECS", "30"),
        ],
    )
    .await;
    let health = format!("http://127.0.0.1:{port}");
    // Fill the API port and its reserve with connections that send half a head.
    let addr = s.base.trim_start_matches("http://").to_string();
    let mut silent = Vec::new();
    for _ in 0..200 {
        let mut c = TcpStream::connect(&addr).await.unwrap();
        c.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
        silent.push(c);
    }
    let mut times = Vec::new();
    for _ in 0..10 {
        times.push(healthz_on_new_connection(&health).await);
    }
    times.sort();
    println!("/healthz on the health port with the API port full: {times:?}");
    assert!(times[times.len() / 2] < Duration::from_secs(1), "{times:?}");
    let r = reqwest::get(format!("{health}/readyz")).await.unwrap();
    assert_eq!(r.status(), 200);
    let r = reqwest::get(format!("{health}/threads")).await.unwrap();
    assert_eq!(r.status(), 404, "the health port serves the probes only");
    drop(silent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_that_does_not_arrive_in_time_is_408_and_idle_connections_close_quietly() {
    let s = TestServer::start_with(Backend::Sqlite, &[("PALGRAPH_HEADER_TIMEOUT_SECS", "1")]).await;
    let addr = s.base.trim_start_matches("http://").to_string();
    // Half a head: a 408 with a JSON error, and the connection closed.
    let mut half = TcpStream::connect(&addr).await.unwrap();
    half.write_all(b"POST /threads HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let said = read_to_close(&mut half, Duration::from_secs(20)).await;
    assert!(said.starts_with("HTTP/1.1 408"), "{said:?}");
    assert!(said.contains("\"code\":\"header_timeout\""), "{said}");
    // A kept-alive connection after its response, then silent: closed without a word.
    let mut idle = TcpStream::connect(&addr).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let said = read_to_close(&mut idle, Duration::from_secs(20)).await;
    assert!(said.starts_with("HTTP/1.1 200"), "{said:?}");
    assert!(!said.contains("408"), "{said:?}");
    // A body that takes longer than the head timeout (but within its own deadline) and a
    // stream that lasts longer are not cut by the head deadline.
    let mut upload = TcpStream::connect(&addr).await.unwrap();
    let body = br#"{"metadata": {"slow": "upload"}}"#;
    let head = format!(
        "POST /threads HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    upload.write_all(head.as_bytes()).await.unwrap();
    for chunk in body.chunks(8) {
        tokio::time::sleep(Duration::from_millis(700)).await;
        upload.write_all(chunk).await.unwrap();
    }
    let said = read_to_close(&mut upload, Duration::from_secs(20)).await;
    assert!(said.starts_with("HTTP/1.1 200"), "{said:?}");
    let t = s.new_thread().await;
    let mut stream = s
        .sse(s.client.post(s.url(&format!("/threads/{t}/runs/stream"))).json(&json!({
            "assistant_id": "streaming",
            "input": {"messages": [{"type": "human", "content": "go"}], "delay_ms": 100, "words": 30},
            "stream_mode": ["values"],
        })))
        .await;
    let started = Instant::now();
    let events = stream.all().await;
    assert!(
        started.elapsed() > Duration::from_secs(2),
        "the stream outlived the head timeout"
    );
    let last = events.last().expect("events");
    let answer = last.data["messages"][1]["content"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(answer.split(' ').count(), 30, "the whole answer: {last:?}");
}
