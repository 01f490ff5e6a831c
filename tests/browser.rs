//! The web chat page (`/`) in a real browser: the real `palgraph` binary (offline LLM, each
//! streamed word paced at 40 ms so a stop or a reload can land mid-answer) and Debian's
//! chromium driven by playwright-core (`tests/browser/chat.test.mjs`).
//!
//! Needs `node` (20 or newer) and `/usr/bin/chromium` (`apt-get install -y chromium`; CI's
//! `.ci/run` installs it). `npm ci` runs in `tests/browser` when its `node_modules` is
//! missing (playwright-core only; it never downloads a browser).
//!
//! Five files of steps share the servers and one helper module (`tests/browser/lib.mjs`):
//! `chat.test.mjs` (the chat contract: statuses, streaming, prompts, stops, reloads,
//! reconnects, errors), `daily.test.mjs` (the page a team uses daily: layout, Markdown,
//! notices, Retry, conversations and documents, citations, another tab, dark mode,
//! keyboard), `sets.test.mjs` (document sets: made, filled, mentioned, renamed,
//! deleted), `graphs.test.mjs` (the page for another chat graph: picked, only its
//! panels, its own conversations) and `inspector.test.mjs` (the run inspector: the graph
//! with the run's path, the timeline, diffs, forks and state edits, on `approval` and on
//! PalAssist). Screenshots of the main states are written to `artifacts/screenshots/` at
//! the top of the repository (listed and described at the top of each file).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Backend, TestServer};
use tokio::process::Command;

const CHROMIUM: &str = "/usr/bin/chromium";

/// The test files of `tests/browser`, run one after the other against the same servers.
const TEST_FILES: [&str; 5] = [
    "chat.test.mjs",
    "daily.test.mjs",
    "sets.test.mjs",
    "graphs.test.mjs",
    "inspector.test.mjs",
];

/// The whole browser run; it normally takes about two minutes.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(420);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the server crate lives in the workspace")
        .to_path_buf()
}

async fn node_version() -> Option<String> {
    let out = Command::new("node").arg("--version").output().await.ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// `npm ci` in `tests/browser` unless playwright-core is installed there already.
async fn ensure_node_modules(dir: &Path) {
    if dir
        .join("node_modules/playwright-core/package.json")
        .exists()
    {
        return;
    }
    eprintln!("browser test: npm ci in {}", dir.display());
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(dir)
        .status()
        .await
        .unwrap_or_else(|e| panic!("could not run npm (needed to install playwright-core): {e}"));
    assert!(status.success(), "`npm ci` in {} failed", dir.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_page_in_chromium() {
    let node = node_version().await.unwrap_or_else(|| {
        panic!(
            "node is missing: the browser test needs Node.js 20+ (apt-get install -y nodejs npm)"
        )
    });
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: the browser test needs Debian's chromium \
         (DEBIAN_FRONTEND=noninteractive apt-get install -y chromium)"
    );
    let root = repo_root();
    let dir = root.join("tests/browser");
    ensure_node_modules(&dir).await;
    let shots = root.join("artifacts/screenshots");
    std::fs::create_dir_all(&shots).expect("create artifacts/screenshots");

    let server =
        TestServer::start_with(Backend::Sqlite, &[("PALASSIST_OFFLINE_PACE_MS", "40")]).await;
    // A second server with authentication, for the step that signs in with a token and for
    // the layout step (its user gets dozens of conversations and documents).
    let auth_server = TestServer::start_with(
        Backend::Sqlite,
        &[("PALGRAPH_API_KEYS", "browser-key=browser-user")],
    )
    .await;
    eprintln!("browser test: node {node}, server {}", server.base);
    let started = Instant::now();
    let mut failed = Vec::new();
    for file in TEST_FILES {
        let mut child = Command::new("node")
            .arg(file)
            .current_dir(&dir)
            .env("PALGRAPH_URL", &server.base)
            .env("PALGRAPH_AUTH_URL", &auth_server.base)
            .env("PALGRAPH_SCREENSHOTS", &shots)
            .env("CHROMIUM", CHROMIUM)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start node");
        let left = BROWSER_TIMEOUT.saturating_sub(started.elapsed());
        let status = match tokio::time::timeout(left, child.wait()).await {
            Ok(status) => status.expect("wait for node"),
            Err(_) => {
                let _ = child.kill().await;
                panic!(
                    "the browser test did not finish within {} s (in {file})",
                    BROWSER_TIMEOUT.as_secs()
                );
            }
        };
        if !status.success() {
            failed.push(format!("{file} ({status})"));
        }
    }
    eprintln!(
        "browser test: {:.1} s; screenshots in {}",
        started.elapsed().as_secs_f64(),
        shots.display()
    );
    assert!(
        failed.is_empty(),
        "the browser test failed: {}: see its output above and the failure-*.png \
         screenshots in {}",
        failed.join(", "),
        shots.display()
    );
}
