//! `POST /threads/{id}/commands`: the commands of the v3 thread-centric streaming protocol
//! (`client.threads.stream()` in both official SDKs, `RemoteGraph.astream_events(version=
//! "v3")`). A command is `{id, method, params}`; the answer `{type: "success", id, result,
//! meta?}` or `{type: "error", id, error, message}`. The events come on
//! `protocol_events::stream_events`.
//!
//! - `run.start` `{assistant_id, input, config?, metadata?}`: a run on the thread (created
//!   when missing; a busy thread queues it, the official default), `{run_id}`;
//! - `input.respond` `{interrupt_id, namespace, response}` or `{responses: [..]}`: resumes
//!   the thread's pending interrupts by id, `{run_id}`;
//! - `state.get` `{namespace, keys?}`: `{values, checkpoint?}`;
//! - `state.listCheckpoints` `{limit?, before?}`: `{checkpoints: [{id, timestamp, step,
//!   node_name?, metadata}]}`;
//! - `agent.getTree`: the root graph and its status (palgraph graphs have no subgraphs).
//!
//! Other methods (`subscription.*`, `input.inject`, `state.fork`) answer `not_supported`.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use palgraph::ListOptions;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::common::{thread_graph, ThreadPath};
use super::models::CreateRun;
use super::runs::start;
use crate::api::admission::{check_uuid, own_thread};
use crate::api::error::{ApiError, ApiResult};
use crate::api::extract::ApiJson;
use crate::api::time::iso;
use crate::api::AppState;
use crate::auth::User;

/// The stream modes a protocol run records, so its stream can carry every channel.
const MODES: [&str; 5] = [
    "values",
    "updates",
    "custom",
    "messages-tuple",
    "checkpoints",
];

/// A protocol command.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub(crate) struct ProtocolCommand {
    /// The client's id for it, echoed in the answer.
    id: Value,
    /// `run.start`, `input.respond`, `state.get`, `state.listCheckpoints`, `agent.getTree`.
    method: String,
    /// Its parameters.
    #[serde(default)]
    params: Value,
}

/// A command the protocol refuses (answered as an error envelope, HTTP 200).
struct Refused {
    code: &'static str,
    message: String,
}

fn refused(code: &'static str, message: impl Into<String>) -> Refused {
    Refused {
        code,
        message: message.into(),
    }
}

/// What a command answers: a result with an optional `applied_through_seq`, a refusal,
/// or an HTTP error (an unknown thread, a busy server, ...).
enum Outcome {
    Done(Value, Option<u64>),
    Refused(Refused),
}

/// `POST /threads/{id}/commands`.
pub(crate) async fn command(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id: id }): Path<ThreadPath>,
    ApiJson(cmd): ApiJson<ProtocolCommand>,
) -> ApiResult<Response> {
    check_uuid(&id, "thread")?;
    let p = &cmd.params;
    let outcome = match cmd.method.as_str() {
        "run.start" => run_start(&state, &user, &id, p).await?,
        "input.respond" => input_respond(&state, &user, &id, p).await?,
        "state.get" => state_get(&state, &user, &id, p).await?,
        "state.listCheckpoints" => list_checkpoints(&state, &user, &id, p).await?,
        "agent.getTree" => agent_tree(&state, &user, &id).await?,
        m @ ("subscription.subscribe"
        | "subscription.unsubscribe"
        | "subscription.reconnect"
        | "input.inject"
        | "state.fork") => Outcome::Refused(refused(
            "not_supported",
            format!("`{m}` is not supported by palgraph: open /threads/{{id}}/stream/events with the channels, or use the REST API"),
        )),
        other => Outcome::Refused(refused(
            "unknown_command",
            format!("unknown command `{other}`"),
        )),
    };
    Ok(match outcome {
        Outcome::Done(result, seq) => {
            let mut body = json!({"type": "success", "id": cmd.id, "result": result});
            if let Some(s) = seq {
                body["meta"] = json!({"applied_through_seq": s});
            }
            Json(body).into_response()
        }
        Outcome::Refused(r) => Json(json!({
            "type": "error", "id": cmd.id, "error": r.code, "message": r.message
        }))
        .into_response(),
    })
}

/// A run for the protocol: every channel recorded, queued behind a busy thread.
fn run_request(mut fields: Map<String, Value>) -> Result<CreateRun, Refused> {
    fields.insert("stream_mode".into(), json!(MODES));
    fields
        .entry("multitask_strategy")
        .or_insert_with(|| json!("enqueue"));
    serde_json::from_value(Value::Object(fields))
        .map_err(|e| refused("invalid_argument", format!("invalid params: {e}")))
}

/// Refusals of a run's request become `invalid_argument` (or `no_such_interrupt`);
/// everything else stays an HTTP error.
fn as_outcome(r: ApiResult<crate::store::Run>, bad: &'static str) -> ApiResult<Outcome> {
    match r {
        Ok(run) => Ok(Outcome::Done(
            {
                super::protocol_events::started_by_command(&run.run_id);
                json!({"run_id": run.run_id})
            },
            Some(run.thread_seq.max(0) as u64 * 1_000_000_000),
        )),
        Err(ApiError::Invalid(m) | ApiError::BadRequest(m)) => {
            Ok(Outcome::Refused(refused(bad, m)))
        }
        Err(e) => Err(e),
    }
}

