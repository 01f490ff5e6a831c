//! Tools: async Rust functions with a typed argument, described to the model by the JSON
//! schema of that type (schemars).
//!
//! ```
//! use palgraph_agents::tool;
//!
//! /// The city to look up.
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Weather {
//!     /// A city name.
//!     city: String,
//! }
//!
//! let weather = tool("weather", "Today's weather in a city", |a: Weather| async move {
//!     Ok::<_, std::io::Error>(format!("sunny in {}", a.city))
//! });
//! assert_eq!(weather.spec().parameters["properties"]["city"]["type"], "string");
//! ```

use std::fmt::Display;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::model::ToolSpec;

/// Why a tool call failed; the agent hands it to the model as the call's result (a tool
/// message starting with `Error:`), so the model can correct itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The model named a tool the agent does not have.
    #[error("there is no tool named `{0}`")]
    Unknown(String),
    /// The arguments do not fit the tool's argument type.
    #[error("invalid arguments for `{tool}`: {reason}")]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// What does not fit.
        reason: String,
    },
    /// The tool ran and failed.
    #[error("{0}")]
    Failed(String),
    /// A person declined the call.
    #[error("the call was not approved{}", .0.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    Rejected(Option<String>),
}

/// A tool the agent can call.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// Its name, description and argument schema.
    fn spec(&self) -> ToolSpec;

    /// Runs it with `args` (JSON from the model).
    ///
    /// # Errors
    /// [`ToolError`]: returned to the model as the call's result.
    async fn call(&self, args: Value) -> Result<Value, ToolError>;
}

/// The types a function tool is generic over (a function pointer: `Send` and `Sync`).
type Signature<A, R, E, Fut> = PhantomData<fn(A) -> (Fut, R, E)>;

/// A tool made of an async function of a typed argument.
struct FnTool<F, A, R, E, Fut> {
    spec: ToolSpec,
    f: F,
    types: Signature<A, R, E, Fut>,
}

#[async_trait]
impl<A, R, E, F, Fut> Tool for FnTool<F, A, R, E, Fut>
where
    A: DeserializeOwned + Send + 'static,
    R: Serialize + 'static,
    E: Display + 'static,
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, E>> + Send + 'static,
{
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn call(&self, args: Value) -> Result<Value, ToolError> {
        let args: A = serde_json::from_value(args).map_err(|e| ToolError::InvalidArguments {
            tool: self.spec.name.clone(),
            reason: e.to_string(),
        })?;
        let out = (self.f)(args)
            .await
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        serde_json::to_value(out).map_err(|e| ToolError::Failed(e.to_string()))
    }
}

/// A tool named `name`, described by `description`, running `f` with its argument decoded
/// from the model's JSON (the model sees `A`'s JSON schema, doc comments included). What
/// `f` returns is serialized for the model; its error is shown to the model.
pub fn tool<A, R, E, F, Fut>(name: &str, description: &str, f: F) -> Arc<dyn Tool>
where
    A: JsonSchema + DeserializeOwned + Send + 'static,
    R: Serialize + 'static,
    E: Display + 'static,
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, E>> + Send + 'static,
{
    let mut parameters = schemars::schema_for!(A).to_value();
    if let Some(o) = parameters.as_object_mut() {
        o.remove("$schema");
        o.remove("title");
    }
    Arc::new(FnTool {
        spec: ToolSpec {
            name: name.to_string(),
            description: description.to_string(),
            parameters,
        },
        f,
        types: PhantomData,
    })
}

/// The text a tool's result is shown to the model as.
pub(crate) fn result_text(result: &Result<Value, ToolError>) -> String {
    match result {
        Ok(Value::String(s)) => s.clone(),
        Ok(v) => v.to_string(),
        Err(e) => format!("Error: {e}"),
    }
}
