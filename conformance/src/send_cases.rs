//! Map-reduce with `Send`, run on any checkpointer.

#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use palgraph::send::Send;
use palgraph::testkit::fixtures::{thread, Counter};
use palgraph::{
    Append, Checkpointer, Command, CompiledGraph, NodeContext, NodeError, Resume, RunConfig,
    RunError, RunInput, RunStatus, State, StateGraph, END, START,
};

/// LangGraph's map-reduce example state: a topic, its subjects, a joke per subject.
#[derive(Clone, Default, Debug, PartialEq, Serialize, Deserialize, State)]
pub struct JokeState {
    /// The topic.
    pub topic: String,
    /// The subjects generated from it.
    pub subjects: Vec<String>,
    /// One joke per subject, folded in send order.
    #[state(reducer = Append)]
    pub jokes: Vec<String>,
    /// The joke picked at the end.
    pub best: Option<String>,
}

#[derive(Deserialize)]
struct Subject {
    subject: String,
    index: u64,
}

fn build(g: StateGraph<JokeState>, cp: Arc<dyn Checkpointer>) -> CompiledGraph<JokeState> {
    g.compile()
        .unwrap()
        .with_checkpointer(cp)
        .with_state_cache(0)
}

pub(super) fn turn(topic: &str) -> RunInput<JokeState> {
    RunInput::Turn(JokeStateUpdate::default().topic(topic.to_string()))
}

/// generate_topics -> (Send per subject) generate_joke -> best_joke. Jokes finish in the
/// reverse order of their subjects; `hook` runs in each joke task first.
pub(super) fn jokes_graph<H, F>(
    cp: Arc<dyn Checkpointer>,
    subjects: usize,
    hook: H,
) -> CompiledGraph<JokeState>
where
    H: Fn(u64, NodeContext) -> F + std::marker::Send + Sync + 'static,
    F: std::future::Future<Output = Result<(), NodeError>> + std::marker::Send + 'static,
{
    let hook = Arc::new(hook);
    let mut g = StateGraph::<JokeState>::new();
    g.add_node(
        "generate_topics",
        move |s: Arc<JokeState>, _c: NodeContext| {
            let subjects = (0..subjects).map(|i| format!("{} {i}", s.topic)).collect();
            async move { Ok::<_, NodeError>(JokeStateUpdate::default().subjects(subjects)) }
        },
    );
    g.add_node(
        "generate_joke",
        move |_s: Arc<JokeState>, ctx: NodeContext| {
            let hook = hook.clone();
            async move {
                let input: Subject = ctx.arg()?;
                hook(input.index, ctx.clone()).await?;
                // Later subjects finish first: the fold must not follow finishing order.
                tokio::time::sleep(Duration::from_millis(30u64.saturating_sub(input.index * 3)))
                    .await;
                Ok(JokeStateUpdate::default().jokes(vec![format!("joke about {}", input.subject)]))
            }
        },
    );
    g.add_node("best_joke", |s: Arc<JokeState>, _c: NodeContext| {
        let best = s.jokes.iter().max_by_key(|j| j.len()).cloned();
        async move { Ok::<_, NodeError>(JokeStateUpdate::default().best(best)) }
    });
    g.add_edge(START, "generate_topics");
    g.add_conditional_edges(
        "generate_topics",
        |s: &JokeState| {
            s.subjects
                .iter()
                .enumerate()
                .map(|(i, x)| Send::new("generate_joke", json!({"subject": x, "index": i})))
                .collect::<Vec<_>>()
        },
        ["generate_joke"],
    );
    g.add_edge("generate_joke", "best_joke");
    g.add_edge("best_joke", END);
    build(g, cp)
}

