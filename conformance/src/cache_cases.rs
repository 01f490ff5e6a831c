//! Node caching (`CachePolicy`), run on any checkpointer: entries live in its storage.

#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;

use crate::send_cases::{JokeState, JokeStateUpdate};
use palgraph::send::Send;
use palgraph::testkit::fixtures::{thread, Counter};
use palgraph::{
    CachePolicy, Checkpointer, CompiledGraph, Event, NodeContext, NodeError, RunConfig, RunInput,
    StateGraph, END, START,
};

fn turn(topic: &str) -> RunInput<JokeState> {
    RunInput::Turn(JokeStateUpdate::default().topic(topic.to_string()))
}

/// START -> expensive -> END, `expensive` counting its runs.
fn expensive(
    cp: Arc<dyn Checkpointer>,
    policy: CachePolicy<JokeState>,
) -> (CompiledGraph<JokeState>, Counter) {
    let runs = Counter::default();
    let r2 = runs.clone();
    let mut g = StateGraph::<JokeState>::new();
    g.add_node("expensive", move |s: Arc<JokeState>, _c: NodeContext| {
        let n = r2.bump();
        let topic = s.topic.clone();
        async move {
            Ok::<_, NodeError>(JokeStateUpdate::default().best(Some(format!("{topic} #{n}"))))
        }
    })
    .cache(policy);
    g.add_edge(START, "expensive");
    g.add_edge("expensive", END);
    let g = g
        .compile()
        .unwrap()
        .with_checkpointer(cp)
        .with_state_cache(0);
    (g, runs)
}

/// Runs a turn and returns the best joke and whether `expensive` came from the cache.
async fn run(g: &CompiledGraph<JokeState>, topic: &str) -> (Option<String>, bool) {
    let mut stream = g.stream(RunConfig::new(thread()), turn(topic));
    let mut cached = None;
    while let Some(e) = stream.next().await {
        if let Event::NodeFinished { cached: c, .. } = e.event {
            cached = Some(c);
        }
    }
    let out = stream.outcome().await.unwrap();
    (out.state.best.clone(), cached.expect("the node finished"))
}

pub async fn a_cached_node_does_not_run_again_for_the_same_input(cp: Arc<dyn Checkpointer>) {
    let (g, runs) = expensive(cp.clone(), CachePolicy::new());
    assert_eq!(run(&g, "cats").await, (Some("cats #1".into()), false));
    // Another thread, the same input: a hit, reported in the stream.
    assert_eq!(run(&g, "cats").await, (Some("cats #1".into()), true));
    assert_eq!(runs.get(), 1);
    assert_eq!(run(&g, "dogs").await, (Some("dogs #2".into()), false));
    // Another graph instance on the same storage (a restart, another replica) hits too.
    let (again, runs2) = expensive(cp, CachePolicy::new());
    assert_eq!(run(&again, "dogs").await, (Some("dogs #2".into()), true));
    assert_eq!(runs2.get(), 0);
}

pub async fn cache_entries_expire_and_custom_keys_apply(cp: Arc<dyn Checkpointer>) {
    let policy = CachePolicy::new()
        .ttl(Duration::from_millis(300))
        .key(|s: &JokeState, _| s.topic.to_lowercase());
    let (g, runs) = expensive(cp, policy);
    assert!(!run(&g, "Cats").await.1, "the first run is a miss");
    assert_eq!(run(&g, "CATS").await, (Some("Cats #1".into()), true));
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(run(&g, "cats").await, (Some("cats #2".into()), false));
    assert_eq!(runs.get(), 2);
}

pub async fn sends_are_cached_by_their_own_input(cp: Arc<dyn Checkpointer>) {
    let runs = Counter::default();
    let r2 = runs.clone();
    let mut g = StateGraph::<JokeState>::new();
    g.add_node("joke", move |_s: Arc<JokeState>, ctx: NodeContext| {
        r2.bump();
        async move {
            let subject: String = ctx.arg()?;
            Ok::<_, NodeError>(JokeStateUpdate::default().jokes(vec![format!("joke {subject}")]))
        }
    })
    .cache(
        CachePolicy::new()
            .key(|_s: &JokeState, arg| arg.map(|a| a.to_string()).unwrap_or_default()),
    );
    g.add_conditional_edges(
        START,
        |s: &JokeState| {
            s.topic
                .split(' ')
                .map(|w| Send::new("joke", w))
                .collect::<Vec<_>>()
        },
        ["joke"],
    );
    g.add_edge("joke", END);
    let g = g
        .compile()
        .unwrap()
        .with_checkpointer(cp)
        .with_state_cache(0);
    let t = thread();
    let out = g.invoke(RunConfig::new(&t), turn("a b c")).await.unwrap();
    assert_eq!(out.state.jokes, vec!["joke a", "joke b", "joke c"]);
    assert_eq!(runs.get(), 3);
    let out = g.invoke(RunConfig::new(&t), turn("c d a")).await.unwrap();
    assert_eq!(runs.get(), 4, "only d ran");
    assert_eq!(
        out.state.jokes[3..],
        ["joke c", "joke d", "joke a"],
        "hits fold in send order like any result"
    );
}
