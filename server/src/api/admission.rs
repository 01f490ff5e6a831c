//! Run admission: the one place a run is let in, for the chat contract and the LangGraph
//! API alike. It finds (or creates) the caller's thread, keeps a thread on the graph whose
//! state it holds, checks a fork's checkpoint and the run's input with the rules the engine
//! runs it by, then creates the run under the thread's lock with its multitask strategy and
//! idempotency key. A refused run changes nothing. A run from the head of a thread that may
//! exist (not a fork, not a resume) is created without reading the thread first: the create
//! checks the thread's owner and graph under its lock, and only a thread last run with
//! another graph is read and decided here.

use palgraph::dynamic::DynInput;
use serde_json::{json, Map, Value};

use super::error::{ApiError, ApiResult};
use super::AppState;
use crate::auth::User;
use crate::graphs::GraphEntry;
use crate::runs::spec::RunSpec;
use crate::store::{CreatedRun, MultitaskStrategy, NewRun, StoreError, Thread};

/// Whose thread a run goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ThreadRule {
    /// It must exist and be the caller's (404 otherwise).
    Existing,
    /// Created when missing (LangGraph's `if_not_exists: create`).
    CreateIfMissing,
    /// The id was minted for this request: create it without looking it up.
    New,
}

/// A run asked for.
pub(crate) struct Admit<'a> {
    /// The caller.
    pub(crate) user: &'a User,
    /// The thread (a UUID; checked).
    pub(crate) thread_id: &'a str,
    /// Whose thread it is.
    pub(crate) thread: ThreadRule,
    /// The graph that runs.
    pub(crate) graph: &'a GraphEntry,
    /// What it runs.
    pub(crate) input: DynInput,
    /// Run from this checkpoint (fork) instead of the thread's latest.
    pub(crate) checkpoint_id: Option<String>,
    /// What to do when the thread is busy.
    pub(crate) multitask: MultitaskStrategy,
    /// A retried request with the same key returns the same run.
    pub(crate) idempotency_key: Option<String>,
    /// Caller metadata of the run.
    pub(crate) metadata: Map<String, Value>,
    /// Everything else the worker needs (stream modes, recursion limit, context, the API's
    /// options); its input and checkpoint are set here.
    pub(crate) spec: RunSpec,
}

/// Checks that `id` is a UUID: 422 otherwise, in the official server's words ("Invalid
/// thread ID: must be a UUID" for `what` = "thread"), followed by the id given.
pub(crate) fn check_uuid(id: &str, what: &str) -> ApiResult<()> {
    uuid::Uuid::parse_str(id)
        .map(|_| ())
        .map_err(|_| ApiError::Invalid(format!("Invalid {what} ID: must be a UUID (got `{id}`)")))
}

/// A thread id made by the server: a UUIDv7, time-ordered like run and checkpoint ids, so a
/// new thread's rows go to the right-hand edge of every index that begins with the thread id
/// (`threads`, `runs`, `checkpoints`, `checkpoint_writes`, `checkpoint_fences`) instead of a
/// random page of it: the pages a load touches stay few and cached however many threads the
/// database holds (a random v4 id would have every new thread read and dirty a leaf page of
/// each of those indexes, more of them out of the buffer cache as the tables grow). Its 74
/// random bits keep it unguessable; whose thread it is is checked on every request anyway.
/// Ids a client chooses are kept as given.
pub(crate) fn new_thread_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// The owner's thread, or 404 (also when it belongs to someone else).
pub(crate) async fn own_thread(
    state: &AppState,
    user: &User,
    thread_id: &str,
) -> ApiResult<Thread> {
    check_uuid(thread_id, "thread")?;
    state
        .store
        .get_thread(&user.id, thread_id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("thread `{thread_id}`")))
}

/// Lets a run in (see the module docs).
pub(crate) async fn admit(state: &AppState, mut a: Admit<'_>) -> ApiResult<CreatedRun> {
    check_uuid(a.thread_id, "thread")?;
    let (user, rule, graph) = (a.user, a.thread, a.graph);
    // A run from the head of a thread that may exist, with input whose check reads no
    // checkpoint (anything but a resume): the create checks the thread itself, in the same
    // transaction (its owner, the graph it last ran), one round trip where a read and then
    // the create were two. Only a thread last run with another graph takes the long way,
    // which decides whether it may change graphs.
    if rule != ThreadRule::New
        && a.checkpoint_id.is_none()
        && !matches!(a.input, DynInput::Resume(_))
    {
        check_declared(graph, &a.input, &a.spec.context)?;
        let input = std::mem::replace(&mut a.input, DynInput::Continue);
        let input = graph.graph.check_input(a.thread_id, None, input).await?;
        let mut new = new_run(a, input)?;
        new.new_thread = (rule == ThreadRule::CreateIfMissing).then(|| new_thread(&new));
        new.check_thread = true;
        return match state.runs.create(&mut new).await {
            Err(StoreError::OtherGraph(_)) => admit_read(state, user, rule, graph, new).await,
            created => Ok(created?),
        };
    }
    let existing = match rule {
        ThreadRule::New => None,
        rule => match state.store.get_thread_any(a.thread_id).await? {
            Some(t) if t.owner != user.id => {
                return Err(ApiError::NotFound(format!("thread `{}`", a.thread_id)))
            }
            Some(t) => Some(t),
            None if rule == ThreadRule::CreateIfMissing => None,
            None => return Err(ApiError::NotFound(format!("thread `{}`", a.thread_id))),
        },
    };
    if let Some(t) = &existing {
        same_graph(state, t, graph).await?;
    }
    check_declared(graph, &a.input, &a.spec.context)?;
    // A new thread has no checkpoint to fork and nothing to resume.
    if let (None, Some(cp)) = (&existing, &a.checkpoint_id) {
        return Err(ApiError::NotFound(format!(
            "checkpoint `{cp}` of thread `{}`",
            a.thread_id
        )));
    }
    let input = std::mem::replace(&mut a.input, DynInput::Continue);
    let input = graph
        .graph
        .check_input(a.thread_id, a.checkpoint_id.as_deref(), input)
        .await?;
    let mut new = new_run(a, input)?;
    // A new thread is made in the run's own transaction.
    if existing.is_none() {
        new.new_thread = Some(new_thread(&new));
    }
    Ok(state.runs.create(&mut new).await?)
}