pub async fn map_reduce_jokes_fold_in_send_order(cp: Arc<dyn Checkpointer>) {
    let runs = Counter::default();
    let r2 = runs.clone();
    let g = jokes_graph(cp, 5, move |_i, _c| {
        r2.bump();
        async { Ok(()) }
    });
    let t = thread();
    let out = g.invoke(RunConfig::new(&t), turn("animals")).await.unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    let want: Vec<String> = (0..5).map(|i| format!("joke about animals {i}")).collect();
    assert_eq!(
        out.state.jokes, want,
        "folded in send order, not finishing order"
    );
    assert_eq!(runs.get(), 5, "one task per send");
    // Every joke is as long as the others: `max_by_key` keeps the last.
    assert_eq!(out.state.best.as_deref(), Some("joke about animals 4"));
    // The reduce step ran once, after every joke: its checkpoint follows the map step's.
    let history = g.get_state_history(&t, &Default::default()).await.unwrap();
    let nexts: Vec<Vec<String>> = history.iter().rev().map(|s| s.next.clone()).collect();
    assert_eq!(nexts[0], vec!["generate_topics"]);
    assert_eq!(nexts[1], vec!["generate_joke"; 5]);
    assert_eq!(nexts[2], vec!["best_joke"]);
    assert!(nexts[3].is_empty());
    // A second turn maps again, on the new subjects.
    let out = g.invoke(RunConfig::new(&t), turn("birds")).await.unwrap();
    assert_eq!(out.state.jokes.len(), 10);
    assert_eq!(out.state.jokes[5], "joke about birds 0");
}

pub async fn an_interrupt_in_one_of_ten_sends_reruns_only_that_one(cp: Arc<dyn Checkpointer>) {
    let counts: Arc<Mutex<Vec<usize>>> = Arc::new(Mutex::new(vec![0; 10]));
    let c2 = counts.clone();
    let g = jokes_graph(cp.clone(), 10, move |i, ctx| {
        c2.lock().unwrap()[i as usize] += 1;
        async move {
            if i == 3 {
                let ok: bool = ctx.interrupt(json!({"subject": i}))?;
                if !ok {
                    return Err(NodeError::fatal("refused"));
                }
            }
            Ok(())
        }
    });
    let t = thread();
    let out = g.invoke(RunConfig::new(&t), turn("tools")).await.unwrap();
    let interrupts = out.interrupts().to_vec();
    assert_eq!(interrupts.len(), 1);
    assert_eq!(interrupts[0].value, json!({"subject": 3}));
    assert!(out.state.jokes.is_empty(), "the map step waits for task 3");
    let head = cp.get(&t, None).await.unwrap().unwrap();
    let results = head
        .writes
        .iter()
        .filter(|w| w.channel == "__result__")
        .count();
    assert_eq!(results, 9, "the nine finished tasks are recorded");

    let out = g
        .invoke(RunConfig::new(&t), RunInput::Resume(Resume::value(true)))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    let counts = counts.lock().unwrap().clone();
    let mut want = vec![1; 10];
    want[3] = 2;
    assert_eq!(counts, want, "only task 3 ran again");
    let jokes: Vec<String> = (0..10).map(|i| format!("joke about tools {i}")).collect();
    assert_eq!(out.state.jokes, jokes);
}

pub async fn a_node_sends_with_a_command_and_bad_sends_fail(cp: Arc<dyn Checkpointer>) {
    let mut g = StateGraph::<JokeState>::new();
    g.add_node("split", |s: Arc<JokeState>, _c: NodeContext| {
        let mut cmd = Command::new();
        for (i, w) in s.topic.split(' ').enumerate() {
            cmd = cmd.send(Send::new("shout", json!({"subject": w, "index": i})));
        }
        async move { Ok::<_, NodeError>(cmd) }
    })
    .destinations(["shout"]);
    g.add_node("shout", |_s: Arc<JokeState>, ctx: NodeContext| async move {
        let input: Subject = ctx.arg()?;
        Ok::<_, NodeError>(JokeStateUpdate::default().jokes(vec![input.subject.to_uppercase()]))
    });
    g.add_edge(START, "split");
    g.add_edge("shout", END);
    let g = build(g, cp.clone());
    let out = g
        .invoke(RunConfig::new(thread()), turn("a b c"))
        .await
        .unwrap();
    assert_eq!(out.state.jokes, vec!["A", "B", "C"]);

    // A router sending to a target it did not declare fails the run.
    let mut bad = StateGraph::<JokeState>::new();
    bad.add_node("a", |_s: Arc<JokeState>, _c: NodeContext| async {
        Ok::<_, NodeError>(JokeStateUpdate::default())
    });
    bad.add_node("b", |_s: Arc<JokeState>, ctx: NodeContext| async move {
        // A task not started by a send has no input of its own.
        let err = ctx.arg::<String>().unwrap_err();
        assert!(err.message().contains("not started by a Send"));
        Ok::<_, NodeError>(JokeStateUpdate::default())
    });
    bad.add_edge(START, "a");
    bad.add_edge(START, "b");
    bad.add_conditional_edges("a", |_s: &JokeState| Send::new("b", 1), [END]);
    bad.add_edge("b", END);
    let bad = build(bad, cp);
    let err = bad
        .invoke(RunConfig::new(thread()), turn("x"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, RunError::BadRoute { ref node, ref target } if node == "a" && target == "b"),
        "{err}"
    );
}

