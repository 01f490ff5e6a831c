//! What a run row's `kwargs` hold: everything a worker needs to execute the run, on any
//! replica, after any restart.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use palgraph::StreamMode;

/// A resume value (wrapped so that `null`, a cancel, is a value like any other).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Resumed {
    /// The value; an object keyed by pending interrupt ids answers them by id.
    pub value: Value,
}

/// A LangGraph-style command.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CommandSpec {
    /// Resume pending interrupts.
    #[serde(default)]
    pub resume: Option<Resumed>,
    /// Apply this update.
    #[serde(default)]
    pub update: Option<Value>,
    /// Go to these nodes.
    #[serde(default)]
    pub goto: Vec<String>,
}

/// The run's instructions.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RunSpec {
    /// A new turn's input (JSON of the state's update); `None` with no command continues.
    #[serde(default)]
    pub input: Option<Value>,
    /// A command instead of (or besides) input.
    #[serde(default)]
    pub command: Option<CommandSpec>,
    /// Run from this checkpoint (fork).
    #[serde(default)]
    pub checkpoint_id: Option<String>,
    /// Optional engine events to produce (`values` costs a state serialization per step).
    #[serde(default)]
    pub stream_modes: Vec<StreamMode>,
    /// Steps the run may take.
    #[serde(default)]
    pub recursion_limit: Option<usize>,
    /// Run-scoped context for nodes (`user_id` is set by the server).
    #[serde(default)]
    pub context: Map<String, Value>,
    /// LangGraph API options kept for replay (requested stream modes, subgraphs...).
    #[serde(default)]
    pub api: Value,
}
