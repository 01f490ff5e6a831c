//! The official Python `langgraph-sdk` (from PyPI, pinned in tests/sdk/requirements.txt)
//! drives the real server, on SQLite and Postgres: assistants, threads, streaming modes,
//! interrupts and `Command(resume=...)`, joining a run after a disconnect, cancel, history,
//! fork, double texting (tests/sdk/sdk_flow.py); subgraphs (the `supervisor` graph's state,
//! namespaces and streamed events, tests/sdk/sdk_subgraphs.py); map-reduce (`Send`, in the
//! `jokes` graph and in a command's `goto`, tests/sdk/sdk_send.py); the functional API (the
//! `essay` workflow, tests/sdk/sdk_functional.py); the long-term store
//! (tests/sdk/sdk_store.py); crons (tests/sdk/sdk_crons.py); the details the clients rely
//! on beyond those flows (tests/sdk/sdk_gaps.py); and streams opened on a queued run (tests/sdk/sdk_queued.py).
//! Each script asserts its steps; this test sets up the virtualenv (tests/sdk/.venv, made
//! once) and checks the scripts pass.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::PathBuf;
use std::sync::OnceLock;

use common::{Backend, TestServer};

fn sdk_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/sdk")
}

/// The virtualenv's python with the pinned SDK (tests/sdk/.venv).
fn venv_python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| common::python_venv(&sdk_dir()))
        .clone()
}

async fn run_script(b: Backend, script: &str) {
    run_script_with(b, script, &[]).await;
}

/// Runs `script` against a server started with `env`.
async fn run_script_with(b: Backend, script: &str, env: &[(&str, &str)]) {
    let python = tokio::task::spawn_blocking(venv_python).await.unwrap();
    let s = TestServer::start_with(b, env).await;
    let mut cmd = tokio::process::Command::new(&python);
    cmd.arg(sdk_dir().join(script))
        .arg(&s.base)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1");
    common::run_flow_script(cmd, &format!("the Python SDK script tests/sdk/{script}")).await;
}

async fn python_sdk_flow(b: Backend) {
    run_script(b, "sdk_flow.py").await;
}
both_backends!(python_sdk_flow_, python_sdk_flow);

async fn python_sdk_subgraphs(b: Backend) {
    run_script(b, "sdk_subgraphs.py").await;
}
both_backends!(python_sdk_subgraphs_, python_sdk_subgraphs);

async fn python_sdk_send(b: Backend) {
    run_script(b, "sdk_send.py").await;
}
both_backends!(python_sdk_send_, python_sdk_send);

/// `client.threads.create(ttl=...)` and `update(..., ttl=...)`: expired threads deleted or
/// pruned to their latest checkpoint by a sweep every second (tests/sdk/sdk_ttl.py).
async fn python_sdk_ttl(b: Backend) {
    run_script_with(b, "sdk_ttl.py", &[("PALGRAPH_THREAD_TTL_SWEEP_SECS", "1")]).await;
}
both_backends!(python_sdk_ttl_, python_sdk_ttl);

/// `client.store.*` as two users: put, get, search (prefix, filter, text query, pages),
/// list_namespaces, delete; neither sees the other's items (tests/sdk/sdk_store.py).
async fn python_sdk_store(b: Backend) {
    run_script_with(
        b,
        "sdk_store.py",
        &[(
            "PALGRAPH_API_KEYS",
            "key-ada-0123456789abcdef=ada,key-bob-0123456789abcdef=bob",
        )],
    )
    .await;
}
both_backends!(python_sdk_store_, python_sdk_store);

/// `client.crons.*` as two users: create (on a thread, stateless, in a time zone, with an
/// end time), ticks that run, search, count, update, delete; neither sees the other's
/// (tests/sdk/sdk_crons.py).
async fn python_sdk_crons(b: Backend) {
    run_script_with(
        b,
        "sdk_crons.py",
        &[
            (
                "PALGRAPH_API_KEYS",
                "key-ada-0123456789abcdef=ada,key-bob-0123456789abcdef=bob",
            ),
            ("PALGRAPH_CRON_POLL_MS", "100"),
        ],
    )
    .await;
}
both_backends!(python_sdk_crons_, python_sdk_crons);

/// Details the SDK (and agent-chat-ui's proxy) relies on beyond the main flows: bodies without
/// a Content-Type, error statuses and exception classes, run status on interrupt, the
/// metadata event's id, `response_schema` (tests/sdk/sdk_gaps.py).
async fn python_sdk_gaps(b: Backend) {
    run_script(b, "sdk_gaps.py").await;
}
both_backends!(python_sdk_gaps_, python_sdk_gaps);

/// Streams opened on a run that waits in the queue (one run at a time) follow it live once
/// it starts: `thread.values` of the streaming protocol keeps the run's values although the
/// interrupt ends it from another stream, and `runs.join_stream` carries the run from its
/// start (tests/sdk/sdk_queued.py).
async fn python_sdk_queued(b: Backend) {
    run_script_with(b, "sdk_queued.py", &[("PALGRAPH_MAX_RUNS", "1")]).await;
}
both_backends!(python_sdk_queued_, python_sdk_queued);

async fn python_sdk_functional(b: Backend) {
    run_script(b, "sdk_functional.py").await;
}
both_backends!(python_sdk_functional_, python_sdk_functional);
