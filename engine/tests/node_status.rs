//! Status lines and streamed messages across a node's attempts: a node that reports its
//! own status line (`reports_status`) is not also announced at its start; a retried
//! attempt neither repeats a status line nor appends to the failed attempt's text (the
//! engine resets each message the failed attempt streamed).

use std::sync::Arc;
use std::time::Duration;

use palgraph::stream::VecSink;
use palgraph::testkit::fixtures::{say, thread, Counter, TestState, Upd};
use palgraph::{
    Event, MemoryCheckpointer, NodeContext, NodeError, RetryPolicy, RunConfig, RunStatus,
    StateGraph, StreamModes, END, START,
};
use serde_json::json;

/// The chat-style status lines of a run: NodeStarted lines, then reported ones, in order.
fn status_lines(events: &[Event]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::NodeStarted {
                node,
                status: Some(line),
                ..
            } => Some((node.clone(), line.clone())),
            Event::Status { node, message, .. } => Some((node.clone(), message.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_node_that_reports_its_status_is_not_announced_at_its_start() {
    let mut g = StateGraph::<TestState>::new();
    g.add_node("plain", |_s: Arc<TestState>, _c: NodeContext| async {
        Ok::<_, NodeError>(Upd::default())
    })
    .status("Working...");
    g.add_node(
        "finder",
        |_s: Arc<TestState>, ctx: NodeContext| async move {
            ctx.status("Finding...", json!({"found": ["a"]}));
            Ok::<_, NodeError>(Upd::default())
        },
    )
    .status("Finding...")
    .reports_status();
    g.add_edge(START, "plain");
    g.add_edge("plain", "finder");
    g.add_edge("finder", END);
    let g = g
        .compile()
        .unwrap()
        .with_checkpointer(Arc::new(MemoryCheckpointer::new()));
    assert_eq!(
        g.node_status("finder"),
        Some("Finding..."),
        "the line is still declared"
    );
    let sink = Arc::new(VecSink::default());
    let out = g
        .run(
            RunConfig::new(thread()).stream_modes(StreamModes::ALL),
            say("go"),
            sink.clone(),
        )
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    let events = sink.events();
    assert_eq!(
        status_lines(&events),
        [
            ("plain".to_string(), "Working...".to_string()),
            ("finder".to_string(), "Finding...".to_string())
        ],
        "one line per node"
    );
    let started = events.iter().find_map(|e| match e {
        Event::NodeStarted { node, status, .. } if node == "finder" => Some(status.clone()),
        _ => None,
    });
    assert_eq!(started, Some(None));
    let details = events.iter().find_map(|e| match e {
        Event::Status { details, .. } => Some(details.clone()),
        _ => None,
    });
    assert_eq!(details, Some(json!({"found": ["a"]})));
}

#[tokio::test]
async fn a_retried_attempt_resets_its_text_and_does_not_repeat_its_status() {
    let calls = Counter::default();
    let c = calls.clone();
    let mut g = StateGraph::<TestState>::new();
    g.add_node("writer", move |_s: Arc<TestState>, ctx: NodeContext| {
        let c = c.clone();
        async move {
            ctx.status("Writing...", json!({"web_query": "q"}));
            ctx.message_delta("m1", "Hello ");
            if c.bump() == 1 {
                return Err(NodeError::retryable("the stream broke"));
            }
            ctx.message_delta("m1", "world");
            Ok::<_, NodeError>(Upd::default().log(vec!["Hello world".into()]))
        }
    })
    .status("Writing...")
    .reports_status()
    .retry(
        RetryPolicy::attempts(2)
            .initial_interval(Duration::from_millis(1))
            .no_jitter(),
    );
    g.add_edge(START, "writer");
    g.add_edge("writer", END);
    let g = g
        .compile()
        .unwrap()
        .with_checkpointer(Arc::new(MemoryCheckpointer::new()));
    let sink = Arc::new(VecSink::default());
    let out = g
        .run(
            RunConfig::new(thread()).stream_modes(StreamModes::ALL),
            say("go"),
            sink.clone(),
        )
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(calls.get(), 2);
    let events = sink.events();
    assert_eq!(status_lines(&events).len(), 1, "one status line, not two");
    // What a consumer shows: deltas appended, a reset clearing the message.
    let mut text = String::new();
    let mut resets = 0;
    for e in &events {
        match e {
            Event::MessageDelta { delta, .. } => text.push_str(delta),
            Event::MessageReset { message_id, node } => {
                assert_eq!((message_id.as_str(), node.as_str()), ("m1", "writer"));
                resets += 1;
                text.clear();
            }
            _ => {}
        }
    }
    assert_eq!(resets, 1);
    assert_eq!(text, "Hello world", "no text of the failed attempt remains");
}