pub async fn a_crash_in_one_of_ten_sends_reruns_only_that_one(cp: Arc<dyn Checkpointer>) {
    let counts: Arc<Mutex<Vec<usize>>> = Arc::new(Mutex::new(vec![0; 10]));
    let hang = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let (c2, h2) = (counts.clone(), hang.clone());
    let g = jokes_graph(cp.clone(), 10, move |i, _ctx| {
        c2.lock().unwrap()[i as usize] += 1;
        let stuck = i == 7 && h2.swap(false, std::sync::atomic::Ordering::SeqCst);
        async move {
            if stuck {
                // The process "dies" while task 7 runs.
                std::future::pending::<()>().await;
            }
            Ok(())
        }
    });
    let t = thread();
    let (g2, t2) = (g.clone(), t.clone());
    let handle = tokio::spawn(async move { g2.invoke(RunConfig::new(&t2), turn("pans")).await });
    // Wait until the nine other tasks are recorded against the map step's checkpoint.
    loop {
        let recorded = match cp.get(&t, None).await.unwrap() {
            Some(head) => head
                .writes
                .iter()
                .filter(|w| w.channel == "__result__")
                .count(),
            None => 0,
        };
        if recorded == 9 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    handle.abort();
    let _ = handle.await;
    let out = g
        .invoke(RunConfig::new(&t), RunInput::Continue)
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    let mut want = vec![1; 10];
    want[7] = 2;
    assert_eq!(*counts.lock().unwrap(), want, "only task 7 ran again");
    let jokes: Vec<String> = (0..10).map(|i| format!("joke about pans {i}")).collect();
    assert_eq!(out.state.jokes, jokes);
}

pub async fn a_step_runs_at_most_max_concurrency_tasks_at_once(cp: Arc<dyn Checkpointer>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (r2, m2) = (running.clone(), most.clone());
    let g = jokes_graph(cp, 40, move |_i, _c| {
        let (running, most) = (r2.clone(), m2.clone());
        async move {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            // Each task waits until four ran at once (or a while, if the bound were lower).
            let waited = std::time::Instant::now();
            while most.load(Ordering::SeqCst) < 4 && waited.elapsed() < Duration::from_secs(10) {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            running.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        }
    });
    let out = g
        .invoke(RunConfig::new(thread()).max_concurrency(4), turn("fish"))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    let want: Vec<String> = (0..40).map(|i| format!("joke about fish {i}")).collect();
    assert_eq!(
        out.state.jokes, want,
        "every task ran, folded in send order"
    );
    assert_eq!(
        most.load(Ordering::SeqCst),
        4,
        "four tasks ran at once, never more"
    );
}

pub async fn a_step_over_the_send_limit_fails_and_a_command_over_it_is_refused(
    cp: Arc<dyn Checkpointer>,
) {
    let g = jokes_graph(cp, 12, |_i, _c| async { Ok(()) }).with_max_sends_per_step(10);
    let t = thread();
    let err = g
        .invoke(RunConfig::new(&t), turn("cats"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            RunError::SendLimit { source_name, planned: 12, limit: 10 } if source_name == "generate_topics"
        ),
        "{err}"
    );
    assert!(!err.is_refusal(), "the run had started: it failed");
    // A run's own limit replaces the graph's.
    let out = g
        .invoke(
            RunConfig::new(thread()).max_sends_per_step(12),
            turn("dogs"),
        )
        .await
        .unwrap();
    assert_eq!(out.state.jokes.len(), 12);

    // A command sending more than the limit is refused before anything is written.
    let sends = Command::new();
    let sends = (0..11).fold(sends, |c, i| {
        c.send(Send::new(
            "generate_joke",
            json!({"subject": "x", "index": i}),
        ))
    });
    let t = thread();
    let before = g.checkpointer().head(&t).await.unwrap();
    let err = g
        .invoke(RunConfig::new(&t), RunInput::Command(sends))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RunError::SendLimit { planned: 11, .. }) && err.is_refusal(),
        "{err}"
    );
    assert_eq!(g.checkpointer().head(&t).await.unwrap(), before);
}
