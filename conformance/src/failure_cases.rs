//! How runs fail, run on any checkpointer: a panicking node is a panic (not a made-up node
//! error), and a value that does not encode is an encode error (not a decode error).

#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::Arc;

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use palgraph::state::StateError;
use palgraph::testkit::fixtures::*;
use palgraph::{
    Checkpointer, Event, NodeContext, NodeError, RunConfig, RunError, State, StateGraph, END, START,
};

/// A graph whose node `boom` panics while the last message says "fail"; `ack` answers
/// before it, and `side` runs beside it when `parallel`.
fn panicking_graph(
    cp: Arc<dyn Checkpointer>,
    parallel: bool,
) -> palgraph::CompiledGraph<TestState> {
    let mut g = StateGraph::<TestState>::new();
    g.add_node("ack", |s: Arc<TestState>, _c: NodeContext| async move {
        let last = s.messages.last().unwrap().content.clone();
        Ok::<_, NodeError>(Upd::default().log(vec![format!("ack {last}")]))
    });
    g.add_node("boom", |s: Arc<TestState>, _c: NodeContext| async move {
        if s.messages.last().unwrap().content.contains("fail") {
            panic!("kaboom");
        }
        Ok::<_, NodeError>(Upd::default().log(vec!["boom".into()]))
    });
    g.add_edge(START, "ack");
    g.add_edge("ack", "boom");
    g.add_edge("boom", END);
    if parallel {
        g.add_node("side", trail_node("side"));
        g.add_edge("ack", "side");
        g.add_edge("side", END);
    }
    build(g, cp)
}

pub async fn a_panicking_node_fails_the_run_with_a_panic_error(cp: Arc<dyn Checkpointer>) {
    for parallel in [false, true] {
        let g = panicking_graph(cp.clone(), parallel);
        let t = thread();
        ok(&g, RunConfig::new(&t), say("hello")).await;
        let mut stream = g.stream(RunConfig::new(&t), say("please fail"));
        let mut last = None;
        while let Some(e) = stream.next().await {
            last = Some(e.event);
        }
        assert!(
            matches!(last, Some(Event::Failed { node: Some(ref n), .. }) if n == "boom"),
            "the failed event names the node: {last:?}"
        );
        let err = stream.outcome().await.unwrap_err();
        assert!(
            matches!(&err, RunError::Panic { node: Some(n), message } if n == "boom" && message == "kaboom"),
            "{err:?}"
        );
        assert_eq!(err.to_string(), "node `boom` panicked: kaboom");
        assert!(!err.is_refusal() && !err.is_transient());
        let snap = g.get_state(&t).await.unwrap().unwrap();
        let boom = snap.tasks.iter().find(|t| t.name == "boom").unwrap();
        assert_eq!(
            boom.error.as_deref(),
            Some("node panicked: kaboom"),
            "the panic is recorded on the thread"
        );
        let out = ok(&g, RunConfig::new(&t), say("again")).await;
        assert_eq!(
            contents(&out.state.messages),
            vec!["hello", "again"],
            "the panicked turn is not carried forward (parallel: {parallel})"
        );
        assert_eq!(out.state.log.first().map(String::as_str), Some("ack hello"));
        assert!(!out.state.log.contains(&"ack please fail".to_string()));
    }
}

/// A value whose `Serialize` fails while it is `true`.
#[derive(Clone, Copy, Default, Debug, PartialEq, Deserialize)]
pub struct Unencodable(pub bool);

impl Serialize for Unencodable {
    fn serialize<Z: serde::Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        if self.0 {
            return Err(serde::ser::Error::custom("this value refuses to encode"));
        }
        s.serialize_bool(false)
    }
}

/// A state with a field that may refuse to encode.
#[derive(Clone, Default, Debug, PartialEq, Serialize, Deserialize, State)]
pub struct EncodeState {
    /// Refuses to encode once a node sets it.
    pub flaky: Unencodable,
    /// A plain field.
    pub counter: u32,
}

pub async fn a_value_that_does_not_encode_is_an_encode_error(cp: Arc<dyn Checkpointer>) {
    let mut g = StateGraph::<EncodeState>::new();
    g.add_node("count", |s: Arc<EncodeState>, _c: NodeContext| async move {
        Ok::<_, NodeError>(EncodeStateUpdate::default().counter(s.counter + 1))
    });
    g.add_node(
        "spoil",
        |_s: Arc<EncodeState>, _c: NodeContext| async move {
            Ok::<_, NodeError>(EncodeStateUpdate::default().flaky(Unencodable(true)))
        },
    );
    g.add_edge(START, "count");
    g.add_edge("count", "spoil");
    g.add_edge("spoil", END);
    let g = g
        .compile()
        .unwrap()
        .with_checkpointer(cp)
        .with_state_cache(0);
    let t = thread();
    let err = g
        .invoke(
            RunConfig::new(&t),
            palgraph::RunInput::Turn(EncodeStateUpdate::default()),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, RunError::State(StateError::Encode(_))),
        "an encode failure is not a decode failure: {err:?}"
    );
    assert!(err.to_string().contains("does not encode"), "{err}");
    let snap = g.get_state(&t).await.unwrap().unwrap();
    assert_eq!(snap.values.counter, 1, "the last good checkpoint is kept");
    assert_eq!(snap.next, vec!["spoil"]);
}

pub async fn a_settled_failed_turn_keeps_what_it_was_given_and_the_next_turn_follows(
    cp: Arc<dyn Checkpointer>,
) {
    for first_turn_fails in [false, true] {
        let g = panicking_graph(cp.clone(), false);
        let t = thread();
        if !first_turn_fails {
            ok(&g, RunConfig::new(&t), say("hello")).await;
        }
        let run_id = "run-that-failed";
        let err = g
            .invoke(RunConfig::new(&t).run_id(run_id), say("please fail"))
            .await
            .unwrap_err();
        assert!(matches!(err, RunError::Panic { .. }), "{err:?}");
        // Only the failed run's own turn is settled.
        assert_eq!(
            g.settle_failed_turn(&t, "another-run", Upd::default(), None)
                .await
                .unwrap(),
            None
        );
        let kept = Upd::default().messages(vec![
            palgraph::Message::human("please fail"),
            palgraph::Message::ai("half an ans").with_metadata("interrupted", true),
        ]);
        let id = g
            .settle_failed_turn(&t, run_id, kept, None)
            .await
            .unwrap()
            .expect("the failed turn is settled");
        let snap = g.get_state(&t).await.unwrap().unwrap();
        assert_eq!(snap.checkpoint_id, id);
        assert!(snap.next.is_empty(), "nothing is due: {:?}", snap.next);
        assert!(snap.tasks.iter().all(|t| t.error.is_none()));
        let mut expected = if first_turn_fails {
            vec![]
        } else {
            vec!["hello"]
        };
        expected.extend(["please fail", "half an ans"]);
        assert_eq!(contents(&snap.values.messages), expected);
        assert!(
            !snap.values.log.contains(&"ack please fail".to_string()),
            "the failed turn's own writes are not kept"
        );
        // Settled once: a second call changes nothing.
        assert_eq!(
            g.settle_failed_turn(&t, run_id, Upd::default(), None)
                .await
                .unwrap(),
            None
        );
        let out = ok(&g, RunConfig::new(&t), say("again")).await;
        expected.push("again");
        assert_eq!(contents(&out.state.messages), expected);
    }
}