async fn run_start(state: &AppState, user: &User, id: &str, p: &Value) -> ApiResult<Outcome> {
    let Some(o) = p.as_object() else {
        return Ok(Outcome::Refused(refused(
            "invalid_argument",
            "run.start needs params {assistant_id, input}",
        )));
    };
    let mut fields = Map::new();
    for k in ["assistant_id", "input", "config", "metadata", "context"] {
        if let Some(v) = o.get(k) {
            fields.insert(k.into(), v.clone());
        }
    }
    fields.insert("if_not_exists".into(), json!("create"));
    let req = match run_request(fields) {
        Ok(r) => r,
        Err(r) => return Ok(Outcome::Refused(r)),
    };
    as_outcome(start(state, user, id, &req).await, "invalid_argument")
}

async fn input_respond(state: &AppState, user: &User, id: &str, p: &Value) -> ApiResult<Outcome> {
    let t = own_thread(state, user, id).await?;
    let Some(entry) = thread_graph(state, &t) else {
        return Ok(Outcome::Refused(refused(
            "no_such_interrupt",
            "the thread has no graph, so nothing waits for input",
        )));
    };
    let mut answers = Map::new();
    let one = |x: &Value, answers: &mut Map<String, Value>| -> Option<()> {
        let iid = x.get("interrupt_id")?.as_str()?;
        answers.insert(
            iid.to_string(),
            x.get("response").cloned().unwrap_or(Value::Null),
        );
        Some(())
    };
    match p.get("responses").and_then(Value::as_array) {
        Some(list) => {
            for x in list {
                if one(x, &mut answers).is_none() {
                    return Ok(Outcome::Refused(refused(
                        "invalid_argument",
                        "each response needs an interrupt_id and a response",
                    )));
                }
            }
        }
        None => {
            if one(p, &mut answers).is_none() {
                return Ok(Outcome::Refused(refused(
                    "invalid_argument",
                    "input.respond needs {interrupt_id, namespace, response}",
                )));
            }
        }
    }
    if p.get("update").is_some_and(|u| !u.is_null()) || p.get("goto").is_some_and(|g| !g.is_null())
    {
        return Ok(Outcome::Refused(refused(
            "not_supported",
            "a resume with update or goto is not supported: respond, then update the state",
        )));
    }
    let mut fields = Map::new();
    fields.insert("assistant_id".into(), json!(entry.graph_id));
    fields.insert("command".into(), json!({"resume": answers}));
    for k in ["config", "metadata"] {
        if let Some(v) = p.get(k) {
            fields.insert(k.into(), v.clone());
        }
    }
    let req = match run_request(fields) {
        Ok(r) => r,
        Err(r) => return Ok(Outcome::Refused(r)),
    };
    as_outcome(start(state, user, id, &req).await, "no_such_interrupt")
}

async fn state_get(state: &AppState, user: &User, id: &str, p: &Value) -> ApiResult<Outcome> {
    let t = own_thread(state, user, id).await?;
    let Some(g) = thread_graph(state, &t) else {
        return Ok(Outcome::Done(json!({"values": {}}), None));
    };
    let Some(s) = g.graph.state(id, None).await? else {
        return Ok(Outcome::Done(json!({"values": {}}), None));
    };
    let mut values = s.values.clone();
    if let (Some(keys), Some(o)) = (
        p.get("keys").and_then(Value::as_array),
        values.as_object_mut(),
    ) {
        let keep: Vec<&str> = keys.iter().filter_map(Value::as_str).collect();
        o.retain(|k, _| keep.contains(&k.as_str()));
    }
    Ok(Outcome::Done(
        json!({"values": values, "checkpoint": {"id": s.checkpoint_id, "ns": ""}}),
        None,
    ))
}

async fn list_checkpoints(
    state: &AppState,
    user: &User,
    id: &str,
    p: &Value,
) -> ApiResult<Outcome> {
    let t = own_thread(state, user, id).await?;
    let Some(g) = thread_graph(state, &t) else {
        return Ok(Outcome::Done(json!({"checkpoints": []}), None));
    };
    let limit = p
        .get("limit")
        .and_then(Value::as_u64)
        .unwrap_or(10)
        .clamp(1, 1000) as usize;
    let opts = ListOptions {
        limit: Some(limit),
        before: p.get("before").and_then(Value::as_str).map(str::to_string),
        filter: None,
    };
    let list = g.graph.history(id, &opts).await?;
    let checkpoints: Vec<Value> = list
        .iter()
        .map(|s| {
            let mut c = json!({
                "id": s.checkpoint_id,
                "timestamp": iso(s.created_at_ms),
                "step": s.metadata.get("step").cloned().unwrap_or(json!(0)),
                "metadata": s.metadata,
            });
            if let Some(n) = s.metadata.get("as_node").or_else(|| s.metadata.get("node")) {
                c["node_name"] = n.clone();
            }
            c
        })
        .collect();
    Ok(Outcome::Done(json!({"checkpoints": checkpoints}), None))
}

async fn agent_tree(state: &AppState, user: &User, id: &str) -> ApiResult<Outcome> {
    let t = own_thread(state, user, id).await?;
    let graph = thread_graph(state, &t)
        .map(|g| g.graph_id.clone())
        .unwrap_or_default();
    let status = match t.status.as_str() {
        "busy" => "running",
        "interrupted" => "interrupted",
        "error" => "failed",
        _ => "completed",
    };
    Ok(Outcome::Done(
        json!({"tree": {"namespace": [], "status": status, "graph_name": graph}}),
        None,
    ))
}
