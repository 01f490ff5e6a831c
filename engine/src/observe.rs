//! What each task of a run did, recorded durably with the run's checkpoints: which node ran,
//! when, for how long, in how many attempts, and the LLM calls it made.
//!
//! The engine runs every node inside a recording scope (a tokio task-local). An LLM client
//! reports each call it makes with [`llm_call`]; the call is added to the task running it,
//! and when the step is checkpointed the checkpoint's metadata lists what ran under `tasks`,
//! one [`TaskRecord`] per task of the step, in the order of the parent checkpoint's tasks:
//!
//! ```json
//! {"tasks": [{"node": "answer", "started_at_ms": 1763900000000, "duration_ms": 812.5,
//!             "attempts": 2,
//!             "llm_calls": [{"model": "gpt-4o", "input_tokens": 900, "output_tokens": 120,
//!                            "cost_usd": 0.0035, "duration_ms": 640.2}]}]}
//! ```
//!
//! Fields at their default (one attempt, no LLM call, not cached, not resumed) are left
//! out to keep checkpoints small. Outside a node (in a test, in a tool run by hand)
//! [`llm_call`] does nothing. A call made inside a subgraph is recorded on the subgraph's
//! task and on the task of the subgraph node that runs it (and so on up), so each graph's
//! checkpoints tell what its own steps cost.
//!
//! ```
//! use palgraph::observe::{self, LlmCall};
//!
//! // An LLM client, after a call answered:
//! let recorded = observe::llm_call(LlmCall {
//!     model: "gpt-4o-mini".into(),
//!     input_tokens: 120,
//!     output_tokens: 30,
//!     cost_usd: 0.00004,
//!     duration_ms: 410.0,
//! });
//! assert!(!recorded, "outside a node nothing is recorded");
//! ```

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::checkpoint::now_ms;

/// The metadata key of a checkpoint's task records.
pub const TASKS_KEY: &str = "tasks";

/// One call to an LLM, as its client reports it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmCall {
    /// The model that answered.
    pub model: String,
    /// Prompt tokens.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub input_tokens: u64,
    /// Completion tokens.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub output_tokens: u64,
    /// What the call cost in USD (0 when unknown).
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub cost_usd: f64,
    /// How long the call took, from the request to its last token, in milliseconds.
    #[serde(default)]
    pub duration_ms: f64,
}

/// What one task of a step did (see the [module docs](self)).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The node the task ran.
    pub node: String,
    /// When it started (Unix milliseconds).
    pub started_at_ms: i64,
    /// How long it ran, all attempts and the waits between them included, in milliseconds.
    pub duration_ms: f64,
    /// How many times the node ran (1 + its retries).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub attempts: u32,
    /// The LLM calls it made, in order (those of failed attempts included).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub llm_calls: Vec<LlmCall>,
    /// Its node's cache held its result: the node did not run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// It ran again after an interrupt was answered.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resumed: bool,
}

