//! Hostile and broken clients, and settings that must fail closed: empty secrets and keys,
//! a key given twice or without its user, a credential header trusted as the user id, a
//! trusted header exposed beyond loopback unacknowledged and a host that does not resolve
//! are start-up errors; NUL characters are refused with a JSON 422 on every route and both
//! backends, changing nothing; half-open connections are timed out and capped; a server
//! shutting down says so (`/readyz` 503, new runs 503 with `Retry-After`).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::{Backend, TestServer};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

/// Runs the binary with `env` and expects it to refuse to start, saying `says`.
async fn refuses_to_start(env: &[(&str, &str)], says: &str) {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_palgraph"));
    cmd.arg("serve")
        .env("PALGRAPH_PORT", "0")
        .env("PALGRAPH_DB", common::temp_sqlite_path())
        .env_remove("DATABASE_URL")
        .env_remove("PALGRAPH_JWT_SECRET")
        .env_remove("PALGRAPH_API_KEYS")
        .env_remove("PALGRAPH_TRUSTED_USER_HEADER")
        .env_remove("PALGRAPH_TRUSTED_USER_HEADER_BEHIND_PROXY")
        .env_remove("PALGRAPH_HOST")
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(Duration::from_secs(30), cmd.output())
        .await
        .expect("the server decides in time")
        .expect("run palgraph");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{env:?} must not start: {stdout}");
    assert!(!stdout.contains("listening"), "{env:?} never listened");
    assert!(stderr.contains(says), "{env:?}: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_or_short_secrets_keys_and_headers_are_startup_errors() {
    let cases: &[(&[(&str, &str)], &str)] = &[
        (
            &[("PALGRAPH_JWT_SECRET", "")],
            "PALGRAPH_JWT_SECRET is 0 bytes",
        ),
        (&[("PALGRAPH_JWT_SECRET", "s3cret")], "at least 32 bytes"),
        (&[("PALGRAPH_API_KEYS", "=alice")], "empty key"),
        (&[("PALGRAPH_API_KEYS", "k=")], "empty user"),
        (&[("PALGRAPH_API_KEYS", "")], "PALGRAPH_API_KEYS"),
        (
            &[("PALGRAPH_TRUSTED_USER_HEADER", "")],
            "PALGRAPH_TRUSTED_USER_HEADER",
        ),
        (
            &[("PALGRAPH_HOST", "0.0.0.0"), ("PALGRAPH_JWT_SECRET", "")],
            "PALGRAPH_JWT_SECRET",
        ),
        (&[("PALGRAPH_HOST", "0.0.0.0")], "without authentication"),
        // A key names exactly one user: never the last of two, never an unnamed one.
        (
            &[("PALGRAPH_API_KEYS", "ka=alice,ka=bob")],
            "PALGRAPH_API_KEYS gives one key twice, in entries 1 (user `alice`) and 2 (user `bob`)",
        ),
        (
            &[("PALGRAPH_API_KEYS", "ka")],
            "PALGRAPH_API_KEYS entry 1 has no `=`",
        ),
        (
            &[("PALGRAPH_API_KEYS", "key-a=alice, key-b")],
            "PALGRAPH_API_KEYS entry 2 has no `=`",
        ),
        // A credential header is never the trusted user header, whatever its case.
        (
            &[("PALGRAPH_TRUSTED_USER_HEADER", "authorization")],
            "PALGRAPH_TRUSTED_USER_HEADER `authorization` is a credential header",
        ),
        (
            &[("PALGRAPH_TRUSTED_USER_HEADER", "X-API-Key")],
            "PALGRAPH_TRUSTED_USER_HEADER `x-api-key` is a credential header",
        ),
        (
            &[("PALGRAPH_TRUSTED_USER_HEADER", "Cookie")],
            "is a credential header",
        ),
        (
            &[("PALGRAPH_TRUSTED_USER_HEADER", "proxy-authorization")],
            "is a credential header",
        ),
        // A trusted header beyond loopback needs the proxy acknowledged, also beside keys.
        (
            &[
                ("PALGRAPH_HOST", "0.0.0.0"),
                ("PALGRAPH_TRUSTED_USER_HEADER", "x-forwarded-user"),
            ],
            "anyone who can reach this port can send that header and act as any user",
        ),
        (
            &[
                ("PALGRAPH_HOST", "0.0.0.0"),
                ("PALGRAPH_TRUSTED_USER_HEADER", "x-forwarded-user"),
                ("PALGRAPH_API_KEYS", "key-a-0123456789abcdef=alice"),
                ("PALGRAPH_TRUSTED_USER_HEADER_BEHIND_PROXY", "false"),
            ],
            "set PALGRAPH_TRUSTED_USER_HEADER_BEHIND_PROXY=true",
        ),
        (
            &[("PALGRAPH_HOST", "no-such-host.invalid")],
            "PALGRAPH_HOST `no-such-host.invalid` does not resolve",
        ),
    ];
    for (env, says) in cases {
        refuses_to_start(env, says).await;
    }
}

/// `PALGRAPH_WORKERS`: no workers is a start-up error naming the setting (`--workers`); one
/// worker (the setting for a small machine shared with Postgres) serves a whole chat turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_count_is_checked_and_one_worker_serves_a_turn() {
    refuses_to_start(&[("PALGRAPH_WORKERS", "0")], "--workers").await;
    refuses_to_start(&[("PALGRAPH_WORKERS", "many")], "--workers").await;
    let s = TestServer::start_with(Backend::Postgres, &[("PALGRAPH_WORKERS", "1")]).await;
    let events = s
        .sse(
            s.client
                .post(s.url("/chat"))
                .json(&json!({"message": "What are the capital requirements?"})),
        )
        .await
        .all()
        .await;
    let types: Vec<&str> = events
        .iter()
        .filter_map(|e| e.data["type"].as_str())
        .collect();
    assert!(types.contains(&"status"), "{types:?}");
    assert_eq!(types.last(), Some(&"response"), "{types:?}");
    assert_eq!(types.iter().filter(|t| **t == "response").count(), 1);
}

