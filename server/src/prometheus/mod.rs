//! Prometheus metrics at `GET /metrics`, in the text exposition format.
//!
//! Code anywhere in the process records through the [`metrics`] facade (the engine's
//! checkpointers and node tasks, the LLM client, the run machinery, the HTTP layer); the
//! server installs one Prometheus recorder per process ([`install`], idempotent: several
//! servers in one process share it) and renders it on each scrape, followed by gauges read
//! from the database ([`live`], at most a second old), so every replica reports the same
//! queue.
//!
//! | metric | type | labels | what |
//! |---|---|---|---|
//! | `palgraph_runs` | gauge | `graph`, `status` | runs pending or running, from the database |
//! | `palgraph_run_queue_depth` | gauge | | runs waiting for a worker (pending), from the database |
//! | `palgraph_run_queue_oldest_age_seconds` | gauge | | age of the oldest pending run (0 when none) |
//! | `palgraph_database_up` | gauge | | 1 when the scrape's database read succeeded |
//! | `palgraph_run_lease_takeovers_total` | counter | | runs this replica claimed after their lease lapsed |
//! | `palgraph_run_duration_seconds` | histogram | `graph`, `status` | a run's claim, from start to its recorded end |
//! | `palgraph_node_duration_seconds` | histogram | `node` | one node task |
//! | `palgraph_checkpoint_write_duration_seconds` | histogram | `backend`, `kind` | a checkpoint (`checkpoint`) or a task's pending writes (`writes`) |
//! | `palgraph_checkpoint_load_duration_seconds` | histogram | `backend`, `kind` | a checkpoint read with its values (`values`) or without (`metadata`) |
//! | `palgraph_group_commit_batch_size` | histogram | `kind` | rows one commit carried: `checkpoints` (Postgres group commit), `checkpoint_writes` (tasks' pending writes), `run_events` (the event writer), `run_creates` and `run_ends` (runs created and ended together on Postgres) |
//! | `palgraph_sse_streams` | gauge | | event streams open |
//! | `palgraph_llm_tokens_total` | counter | `model`, `direction` | tokens, `input` or `output` |
//! | `palgraph_llm_call_cost_usd` | histogram | `model` | each model call's cost; `_sum` is the total spent |
//! | `palgraph_http_requests_total` | counter | `method`, `route`, `status` | requests by matched route template |
//! | `palgraph_http_request_duration_seconds` | histogram | `method`, `route` | until the response head (an SSE stream's events come after) |
//!
//! Labels are bounded: graph and node names, route templates (never a raw path), models
//! configured; never a thread, run or user id.
//!
//! A histogram's samples wait in a buffer until they are folded into its buckets, which the
//! recorder does only when asked: [`install`] starts a thread that does it every
//! [`UPKEEP_EVERY`], so a server nobody scrapes holds a second of samples, not every sample
//! it ever recorded (memory that would grow with every chat turn served).

pub mod http;
pub mod live;

use std::sync::OnceLock;
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::database::Database;
use crate::metric::{
    BATCH_SIZE, HTTP_REQUESTS, HTTP_SECONDS, LEASE_TAKEOVERS, RUN_SECONDS, SSE_STREAMS,
};

/// The content type of the text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// How often the recorder folds histograms' buffered samples into their buckets.
pub const UPKEEP_EVERY: Duration = Duration::from_secs(1);

/// Bucket bounds of every `_seconds` histogram: a millisecond to five minutes.
const SECONDS_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0, 120.0, 300.0,
];
/// Bucket bounds of batch sizes.
const BATCH_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0];
/// Bucket bounds of a call's cost in USD.
const COST_BUCKETS: &[f64] = &[0.0001, 0.001, 0.01, 0.1, 1.0, 10.0];

/// Why the recorder could not be installed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum MetricsError {
    /// Another recorder is the process's (an embedding program installed its own).
    #[error("metrics: could not install the Prometheus recorder: {0}")]
    Install(String),
    /// The thread that folds histogram samples into their buckets could not be started.
    #[error("metrics: could not start the recorder's upkeep thread: {0}")]
    Upkeep(String),
}