impl TaskRecord {
    /// The task records of a checkpoint's metadata (empty for a checkpoint written before
    /// they were recorded, or by no step: an input or an `update_state`).
    pub fn of_metadata(metadata: &Map<String, Value>) -> Vec<TaskRecord> {
        metadata
            .get(TASKS_KEY)
            .cloned()
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default()
    }
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero_f64(n: &f64) -> bool {
    *n == 0.0
}

/// Milliseconds rounded to microseconds (what a timeline needs, in few bytes).
fn round_ms(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

/// The milliseconds since `start`, rounded.
pub(crate) fn elapsed_ms(start: Instant) -> f64 {
    round_ms(start.elapsed().as_secs_f64() * 1000.0)
}

/// Records an LLM call on the task running it. Returns whether it was recorded: `false`
/// outside a node (nothing to record it on).
pub fn llm_call(mut call: LlmCall) -> bool {
    call.duration_ms = round_ms(call.duration_ms);
    let Some(recorder) = current() else {
        return false;
    };
    let mut at = Some(&recorder);
    while let Some(r) = at {
        r.lock().llm_calls.push(call.clone());
        at = r.parent.as_ref();
    }
    true
}

/// Whether spans are given their OpenTelemetry name ([`name_span`]); on unless turned off.
static OTEL_NAMES: AtomicBool = AtomicBool::new(true);

/// Turns the OpenTelemetry names of the engine's spans (`node {name}`, `step {name}`) on or
/// off. A program that exports no traces turns them off (`palgraph serve` does when no OTLP
/// endpoint is set), so that a span logged at `info` does not format a name no exporter
/// reads; a program that installs its own OpenTelemetry layer leaves them on.
pub fn set_otel_names(on: bool) {
    OTEL_NAMES.store(on, Ordering::Relaxed);
}

/// Whether the engine names its spans for OpenTelemetry (see [`set_otel_names`]).
pub fn otel_names() -> bool {
    OTEL_NAMES.load(Ordering::Relaxed)
}

/// Names `span` for OpenTelemetry (records its `otel.name` field, which must be declared,
/// `Empty`): only when names are on and the span is enabled, so that otherwise the name is
/// never formatted.
pub fn name_span(span: &tracing::Span, name: std::fmt::Arguments<'_>) {
    if otel_names() && !span.is_disabled() {
        span.record("otel.name", name);
    }
}

/// The recorder of the task running the caller, if any.
pub(crate) fn current() -> Option<Arc<Recorder>> {
    RECORDER.try_with(Arc::clone).ok()
}

/// Whether the caller runs inside a node (where [`llm_call`] records).
pub fn in_task() -> bool {
    RECORDER.try_with(|_| ()).is_ok()
}

/// Counts an attempt of the running task's node (nothing outside a task).
pub(crate) fn attempt_begun() {
    let _ = RECORDER.try_with(|r| r.attempt());
}

tokio::task_local! {
    static RECORDER: Arc<Recorder>;
}

/// What a running task has done so far.
pub(crate) struct Recorder {
    /// The recorder of the task that runs this one's graph (a subgraph node's).
    parent: Option<Arc<Recorder>>,
    started: Instant,
    started_at_ms: i64,
    inner: Mutex<TaskRecord>,
}

impl Recorder {
    /// A recorder for a task of `node` starting now, inside the task of `parent` (when its
    /// graph runs as a subgraph node).
    pub(crate) fn start(node: &str, resumed: bool, parent: Option<Arc<Recorder>>) -> Arc<Recorder> {
        let started_at_ms = now_ms();
        Arc::new(Recorder {
            parent,
            started: Instant::now(),
            started_at_ms,
            inner: Mutex::new(TaskRecord {
                node: node.to_string(),
                started_at_ms,
                attempts: 0,
                resumed,
                ..TaskRecord::default()
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TaskRecord> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts an attempt of the node.
    pub(crate) fn attempt(&self) {
        self.lock().attempts += 1;
    }

    /// Runs `fut` (the task) with this recorder as the current task's.
    pub(crate) async fn scope<F: Future>(self: &Arc<Self>, fut: F) -> F::Output {
        RECORDER.scope(self.clone(), fut).await
    }

    /// The task's record as of now (`cached`: its result came from the node's cache).
    pub(crate) fn finish(&self, cached: bool) -> TaskRecord {
        let mut record = self.lock().clone();
        record.started_at_ms = self.started_at_ms;
        record.duration_ms = elapsed_ms(self.started);
        record.cached = cached;
        record.attempts = record.attempts.max(1);
        record
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_record_is_small() {
        let r = TaskRecord {
            node: "a".into(),
            started_at_ms: 1,
            duration_ms: 2.5,
            attempts: 1,
            ..TaskRecord::default()
        };
        let text = serde_json::to_string(&r).unwrap_or_default();
        assert_eq!(text, r#"{"node":"a","started_at_ms":1,"duration_ms":2.5}"#);
        let back: TaskRecord = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(back, r);
    }

    #[tokio::test]
    async fn calls_land_on_the_task_in_scope_only() {
        assert!(!in_task());
        assert!(!llm_call(LlmCall::default()));
        let rec = Recorder::start("n", false, None);
        rec.attempt();
        let recorded = rec
            .scope(async {
                llm_call(LlmCall {
                    model: "m".into(),
                    input_tokens: 3,
                    duration_ms: 1.23456,
                    ..LlmCall::default()
                })
            })
            .await;
        assert!(recorded);
        let r = rec.finish(false);
        assert_eq!(r.llm_calls.len(), 1);
        assert_eq!(r.llm_calls[0].model, "m");
        assert_eq!(r.llm_calls[0].duration_ms, 1.235);
        assert!(!llm_call(LlmCall::default()));
    }
}
