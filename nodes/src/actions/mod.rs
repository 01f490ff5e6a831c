//! The four action nodes, [`summarize()`], [`inquire()`], [`compare()`] and [`audit()`], and what
//! they share: load the resolved documents (the caller's only), choose the passages the
//! answer may use (each action its own way), stream the LLM's answer to the run's event
//! stream as `message_delta`s of the assistant message it appends, and cite the passages
//! the answer's `[n]` markers point to (markers of passages it was not given are dropped),
//! and record what made the answer (`answered_by`).
//!
//! The answer is produced inside the durable step `answer`, so a re-entered node never
//! asks again. A stream that breaks (a transient [`LlmError`], e.g. a truncated stream) fails
//! the node with a retryable error: the graph's [`retry_policy`] writes the answer again
//! (the engine resets the streamed text), then the run fails.
//!
//! Each action reports its status line itself, once, as it starts
//! ([`Action::status_line`], declared with `reports_status`), with `web_query` only when the
//! answer really searches the web ([`Llm::searches_web`]).
//!
//! The answer's message carries `action`, `answered_by`, `citations`, `doc_ids`,
//! `retrieval_confidence` and `inference_confidence` (`high|medium|low`, see
//! [`crate::confidence`]), `confidence_score` (the 0..1 retrieval score) and
//! `finished_reason` (the LLM's `finish_reason`, `stop` when it reports none). When the run
//! is cancelled mid-answer, the action stops and keeps the partial text as its message,
//! marked `interrupted: true`, `interrupted_reason` (`user_cancelled`, `superseded`,
//! `disconnect`), `stream_run_id` (the run), `client_turn_id` (from the run's context, when
//! the server put one there) and `finished_reason: "cancelled"`.

pub mod audit;
pub mod compare;
pub mod inquire;
pub mod summarize;

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use palgraph::{Message, NodeContext, NodeError, RetryPolicy};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::analysis::Analysis;
use crate::confidence::{self, Confidence};
use crate::conversation::{recent_lines, request_text};
use crate::deps::{user_id, PalAssistDeps};
use crate::library::Entry;
use crate::llm::{AnswerChunk, AnswerRequest, Llm, LlmError, Usage};
use crate::passages::{cited, strip_unknown_markers, Passage};
use crate::state::{Action, AgentState, AgentStateUpdate};
use crate::text::asks_for_library;
use crate::versions::{self, Versions};

pub use audit::audit;
pub use compare::compare;
pub use inquire::inquire;
pub use summarize::summarize;

/// How many earlier messages an answer sees.
const HISTORY: usize = 4;

/// How many times an action writes its answer when the LLM's stream breaks (a transient
/// failure once the stream has started: a truncated stream, a silent one, a reset
/// connection). Failures before the stream starts are already retried by the LLM client.
pub const ANSWER_ATTEMPTS: u32 = 2;

/// The retry policy of the action nodes: [`ANSWER_ATTEMPTS`] attempts, retryable errors
/// only, half a second apart.
pub fn retry_policy() -> RetryPolicy {
    RetryPolicy::attempts(ANSWER_ATTEMPTS).initial_interval(Duration::from_millis(500))
}

/// `finished_reason` of an answer cut short by a cancel.
pub const CANCELLED: &str = "cancelled";

/// What an action chooses its passages from.
pub(crate) struct Inputs<'a> {
    /// The resolved documents, in order, as the library lists them.
    pub(crate) entries: &'a [&'a Entry],
    /// Their analyses, in order (none for a question about the library itself, which
    /// quotes each document's opening only, from its digest).
    pub(crate) docs: &'a [Arc<Analysis>],
    /// For a question, the analyses of the versions next to the resolved documents (the one
    /// each replaced and the one that replaced it) that are not resolved themselves.
    pub(crate) neighbours: &'a [Arc<Analysis>],
    /// The turn's state.
    pub(crate) state: &'a AgentState,
    /// The request, mentions removed.
    pub(crate) question: &'a str,
    /// The versions among the library's documents.
    pub(crate) versions: &'a Versions,
}

impl Inputs<'_> {
    /// The question the request asks of its documents (see
    /// [`crate::question::for_documents`]), with the user's message before it as context.
    pub(crate) fn asked(&self) -> crate::question::Question {
        let docs: Vec<crate::state::DocRef> = self.entries.iter().map(|e| e.doc_ref()).collect();
        let previous = recent_lines(self.state, HISTORY)
            .into_iter()
            .rev()
            .find(|l| l.role == crate::llm::ChatRole::User)
            .map(|l| l.content);
        crate::question::for_documents(self.question, &docs, previous.as_deref())
    }
}

