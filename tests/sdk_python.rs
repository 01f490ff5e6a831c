//! The official Python `langgraph-sdk` (from PyPI, pinned in tests/sdk/requirements.txt)
//! drives the real server, on SQLite and Postgres: assistants, threads, streaming modes,
//! interrupts and `Command(resume=...)`, joining a run after a disconnect, cancel, history,
//! fork, double texting (tests/sdk/sdk_flow.py); subgraphs (the `supervisor` graph's state,
//! namespaces and streamed events, tests/sdk/sdk_subgraphs.py); map-reduce (`Send`, in the
//! `jokes` graph and in a command's `goto`, tests/sdk/sdk_send.py); the functional API (the
//! `essay` workflow, tests/sdk/sdk_functional.py); the long-term store
//! (tests/sdk/sdk_store.py); crons (tests/sdk/sdk_crons.py); and the gaps issue 20 closed (tests/sdk/sdk_gaps.py). Each
//! script asserts its steps; this test sets up the virtualenv (tests/sdk/.venv, made once)
//! and checks the scripts pass.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

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
    let python = tokio::task::spawn_blocking(venv_python).await.unwrap();
    let s = TestServer::start(b).await;
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

/// `client.store.*` as two users: put, get, search (prefix, filter, text query, pages),
/// list_namespaces, delete; neither sees the other's items (tests/sdk/sdk_store.py).
async fn python_sdk_store(b: Backend) {
    let python = tokio::task::spawn_blocking(venv_python).await.unwrap();
    let s = TestServer::start_with(
        b,
        &[(
            "PALGRAPH_API_KEYS",
            "key-ada-0123456789abcdef=ada,key-bob-0123456789abcdef=bob",
        )],
    )
    .await;
    let mut cmd = tokio::process::Command::new(&python);
    cmd.arg(sdk_dir().join("sdk_store.py"))
        .arg(&s.base)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1");
    common::run_flow_script(cmd, "the Python SDK store flow (tests/sdk/sdk_store.py)").await;
}
both_backends!(python_sdk_store_, python_sdk_store);

/// `client.crons.*` as two users: create (on a thread, stateless, in a time zone, with an
/// end time), ticks that run, search, count, update, delete; neither sees the other's
/// (tests/sdk/sdk_crons.py).
async fn python_sdk_crons(b: Backend) {
    let python = tokio::task::spawn_blocking(venv_python).await.unwrap();
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
    let mut cmd = tokio::process::Command::new(&python);
    cmd.arg(sdk_dir().join("sdk_crons.py"))
        .arg(&s.base)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1");
    common::run_flow_script(cmd, "the Python SDK crons flow (tests/sdk/sdk_crons.py)").await;
}
both_backends!(python_sdk_crons_, python_sdk_crons);

/// The gaps of issue 20 as the SDK (and agent-chat-ui's proxy) meets them: bodies without
/// a Content-Type, error statuses and exception classes, run status on interrupt, the
/// metadata event's id, `response_schema` (tests/sdk/sdk_gaps.py).
async fn python_sdk_gaps(b: Backend) {
    run_script(b, "sdk_gaps.py").await;
}
both_backends!(python_sdk_gaps_, python_sdk_gaps);

async fn python_sdk_functional(b: Backend) {
    run_script(b, "sdk_functional.py").await;
}
both_backends!(python_sdk_functional_, python_sdk_functional);
