//! What a run row's `kwargs` hold: everything a worker needs to execute the run, on any
//! replica, after any restart (a field at its default is not written). The input is the engine's own [`DynInput`], checked and
//! normalized by the engine when the run was admitted, and run as it is.

use palgraph::dynamic::DynInput;
use palgraph::{Durability, NodeSet, Resume, StreamMode};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The run's instructions.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct RunSpec {
    /// What the run runs.
    pub input: DynInput,
    /// Run from this checkpoint (fork).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_id: Option<String>,
    /// Optional engine events to produce (`values` costs a state serialization per step).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stream_modes: Vec<StreamMode>,
    /// Steps the run may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recursion_limit: Option<usize>,
    /// Tasks of a step that run at once (`config.max_concurrency`; at most the server's
    /// setting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<usize>,
    /// Run-scoped context for nodes (`user_id` is set by the server).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub context: Map<String, Value>,
    /// LangGraph API options kept for replay (requested stream modes, subgraphs...).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub api: Value,
    /// Breakpoints before nodes (`None`: the graph's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupt_before: Option<NodeSet>,
    /// Breakpoints after nodes (`None`: the graph's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupt_after: Option<NodeSet>,
    /// When each step's checkpoint is stored (`None`: the engine's default, `sync`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durability: Option<Durability>,
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            interrupt_before: None,
            interrupt_after: None,
            durability: None,
            input: DynInput::Continue,
            checkpoint_id: None,
            stream_modes: Vec::new(),
            recursion_limit: None,
            max_concurrency: None,
            context: Map::new(),
            api: Value::Null,
        }
    }
}

/// The spec rows of earlier versions stored: an input value or a command.
#[derive(Deserialize)]
struct Legacy {
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    command: Option<LegacyCommand>,
    #[serde(default)]
    checkpoint_id: Option<String>,
    #[serde(default)]
    stream_modes: Vec<StreamMode>,
    #[serde(default)]
    recursion_limit: Option<usize>,
    #[serde(default)]
    context: Map<String, Value>,
    #[serde(default)]
    api: Value,
}

#[derive(Deserialize)]
struct LegacyCommand {
    #[serde(default)]
    resume: Option<LegacyResume>,
    #[serde(default)]
    update: Option<Value>,
    #[serde(default)]
    goto: Vec<String>,
}

#[derive(Deserialize)]
struct LegacyResume {
    value: Value,
}

impl RunSpec {
    /// Reads a run row's `kwargs` (in this version's shape, or an earlier one's).
    ///
    /// # Errors
    /// When it is neither.
    pub(crate) fn from_kwargs(kwargs: &Value) -> Result<Self, serde_json::Error> {
        // Read in place: the run's kwargs are not copied whole first (this runs for every
        // run, twice).
        if let Ok(spec) = RunSpec::deserialize(kwargs) {
            return Ok(spec);
        }
        let old = Legacy::deserialize(kwargs)?;
        let input = match old.command {
            Some(LegacyCommand {
                resume: Some(r), ..
            }) => DynInput::Resume(Resume::Value(r.value)),
            Some(c) if c.update.is_some() || !c.goto.is_empty() => DynInput::Command {
                update: c.update,
                goto: c.goto,
                sends: Vec::new(),
            },
            _ => match old.input {
                Some(v) if !v.is_null() => DynInput::Turn(v),
                _ => DynInput::Continue,
            },
        };
        Ok(RunSpec {
            input,
            checkpoint_id: old.checkpoint_id,
            stream_modes: old.stream_modes,
            recursion_limit: old.recursion_limit,
            max_concurrency: None,
            context: old.context,
            api: old.api,
            interrupt_before: None,
            interrupt_after: None,
            durability: None,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn kwargs_read_in_this_versions_shape_and_in_earlier_ones() {
        let spec = RunSpec {
            input: DynInput::Turn(json!({"messages": [{"type": "human", "content": "hi"}]})),
            checkpoint_id: Some("c1".into()),
            stream_modes: vec![StreamMode::Values],
            recursion_limit: Some(7),
            context: json!({"user_id": "u"}).as_object().cloned().unwrap(),
            api: json!({"stream_mode": ["values"]}),
            durability: Some(palgraph::Durability::Sync),
            ..RunSpec::default()
        };
        let kwargs = serde_json::to_value(&spec).unwrap();
        let read = RunSpec::from_kwargs(&kwargs).unwrap();
        assert_eq!(serde_json::to_value(&read).unwrap(), kwargs);

        let resume = RunSpec::from_kwargs(&json!({
            "command": {"resume": {"value": "yes"}}, "recursion_limit": 3
        }))
        .unwrap();
        assert!(matches!(resume.input, DynInput::Resume(Resume::Value(ref v)) if v == "yes"));
        assert_eq!(resume.recursion_limit, Some(3));
        let goto = RunSpec::from_kwargs(&json!({"command": {"goto": ["b"]}})).unwrap();
        assert!(matches!(goto.input, DynInput::Command { ref goto, .. } if goto == &["b"]));
        let turn = RunSpec::from_kwargs(&json!({"input": {"x": 1}, "checkpoint_id": "c"})).unwrap();
        assert!(matches!(turn.input, DynInput::Turn(ref v) if v == &json!({"x": 1})));
        assert_eq!(turn.checkpoint_id.as_deref(), Some("c"));
        let cont = RunSpec::from_kwargs(&json!({"input": null})).unwrap();
        assert!(matches!(cont.input, DynInput::Continue));
        assert!(RunSpec::from_kwargs(&json!({"input": 1, "recursion_limit": "x"})).is_err());
    }
}
