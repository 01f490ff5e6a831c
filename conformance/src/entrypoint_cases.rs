//! The functional API (`entrypoint`), run on any checkpointer.

#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use palgraph::entrypoint::{entrypoint, Call, FlowState, FlowStateUpdate};
use palgraph::testkit::fixtures::{ok, thread, Counter};
use palgraph::{
    Checkpointer, CompiledGraph, NodeContext, NodeError, Resume, RunConfig, RunInput, RunStatus,
};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Essay {
    text: String,
    calls: u32,
}

/// outline (a step) -> ask (an interrupt) -> draft (a step that hangs once when `hang`).
fn essay(
    cp: Arc<dyn Checkpointer>,
    outlines: Counter,
    drafts: Counter,
    hang: Arc<AtomicBool>,
) -> CompiledGraph<FlowState> {
    entrypoint(
        "essay",
        move |call: Call<String, Essay>, ctx: NodeContext| {
            let (outlines, drafts, hang) = (outlines.clone(), drafts.clone(), hang.clone());
            async move {
                let topic = call.input;
                let outline: String = ctx
                    .step("outline", async {
                        outlines.bump();
                        Ok::<_, NodeError>(format!("outline of {topic}"))
                    })
                    .await?;
                let tone: String = ctx.interrupt(json!({"outline": outline}))?;
                let text: String = ctx
                    .step("draft", async {
                        drafts.bump();
                        if hang.swap(false, Ordering::SeqCst) {
                            // The process "dies" inside the step.
                            std::future::pending::<()>().await;
                        }
                        Ok::<_, NodeError>(format!("a {tone} essay on {outline}"))
                    })
                    .await?;
                let calls = call.previous.map_or(1, |p| p.calls + 1);
                Ok(Essay { text, calls })
            }
        },
    )
    .unwrap()
    .with_checkpointer(cp)
    .with_state_cache(0)
}

pub async fn an_entrypoint_is_durable_interruptible_and_sees_its_previous_result(
    cp: Arc<dyn Checkpointer>,
) {
    let (outlines, drafts) = (Counter::default(), Counter::default());
    let hang = Arc::new(AtomicBool::new(false));
    let g = essay(cp.clone(), outlines.clone(), drafts.clone(), hang.clone());
    let t = thread();
    let call = |topic: &str| RunInput::Turn(FlowStateUpdate::call(&topic).unwrap());

    let out = ok(&g, RunConfig::new(&t), call("tides")).await;
    assert_eq!(
        out.interrupts()[0].value,
        json!({"outline": "outline of tides"})
    );

    // A crash inside the second step: the first is not computed again.
    hang.store(true, Ordering::SeqCst);
    let (g2, t2) = (g.clone(), t.clone());
    let handle = tokio::spawn(async move {
        g2.invoke(RunConfig::new(&t2), RunInput::Resume(Resume::value("dry")))
            .await
    });
    while drafts.get() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    handle.abort();
    let _ = handle.await;
    // Whoever picks the run up continues it (the resume was recorded).
    let out = ok(&g, RunConfig::new(&t), RunInput::Continue).await;
    assert_eq!(out.status, RunStatus::Completed);
    let essay: Essay = serde_json::from_value(out.state.output.clone().unwrap()).unwrap();
    assert_eq!(
        essay,
        Essay {
            text: "a dry essay on outline of tides".into(),
            calls: 1
        }
    );
    assert_eq!(
        outlines.get(),
        1,
        "the recorded step ran once across the resume and the crash"
    );
    assert_eq!(drafts.get(), 2, "the step the crash stopped ran again");

    // The next call sees the previous result.
    let out = ok(&g, RunConfig::new(&t), call("waves")).await;
    assert_eq!(
        out.interrupts().len(),
        1,
        "{:?} {:?}",
        out.status,
        out.state
    );
    let out = ok(
        &g,
        RunConfig::new(&t),
        RunInput::Resume(Resume::value("wet")),
    )
    .await;
    let essay: Essay = serde_json::from_value(out.state.output.clone().unwrap()).unwrap();
    assert_eq!(essay.calls, 2);
    assert_eq!(essay.text, "a wet essay on outline of waves");
    assert_eq!(outlines.get(), 2);

    // An input that does not fit the function's type fails the call, typed and named.
    let err = g
        .invoke(
            RunConfig::new(&t),
            RunInput::Turn(FlowStateUpdate::default().input(json!({"not": "a string"}))),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("input of `essay`"), "{err}");
}
