//! Subgraphs (`add_subgraph`), run on any checkpointer.

#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::Arc;

use serde_json::json;

use super::fixtures::*;
use super::send_cases::{JokeState, JokeStateUpdate};
use crate::graph::subgraph::namespace;
use crate::{
    Checkpointer, NodeContext, NodeError, Resume, RunConfig, RunInput, RunStatus, StateGraph, END,
    START,
};

pub async fn a_subgraph_runs_as_a_node_and_passes_interrupts_through(cp: Arc<dyn Checkpointer>) {
    // The subgraph: write a joke (a durable step), ask twice, then polish.
    let written = Counter::default();
    let w2 = written.clone();
    let mut sub = StateGraph::<JokeState>::new();
    sub.add_node("write", move |s: Arc<JokeState>, ctx: NodeContext| {
        let w = w2.clone();
        async move {
            let joke = ctx
                .step("llm", async {
                    w.bump();
                    Ok::<_, NodeError>(format!("joke about {}", s.topic))
                })
                .await?;
            Ok(JokeStateUpdate::default().jokes(vec![joke]))
        }
    });
    sub.add_node("ask", |_s: Arc<JokeState>, ctx: NodeContext| async move {
        let first: String = ctx.interrupt(json!({"q": "funny?"}))?;
        let second: String = ctx.interrupt(json!({"q": "really?"}))?;
        Ok::<_, NodeError>(JokeStateUpdate::default().best(Some(format!("{first}/{second}"))))
    });
    sub.add_edge(START, "write");
    sub.add_edge("write", "ask");
    sub.add_edge("ask", END);
    let sub = sub.compile().unwrap();

    // The parent: messages in, the subgraph's verdict out.
    let mut g = StateGraph::<TestState>::new();
    g.add_subgraph(
        "jokes",
        sub.clone(),
        |s: &TestState| {
            JokeStateUpdate::default().topic(
                s.messages
                    .last()
                    .map(|m| m.content.clone())
                    .unwrap_or_default(),
            )
        },
        |s: &JokeState| Upd::default().log(s.jokes.clone()).action(s.best.clone()),
    );
    g.add_node("after", trail_node("after"));
    g.add_edge(START, "jokes");
    g.add_edge("jokes", "after");
    g.add_edge("after", END);
    let g = build(g, cp.clone());
    let t = thread();

    let out = ok(&g, RunConfig::new(&t), say("cats")).await;
    let i = out.interrupts();
    assert_eq!(i.len(), 1);
    assert_eq!(
        (i[0].node.as_str(), &i[0].value),
        ("jokes", &json!({"q": "funny?"}))
    );
    let out = ok(
        &g,
        RunConfig::new(&t),
        RunInput::Resume(Resume::value("yes")),
    )
    .await;
    assert_eq!(out.interrupts()[0].value, json!({"q": "really?"}));
    let out = ok(
        &g,
        RunConfig::new(&t),
        RunInput::Resume(Resume::value("sure")),
    )
    .await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.state.log, vec!["joke about cats", "after"]);
    assert_eq!(out.state.action.as_deref(), Some("yes/sure"));
    assert_eq!(written.get(), 1, "the subgraph's durable step ran once");

    // The subgraph's checkpoints are in the parent's storage, under its namespace.
    let task = g
        .get_state_history(&t, &Default::default())
        .await
        .unwrap()
        .into_iter()
        .find_map(|s| s.tasks.into_iter().find(|t| t.name == "jokes"))
        .unwrap();
    let ns = namespace(&t, "jokes", &task.id);
    let inner = sub.with_checkpointer(cp).with_state_cache(0);
    let snap = inner.get_state(&ns).await.unwrap().unwrap();
    assert!(snap.next.is_empty());
    assert_eq!(snap.values.jokes, vec!["joke about cats"]);
}