fn sign(claims: Value, secret: &str) -> String {
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jwts_need_a_signature_an_expiry_and_the_configured_audience() {
    let secret = "a-test-secret-of-at-least-32-bytes!!";
    let s = TestServer::start_with(
        Backend::Sqlite,
        &[
            ("PALGRAPH_JWT_SECRET", secret),
            ("PALGRAPH_JWT_AUDIENCE", "authenticated"),
        ],
    )
    .await;
    let now = palgraph::checkpoint::now_ms() / 1000;
    let call = |token: String| {
        let s = &s;
        async move {
            s.client
                .post(s.url("/threads/search"))
                .bearer_auth(token)
                .json(&json!({}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    let good = json!({"sub": "ann", "aud": "authenticated", "exp": now + 600});
    assert_eq!(call(sign(good.clone(), secret)).await, 200);
    let cases = [
        (
            json!({"sub": "ann", "aud": "authenticated"}),
            secret,
            "no exp",
        ),
        (
            json!({"sub": "ann", "aud": "authenticated", "exp": now - 3600}),
            secret,
            "expired",
        ),
        (
            json!({"sub": "ann", "aud": "anon", "exp": now + 600}),
            secret,
            "audience",
        ),
        (
            good.clone(),
            "another-secret-of-at-least-32-bytes!",
            "signature",
        ),
        (
            json!({"sub": "", "aud": "authenticated", "exp": now + 600}),
            secret,
            "no subject",
        ),
    ];
    for (claims, key, what) in cases {
        assert_eq!(call(sign(claims, key)).await, 401, "{what}");
    }
    // An empty API key header is not a key.
    let r = s
        .client
        .post(s.url("/threads/search"))
        .header("x-api-key", "")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
}

async fn nul_is_refused(b: Backend) {
    let s = TestServer::start(b).await;
    let t = s.new_thread().await;
    let (_, docs_before) = s.get_json("/documents").await;
    let (_, threads_before) = s.post_json("/threads/search", json!({"limit": 1000})).await;
    let nul_bodies: Vec<(&str, String, Value)> = vec![
        ("POST", "/chat".into(), json!({"message": "hi\u{0}"})),
        (
            "POST",
            "/chat".into(),
            json!({"message": "hi", "client_turn_id": "a\u{0}b"}),
        ),
        (
            "POST",
            "/chat/resume".into(),
            json!({"thread_id": t, "resume_value": {"type": "text_input", "value": "x\u{0}"}}),
        ),
        (
            "POST",
            "/documents".into(),
            json!({"title": "ok", "content": "has \u{0}"}),
        ),
        (
            "POST",
            "/documents".into(),
            json!({"title": "t\u{0}", "content": "fine"}),
        ),
        (
            "POST",
            "/threads".into(),
            json!({"metadata": {"k": "v\u{0}"}}),
        ),
        ("POST", "/threads".into(), json!({"thread_id": "a\u{0}b"})),
        (
            "POST",
            "/threads/search".into(),
            json!({"metadata": {"k\u{0}": 1}}),
        ),
        (
            "PATCH",
            format!("/threads/{t}"),
            json!({"metadata": {"k": "v\u{0}"}}),
        ),
        (
            "POST",
            format!("/threads/{t}/runs"),
            json!({"assistant_id": "approval", "input": {"messages": [{"type": "human", "content": "x\u{0}"}]}}),
        ),
        (
            "POST",
            format!("/threads/{t}/runs/wait"),
            json!({"assistant_id": "approval", "input": {"topic": "\u{0}"}}),
        ),
        (
            "POST",
            format!("/threads/{t}/state"),
            json!({"values": {"messages": [{"type": "human", "content": "\u{0}"}]}}),
        ),
        (
            "POST",
            "/runs/wait".into(),
            json!({"assistant_id": "approval", "input": {"messages": [{"type": "human", "content": "\u{0}"}]}}),
        ),
        (
            "POST",
            "/assistants/search".into(),
            json!({"graph_id": "x\u{0}"}),
        ),
    ];
    for (method, path, body) in &nul_bodies {
        let r = s
            .client
            .request(method.parse().unwrap(), s.url(path))
            .json(body)
            .send()
            .await
            .unwrap();
        let code = r.status().as_u16();
        let err: Value = r.json().await.unwrap_or(Value::Null);
        assert_eq!(code, 422, "{method} {path}: {err}");
        assert!(err["detail"].as_str().unwrap().contains("NUL"), "{err}");
    }
    let nul_paths = [
        "/chat/history/%00",
        "/chat/stream/%00",
        "/documents/%00",
        "/threads/%00",
        "/threads/%00/state",
        "/threads/%00/history",
        "/assistants/%00",
        "/threads/search?x=%00",
    ];
    for path in nul_paths {
        let (code, err) = s.get_json(path).await;
        assert_eq!(code, 422, "GET {path}: {err}");
        assert_eq!(err["code"], "invalid");
    }
    // An uploaded file with a NUL byte.
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(b"text\0more".to_vec()).file_name("n.md"),
    );
    let r = s
        .client
        .post(s.url("/documents"))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    // Nothing was stored.
    assert_eq!(s.get_json("/documents").await.1, docs_before);
    assert_eq!(
        s.post_json("/threads/search", json!({"limit": 1000}))
            .await
            .1,
        threads_before
    );
    let (_, runs) = s.get_json(&format!("/threads/{t}/runs")).await;
    assert_eq!(runs, json!([]));
}
both_backends!(
    nul_characters_are_refused_with_422_and_change_nothing,
    nul_is_refused
);

/// Opens `n` connections that each send half a request head and then nothing.
async fn half_open(base: &str, n: usize) -> Vec<tokio::net::TcpStream> {
    let addr = base.trim_start_matches("http://").to_string();
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let mut c = tokio::net::TcpStream::connect(&addr).await.unwrap();
        c.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        out.push(c);
    }
    out
}

/// The server's open sockets.
fn open_sockets(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    std::fs::read_link(e.path())
                        .map(|l| l.to_string_lossy().starts_with("socket:"))
                        .unwrap_or(false)
                })
                .count()
        })
        .unwrap_or(0)
}

