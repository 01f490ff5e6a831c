//! The served tool agent through the official Python `langgraph-sdk`: schemas, the
//! approval interrupt before `send_email`, resume (approve: sent exactly once; reject:
//! not sent, the model told why), a tool error reaching the model.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

// One harness for the example crates: a served binary and a Python langgraph-sdk venv.
#[path = "../../test-harness/sdk.rs"]
mod harness;

use std::path::PathBuf;

#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_drives_the_tool_agent() {
    let dir = std::env::temp_dir().join(format!("tool-agent-outbox-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let outbox = dir.join("outbox.jsonl");
    let _ = std::fs::remove_file(&outbox);
    let outbox = outbox.to_string_lossy().to_string();
    let s = harness::Served::start(
        env!("CARGO_BIN_EXE_tool-agent"),
        "tool-agent",
        &[("OUTBOX", outbox.clone())],
    )
    .await;
    let sdk = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sdk");
    harness::run_script(&sdk, "flow.py", &[&s.base, &outbox]).await;
    let _ = std::fs::remove_dir_all(&s.dir);
}
