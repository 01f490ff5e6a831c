//! The official JS `@langchain/langgraph-sdk` (from npm, pinned by tests/sdk/package.json
//! and package-lock.json) drives the real server, on SQLite and Postgres: the exact call
//! sequence agent-chat-ui makes through `useStream` (GET /info, threads.search by graph_id,
//! threads.create, runs.stream with streamResumable, getHistory, joinStream with
//! Last-Event-ID -1, cancel, PalAssist's prompts as Agent Inbox interrupts answered and
//! ignored, attachments kept whole), consumed by the SDK's own `StreamManager`, then the
//! core flow and `client.threads.stream()` (the thread streaming protocol); also
//! `client.store.*` (tests/sdk/sdk_store.mjs) and `client.crons.*` (tests/sdk/sdk_crons.mjs);
//! and the real React hook `useStream` rendered in Node through agent-chat-ui's flows
//! (tests/sdk/use_stream.mjs).
//! tests/sdk/sdk_flow.mjs asserts each step; this test installs the package once (`npm ci`)
//! and checks the script passes.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::PathBuf;
use std::process::{Command as StdCommand, Stdio};
use std::sync::OnceLock;
use std::time::Instant;

use common::{Backend, TestServer};

fn sdk_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/sdk")
}

/// Installs the locked packages (`npm ci`) unless node_modules matches the lock file.
fn node_modules() -> PathBuf {
    static READY: OnceLock<PathBuf> = OnceLock::new();
    READY
        .get_or_init(|| {
            let dir = sdk_dir();
            let lock =
                std::fs::read_to_string(dir.join("package-lock.json")).expect("package-lock.json");
            let modules = dir.join("node_modules");
            let stamp = modules.join(".palgraph-lock");
            if modules
                .join("@langchain/langgraph-sdk/package.json")
                .exists()
                && std::fs::read_to_string(&stamp).ok().as_deref() == Some(lock.as_str())
            {
                return modules;
            }
            let started = Instant::now();
            let status = StdCommand::new("npm")
                .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                .current_dir(&dir)
                .stdin(Stdio::null())
                .status()
                .unwrap_or_else(|e| {
                    panic!("npm ci: could not start ({e}); node and npm are needed")
                });
            assert!(status.success(), "npm ci in tests/sdk failed: {status}");
            std::fs::write(&stamp, &lock).unwrap();
            eprintln!(
                "installed {} in {:.1?}",
                modules.display(),
                started.elapsed()
            );
            modules
        })
        .clone()
}

async fn js_sdk_flow(b: Backend) {
    tokio::task::spawn_blocking(node_modules).await.unwrap();
    let origin = "http://localhost:3000";
    let s = TestServer::start_with(b, &[("PALGRAPH_CORS_ORIGINS", origin)]).await;
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg("sdk_flow.mjs")
        .arg(&s.base)
        .arg(origin)
        .current_dir(sdk_dir());
    common::run_flow_script(cmd, "the JS SDK flow (tests/sdk/sdk_flow.mjs)").await;
}
both_backends!(js_sdk_flow_, js_sdk_flow);

/// `client.store.*` as two users through the JS SDK (tests/sdk/sdk_store.mjs).
async fn js_sdk_store(b: Backend) {
    tokio::task::spawn_blocking(node_modules).await.unwrap();
    let s = TestServer::start_with(
        b,
        &[(
            "PALGRAPH_API_KEYS",
            "key-ada-0123456789abcdef=ada,key-bob-0123456789abcdef=bob",
        )],
    )
    .await;
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg("sdk_store.mjs").arg(&s.base).current_dir(sdk_dir());
    common::run_flow_script(cmd, "the JS SDK store flow (tests/sdk/sdk_store.mjs)").await;
}
both_backends!(js_sdk_store_, js_sdk_store);

/// `threads.create({ ttl })` and `threads.update(id, { ttl })` through the JS SDK: expired
/// threads deleted or pruned by a sweep every second (tests/sdk/sdk_ttl.mjs).
async fn js_sdk_ttl(b: Backend) {
    tokio::task::spawn_blocking(node_modules).await.unwrap();
    let s = TestServer::start_with(b, &[("PALGRAPH_THREAD_TTL_SWEEP_SECS", "1")]).await;
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg("sdk_ttl.mjs").arg(&s.base).current_dir(sdk_dir());
    common::run_flow_script(cmd, "the JS SDK ttl flow (tests/sdk/sdk_ttl.mjs)").await;
}
both_backends!(js_sdk_ttl_, js_sdk_ttl);

/// agent-chat-ui end to end with the real React hook `useStream` of
/// `@langchain/langgraph-sdk/react`, rendered in Node (jsdom + react-dom via
/// @testing-library/react's renderHook), called as agent-chat-ui calls it
/// (tests/sdk/use_stream.mjs): send and stream, reload with reconnectOnMount, cancel,
/// answer an Agent Inbox interrupt, edit the first message, regenerate.
async fn js_use_stream(b: Backend) {
    tokio::task::spawn_blocking(node_modules).await.unwrap();
    let s = TestServer::start_with(b, &[("PALASSIST_OFFLINE_PACE_MS", "20")]).await;
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg("use_stream.mjs")
        .arg(&s.base)
        .current_dir(sdk_dir());
    common::run_flow_script(cmd, "the useStream flows (tests/sdk/use_stream.mjs)").await;
}
both_backends!(js_use_stream_, js_use_stream);

/// `client.crons.*` as two users through the JS SDK (tests/sdk/sdk_crons.mjs).
async fn js_sdk_crons(b: Backend) {
    tokio::task::spawn_blocking(node_modules).await.unwrap();
    let s = TestServer::start_with(
        b,
        &[
            (
                "PALGRAPH_API_KEYS",
                "key-ada-0123456789abcdef=ada,key-bob-0123456789abcdef=bob",
            ),
            ("PALGRAPH_CRON_POLL_MS", "100"),
        ],
    )
    .await;
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg("sdk_crons.mjs").arg(&s.base).current_dir(sdk_dir());
    common::run_flow_script(cmd, "the JS SDK crons flow (tests/sdk/sdk_crons.mjs)").await;
}
both_backends!(js_sdk_crons_, js_sdk_crons);
