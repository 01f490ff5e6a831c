//! The tool-calling agent's graph: `agent` asks the model, `tools` runs the calls it made
//! (in parallel, each once: through `ctx.step`), and back to `agent` until the model
//! answers without calling a tool.
//!
//! ```text
//! START -> agent -> (tool calls?) -> tools -> agent -> ... -> END
//! ```

use std::collections::BTreeSet;
use std::sync::Arc;

use futures_util::future::join_all;
use palgraph::{
    AddMessages, CompiledGraph, GraphError, Message, MessageKind, NodeContext, NodeError,
    RetryPolicy, State, StateGraph, END, START,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::model::{ChatModel, ModelError, ModelRequest, ToolCall, ToolSpec};
use crate::tool::{result_text, Tool, ToolError};

/// What the agent says when it reaches its limit of model calls in a turn (LangGraph's
/// words).
pub const NEED_MORE_STEPS: &str = "Sorry, need more steps to process this request.";

/// The state of a tool-calling agent.
#[derive(Clone, Default, Debug, Serialize, Deserialize, State)]
pub struct AgentState {
    /// The conversation: the user's messages, the model's answers (an answer's tool calls
    /// in its `metadata.tool_calls`) and the tools' results (`type: "tool"`, the call's id
    /// in `metadata.tool_call_id`).
    #[state(reducer = AddMessages)]
    pub messages: Vec<Message>,
    /// How many times the model was called in this turn.
    #[state(transient)]
    pub model_calls: u32,
}

/// Why an agent could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// Two tools have the same name.
    #[error("two tools are named `{0}`")]
    DuplicateTool(String),
    /// A tool to approve that the agent does not have.
    #[error("`{0}` needs approval but there is no tool of that name")]
    UnknownApproval(String),
    /// The graph did not compile.
    #[error(transparent)]
    Graph(#[from] GraphError),
}

/// Builds a tool-calling agent ([`create_react_agent`] with the defaults).
#[must_use]
pub struct AgentBuilder {
    model: Arc<dyn ChatModel>,
    tools: Vec<Arc<dyn Tool>>,
    system: Option<String>,
    approve: BTreeSet<String>,
    approve_all: bool,
    retry: RetryPolicy,
    max_model_calls: u32,
}

/// The agent's settings, shared by its nodes.
struct Agent {
    model: Arc<dyn ChatModel>,
    tools: Vec<Arc<dyn Tool>>,
    specs: Vec<ToolSpec>,
    system: Option<String>,
    approve: BTreeSet<String>,
    approve_all: bool,
    max_model_calls: u32,
}

impl AgentBuilder {
    /// An agent calling `model`, with no tools yet.
    pub fn new(model: Arc<dyn ChatModel>) -> Self {
        AgentBuilder {
            model,
            tools: Vec::new(),
            system: None,
            approve: BTreeSet::new(),
            approve_all: false,
            retry: RetryPolicy::attempts(3),
            max_model_calls: 12,
        }
    }

    /// Adds a tool (see [`tool`](crate::tool())).
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Adds tools.
    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// The system prompt.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system = Some(prompt.into());
        self
    }

    /// Asks a person before running the tool `name` (human approval): the run stops with
    /// an interrupt listing the calls; resuming with `true` / `"approve"` /
    /// `{"approve": true}` runs them, anything else rejects them (`{"approve": false,
    /// "reason": "..."}` tells the model why).
    pub fn approve(mut self, name: &str) -> Self {
        self.approve.insert(name.to_string());
        self
    }

    /// Asks a person before running any tool.
    pub fn approve_all(mut self) -> Self {
        self.approve_all = true;
        self
    }

    /// How a failed model call is retried (default: 3 attempts for transient errors).
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// The most model calls in one turn (default 12); at the limit the agent answers
    /// [`NEED_MORE_STEPS`] instead of calling the model again.
    pub fn max_model_calls(mut self, n: u32) -> Self {
        self.max_model_calls = n.max(1);
        self
    }

    /// Compiles the agent's graph (on an in-memory checkpointer; a server gives it its own).
    ///
    /// # Errors
    /// [`AgentError`].
    pub fn build(self) -> Result<CompiledGraph<AgentState>, AgentError> {
        let mut names = BTreeSet::new();
        for t in &self.tools {
            let name = t.spec().name;
            if !names.insert(name.clone()) {
                return Err(AgentError::DuplicateTool(name));
            }
        }
        if let Some(missing) = self.approve.iter().find(|n| !names.contains(*n)) {
            return Err(AgentError::UnknownApproval(missing.clone()));
        }
        let max = self.max_model_calls;
        let agent = Arc::new(Agent {
            specs: self.tools.iter().map(|t| t.spec()).collect(),
            model: self.model,
            tools: self.tools,
            system: self.system,
            approve: self.approve,
            approve_all: self.approve_all,
            max_model_calls: max,
        });
        let mut g = StateGraph::<AgentState>::new();
        let a = agent.clone();
        g.add_node("agent", move |s, ctx| call_model(a.clone(), s, ctx))
            .status("Thinking...")
            .retry(self.retry);
        let a = agent.clone();
        g.add_node("tools", move |s, ctx| run_tools(a.clone(), s, ctx))
            .status("Running tools...");
        g.add_edge(START, "agent");
        g.add_conditional_edges("agent", route, ["tools", END]);
        g.add_edge("tools", "agent");
        // Each model call and each tools step is a step of the engine: room for all.
        let graph = g.compile()?.with_recursion_limit(2 * max as usize + 2);
        Ok(graph)
    }
}