/// The passages an action gives the LLM, and how well they match the request.
pub(crate) struct Prepared {
    pub(crate) passages: Vec<Passage>,
    pub(crate) retrieval_confidence: f64,
}

/// What the durable `answer` step records.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Generated {
    text: String,
    usage: Usage,
    /// Why the answer stopped early, when the run was cancelled.
    interrupted: Option<String>,
    /// Why the model stopped (its `finish_reason`), when it said.
    #[serde(default)]
    finished: Option<String>,
}

/// Streams the answer into `message_id` until it ends or the run is cancelled.
async fn generate(
    llm: &dyn Llm,
    request: &AnswerRequest,
    ctx: &NodeContext,
    message_id: &str,
) -> Result<Generated, NodeError> {
    let mut out = Generated {
        text: String::new(),
        usage: Usage::default(),
        interrupted: None,
        finished: None,
    };
    let reason = || {
        ctx.cancel_reason()
            .map(|r| r.as_str().to_string())
            .unwrap_or_else(|| "user_cancelled".to_string())
    };
    let mut stream = tokio::select! {
        biased;
        _ = ctx.cancelled() => {
            out.interrupted = Some(reason());
            return Ok(out);
        }
        s = llm.answer(request) => s.map_err(LlmError::into_node_error)?,
    };
    loop {
        tokio::select! {
            biased;
            _ = ctx.cancelled() => {
                out.interrupted = Some(reason());
                break;
            }
            item = stream.next() => match item {
                None => break,
                Some(Ok(AnswerChunk::Text(t))) => {
                    ctx.message_delta(message_id, t.clone());
                    out.text.push_str(&t);
                }
                Some(Ok(AnswerChunk::Usage(u))) => out.usage.add(&u),
                Some(Ok(AnswerChunk::Finished(reason))) => out.finished = Some(reason),
                Some(Err(e)) => return Err(e.into_node_error()),
            }
        }
    }
    Ok(out)
}

/// The details of an action's status line: `web_query` when the answer searches the web
/// for it (web search on, a query, and an LLM that really searches), nothing otherwise.
fn status_details(deps: &PalAssistDeps, state: &AgentState) -> Value {
    match &state.web_search_query {
        Some(q) if state.enable_web_search && deps.llm.searches_web() => {
            json!({ "web_query": q })
        }
        _ => json!({}),
    }
}

/// Marks an answer cut short by a cancel: `interrupted`, `interrupted_reason`,
/// `stream_run_id`, `client_turn_id` (when the run's context has one) and
/// `finished_reason: "cancelled"`.
pub(crate) fn interrupted(message: Message, ctx: &NodeContext, reason: &str) -> Message {
    let mut message = message
        .with_metadata("interrupted", true)
        .with_metadata("interrupted_reason", reason)
        .with_metadata("stream_run_id", ctx.run_id())
        .with_metadata("finished_reason", CANCELLED);
    if let Some(turn) = ctx.context().get("client_turn_id").filter(|v| !v.is_null()) {
        message = message.with_metadata("client_turn_id", turn.clone());
    }
    message
}

