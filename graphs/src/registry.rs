//! The registry naming palgraph's graphs: what a server lists and builds by name.
//!
//! Graphs have different state types, so building one by name gives a
//! [`RegisteredGraph`], an enum with one variant per graph.

use palgraph::{CompiledGraph, GraphError};
use palgraph_nodes::{AgentState, ChatTurn, PalAssistDeps};

use crate::approval::ApprovalState;
use crate::fanout::ReviewState;

/// A registered graph's name and what it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphInfo {
    /// Its name (`palassist`, `approval`, `fanout`).
    pub name: &'static str,
    /// What it does, in a sentence.
    pub description: &'static str,
}

/// Every registered graph, PalAssist first (the default).
pub const GRAPHS: [GraphInfo; 3] = [
    GraphInfo {
        name: crate::palassist::NAME,
        description: "PalAssist, the compliance document assistant: resolves the intent and the documents of a message, asks when unsure, and summarizes, answers, compares or audits with citations.",
    },
    GraphInfo {
        name: "approval",
        description: "A human-approval example: drafts a text, asks a person to approve it with an interrupt, and publishes or revises it.",
    },
    GraphInfo {
        name: "fanout",
        description: "A parallel fan-out/fan-in example: three reviewers read a message at once and a summary joins their findings.",
    },
];

/// The registered names, PalAssist first.
pub fn names() -> impl Iterator<Item = &'static str> {
    GRAPHS.iter().map(|g| g.name)
}

/// The graph called `name`, if registered.
pub fn get(name: &str) -> Option<GraphInfo> {
    GRAPHS.iter().copied().find(|g| g.name == name)
}

/// A built graph of any registered kind.
#[derive(Clone)]
pub enum RegisteredGraph {
    /// PalAssist.
    PalAssist(CompiledGraph<AgentState>),
    /// The human-approval example.
    Approval(CompiledGraph<ApprovalState>),
    /// The fan-out example.
    Fanout(CompiledGraph<ReviewState>),
}

impl RegisteredGraph {
    /// Its Mermaid drawing.
    pub fn mermaid(&self) -> &str {
        match self {
            RegisteredGraph::PalAssist(g) => g.mermaid(),
            RegisteredGraph::Approval(g) => g.mermaid(),
            RegisteredGraph::Fanout(g) => g.mermaid(),
        }
    }

    /// Its node names.
    pub fn node_names(&self) -> Vec<&str> {
        match self {
            RegisteredGraph::PalAssist(g) => g.node_names(),
            RegisteredGraph::Approval(g) => g.node_names(),
            RegisteredGraph::Fanout(g) => g.node_names(),
        }
    }
}

/// Builds the graph called `name`; PalAssist uses `deps`. `None` for an unknown name.
///
/// # Errors
/// The builder's error (never for the registered graphs).
pub fn build(name: &str, deps: &PalAssistDeps) -> Result<Option<RegisteredGraph>, GraphError> {
    Ok(match name {
        crate::palassist::NAME => Some(RegisteredGraph::PalAssist(crate::palassist::graph(
            deps.clone(),
        )?)),
        "approval" => Some(RegisteredGraph::Approval(crate::approval::graph()?)),
        "fanout" => Some(RegisteredGraph::Fanout(crate::fanout::graph()?)),
        _ => None,
    })
}

/// Builds PalAssist with its dependencies (the same as [`crate::palassist::graph`]).
///
/// # Errors
/// The builder's error (never for PalAssist).
pub fn palassist(deps: PalAssistDeps) -> Result<CompiledGraph<AgentState>, GraphError> {
    crate::palassist::graph(deps)
}

/// The JSON schemas of a graph's state and of its chat input, where the graph has them
/// (PalAssist: `AgentState` and `ChatTurn`).
pub fn schemas(name: &str) -> Option<(serde_json::Value, serde_json::Value)> {
    (name == crate::palassist::NAME).then(|| {
        (
            schemars::schema_for!(AgentState).to_value(),
            schemars::schema_for!(ChatTurn).to_value(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn every_name_builds_and_unknown_names_do_not() {
        let deps = PalAssistDeps::new(
            Arc::new(palgraph_nodes::llm::OfflineLlm::new()),
            Arc::new(palgraph_nodes::MemoryDocumentStore::new()),
        );
        let names: Vec<&str> = names().collect();
        assert_eq!(names, ["palassist", "approval", "fanout"]);
        for name in names {
            let g = build(name, &deps).unwrap().unwrap();
            assert!(!g.node_names().is_empty(), "{name}");
            assert!(get(name).is_some());
        }
        assert!(build("nope", &deps).unwrap().is_none());
        let (state, input) = schemas("palassist").unwrap();
        assert!(state["properties"]["conversation_docs"].is_object());
        assert!(input["properties"]["message"].is_object());
        assert!(schemas("fanout").is_none());
    }
}
