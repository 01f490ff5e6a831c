//! [`Send`]: LangGraph's map-reduce primitive.
//!
//! A router (see [`StateGraph::add_conditional_edges`](crate::StateGraph::add_conditional_edges))
//! or a node (through [`Command::send`](crate::Command::send)) may return a list of sends:
//! each becomes its own task of the next step, running its node with its own input (read
//! with [`NodeContext::arg`](crate::NodeContext::arg)), all of them in parallel. Their
//! updates are folded into the state by the fields' reducers in task order: first the
//! nodes reached by edges (in declaration order), then the sends in the order they were
//! returned. Each finished task's result is recorded as a pending write at once, so an
//! interrupt or a crash in one of N tasks re-runs only the unfinished ones.
//!
//! The type is not re-exported at the crate root, so `use palgraph::*` does not shadow the
//! `Send` trait: name it `palgraph::send::Send`.
//!
//! ```
//! use std::sync::Arc;
//! use palgraph::send::Send;
//! use palgraph::*;
//!
//! #[derive(Clone, Default, Debug, serde::Serialize, serde::Deserialize, State)]
//! struct Jokes {
//!     subjects: Vec<String>,
//!     #[state(reducer = Append)]
//!     jokes: Vec<String>,
//! }
//!
//! async fn joke(_s: Arc<Jokes>, ctx: NodeContext) -> Result<JokesUpdate, NodeError> {
//!     let subject: String = ctx.arg()?;
//!     Ok(JokesUpdate::default().jokes(vec![format!("a joke about {subject}")]))
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let mut g = StateGraph::<Jokes>::new();
//! g.add_node("joke", joke);
//! g.add_conditional_edges(
//!     START,
//!     |s: &Jokes| s.subjects.iter().map(|x| Send::new("joke", x.as_str())).collect::<Vec<_>>(),
//!     ["joke"],
//! );
//! g.add_edge("joke", END);
//! let graph = g.compile()?;
//! let input = JokesUpdate::default().subjects(vec!["cats".into(), "dogs".into()]);
//! let out = graph.invoke(RunConfig::new("t"), RunInput::Turn(input)).await?;
//! assert_eq!(out.state.jokes, ["a joke about cats", "a joke about dogs"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One task to start in the next step: `node`, run with its own input `arg`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Send {
    /// The node to run.
    pub node: String,
    /// Its input (read in the node with [`NodeContext::arg`](crate::NodeContext::arg)).
    pub arg: Value,
}

impl Send {
    /// A send of `arg` to `node`.
    pub fn new(node: impl Into<String>, arg: impl Into<Value>) -> Self {
        Send {
            node: node.into(),
            arg: arg.into(),
        }
    }

    /// A send of any serializable `arg` to `node`.
    ///
    /// # Errors
    /// When `arg` does not serialize to JSON.
    pub fn serialized(
        node: impl Into<String>,
        arg: &impl Serialize,
    ) -> Result<Self, serde_json::Error> {
        Ok(Send {
            node: node.into(),
            arg: serde_json::to_value(arg)?,
        })
    }
}
