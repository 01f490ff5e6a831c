//! The official Python `langgraph-sdk` (from PyPI, pinned in tests/sdk/requirements.txt)
//! drives the real server, on SQLite and Postgres: assistants, threads, streaming modes,
//! interrupts and `Command(resume=...)`, joining a run after a disconnect, cancel, history,
//! fork, double texting. tests/sdk/sdk_flow.py asserts each step; this test sets up the
//! virtualenv (tests/sdk/.venv, made once) and checks the script passes.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::process::{Command as StdCommand, Stdio};
use std::sync::OnceLock;
use std::time::Instant;

use common::{Backend, TestServer};

fn sdk_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/sdk")
}

fn run(cmd: &mut StdCommand, what: &str) {
    let status = cmd
        .stdin(Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("{what}: could not start ({e}); python3 is needed"));
    assert!(status.success(), "{what} failed: {status}");
}

/// The virtualenv's python with the pinned SDK, created (or updated when
/// requirements.txt changed) once per test binary.
fn venv_python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let dir = sdk_dir();
            let venv = dir.join(".venv");
            let python = venv.join("bin").join("python");
            let wanted = std::fs::read_to_string(dir.join("requirements.txt"))
                .expect("tests/sdk/requirements.txt");
            let stamp = venv.join(".palgraph-requirements");
            if python.exists()
                && std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str())
            {
                return python;
            }
            let started = Instant::now();
            if !python.exists() {
                run(
                    StdCommand::new("python3").args(["-m", "venv"]).arg(&venv),
                    "python3 -m venv tests/sdk/.venv",
                );
            }
            run(
                StdCommand::new(&python)
                    .args([
                        "-m",
                        "pip",
                        "install",
                        "--quiet",
                        "--disable-pip-version-check",
                        "-r",
                    ])
                    .arg(dir.join("requirements.txt")),
                "pip install -r tests/sdk/requirements.txt",
            );
            std::fs::write(&stamp, &wanted).unwrap();
            eprintln!("set up {} in {:.1?}", venv.display(), started.elapsed());
            python
        })
        .clone()
}

async fn python_sdk_flow(b: Backend) {
    let python = tokio::task::spawn_blocking(venv_python).await.unwrap();
    let s = TestServer::start(b).await;
    let mut cmd = tokio::process::Command::new(&python);
    cmd.arg(sdk_dir().join("sdk_flow.py"))
        .arg(&s.base)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1");
    common::run_flow_script(cmd, "the Python SDK flow (tests/sdk/sdk_flow.py)").await;
}
both_backends!(python_sdk_flow_, python_sdk_flow);
