//! The functional API: a workflow written as one async function instead of a graph, as
//! LangGraph's `@entrypoint` / `@task`.
//!
//! [`entrypoint`] turns `async fn(Call<I, O>, NodeContext) -> Result<O, NodeError>` into a
//! [`CompiledGraph`] of one node, so it is checkpointed, streamed, served and resumed like
//! any graph. Inside, [`NodeContext::step`] is LangGraph's `@task`: its result is recorded
//! before it returns and never computed again for this call, across resumes, retries and
//! crashes; [`NodeContext::interrupt`] suspends the call and a resume re-enters the
//! function, whose recorded steps return at once. [`Call::previous`] is what the function
//! returned for the thread's previous call (LangGraph's `previous`).
//!
//! The state is [`FlowState`]: a call's input is the update `{"input": <I>}` (what a
//! server's run takes as its `input`), and the function's result is stored in `output`.
//!
//! ```
//! use palgraph::entrypoint::{entrypoint, Call, FlowStateUpdate};
//! use palgraph::*;
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let essay = entrypoint("essay", |call: Call<String, String>, ctx: NodeContext| async move {
//!     let topic = call.input;
//!     let outline = ctx.step("outline", async { Ok::<_, NodeError>(format!("1. {topic}")) }).await?;
//!     let ok: bool = ctx.interrupt(json!({"outline": outline}))?;
//!     Ok(if ok { format!("An essay on {outline}") } else { "no essay".to_string() })
//! })?;
//! let first = essay.invoke(RunConfig::new("t"), RunInput::Turn(FlowStateUpdate::call(&"tides")?)).await?;
//! assert_eq!(first.interrupts()[0].value, json!({"outline": "1. tides"}));
//! let done = essay.invoke(RunConfig::new("t"), RunInput::Resume(Resume::value(true))).await?;
//! assert_eq!(done.state.output, Some(json!("An essay on 1. tides")));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use std::future::Future;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::NodeContext;
use crate::graph::{CompiledGraph, GraphError, StateGraph, END, START};
use crate::node::NodeError;

/// The state of an [`entrypoint`] workflow.
#[derive(Clone, Default, Debug, Serialize, Deserialize, crate::State)]
pub struct FlowState {
    /// This call's input (JSON of the function's input type).
    #[state(transient)]
    pub input: Value,
    /// What the function returned for the latest call that finished.
    pub output: Option<Value>,
}

impl FlowStateUpdate {
    /// The update that starts a call with `input`.
    ///
    /// # Errors
    /// When `input` does not serialize to JSON.
    pub fn call(input: &impl Serialize) -> Result<Self, serde_json::Error> {
        Ok(FlowStateUpdate::default().input(serde_json::to_value(input)?))
    }
}

/// What an [`entrypoint`] function gets: its input, and what it returned for the thread's
/// previous call.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Call<I, O> {
    /// This call's input.
    pub input: I,
    /// The previous call's result on this thread (`None` on its first call).
    pub previous: Option<O>,
}

/// A workflow of one async function, as a graph of one node named `name` (see
/// [`crate::entrypoint`]).
///
/// # Errors
/// A `name` that cannot be a node (empty, `__start__`, `__end__`).
pub fn entrypoint<I, O, F, Fut>(name: &str, f: F) -> Result<CompiledGraph<FlowState>, GraphError>
where
    I: DeserializeOwned + Send + 'static,
    O: Serialize + DeserializeOwned + Send + 'static,
    F: Fn(Call<I, O>, NodeContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, NodeError>> + Send + 'static,
{
    let f = Arc::new(f);
    let node = name.to_string();
    let mut g = StateGraph::<FlowState>::new();
    g.add_node(name, move |state: Arc<FlowState>, ctx: NodeContext| {
        let (f, node) = (f.clone(), node.clone());
        async move {
            let input = I::deserialize(&state.input).map_err(|e| {
                NodeError::fatal(format!("the input of `{node}` does not fit its type: {e}"))
            })?;
            let previous = match &state.output {
                Some(v) => O::deserialize(v).ok(),
                None => None,
            };
            let out = f(Call { input, previous }, ctx).await?;
            let out = serde_json::to_value(&out).map_err(|e| {
                NodeError::fatal(format!("the result of `{node}` does not encode: {e}"))
            })?;
            Ok::<_, NodeError>(FlowStateUpdate::default().output(Some(out)))
        }
    });
    g.add_edge(START, name);
    g.add_edge(name, END);
    g.compile()
}
