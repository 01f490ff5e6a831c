//! What each step's checkpoint records of the tasks that ran ([`palgraph::observe`]): timing,
//! attempts, LLM calls, and which tasks resumed, on any checkpointer.

#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::send_cases::{jokes_graph, turn};
use palgraph::checkpoint::now_ms;
use palgraph::observe::{self, LlmCall, TaskRecord, TASKS_KEY};
use palgraph::testkit::fixtures::{build, ok, say, thread, Counter, TestState, Upd};
use palgraph::{
    Checkpointer, ListOptions, NodeContext, NodeError, Resume, RetryPolicy, RunConfig, RunInput,
    RunStatus, StateGraph, END, START,
};

fn call(model: &str, input_tokens: u64) -> LlmCall {
    LlmCall {
        model: model.into(),
        input_tokens,
        output_tokens: 7,
        cost_usd: 0.25,
        duration_ms: 12.5,
    }
}

pub async fn each_step_records_its_tasks_timing_attempts_and_llm_calls(cp: Arc<dyn Checkpointer>) {
    let flaky = Counter::default();
    let f = flaky.clone();
    let mut g = StateGraph::<TestState>::new();
    g.add_node("think", |_s: Arc<TestState>, _c: NodeContext| async move {
        assert!(observe::in_task());
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(observe::llm_call(call("big-model", 900)));
        assert!(observe::llm_call(call("small-model", 10)));
        Ok::<_, NodeError>(Upd::default().log(vec!["think".into()]))
    });
    g.add_node("flaky", move |_s: Arc<TestState>, _c: NodeContext| {
        let f = f.clone();
        async move {
            // Each attempt calls the LLM: the failed attempt's call cost money too.
            observe::llm_call(call("flaky-model", 1));
            if f.bump() < 2 {
                return Err(NodeError::retryable("503"));
            }
            Ok(Upd::default().log(vec!["flaky".into()]))
        }
    })
    .retry(
        RetryPolicy::attempts(3)
            .initial_interval(Duration::from_millis(1))
            .no_jitter(),
    );
    g.add_edge(START, "think");
    g.add_edge("think", "flaky");
    g.add_edge("flaky", END);
    let g = build(g, cp);
    let t = thread();
    assert!(
        !observe::llm_call(call("outside", 1)),
        "nothing is recorded outside a node"
    );
    let before = now_ms();
    ok(&g, RunConfig::new(&t), say("go")).await;
    let after = now_ms();

    let mut history = g
        .get_state_history(&t, &ListOptions::default())
        .await
        .unwrap();
    history.reverse();
    let sources: Vec<_> = history
        .iter()
        .map(|s| s.metadata["source"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(sources, ["input", "loop", "loop"]);
    assert!(
        !history[0].metadata.contains_key(TASKS_KEY),
        "no task ran before the input checkpoint"
    );
    let think = TaskRecord::of_metadata(&history[1].metadata);
    assert_eq!(think.len(), 1, "{think:?}");
    let think = &think[0];
    assert_eq!(think.node, "think");
    assert!(think.started_at_ms >= before && think.started_at_ms <= after);
    assert!(
        think.duration_ms >= 29.0 && think.duration_ms < (after - before + 1) as f64,
        "{think:?}"
    );
    assert_eq!(think.attempts, 1);
    assert!(!think.cached && !think.resumed);
    let models: Vec<_> = think.llm_calls.iter().map(|c| c.model.as_str()).collect();
    assert_eq!(models, ["big-model", "small-model"]);
    assert_eq!(think.llm_calls[0], call("big-model", 900));
    let stored = serde_json::Value::Object(history[1].metadata.clone());
    assert!(
        stored[TASKS_KEY][0].get("attempts").is_none(),
        "defaults are left out: {stored}"
    );

    let flaky_rec = TaskRecord::of_metadata(&history[2].metadata);
    assert_eq!(flaky_rec.len(), 1);
    assert_eq!(flaky_rec[0].node, "flaky");
    assert_eq!(flaky_rec[0].attempts, 2, "one retry");
    assert_eq!(flaky_rec[0].llm_calls.len(), 2, "both attempts' calls");
    assert!(flaky_rec[0].started_at_ms >= think.started_at_ms);
    assert_eq!(flaky.get(), 2);
}

pub async fn a_resumed_step_records_every_task_once(cp: Arc<dyn Checkpointer>) {
    let g = jokes_graph(cp.clone(), 4, move |i, ctx| async move {
        observe::llm_call(call(&format!("joke-{i}"), i));
        if i == 2 {
            let _: bool = ctx.interrupt(json!({"subject": i}))?;
        }
        Ok(())
    });
    let t = thread();
    let out = g.invoke(RunConfig::new(&t), turn("tools")).await.unwrap();
    assert_eq!(out.interrupts().len(), 1);
    let waiting = g.get_state(&t).await.unwrap().unwrap();
    assert_eq!(
        waiting.next,
        vec!["generate_joke"; 4],
        "the map step is not checkpointed while task 2 waits"
    );
    let out = g
        .invoke(RunConfig::new(&t), RunInput::Resume(Resume::value(true)))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed);

    let history = g
        .get_state_history(&t, &ListOptions::default())
        .await
        .unwrap();
    let map_step = history
        .iter()
        .find(|s| {
            TaskRecord::of_metadata(&s.metadata)
                .first()
                .is_some_and(|r| r.node == "generate_joke")
        })
        .expect("the map step's checkpoint");
    let records = TaskRecord::of_metadata(&map_step.metadata);
    assert_eq!(records.len(), 4, "{records:?}");
    assert!(records.iter().all(|r| r.node == "generate_joke"));
    let models: Vec<_> = records
        .iter()
        .map(|r| {
            r.llm_calls
                .iter()
                .map(|c| c.model.clone())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(
        models,
        [
            vec!["joke-0"],
            vec!["joke-1"],
            vec!["joke-2"],
            vec!["joke-3"]
        ],
        "in task order; the finished tasks' records survived the interrupt, task 2 holds only \
         its resumed run's call"
    );
    let resumed: Vec<bool> = records.iter().map(|r| r.resumed).collect();
    assert_eq!(resumed, [false, false, true, false]);
}

pub async fn an_llm_call_in_a_subgraph_counts_for_its_subgraph_node(cp: Arc<dyn Checkpointer>) {
    let mut sub = StateGraph::<TestState>::new();
    sub.add_node("inner", |_s: Arc<TestState>, _c: NodeContext| async move {
        assert!(observe::llm_call(call("inner-model", 5)));
        Ok::<_, NodeError>(Upd::default().log(vec!["inner".into()]))
    });
    sub.add_edge(START, "inner");
    sub.add_edge("inner", END);
    let sub = sub.compile().unwrap();
    let mut g = StateGraph::<TestState>::new();
    g.add_subgraph(
        "outer",
        sub,
        |_s: &TestState| Upd::default(),
        |s: &TestState| Upd::default().log(s.log.clone()),
    );
    g.add_node("plain", |_s: Arc<TestState>, _c: NodeContext| async move {
        Ok::<_, NodeError>(Upd::default())
    });
    g.add_edge(START, "outer");
    g.add_edge("outer", "plain");
    g.add_edge("plain", END);
    let g = build(g, cp);
    let t = thread();
    ok(&g, RunConfig::new(&t), say("go")).await;
    let records: Vec<TaskRecord> = g
        .get_state_history(&t, &ListOptions::default())
        .await
        .unwrap()
        .iter()
        .rev()
        .flat_map(|s| TaskRecord::of_metadata(&s.metadata))
        .collect();
    let nodes: Vec<&str> = records.iter().map(|r| r.node.as_str()).collect();
    assert_eq!(nodes, ["outer", "plain"]);
    assert_eq!(records[0].llm_calls, vec![call("inner-model", 5)]);
    assert!(records[1].llm_calls.is_empty());
}
