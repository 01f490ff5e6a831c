//! The typed fields of a run request whose JSON takes more than one shape: `stream_mode`
//! (a mode or a list), `interrupt_before`/`interrupt_after` (`"*"` or node names),
//! `config` (its counts checked, the rest kept) and `command.goto` (node names and
//! `Send`s). Each is read once, by serde, with the error a client can act on; what depends
//! on the graph (do the nodes exist?) is checked at admission.

use schemars::JsonSchema;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::api::langgraph::translate::Mode;

/// The stream modes asked for: one mode or a list, repeats dropped; none asked: `values`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StreamModes(pub Vec<Mode>);

impl Default for StreamModes {
    fn default() -> Self {
        StreamModes(vec![Mode::Values])
    }
}

impl StreamModes {
    /// The modes named `asked`, validated (none: `values`).
    pub(crate) fn named(asked: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut out: Vec<Mode> = Vec::new();
        for name in asked {
            let m = Mode::parse(&name).ok_or_else(|| {
                format!(
                    "unknown stream_mode `{name}`; one of {}",
                    Mode::ALL.map(Mode::as_str).join(", ")
                )
            })?;
            if !out.contains(&m) {
                out.push(m);
            }
        }
        Ok(if out.is_empty() {
            StreamModes::default()
        } else {
            StreamModes(out)
        })
    }
}

impl<'de> Deserialize<'de> for StreamModes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let asked: Vec<String> = match Value::deserialize(d)? {
            Value::Null => Vec::new(),
            Value::String(s) => vec![s],
            Value::Array(a) => a
                .into_iter()
                .map(|x| match x {
                    Value::String(s) => Ok(s),
                    other => Err(D::Error::custom(format!(
                        "stream_mode entries must be strings, not {other}"
                    ))),
                })
                .collect::<Result<_, _>>()?,
            other => {
                return Err(D::Error::custom(format!(
                    "stream_mode must be a string or a list of strings, not {other}"
                )))
            }
        };
        StreamModes::named(asked).map_err(D::Error::custom)
    }
}

/// How `stream_mode` is described: a mode or a list of them.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub(crate) enum StreamModesSchema {
    /// One mode.
    One(Mode),
    /// Several.
    Many(Vec<Mode>),
}

/// How breakpoints are described: `"*"` (every node) or node names.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub(crate) enum BreakpointsSchema {
    /// Every node.
    All(Star),
    /// These nodes.
    Nodes(Vec<String>),
}

/// `"*"`.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub(crate) enum Star {
    /// Every node.
    #[serde(rename = "*")]
    All,
}

/// A run's `config`: its counts, checked to be positive integers, and everything else
/// (`configurable`, `tags`, ...) as sent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct RunConfigBody {
    /// At most this many steps.
    #[serde(
        default,
        deserialize_with = "positive",
        skip_serializing_if = "Option::is_none"
    )]
    pub recursion_limit: Option<u64>,
    /// At most this many tasks of a step at once.
    #[serde(
        default,
        deserialize_with = "positive",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_concurrency: Option<u64>,
    /// `configurable` (`checkpoint_id`: fork from that checkpoint), `tags`, ...
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl RunConfigBody {
    /// `configurable.checkpoint_id`, when given.
    pub(crate) fn checkpoint_id(&self) -> Option<&str> {
        self.other
            .get("configurable")
            .and_then(|c| c.get("checkpoint_id"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    }
}

/// A positive integer, or null.
fn positive<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if n > 0 => Ok(Some(n)),
            _ => Err(D::Error::custom(format!(
                "must be a positive integer, not {v}"
            ))),
        },
    }
}

/// `command.goto`: node names to run next and `Send`s (a task of a node with its own
/// input), from a name, a `Send`, or a list of them.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Goto {
    /// Nodes to run next.
    pub nodes: Vec<String>,
    /// Tasks with their own input.
    pub sends: Vec<palgraph::send::Send>,
}