/// The process's Prometheus recorder, installed on first use with its upkeep thread (see
/// [`keep_up`]); every later call (another server in the same process) gets the same handle.
///
/// # Errors
/// The process already has a recorder of someone else's, or the upkeep thread could not be
/// started.
pub fn install() -> Result<PrometheusHandle, MetricsError> {
    static HANDLE: OnceLock<Result<PrometheusHandle, MetricsError>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let handle = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)
                .and_then(|b| {
                    b.set_buckets_for_metric(Matcher::Full(BATCH_SIZE.into()), BATCH_BUCKETS)
                })
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full("palgraph_llm_call_cost_usd".into()),
                        COST_BUCKETS,
                    )
                })
                .and_then(PrometheusBuilder::install_recorder)
                .map_err(|e| MetricsError::Install(e.to_string()))?;
            describe();
            keep_up(handle.clone(), UPKEEP_EVERY)?;
            Ok(handle)
        })
        .clone()
}

/// Starts a thread that runs the recorder's upkeep every `every`, for the life of the process.
///
/// A recorder installed without the exporter's own HTTP listener (this server renders on its
/// own route) gets no upkeep task from the exporter: until a scrape, every histogram sample
/// stays buffered. A plain thread rather than a task, since the recorder outlives any one
/// runtime (tests start and stop many in one process).
///
/// # Errors
/// The thread could not be spawned.
pub fn keep_up(handle: PrometheusHandle, every: Duration) -> Result<(), MetricsError> {
    std::thread::Builder::new()
        .name("palgraph-metrics-upkeep".into())
        .spawn(move || loop {
            std::thread::sleep(every);
            handle.run_upkeep();
        })
        .map(drop)
        .map_err(|e| MetricsError::Upkeep(e.to_string()))
}

/// The HELP lines of the metrics recorded through the facade.
fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!(
        LEASE_TAKEOVERS,
        "Runs this replica claimed after their lease lapsed"
    );
    describe_histogram!(
        RUN_SECONDS,
        Unit::Seconds,
        "A run's claim from its start to its recorded end, by graph and final status"
    );
    describe_histogram!(
        "palgraph_node_duration_seconds",
        Unit::Seconds,
        "One node task, by node"
    );
    describe_histogram!(
        "palgraph_checkpoint_write_duration_seconds",
        Unit::Seconds,
        "A checkpoint put (kind=checkpoint) or a task's pending writes (kind=writes)"
    );
    describe_histogram!(
        "palgraph_checkpoint_load_duration_seconds",
        Unit::Seconds,
        "A checkpoint read, with its values (kind=values) or without (kind=metadata)"
    );
    describe_histogram!(
        BATCH_SIZE,
        "Rows one commit carried: checkpoints (Postgres group commit) or run_events"
    );
    describe_gauge!(SSE_STREAMS, "Event streams open on this replica");
    describe_counter!(
        "palgraph_llm_tokens_total",
        "Tokens models used, by model and direction (input, output)"
    );
    describe_histogram!(
        "palgraph_llm_call_cost_usd",
        "What each model call cost in USD, by model (_sum is the total spent)"
    );
    describe_counter!(
        HTTP_REQUESTS,
        "HTTP requests by method, route template and status"
    );
    describe_histogram!(
        HTTP_SECONDS,
        Unit::Seconds,
        "HTTP requests until the response head, by method and route template"
    );
}

/// What `GET /metrics` renders: the recorder, and the database for the live gauges.
#[derive(Clone)]
pub struct Metrics {
    handle: PrometheusHandle,
    database: Database,
    live: live::LiveCache,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// Installs the process's recorder (or shares it) and reads live gauges from `database`.
    ///
    /// # Errors
    /// See [`install`].
    pub fn new(database: Database) -> Result<Self, MetricsError> {
        Ok(Metrics {
            handle: install()?,
            database,
            live: live::LiveCache::default(),
        })
    }

    /// The exposition text: every recorded metric, then the database's live gauges.
    pub async fn render(&self, graphs: &[String]) -> String {
        self.handle.run_upkeep();
        let mut out = self.handle.render();
        live::render(&self.live, &self.database, graphs, &mut out).await;
        out
    }
}
