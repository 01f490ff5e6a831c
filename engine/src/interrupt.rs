//! Interrupts and the values that resume them.
//!
//! A node calls `ctx.interrupt(payload)?`: the first time, the run stops with
//! [`Event::Interrupted`](crate::Event::Interrupted) and the payload is saved with the
//! checkpoint. [`RunInput::Resume`](crate::RunInput::Resume) re-enters the same node from its
//! top; this time `interrupt` returns the resume value. Several interrupts in one node are
//! matched by order; interrupts in parallel branches are answered by id
//! ([`Resume::ById`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A pending interrupt, as reported to callers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct InterruptInfo {
    /// Unique on its thread; answer it by this id.
    pub id: String,
    /// The payload the node gave.
    pub value: Value,
    /// The node that raised it.
    pub node: String,
    /// The task that raised it.
    pub task_id: String,
    /// Its position among the interrupts of its task (0, 1, ...).
    pub index: i64,
    /// The JSON Schema of the value that answers it, when the node gave one
    /// ([`NodeContext::interrupt_with_schema`](crate::NodeContext::interrupt_with_schema)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<Value>,
}

/// Values for pending interrupts.
///
/// In JSON (externally tagged): `{"value": <any JSON>}` or
/// `{"by_id": {"<interrupt id>": <any JSON>, ...}}`.
///
/// A `Value` that is a non-empty JSON object whose keys all have the form of interrupt ids
/// answers those interrupts by id (LangGraph's form of `Command(resume={id: value})`): the
/// run takes it as `ById`, and [`crate::CompiledGraph::check_input`] returns it as `ById`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resume {
    /// Answers the only pending interrupt (refused when several are pending).
    Value(Value),
    /// Answers interrupts by id.
    ById(BTreeMap<String, Value>),
}

impl Resume {
    /// A resume with one value.
    pub fn value(v: impl Serialize) -> Self {
        Resume::Value(serde_json::to_value(v).unwrap_or(Value::Null))
    }
}