/// Runs `action`: the shared body of the four action nodes.
pub(crate) async fn run(
    action: Action,
    deps: &PalAssistDeps,
    state: &AgentState,
    ctx: &NodeContext,
    prepare: fn(&Inputs<'_>) -> Prepared,
) -> Result<AgentStateUpdate, NodeError> {
    ctx.status(action.status_line(), status_details(deps, state));
    let owner = user_id(ctx)?;
    let mut added = Vec::new();
    let library = deps.documents(ctx, &owner).await?;
    let mut entries: Vec<&Entry> = Vec::new();
    for id in &state.resolved_doc_ids {
        match library.iter().find(|d| &d.id == id) {
            Some(d) => entries.push(d),
            None => added
                .push("A document of this request no longer exists, so I left it out.".to_string()),
        }
    }
    let labels: Vec<String> = entries.iter().map(|d| d.title.clone()).collect();
    let question = request_text(state, &labels);
    let documents: Vec<_> = entries.iter().map(|d| d.doc_ref()).collect();
    let all_versions = versions::versions_of(&library);
    // The documents the answer quotes are read whole; a question about the library itself
    // quotes each document's opening, which its digest keeps.
    let about_library = action == Action::Inquire && asks_for_library(&question);
    let docs = if about_library {
        Vec::new()
    } else {
        deps.analyses(&owner, &entries).await?
    };
    let neighbours = if action == Action::Inquire && !about_library {
        let next: Vec<&Entry> = entries
            .iter()
            .filter_map(|d| all_versions.edition(&d.id))
            .flat_map(|e| [e.superseded_by, e.supersedes])
            .flatten()
            .filter(|o| !entries.iter().any(|d| d.id == o.id))
            .filter_map(|o| library.iter().find(|d| d.id == o.id))
            .collect();
        deps.analyses(&owner, &next).await?
    } else {
        Vec::new()
    };
    let prepared = prepare(&Inputs {
        entries: &entries,
        docs: &docs,
        neighbours: &neighbours,
        state,
        question: &question,
        versions: &all_versions,
    });
    // Every document a passage comes from, with where it stands among its versions.
    let mut shown: Vec<&str> = documents.iter().map(|d| d.id.as_str()).collect();
    for p in &prepared.passages {
        if !shown.contains(&p.doc_id.as_str()) {
            shown.push(&p.doc_id);
        }
    }
    let editions = shown
        .iter()
        .filter_map(|id| all_versions.edition(id))
        .collect();
    let request = AnswerRequest {
        action,
        question,
        versions: versions::concerning(&all_versions.replacements(), &documents),
        documents,
        editions,
        passages: prepared.passages,
        retrieval_confidence: prepared.retrieval_confidence,
        audit_text: state.audit_text.clone(),
        web_search_query: state
            .web_search_query
            .clone()
            .filter(|_| state.enable_web_search),
        history: recent_lines(state, HISTORY),
    };
    let notices: Vec<&String> = state.notices.iter().chain(&added).collect();
    let message_id = format!("{}:answer", ctx.task_id());
    let mut generated: Generated = crate::durable::llm_step(
        ctx,
        deps.llm.as_ref(),
        "answer",
        generate(deps.llm.as_ref(), &request, ctx, &message_id),
    )
    .await?;
    if generated.interrupted.is_none() && generated.text.trim().is_empty() {
        generated.text = format!(
            "I couldn't produce an answer from {}.",
            crate::extractive::join_titles(&request.documents)
        );
    }
    // A model may cite a passage it was not given: such markers are dropped from the
    // answer (the streamed text had them; the response and the message do not).
    generated.text = strip_unknown_markers(&generated.text, &request.passages);
    let citations = cited(&generated.text, &request.passages);
    // Attachments it did not read are said in the answer itself too, so clients that show
    // only the message's text (agent-chat-ui) tell the user; the page shows the `_Note_`
    // paragraph once, with the notices.
    if let Some(note) = crate::attachments::unread_notice(&state.messages) {
        generated.text = format!("_Note: {note}_\n\n{}", generated.text);
    }
    let answered_by = deps.llm.answered_by(&request);
    let mut message = Message::ai(generated.text.clone())
        .with_id(message_id)
        .with_metadata("action", action.as_str())
        .with_metadata("answered_by", json!(answered_by))
        .with_metadata("citations", json!(citations))
        .with_metadata(
            "doc_ids",
            json!(request.documents.iter().map(|d| &d.id).collect::<Vec<_>>()),
        )
        .with_metadata(
            "retrieval_confidence",
            Confidence::of_retrieval(prepared.retrieval_confidence).as_str(),
        )
        .with_metadata(
            "inference_confidence",
            Confidence::of_inference(state.inference_confidence).as_str(),
        )
        .with_metadata(
            "confidence_score",
            confidence::score(prepared.retrieval_confidence),
        );
    if !notices.is_empty() {
        message = message.with_metadata("notices", json!(notices));
    }
    message = match &generated.interrupted {
        Some(reason) => interrupted(message, ctx, reason),
        None => message.with_metadata(
            "finished_reason",
            generated.finished.as_deref().unwrap_or("stop"),
        ),
    };
    Ok(AgentStateUpdate::default()
        .response(generated.text)
        .citations(citations)
        .answered_by(Some(answered_by))
        .retrieval_confidence(prepared.retrieval_confidence)
        .with_usage(&generated.usage)
        .with_notices(added)
        .messages(vec![message]))
}