impl Goto {
    fn add<E: serde::de::Error>(&mut self, x: Value) -> Result<(), E> {
        match x {
            Value::String(s) => self.nodes.push(s),
            Value::Object(mut o) => {
                let node = match o.remove("node") {
                    Some(Value::String(n)) => n,
                    _ => return Err(E::custom("a Send needs a node (a string)")),
                };
                let input = o.remove("input").unwrap_or(Value::Null);
                self.sends.push(palgraph::send::Send::new(&node, input));
            }
            other => {
                return Err(E::custom(format!(
                    "must be a node name, a Send or a list of them, not {other}"
                )))
            }
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for Goto {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut goto = Goto::default();
        match Value::deserialize(d)? {
            Value::Null => {}
            Value::Array(a) => a.into_iter().try_for_each(|x| goto.add(x))?,
            x => goto.add(x)?,
        }
        Ok(goto)
    }
}

/// How `goto` is described.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub(crate) enum GotoSchema {
    /// A node.
    Node(String),
    /// A task of a node with its own input.
    Send(SendSchema),
    /// Several.
    Many(Vec<GotoItemSchema>),
}

/// A node or a `Send`.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub(crate) enum GotoItemSchema {
    /// A node.
    Node(String),
    /// A task of a node with its own input.
    Send(SendSchema),
}

/// LangGraph's `Send`.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub(crate) struct SendSchema {
    /// The node.
    node: String,
    /// Its input.
    input: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stream_modes_are_read_from_a_name_or_a_list() {
        let read = |v: Value| serde_json::from_value::<StreamModes>(v).map(|m| m.0);
        assert_eq!(read(json!("updates")).unwrap(), vec![Mode::Updates]);
        assert_eq!(
            read(json!(["values", "updates", "values"])).unwrap(),
            vec![Mode::Values, Mode::Updates]
        );
        assert_eq!(read(json!([])).unwrap(), vec![Mode::Values]);
        assert!(read(json!("nope"))
            .unwrap_err()
            .to_string()
            .contains("unknown stream_mode `nope`"));
        assert!(read(json!(5)).is_err());
        assert!(read(json!([1])).is_err());
    }

    #[test]
    fn a_config_keeps_what_it_does_not_read_and_refuses_a_count_of_zero() {
        let c: RunConfigBody = serde_json::from_value(
            json!({"recursion_limit": 5, "configurable": {"checkpoint_id": "c1"}, "tags": ["a"]}),
        )
        .unwrap();
        assert_eq!(c.recursion_limit, Some(5));
        assert_eq!(c.checkpoint_id(), Some("c1"));
        assert_eq!(
            serde_json::to_value(&c).unwrap(),
            json!({"recursion_limit": 5, "configurable": {"checkpoint_id": "c1"}, "tags": ["a"]})
        );
        for bad in [
            json!({"recursion_limit": 0}),
            json!({"max_concurrency": "3"}),
            json!("x"),
        ] {
            assert!(serde_json::from_value::<RunConfigBody>(bad).is_err());
        }
        let none: RunConfigBody = serde_json::from_value(json!({"recursion_limit": null})).unwrap();
        assert_eq!(none.recursion_limit, None);
    }

    #[test]
    fn goto_takes_names_and_sends() {
        let g: Goto =
            serde_json::from_value(json!(["a", {"node": "b", "input": {"x": 1}}])).unwrap();
        assert_eq!(g.nodes, vec!["a".to_string()]);
        assert_eq!(g.sends.len(), 1);
        let one: Goto = serde_json::from_value(json!("a")).unwrap();
        assert_eq!(one.nodes, vec!["a".to_string()]);
        assert!(serde_json::from_value::<Goto>(json!({"input": 1}))
            .unwrap_err()
            .to_string()
            .contains("needs a node"));
        assert!(serde_json::from_value::<Goto>(json!(3)).is_err());
    }
}
