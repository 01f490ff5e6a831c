//! The book's "Your own graph" (`docs/src/guides/own-graph.md`) is this crate, word for
//! word, and it serves: the code block is `src/main.rs`, the dependencies are this crate's,
//! and the binary answers on the LangGraph API and on `/chat`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

fn guide() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/src/guides/own-graph.md"
    ))
    .unwrap()
}

/// The first block fenced as `lang` (the info string, e.g. `rust,no_run`) of the guide.
fn block(lang: &str) -> String {
    let section = guide();
    let fence = format!("```{lang}\n");
    let start = section.find(&fence).expect("the block is there") + fence.len();
    section[start..].split("```\n").next().unwrap().to_string()
}

#[test]
fn the_guide_code_is_this_crate() {
    let main =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/main.rs")).unwrap();
    assert_eq!(
        block("rust,no_run"),
        main,
        "the guide's block and examples/hello/src/main.rs differ"
    );
    let toml = block("toml");
    for dep in ["palgraph =", "palgraph-server =", "serde =", "tokio ="] {
        assert!(toml.contains(dep), "the guide's Cargo.toml names {dep}");
    }
    let lines = main.lines().filter(|l| !l.trim().is_empty()).count();
    assert!(lines < 40, "{lines} lines of user code");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_guide_graph_serves() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = std::env::temp_dir().join(format!("hello-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_hello"))
        .env("PALGRAPH_PORT", "0")
        .env("PALGRAPH_DB", dir.join("palgraph.db"))
        .env("RUST_LOG", "warn")
        .env_remove("DATABASE_URL")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let base = line
        .strip_prefix("palgraph listening on ")
        .unwrap()
        .trim()
        .to_string();
    let http = reqwest::Client::new();
    let out: Value = http
        .post(format!("{base}/runs/wait"))
        .json(&json!({"assistant_id": "echo", "input": {"messages": [{"role": "user", "content": "hi"}]}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(out["messages"][1]["content"], "You said: hi");
    let chat = http
        .post(format!("{base}/chat"))
        .json(&json!({"message": "hello"}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(chat.contains(r#""response":"You said: hello""#), "{chat}");
    let schemas: Value = http
        .get(format!("{base}/assistants/echo/schemas"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        schemas["state_schema"]["description"],
        "A conversation with an echo."
    );
    let _ = child.start_kill();
    let _ = std::fs::remove_dir_all(&dir);
}
