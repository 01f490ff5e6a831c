//! The served workflow through the official Python `langgraph-sdk`: its declared schemas,
//! parallel branches merged in declaration order, the join's verdict, the run's context,
//! and inputs and contexts refused with 422.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

// One harness for the example crates: a served binary and a Python langgraph-sdk venv.
#[path = "../../test-harness/sdk.rs"]
mod harness;

use std::path::PathBuf;

#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_drives_the_workflow() {
    let s = harness::Served::start(env!("CARGO_BIN_EXE_workflow"), "workflow", &[]).await;
    let sdk = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sdk");
    harness::run_script(&sdk, "flow.py", &[&s.base]).await;
    let _ = std::fs::remove_dir_all(&s.dir);
}
