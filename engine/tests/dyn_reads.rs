//! Reads that build less than the whole state: `DynGraph::fields_at` (a few fields of a
//! checkpoint's state, the same as those fields of `values_at`, from memory or from storage,
//! unknown names left out) and `DynGraph::pending_interrupts` (the head's interrupts, the
//! same as `state`'s); and a sink that does not want `updates` gets none built.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use palgraph::dynamic::DynGraph;
use palgraph::testkit::fixtures::{build, say, thread, TestState, Upd};
use palgraph::{MemoryCheckpointer, NodeContext, NodeError, RunConfig, StateGraph, END, START};
use serde_json::{json, Value};

fn graph() -> StateGraph<TestState> {
    let mut g = StateGraph::<TestState>::new();
    g.add_node("count", |s: Arc<TestState>, _ctx: NodeContext| async move {
        Ok::<_, NodeError>(
            Upd::default()
                .log(vec![format!("turn {}", s.counter + 1)])
                .counter(s.counter + 1)
                // A float whose shortest text needs an exact parse to read back the same.
                .confidence(0.000_411_002_999_999_999_95),
        )
    });
    g.add_edge(START, "count");
    g.add_edge("count", END);
    g
}

/// Runs three turns on a thread; returns its last checkpoint's id.
async fn three_turns(g: &palgraph::CompiledGraph<TestState>, t: &str) -> String {
    for text in ["one", "two", "three"] {
        g.invoke(RunConfig::new(t), say(text)).await.unwrap();
    }
    g.get_state(t).await.unwrap().unwrap().checkpoint_id
}

fn project(all: &Value, fields: &[&str]) -> Value {
    Value::Object(
        fields
            .iter()
            .filter_map(|f| all.get(*f).map(|v| ((*f).to_string(), v.clone())))
            .collect(),
    )
}

#[tokio::test]
async fn fields_at_reads_only_the_named_fields_from_storage_and_from_memory() {
    let cp = Arc::new(MemoryCheckpointer::new());
    // No state cache: every read goes to the checkpointer.
    let stored = build(graph(), cp.clone());
    // The default cache: the run's last state is answered from memory.
    let cached = graph().compile().unwrap().with_checkpointer(cp);
    let fields = ["counter", "log", "confidence", "no_such_field"];
    for g in [&stored, &cached] {
        let t = thread();
        let id = three_turns(g, &t).await;
        let all = DynGraph::values_at(g, &t, &id).await.unwrap().unwrap();
        let some = DynGraph::fields_at(g, &t, &id, &fields)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(some, project(&all, &fields));
        assert_eq!(
            some,
            json!({"counter": 3, "log": ["turn 1", "turn 2", "turn 3"],
                   "confidence": 0.000_411_002_999_999_999_95})
        );
        // The conversation is left out (it is not asked for).
        assert!(all.get("messages").is_some());
        assert!(some.get("messages").is_none());
        // A checkpoint the thread does not have.
        assert!(DynGraph::fields_at(g, &t, "no-such-checkpoint", &fields)
            .await
            .unwrap()
            .is_none());
    }
}

/// A sink that wants every mode but `updates`, and keeps what it gets.
#[derive(Default)]
struct NoUpdates(std::sync::Mutex<Vec<palgraph::Event>>);

impl palgraph::EventSink for NoUpdates {
    fn send(&self, event: palgraph::RunEvent) {
        self.0.lock().unwrap().push(event.event);
    }

    fn wants(&self, mode: palgraph::StreamMode) -> bool {
        mode != palgraph::StreamMode::Updates
    }
}

/// A sink that does not want `updates` gets no `NodeFinished` (the engine does not build
/// them: a node's update is serialized only for that mode); the rest of the stream and the
/// state are as before.
#[tokio::test]
async fn a_sink_that_does_not_want_updates_gets_none_built() {
    let g = build(graph(), Arc::new(MemoryCheckpointer::new()));
    let (t, u) = (thread(), thread());
    let sink = Arc::new(NoUpdates::default());
    g.run(RunConfig::new(&t), say("one"), sink.clone())
        .await
        .unwrap();
    let all = Arc::new(palgraph::stream::VecSink::default());
    g.run(RunConfig::new(&u), say("one"), all.clone())
        .await
        .unwrap();
    let kinds = |events: &[palgraph::Event]| -> Vec<&'static str> {
        events
            .iter()
            .map(|e| match e {
                palgraph::Event::NodeStarted { .. } => "started",
                palgraph::Event::NodeFinished { .. } => "finished",
                palgraph::Event::Checkpoint { .. } => "checkpoint",
                palgraph::Event::Completed { .. } => "completed",
                _ => "other",
            })
            .collect()
    };
    let without = sink.0.lock().unwrap().clone();
    let with = all.events();
    assert!(kinds(&with).contains(&"finished"));
    assert!(!kinds(&without).contains(&"finished"));
    let expected: Vec<&str> = kinds(&with)
        .into_iter()
        .filter(|k| *k != "finished")
        .collect();
    assert_eq!(kinds(&without), expected);
    let state = |id: &str| {
        let g = &g;
        let id = id.to_string();
        async move { g.get_state(&id).await.unwrap().unwrap().values.counter }
    };
    assert_eq!(state(&t).await, state(&u).await);
}

/// `pending_interrupts` says what `state` says of the head's interrupts: none for a thread
/// without checkpoints, the prompt while the thread waits at it, none once it is answered.
#[tokio::test]
async fn pending_interrupts_are_the_heads_as_state_says() {
    let asking = || {
        let mut g = StateGraph::<TestState>::new();
        g.add_node("ask", |_s: Arc<TestState>, ctx: NodeContext| async move {
            let answer: String = ctx.interrupt("which one?")?;
            Ok::<_, NodeError>(Upd::default().log(vec![answer]))
        });
        g.add_edge(START, "ask");
        g.add_edge("ask", END);
        g
    };
    let cp = Arc::new(MemoryCheckpointer::new());
    // Read from storage, and from the state cache.
    for g in [
        build(asking(), cp.clone()),
        asking().compile().unwrap().with_checkpointer(cp.clone()),
    ] {
        let t = thread();
        assert!(DynGraph::pending_interrupts(&g, &t)
            .await
            .unwrap()
            .is_empty());
        g.invoke(RunConfig::new(&t), say("go")).await.unwrap();
        let pending = DynGraph::pending_interrupts(&g, &t).await.unwrap();
        let state = DynGraph::state(&g, &t, None).await.unwrap().unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].id, state.interrupts[0].id);
        assert_eq!(pending[0].value, json!("which one?"));
        g.invoke(
            RunConfig::new(&t),
            palgraph::RunInput::Resume(palgraph::Resume::Value(json!("this"))),
        )
        .await
        .unwrap();
        assert!(DynGraph::pending_interrupts(&g, &t)
            .await
            .unwrap()
            .is_empty());
    }
}
