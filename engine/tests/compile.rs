//! `compile()` refuses bad graphs with an error that names the fault.

use std::sync::Arc;

use palgraph::testkit::fixtures::{trail_node, TestState};
use palgraph::{GraphError, StateGraph, END, START};

fn graph() -> StateGraph<TestState> {
    StateGraph::new()
}

#[test]
fn empty_graph_is_refused() {
    let err = graph().compile().err().expect("refused");
    assert_eq!(err, GraphError::EmptyGraph);
}

#[test]
fn duplicate_node_is_refused() {
    let mut g = graph();
    g.add_node("a", trail_node("a"));
    g.add_node("a", trail_node("a"));
    g.add_edge(START, "a");
    g.add_edge("a", END);
    let err = g.compile().err().expect("refused");
    assert_eq!(err, GraphError::DuplicateNode("a".into()));
    assert_eq!(
        err.to_string(),
        "duplicate node `a`: node names must be unique"
    );
}

#[test]
fn unknown_node_in_an_edge_is_refused() {
    let mut g = graph();
    g.add_node("a", trail_node("a"));
    g.add_edge(START, "a");
    g.add_edge("a", "ghost");
    let err = g.compile().err().expect("refused");
    assert_eq!(err.to_string(), "edge `a` -> `ghost`: unknown node `ghost`");
}

#[test]
fn node_unreachable_from_start_is_refused() {
    let mut g = graph();
    g.add_node("a", trail_node("a"));
    g.add_node("island", trail_node("island"));
    g.add_edge(START, "a");
    g.add_edge("a", END);
    g.add_edge("island", END);
    let err = g.compile().err().expect("refused");
    assert_eq!(err, GraphError::Unreachable("island".into()));
    assert_eq!(err.to_string(), "node `island` is unreachable from START");
}

#[test]
fn node_with_no_path_to_end_is_refused() {
    let mut g = graph();
    g.add_node("a", trail_node("a"));
    g.add_node("sink", trail_node("sink"));
    g.add_edge(START, "a");
    g.add_edge("a", END);
    g.add_edge("a", "sink");
    let err = g.compile().err().expect("refused");
    assert_eq!(err.to_string(), "node `sink` has no path to END");
}

#[test]
fn undeclared_router_target_is_refused() {
    let mut g = graph();
    g.add_node("a", trail_node("a"));
    g.add_edge(START, "a");
    g.add_conditional_edges("a", |_s: &TestState| END, [END, "nowhere"]);
    let err = g.compile().err().expect("refused");
    assert_eq!(
        err,
        GraphError::UndeclaredTarget {
            from: "a".into(),
            target: "nowhere".into()
        }
    );
    assert!(err.to_string().contains("declares target `nowhere`"));
}

#[test]
fn graph_without_entry_is_refused() {
    let mut g = graph();
    g.add_node("a", trail_node("a"));
    g.add_edge("a", END);
    assert_eq!(g.compile().err(), Some(GraphError::NoEntry));
}

#[test]
fn reserved_names_and_bad_edges_are_refused() {
    let mut g = graph();
    g.add_node(END, trail_node("x"));
    assert_eq!(
        g.compile().err(),
        Some(GraphError::ReservedName(END.into()))
    );
    let mut g = graph();
    g.add_node("a", trail_node("a"));
    g.add_edge(START, "a");
    g.add_edge("a", START);
    assert!(matches!(
        g.compile().err(),
        Some(GraphError::EdgeIntoStart(_))
    ));
}

#[test]
fn a_valid_graph_draws_itself_as_mermaid() {
    let mut g = graph();
    g.add_node("intent", trail_node("intent"));
    g.add_node("summarize", trail_node("summarize"));
    g.add_node("inquire", trail_node("inquire"));
    g.add_edge(START, "intent");
    g.add_conditional_edges(
        "intent",
        |s: &TestState| {
            if s.log.is_empty() {
                "inquire"
            } else {
                "summarize"
            }
        },
        ["summarize", "inquire"],
    );
    g.add_edge("summarize", END);
    g.add_edge("inquire", END);
    let compiled = g.compile().expect("valid");
    let m = compiled.mermaid();
    assert!(m.starts_with("flowchart TD"));
    for line in [
        "__start__ --> intent",
        "intent -.-> summarize",
        "intent -.-> inquire",
        "summarize --> __end__",
    ] {
        assert!(m.contains(line), "missing `{line}` in\n{m}");
    }
    let _ = Arc::new(compiled);
}
