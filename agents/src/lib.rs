//! Prebuilt palgraph agents: a tool-calling agent (LangGraph's `create_react_agent` and
//! `ToolNode`) over any [`ChatModel`], built on the engine's public API only.
//!
//! - tools are async Rust functions of a typed argument ([`tool()`]), described to the
//!   model by its JSON schema;
//! - the model's tool calls run in parallel, each through `ctx.step`, so a resume, a retry
//!   or a crash recovery never runs a tool twice;
//! - a tool's error goes back to the model as the call's result;
//! - a model call that fails transiently is retried ([`AgentBuilder::retry`]);
//! - the answer's text streams as message deltas (`messages` stream mode; `token` events
//!   on `/chat`);
//! - [`AgentBuilder::approve`] stops before a tool runs until a person approves it;
//! - [`AgentBuilder::max_model_calls`] bounds a turn.
//!
//! [`from_env`] picks the model: an OpenAI-compatible server with `OPENAI_API_KEY`
//! ([`OpenAiModel`]), else the offline fallback given.
//!
//! ```
//! use std::sync::Arc;
//! use palgraph_agents::{create_react_agent, tool, ModelTurn, ScriptedModel};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add { a: i64, b: i64 }
//!
//! let add = tool("add", "Adds two numbers", |x: Add| async move { Ok::<_, String>(x.a + x.b) });
//! let model = ScriptedModel::turns(vec![
//!     ModelTurn::call("add", serde_json::json!({"a": 2, "b": 3})),
//!     ModelTurn::text("2 + 3 = 5"),
//! ]);
//! let agent = create_react_agent(Arc::new(model), [add]).unwrap();
//! # let _ = agent;
//! ```

mod agent;
mod model;
mod openai;
mod tool;

pub use agent::{
    create_react_agent, tool_calls, AgentBuilder, AgentError, AgentState, AgentStateUpdate,
    NEED_MORE_STEPS,
};
pub use model::{
    last_human, ChatModel, ModelError, ModelRequest, ModelTurn, ScriptedModel, TokenSink, ToolCall,
    ToolSpec,
};
pub use openai::{from_env, OpenAiModel};
pub use tool::{tool, Tool, ToolError};
