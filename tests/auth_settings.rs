//! Authentication settings as a served binary applies them: a configured JWT audience or
//! issuer is required of every token, a trusted user header served beyond loopback once the
//! proxy in front is acknowledged, and a host name (`localhost`) as the address to listen
//! on. The settings refused at start are in `tests/hardening.rs`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Backend, TestServer};
use serde_json::{json, Value};

const SECRET: &str = "a-test-secret-of-at-least-32-bytes!!";
const AUDIENCE: &str = "authenticated";
const ISSUER: &str = "https://auth.example";

fn sign(claims: Value) -> String {
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .unwrap()
}

/// The status and error detail of `POST /threads/search` with `token` as a bearer token.
async fn search_with(s: &TestServer, token: &str) -> (u16, String) {
    let r = s
        .client
        .post(s.url("/threads/search"))
        .bearer_auth(token)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let body: Value = r.json().await.unwrap_or(Value::Null);
    (
        status,
        body["detail"].as_str().unwrap_or_default().to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_audience_and_issuer_are_required_of_every_token() {
    let s = TestServer::start_with(
        Backend::Sqlite,
        &[
            ("PALGRAPH_JWT_SECRET", SECRET),
            ("PALGRAPH_JWT_AUDIENCE", AUDIENCE),
            ("PALGRAPH_JWT_ISSUER", ISSUER),
        ],
    )
    .await;
    let exp = palgraph::checkpoint::now_ms() / 1000 + 600;
    let good = json!({"sub": "ann", "exp": exp, "aud": AUDIENCE, "iss": ISSUER});
    assert_eq!(search_with(&s, &sign(good)).await.0, 200);
    // Each refusal names a claim that is missing or not accepted (either, for a token
    // without both).
    let refused: [(Value, &[&str]); 5] = [
        (json!({"sub": "ann", "exp": exp}), &["`aud`", "`iss`"]),
        (json!({"sub": "ann", "exp": exp, "iss": ISSUER}), &["`aud`"]),
        (
            json!({"sub": "ann", "exp": exp, "aud": AUDIENCE}),
            &["`iss`"],
        ),
        (
            json!({"sub": "ann", "exp": exp, "aud": [], "iss": ISSUER}),
            &["audience"],
        ),
        (
            json!({"sub": "ann", "exp": exp, "aud": AUDIENCE, "iss": "https://evil.example"}),
            &["issuer"],
        ),
    ];
    for (claims, says) in refused {
        let (status, detail) = search_with(&s, &sign(claims.clone())).await;
        assert_eq!(status, 401, "{claims}: {detail}");
        assert!(
            says.iter().any(|w| detail.contains(w)),
            "{claims}: {detail}"
        );
    }

    // Only an audience configured: it is required, the issuer is not.
    let aud_only = TestServer::start_with(
        Backend::Sqlite,
        &[
            ("PALGRAPH_JWT_SECRET", SECRET),
            ("PALGRAPH_JWT_AUDIENCE", AUDIENCE),
        ],
    )
    .await;
    let no_iss = sign(json!({"sub": "ann", "exp": exp, "aud": AUDIENCE}));
    assert_eq!(search_with(&aud_only, &no_iss).await.0, 200);
    let no_aud = sign(json!({"sub": "ann", "exp": exp, "iss": ISSUER}));
    assert_eq!(search_with(&aud_only, &no_aud).await.0, 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_header_is_served_beyond_loopback_once_the_proxy_is_acknowledged() {
    let s = TestServer::start_with(
        Backend::Sqlite,
        &[
            ("PALGRAPH_HOST", "0.0.0.0"),
            ("PALGRAPH_TRUSTED_USER_HEADER", "X-Forwarded-User"),
            ("PALGRAPH_TRUSTED_USER_HEADER_BEHIND_PROXY", "true"),
        ],
    )
    .await;
    assert!(s.base.contains("0.0.0.0"), "{}", s.base);
    let as_user = |user: &'static str| {
        s.client
            .post(s.url("/threads"))
            .header("x-forwarded-user", user)
            .json(&json!({}))
    };
    let ann: Value = as_user("ann").send().await.unwrap().json().await.unwrap();
    let thread = ann["thread_id"].as_str().unwrap();
    let path = format!("/threads/{thread}");
    let get_as = |user: &'static str| {
        s.client
            .get(s.url(&path))
            .header("x-forwarded-user", user)
            .send()
    };
    assert_eq!(get_as("ann").await.unwrap().status(), 200);
    assert_eq!(get_as("bob").await.unwrap().status(), 404, "bob's view");
    let anonymous = s.client.get(s.url(&path)).send().await.unwrap();
    assert_eq!(anonymous.status(), 401, "no header, no user");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn localhost_is_a_host_to_listen_on_without_auth() {
    let s = TestServer::start_with(Backend::Sqlite, &[("PALGRAPH_HOST", "localhost")]).await;
    // Whichever of localhost's loopback addresses was bound, the server answers on it.
    assert!(
        s.base.contains("127.0.0.1") || s.base.contains("[::1]"),
        "{}",
        s.base
    );
    assert_eq!(s.get_json("/healthz").await.0, 200);
    let (status, _) = s.post_json("/threads", json!({})).await;
    assert_eq!(status, 200, "the local user is served");
}