/// A tool-calling agent (LangGraph's `create_react_agent`): `model` with `tools`, the
/// defaults of [`AgentBuilder`].
///
/// # Errors
/// [`AgentError`].
pub fn create_react_agent(
    model: Arc<dyn ChatModel>,
    tools: impl IntoIterator<Item = Arc<dyn Tool>>,
) -> Result<CompiledGraph<AgentState>, AgentError> {
    AgentBuilder::new(model).tools(tools).build()
}

/// The tool calls of a message (its `metadata.tool_calls`).
pub fn tool_calls(message: &Message) -> Vec<ToolCall> {
    message
        .metadata
        .get("tool_calls")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

fn route(state: &AgentState) -> &'static str {
    match state.messages.last() {
        Some(m) if m.kind == MessageKind::Ai && !tool_calls(m).is_empty() => "tools",
        _ => END,
    }
}

async fn call_model(
    agent: Arc<Agent>,
    state: Arc<AgentState>,
    ctx: NodeContext,
) -> Result<AgentStateUpdate, NodeError> {
    let id = format!("ai-{}", ctx.task_id());
    if state.model_calls >= agent.max_model_calls {
        let reply = Message::ai(NEED_MORE_STEPS)
            .with_id(id)
            .with_metadata("finished_reason", "max_model_calls");
        return Ok(AgentStateUpdate::default().messages(vec![reply]));
    }
    let request = ModelRequest {
        system: agent.system.as_deref(),
        messages: &state.messages,
        tools: &agent.specs,
    };
    let on_token = |t: &str| ctx.message_delta(&id, t);
    let turn = agent
        .model
        .complete(request, &on_token)
        .await
        .map_err(|e| match e {
            ModelError::Transient(_) => NodeError::retryable(e.to_string()),
            _ => NodeError::fatal(e.to_string()),
        })?;
    let mut reply = Message::ai(turn.content).with_id(id);
    if !turn.tool_calls.is_empty() {
        reply = reply.with_metadata("tool_calls", json!(turn.tool_calls));
    }
    Ok(AgentStateUpdate::default()
        .messages(vec![reply])
        .model_calls(state.model_calls + 1))
}

/// A person's answer to an approval prompt.
fn approved(answer: &Value) -> (bool, Option<String>) {
    let reason = answer
        .get("reason")
        .and_then(Value::as_str)
        .map(str::to_string);
    let yes = match answer {
        Value::Bool(b) => *b,
        Value::String(s) => matches!(
            s.to_ascii_lowercase().as_str(),
            "approve" | "approved" | "yes" | "y" | "ok"
        ),
        Value::Object(o) => o
            .get("approve")
            .or_else(|| o.get("approved"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
        _ => false,
    };
    (yes, reason)
}

async fn run_tools(
    agent: Arc<Agent>,
    state: Arc<AgentState>,
    ctx: NodeContext,
) -> Result<AgentStateUpdate, NodeError> {
    let calls = state.messages.last().map(tool_calls).unwrap_or_default();
    let gated: Vec<&ToolCall> = calls
        .iter()
        .filter(|c| agent.approve_all || agent.approve.contains(&c.name))
        .collect();
    let decision = if gated.is_empty() {
        (true, None)
    } else {
        let listed: Vec<String> = gated
            .iter()
            .map(|c| format!("{}({})", c.name, c.args))
            .collect();
        let answer: Value = ctx.interrupt(json!({
            "interrupt_type": "action_choice",
            "message": format!("Run {}?", listed.join(", ")),
            "options": [{"id": "approve", "label": "Approve"}, {"id": "reject", "label": "Reject"}],
            "tool_calls": gated,
        }))?;
        approved(&answer)
    };
    let ctx = &ctx;
    let runs = calls.iter().map(|call| {
        let gate = agent.approve_all || agent.approve.contains(&call.name);
        let decision = &decision;
        let agent = &agent;
        async move {
            let text = if gate && !decision.0 {
                result_text(&Err(ToolError::Rejected(decision.1.clone())))
            } else {
                match agent.tools.iter().find(|t| t.spec().name == call.name) {
                    None => result_text(&Err(ToolError::Unknown(call.name.clone()))),
                    Some(tool) => {
                        // Recorded once it returns: a resume, retry or recovery of this
                        // node never runs the tool again.
                        let step = format!("tool:{}", call.id);
                        ctx.step(&step, async {
                            Ok::<_, NodeError>(result_text(&tool.call(call.args.clone()).await))
                        })
                        .await?
                    }
                }
            };
            let mut message = Message::tool(text)
                .with_id(format!("tool-{}-{}", ctx.task_id(), call.id))
                .with_metadata("tool_call_id", call.id.clone());
            message.name = Some(call.name.clone());
            Ok::<_, NodeError>(message)
        }
    });
    let messages = join_all(runs)
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    Ok(AgentStateUpdate::default().messages(messages))
}