/// The long way for a run whose checked create found its thread last run with another
/// graph: the thread read, its graph decided by [`same_graph`], then the run created
/// unchecked (or on a new thread, if it was deleted meanwhile and may be created).
async fn admit_read(
    state: &AppState,
    user: &User,
    rule: ThreadRule,
    graph: &GraphEntry,
    mut new: NewRun,
) -> ApiResult<CreatedRun> {
    new.check_thread = false;
    match state.store.get_thread_any(&new.thread_id).await? {
        Some(t) if t.owner == user.id => {
            same_graph(state, &t, graph).await?;
            new.new_thread = None;
        }
        None if rule == ThreadRule::CreateIfMissing => {}
        _ => return Err(ApiError::NotFound(format!("thread `{}`", new.thread_id))),
    }
    Ok(state.runs.create(&mut new).await?)
}

/// The run `a` asks for, with its `input` (checked): no thread to create and the thread not
/// checked until set.
fn new_run(a: Admit<'_>, input: DynInput) -> ApiResult<NewRun> {
    let mut spec = a.spec;
    spec.input = input;
    spec.checkpoint_id = a.checkpoint_id;
    spec.context
        .insert("user_id".into(), a.user.id.clone().into());
    Ok(NewRun {
        run_id: uuid::Uuid::now_v7().to_string(),
        thread_id: a.thread_id.to_string(),
        owner: a.user.id.clone(),
        assistant_id: a.graph.assistant_id.clone(),
        graph_id: a.graph.graph_id.clone(),
        kwargs: serde_json::to_value(spec).map_err(ApiError::internal)?,
        metadata: Value::Object(a.metadata),
        multitask_strategy: a.multitask,
        idempotency_key: a.idempotency_key,
        trace_context: crate::telemetry::current_traceparent(),
        new_thread: None,
        check_thread: false,
        claim: None,
    })
}

/// The thread a run on a new thread creates with it: idle until the run makes it busy, its
/// metadata the run's graph.
fn new_thread(run: &NewRun) -> Thread {
    let now = crate::store::now_ms();
    Thread {
        thread_id: run.thread_id.clone(),
        owner: run.owner.clone(),
        metadata: json!({"graph_id": run.graph_id, "assistant_id": run.assistant_id}),
        status: "idle".into(),
        created_at_ms: now,
        updated_at_ms: now,
    }
}

/// Checks a new turn's input and the run's context against the types the graph declared
/// (`GraphEntry::input`, `GraphEntry::context`): 422 with what does not fit.
fn check_declared(
    graph: &GraphEntry,
    input: &DynInput,
    context: &Map<String, Value>,
) -> ApiResult<()> {
    if let (Some(check), DynInput::Turn(v)) = (&graph.input_check, input) {
        check(v).map_err(|e| {
            ApiError::Invalid(format!("input does not fit the graph's input schema: {e}"))
        })?;
    }
    if let Some(check) = &graph.context_check {
        let mut ctx = context.clone();
        ctx.remove("user_id");
        ctx.remove("client_turn_id");
        check(&Value::Object(ctx)).map_err(|e| {
            ApiError::Invalid(format!(
                "context does not fit the graph's context schema: {e}"
            ))
        })?;
    }
    Ok(())
}

/// A thread keeps the graph whose state it holds (409 `graph_mismatch` otherwise).
async fn same_graph(state: &AppState, t: &Thread, graph: &GraphEntry) -> ApiResult<()> {
    let Some(other) = t
        .metadata
        .get("graph_id")
        .and_then(Value::as_str)
        .filter(|g| *g != graph.graph_id)
        .and_then(|g| state.graphs.find(g))
    else {
        return Ok(());
    };
    // Whether the other graph has a checkpoint on the thread: its head's id, not its state
    // (which would be read and built whole, the conversation's history with it).
    let has_state = other
        .graph
        .checkpointer()
        .head(&t.thread_id)
        .await?
        .is_some();
    let active = state
        .store
        .active_runs(&t.thread_id)
        .await?
        .iter()
        .any(|r| r.graph_id != graph.graph_id);
    if has_state || active {
        return Err(ApiError::Conflict {
            code: "graph_mismatch",
            message: format!(
                "thread `{}` holds the state of graph `{}`; run `{}` on a new thread",
                t.thread_id, other.graph_id, graph.graph_id
            ),
        });
    }
    Ok(())
}
