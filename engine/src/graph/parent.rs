//! [`ParentCommand`]: a node inside a subgraph steers its parent graph, as LangGraph's
//! `Command(graph=Command.PARENT, goto=..., update=...)`.
//!
//! A node returns [`Command::to_parent`](crate::Command::to_parent): its subgraph stops
//! there (the node's own update and the rest of the subgraph are dropped), and the parent
//! takes the command as the subgraph node's result: `update` is applied to the parent's
//! state by its reducers (it is the parent's update type, as JSON) and `goto` / `sends`
//! replace the subgraph node's edges in the parent. Like a subgraph's start, the command
//! is recorded as a durable step of the parent's task, so a crash after it never runs the
//! subgraph again.
//!
//! Only a subgraph's *direct* parent receives the command. A graph run on its own (with no
//! parent) fails with this type as its node error's message.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::send::Send;

/// A command for the parent graph (see [`crate::graph::parent`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("a node sent a command to its parent graph, but its graph runs without a parent (Command::to_parent works inside a subgraph)")]
pub struct ParentCommand {
    /// The update for the parent's state (JSON of the parent's update type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<Value>,
    /// Nodes of the parent to run next.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub goto: Vec<String>,
    /// Tasks of the parent to start next.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sends: Vec<Send>,
}

impl ParentCommand {
    /// A command that goes to the parent's node `node`.
    pub fn goto(node: impl Into<String>) -> Self {
        ParentCommand {
            goto: vec![node.into()],
            ..Default::default()
        }
    }

    /// The same command going to `node` too.
    #[must_use]
    pub fn and_goto(mut self, node: impl Into<String>) -> Self {
        self.goto.push(node.into());
        self
    }

    /// The same command starting a task of the parent for `send`.
    #[must_use]
    pub fn send(mut self, send: Send) -> Self {
        self.sends.push(send);
        self
    }

    /// The same command with `update` (the parent's update type) applied to the parent.
    ///
    /// # Errors
    /// When `update` does not serialize to JSON.
    pub fn with_update(mut self, update: &impl Serialize) -> Result<Self, serde_json::Error> {
        self.update = Some(serde_json::to_value(update)?);
        Ok(self)
    }
}