async fn healthz_time(s: &TestServer) -> Duration {
    let t = Instant::now();
    let r = tokio::time::timeout(
        Duration::from_secs(30),
        s.client.get(s.url("/healthz")).send(),
    )
    .await
    .expect("healthz answered within 30 s")
    .unwrap();
    assert_eq!(r.status(), 200);
    t.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_open_connections_are_timed_out_and_capped() {
    let s = TestServer::start_with(Backend::Sqlite, &[("PALGRAPH_HEADER_TIMEOUT_SECS", "2")]).await;
    let pid = s.pid().unwrap();
    let baseline = open_sockets(pid);
    let slow = half_open(&s.base, 1000).await;
    let held = open_sockets(pid) - baseline;
    let while_open = healthz_time(&s).await;
    assert!(
        while_open < Duration::from_secs(2),
        "healthz answered at once with 1,000 half-open connections ({while_open:?})"
    );
    let t = Instant::now();
    let after = loop {
        let now = open_sockets(pid).saturating_sub(baseline);
        if now < 10 || t.elapsed() > Duration::from_secs(10) {
            break now;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    println!(
        "1,000 half-open connections: {held} held at first, {after} after the 2 s header timeout \
         (gone after {:?}); /healthz meanwhile in {while_open:?}",
        t.elapsed()
    );
    assert!(
        after < 10,
        "the half-open connections were closed ({after} left)"
    );
    drop(slow);

    // With a cap of 50 connections, 200 half-open ones never hold more than the cap and the
    // reserved health slots, and /healthz is answered once a timeout frees one.
    let s = TestServer::start_with(
        Backend::Sqlite,
        &[
            ("PALGRAPH_HEADER_TIMEOUT_SECS", "1"),
            ("PALGRAPH_MAX_CONNECTIONS", "50"),
        ],
    )
    .await;
    let pid = s.pid().unwrap();
    let baseline = open_sockets(pid);
    let _slow = half_open(&s.base, 200).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let held = open_sockets(pid) - baseline;
    assert!(
        held <= 50 + 64 + 1,
        "at most the cap and the 64 reserved health slots are open at once ({held})"
    );
    let waited = healthz_time(&s).await;
    println!("cap 50, 200 half-open: {held} held, /healthz in {waited:?}");
    assert!(waited < Duration::from_secs(10), "{waited:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_shutting_down_is_not_ready_and_takes_no_new_runs() {
    let mut s =
        TestServer::start_with(Backend::Sqlite, &[("PALGRAPH_SHUTDOWN_GRACE_SECS", "3")]).await;
    let t = s.new_thread().await;
    let (code, run) = s
        .post_json(
            &format!("/threads/{t}/runs"),
            json!({"assistant_id": "streaming", "input": {"messages": [{"type": "human", "content": "go"}], "delay_ms": 50, "words": 1000}}),
        )
        .await;
    assert_eq!(code, 200, "{run}");
    assert_eq!(s.get_json("/readyz").await.0, 200);
    let pid = s.pid().unwrap();
    let _ = std::process::Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status();
    // Within the grace period: not ready, no new runs, with a reason and a Retry-After.
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut not_ready = false;
    while Instant::now() < deadline {
        if s.get_json("/readyz").await.0 == 503 {
            not_ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(not_ready, "/readyz turned 503 as soon as shutdown began");
    let r = s
        .client
        .post(s.url("/chat"))
        .json(&json!({"message": "hello"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    assert!(r.headers().contains_key("retry-after"));
    let err: Value = r.json().await.unwrap();
    assert!(
        err["detail"].as_str().unwrap().contains("shutting down"),
        "{err}"
    );
    let status = s.terminate().await;
    assert!(status.success(), "the server exited cleanly: {status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_bodies_are_refused_before_they_cost_memory() {
    let s = TestServer::start(Backend::Sqlite).await;
    let big = "x".repeat(2 * 1024 * 1024);
    let (code, err) = s.post_json("/chat", json!({"message": big})).await;
    assert_eq!(code, 413, "{err}");
    let long = "word ".repeat(60_000);
    let (code, err) = s.post_json("/chat", json!({"message": long})).await;
    assert_eq!(code, 422, "{err}");
    assert!(
        err["detail"].as_str().unwrap().contains("262144 bytes"),
        "{err}"
    );
    let (code, _) = s
        .post_json("/threads/search", json!({"metadata": {"k": big}}))
        .await;
    assert_eq!(code, 413);
}

/// A thread id created twice: `raise` (the default) is a 409 and `do_nothing` returns the
/// thread as it was; another user's id is a 409 whatever `if_exists` says, and that user's
/// thread is left as it was.
async fn thread_ids_created_twice(b: Backend) {
    let secret = "a-test-secret-of-at-least-32-bytes!!";
    let s = TestServer::start_with(b, &[("PALGRAPH_JWT_SECRET", secret)]).await;
    let exp = palgraph::checkpoint::now_ms() / 1000 + 600;
    let token = |sub: &str| sign(json!({"sub": sub, "exp": exp}), secret);
    let (ann, bob) = (token("ann"), token("bob"));
    let post = |who: String, body: Value| {
        let s = &s;
        async move {
            let r = s
                .client
                .post(s.url("/threads"))
                .bearer_auth(who)
                .json(&body)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let id = uuid::Uuid::new_v4().to_string();
    let (code, made) = post(ann.clone(), json!({"thread_id": id, "metadata": {"v": 1}})).await;
    assert_eq!(code, 200, "{made}");
    let (code, e) = post(ann.clone(), json!({"thread_id": id, "metadata": {"v": 2}})).await;
    assert_eq!((code, e["code"].as_str()), (409, Some("exists")), "{e}");
    let again = json!({"thread_id": id, "metadata": {"v": 3}, "if_exists": "do_nothing"});
    let (code, same) = post(ann.clone(), again.clone()).await;
    assert_eq!(code, 200, "{same}");
    assert_eq!(same["metadata"]["v"], 1, "{same}");
    assert_eq!(same["created_at"], made["created_at"], "{same}");
    for body in [again, json!({"thread_id": id})] {
        let (code, e) = post(bob.clone(), body).await;
        assert_eq!((code, e["code"].as_str()), (409, Some("exists")), "{e}");
    }
    let r = s
        .client
        .get(s.url(&format!("/threads/{id}")))
        .bearer_auth(ann)
        .send()
        .await
        .unwrap();
    let kept: Value = r.json().await.unwrap();
    assert_eq!(kept["metadata"]["v"], 1, "{kept}");
}
both_backends!(thread_ids_created_twice_, thread_ids_created_twice);
