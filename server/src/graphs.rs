//! The graphs this server runs, and their default assistants.
//!
//! Every registered graph gets one assistant whose id is derived from the graph's name
//! (a UUIDv5), as LangGraph's server creates a default assistant per graph. Requests may
//! name an assistant by that id or by the graph's name. A graph registered with a chat
//! adapter is also served on `/chat`; the first such graph is the default chat graph.

use std::collections::BTreeMap;
use std::sync::Arc;

use palgraph::dynamic::DynGraph;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::contract::ChatAdapter;

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
    /// JSON schema of its input (the state's update, or a declared input type).
    pub input_schema: Arc<Value>,
    /// JSON schema of what its runs return (the state's, or a declared output type).
    pub output_schema: Arc<Value>,
    /// JSON schema of a run's `context` (an object; a declared context type).
    pub context_schema: Arc<Value>,
    /// Checks a new turn's input against a declared input type (a 422 with its message).
    pub input_check: Option<Check>,
    /// Checks a run's context against a declared context type (a 422 with its message).
    pub context_check: Option<Check>,
    /// The state's fields a run returns (`/runs/wait`, `join`) when an output type is
    /// declared: that type's properties.
    pub output_keys: Option<Arc<Vec<String>>>,
    /// How it speaks the chat contract, if it does.
    pub chat: Option<Arc<dyn ChatAdapter>>,
}

/// A check of a run's JSON (input or context): `Err` is why it is refused.
pub(crate) type Check = Arc<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;

/// The schema of `T` as JSON.
fn schema_of<T: JsonSchema>() -> Value {
    schemars::schema_for!(T).to_value()
}

/// A check that `value` decodes as `T`.
fn decodes_as<T: DeserializeOwned>() -> Check {
    Arc::new(|value: &Value| T::deserialize(value).map(|_| ()).map_err(|e| e.to_string()))
}

/// The registry (shared: cloning it, as every request's state does, copies a pointer).
#[derive(Clone, Default)]
pub struct Graphs {
    entries: Arc<BTreeMap<String, GraphEntry>>,
    default_chat: Option<String>,
}

/// The namespace of assistant ids.
const NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x6ba7b811_9dad_11d1_80b4_00c04fd430c8);

/// The default assistant id of a graph.
pub(crate) fn assistant_id(graph_id: &str) -> String {
    uuid::Uuid::new_v5(&NAMESPACE, graph_id.as_bytes()).to_string()
}

impl GraphEntry {
    /// An entry for `graph` registered as `graph_id`, described by its state's schemas
    /// (`#[derive(State)]` generates them from the fields' types and doc comments): the
    /// state's as state and output schema, its update's as input schema.
    pub fn new(graph_id: &str, description: &str, graph: Arc<dyn DynGraph>) -> Self {
        let state = Arc::new(graph.state_schema());
        GraphEntry {
            graph_id: graph_id.to_string(),
            assistant_id: assistant_id(graph_id),
            description: description.to_string(),
            input_schema: Arc::new(graph.update_schema()),
            output_schema: state.clone(),
            state_schema: state,
            context_schema: Arc::new(serde_json::json!({"type": "object", "properties": {}})),
            input_check: None,
            context_check: None,
            output_keys: None,
            graph,
            chat: None,
        }
    }

    /// Declares the graph's input type (LangGraph's `input_schema`): its schema is the
    /// input schema, and a new turn's input must decode as `I` (422 otherwise) besides being
    /// an update of the state. `I`'s fields should be fields of the state.
    #[must_use]
    pub fn input<I: JsonSchema + DeserializeOwned + 'static>(mut self) -> Self {
        self.input_schema = Arc::new(schema_of::<I>());
        self.input_check = Some(decodes_as::<I>());
        self
    }

    /// Declares the graph's output type (LangGraph's `output_schema`): the schema of what
    /// its runs return, and the fields they return (`/runs/wait` and `join` answer with
    /// `O`'s properties of the state; the thread's state keeps every field).
    #[must_use]
    pub fn output<O: JsonSchema>(mut self) -> Self {
        let schema = schema_of::<O>();
        let keys = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect());
        self.output_keys = keys.map(Arc::new);
        self.output_schema = Arc::new(schema);
        self
    }

    /// Declares the type of a run's `context` (LangGraph's `context_schema`): a run whose
    /// context does not decode as `C` is refused with 422. Nodes read it with
    /// `ctx.context()`.
    #[must_use]
    pub fn context<C: JsonSchema + DeserializeOwned + 'static>(mut self) -> Self {
        self.context_schema = Arc::new(schema_of::<C>());
        self.context_check = Some(decodes_as::<C>());
        self
    }

    /// With the JSON schemas of its state (also its output) and its input.
    #[must_use]
    pub fn schemas(mut self, state: Value, input: Value) -> Self {
        self.state_schema = Arc::new(state);
        self.output_schema = self.state_schema.clone();
        self.input_schema = Arc::new(input);
        self
    }

    /// Served on `/chat` with `adapter`.
    #[must_use]
    pub fn chat(mut self, adapter: Arc<dyn ChatAdapter>) -> Self {
        self.chat = Some(adapter);
        self
    }
}

impl Graphs {
    /// Registers a graph (replacing one of the same name).
    pub fn insert(&mut self, entry: GraphEntry) {
        if entry.chat.is_some() && self.default_chat.is_none() {
            self.default_chat = Some(entry.graph_id.clone());
        }
        Arc::make_mut(&mut self.entries).insert(entry.graph_id.clone(), entry);
    }

    /// Makes `graph_id` the chat graph of new conversations.
    pub fn set_default_chat(&mut self, graph_id: &str) {
        self.default_chat = Some(graph_id.to_string());
    }

    /// A graph by its name or its assistant's id.
    pub fn find(&self, graph_or_assistant: &str) -> Option<&GraphEntry> {
        self.entries.get(graph_or_assistant).or_else(|| {
            self.entries
                .values()
                .find(|e| e.assistant_id == graph_or_assistant)
        })
    }

    /// The graph new chat conversations run.
    pub fn default_chat(&self) -> Option<&GraphEntry> {
        self.default_chat
            .as_deref()
            .and_then(|g| self.entries.get(g))
    }

    /// Every entry, by name.
    pub fn all(&self) -> impl Iterator<Item = &GraphEntry> {
        self.entries.values()
    }
}
