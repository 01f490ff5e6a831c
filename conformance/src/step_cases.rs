//! What a step of several tasks stores as its tasks finish, run on any checkpointer: every
//! result but the last one of a step whose tasks all succeed (its checkpoint holds that one),
//! and every result that finished in a step that stops short.

#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use palgraph::observe::TaskRecord;
use palgraph::testkit::counting::Counting;
use palgraph::testkit::fixtures::*;
use palgraph::{
    Checkpointer, ListOptions, NodeContext, NodeError, RunConfig, RunError, StateGraph, END, START,
};

/// Three reviewers side by side (finishing `slow` last), then `after`; `b` fails while the
/// last message says "fail".
fn three_in_one_step(
    cp: Arc<dyn Checkpointer>,
    runs: Arc<[Counter; 3]>,
) -> palgraph::CompiledGraph<TestState> {
    let mut g = StateGraph::<TestState>::new();
    for (i, (name, delay)) in [("a", 0u64), ("b", 5), ("slow", 40)]
        .into_iter()
        .enumerate()
    {
        let runs = runs.clone();
        g.add_node(name, move |s: Arc<TestState>, _c: NodeContext| {
            let runs = runs.clone();
            async move {
                runs[i].bump();
                tokio::time::sleep(Duration::from_millis(delay)).await;
                if name == "b" && s.messages.last().unwrap().content.contains("fail") {
                    return Err(NodeError::fatal("b refuses"));
                }
                Ok::<_, NodeError>(Upd::default().log(vec![name.to_string()]))
            }
        });
        g.add_edge(START, name);
        g.add_edge(name, "after");
    }
    g.add_node("after", trail_node("after"));
    g.add_edge("after", END);
    build(g, cp)
}

pub async fn a_step_stores_the_results_its_checkpoint_will_not_hold(cp: Arc<dyn Checkpointer>) {
    let counting = Arc::new(Counting::new(cp));
    let writes = || counting.snapshot().1;
    let runs: Arc<[Counter; 3]> = Arc::new(Default::default());
    let g = three_in_one_step(counting.clone(), runs.clone());

    // All three succeed: the two that finish first are stored as they finish; the last is
    // held by the step's checkpoint, with every task's record.
    let t = thread();
    let out = ok(&g, RunConfig::new(&t), say("go")).await;
    assert_eq!(out.state.log, vec!["a", "b", "slow", "after"]);
    assert_eq!(
        writes(),
        2,
        "a's and b's results; slow's is in the checkpoint"
    );
    let history = g
        .get_state_history(&t, &ListOptions::default())
        .await
        .unwrap();
    let step0 = history
        .iter()
        .find(|s| s.metadata.get("step") == Some(&serde_json::json!(0)))
        .expect("the reviewers' checkpoint");
    let recorded: Vec<String> = TaskRecord::of_metadata(&step0.metadata)
        .into_iter()
        .map(|r| r.node)
        .collect();
    for node in ["a", "b", "slow"] {
        assert!(
            recorded.iter().any(|r| r == node),
            "{node} recorded in {recorded:?}"
        );
    }

    // `b` fails: the step stops short, so the results that finished are all stored (a's,
    // slow's, though slow finished last) with b's failure: read back from the checkpointer,
    // whatever order the three finished in.
    let err = g
        .invoke(RunConfig::new(&t), say("please fail"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, RunError::Node { ref node, .. } if node == "b"),
        "{err}"
    );
    let snap = g.get_state(&t).await.unwrap().unwrap();
    let task = |name: &str| snap.tasks.iter().find(|t| t.name == name).unwrap();
    assert_eq!(task("b").error.as_deref(), Some("b refuses"));
    for name in ["a", "slow"] {
        assert!(
            task(name).done && task(name).error.is_none(),
            "{name}'s result is stored: {:?}",
            snap.tasks
        );
    }
    assert_eq!(
        [runs[0].get(), runs[1].get(), runs[2].get()],
        [2, 2, 2],
        "each ran once per turn"
    );
}
