//! The graphs this server runs, and their default assistants.
//!
//! Every registered graph gets one assistant whose id is derived from the graph's name
//! (a UUIDv5), as LangGraph's server creates a default assistant per graph. Requests may
//! name an assistant by that id or by the graph's name.

use std::collections::BTreeMap;
use std::sync::Arc;

use palgraph::dynamic::DynGraph;
use serde_json::Value;

/// A graph and its default assistant.
#[derive(Clone)]
pub struct GraphEntry {
    /// The graph's name (`graph_id`).
    pub graph_id: String,
    /// The default assistant's id.
    pub assistant_id: String,
    /// What it does.
    pub description: String,
    /// The graph.
    pub graph: Arc<dyn DynGraph>,
    /// JSON schema of its state (`values`); shared, so an entry is cheap to clone.
    pub state_schema: Arc<Value>,
    /// JSON schema of its input (the state's update).
    pub input_schema: Arc<Value>,
}

/// The registry (shared: cloning it, as every request's state does, copies a pointer).
#[derive(Clone, Default)]
pub struct Graphs {
    entries: Arc<BTreeMap<String, GraphEntry>>,
}

/// The namespace of assistant ids.
const NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x6ba7b811_9dad_11d1_80b4_00c04fd430c8);

/// The default assistant id of a graph.
pub fn assistant_id(graph_id: &str) -> String {
    uuid::Uuid::new_v5(&NAMESPACE, graph_id.as_bytes()).to_string()
}

impl Graphs {
    /// Adds a graph.
    pub fn add(
        &mut self,
        graph_id: &str,
        description: &str,
        graph: Arc<dyn DynGraph>,
        state_schema: Value,
        input_schema: Value,
    ) {
        Arc::make_mut(&mut self.entries).insert(
            graph_id.to_string(),
            GraphEntry {
                graph_id: graph_id.to_string(),
                assistant_id: assistant_id(graph_id),
                description: description.to_string(),
                graph,
                state_schema: Arc::new(state_schema),
                input_schema: Arc::new(input_schema),
            },
        );
    }

    /// A graph by its name or its assistant's id.
    pub fn find(&self, graph_or_assistant: &str) -> Option<&GraphEntry> {
        self.entries.get(graph_or_assistant).or_else(|| {
            self.entries
                .values()
                .find(|e| e.assistant_id == graph_or_assistant)
        })
    }

    /// Every entry, by name.
    pub fn all(&self) -> impl Iterator<Item = &GraphEntry> {
        self.entries.values()
    }
}
