//! Logs and traces for a program that serves graphs, in one line of its `main`.
//!
//! [`init`] installs the global `tracing` subscriber: logs to stderr, filtered by `RUST_LOG`
//! (default `info,sqlx=warn`), in colour only on a terminal, each line naming the request,
//! run and node it came from but not the finer spans that traces keep (each checkpoint
//! write, durable step and LLM call); and, when an OTLP endpoint is set, an OpenTelemetry
//! layer that exports every span over OTLP (http/protobuf) to Jaeger, Grafana Tempo or any
//! OpenTelemetry collector. With no endpoint set, no OpenTelemetry layer is installed at all:
//! the finer spans are not even created, and the engine's spans are not given their
//! OpenTelemetry names ([`palgraph::observe::set_otel_names`]).
//!
//! ```no_run
//! # async fn serve() -> Result<(), Box<dyn std::error::Error>> { Ok(()) }
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // Keep the guard: dropping it at the end of `main` sends the last spans.
//!     let _telemetry = palgraph_server::telemetry::init()?;
//!     serve().await
//! }
//! ```
//!
//! The standard OpenTelemetry variables configure it ([`OtelSettings::from_lookup`]):
//!
//! | variable | meaning |
//! |---|---|
//! | `OTEL_EXPORTER_OTLP_ENDPOINT` | the collector's base URL (`http://localhost:4318`); traces go to `{it}/v1/traces` |
//! | `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` | the full URL for traces (wins over the above) |
//! | `OTEL_EXPORTER_OTLP_PROTOCOL`, `..._TRACES_PROTOCOL` | `http/protobuf` (the only one served) |
//! | `OTEL_EXPORTER_OTLP_HEADERS`, `..._TRACES_HEADERS` | `key=value,key2=value2` sent with every export (the traces one wins) |
//! | `OTEL_SERVICE_NAME` | the `service.name` (default `palgraph`, or the name given) |
//! | `OTEL_RESOURCE_ATTRIBUTES` | `key=value,...` resource attributes |
//! | `OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG` | `parentbased_always_on` (default), `traceidratio` with `0.1`, ... |
//! | `OTEL_SDK_DISABLED` | `true`: export nothing, whatever else is set |
//!
//! `PALGRAPH_TRACES_FILTER` (an `EnvFilter`, default [`DEFAULT_FILTER`]) chooses which spans
//! are exported, apart from `RUST_LOG`, which chooses what is logged.
//!
//! A setting that does not parse is an error from [`init`], not a silent default.
//!
//! What the spans are: an HTTP request (`{method} {route}`, a child of an incoming W3C
//! `traceparent`), a run (`run`, with thread, run, assistant, graph and user ids; the child
//! of the request that created it, on whatever replica executes it, through the trace
//! context stored with the run), each node, each durable step, each checkpoint write, and
//! each LLM call (`chat {model}`, with the OpenTelemetry GenAI attributes).

mod context;
mod http;
mod settings;

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

pub use context::{current_traceparent, enabled, set_remote_parent};
pub(crate) use http::{request_span, RecordStatus};
pub use settings::{OtelSettings, Sampling, DEFAULT_FILTER};

/// Why [`init`] could not set up logs and traces.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// An OpenTelemetry (or `PALGRAPH_TRACES_FILTER`) variable does not parse.
    #[error("{name}={value:?}: {reason}")]
    Setting {
        /// The variable.
        name: &'static str,
        /// What it holds.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The OTLP exporter could not be built from the settings.
    #[error("the OTLP trace exporter could not be built: {0}")]
    Exporter(String),
    /// Another global `tracing` subscriber was installed first.
    #[error("a global tracing subscriber is already installed: {0}")]
    AlreadyInstalled(String),
}

/// Keeps the trace exporter running; dropping it sends the spans still queued and shuts the
/// exporter down (within a few seconds, so a collector that is down does not hold up exit).
#[must_use = "dropping the guard shuts the trace exporter down"]
pub struct TelemetryGuard {
    provider: Option<SdkTracerProvider>,
}

impl TelemetryGuard {
    /// Whether spans are exported (an OTLP endpoint was set and the SDK not disabled).
    pub fn exporting(&self) -> bool {
        self.provider.is_some()
    }
}

impl std::fmt::Debug for TelemetryGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelemetryGuard")
            .field("exporting", &self.exporting())
            .finish()
    }
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take() {
            if let Err(e) = provider.shutdown_with_timeout(Duration::from_secs(5)) {
                eprintln!("palgraph: the trace exporter did not shut down cleanly: {e}");
            }
        }
    }
}

/// Logs to stderr and, when configured by the environment, traces over OTLP; the service
/// is named `palgraph` unless `OTEL_SERVICE_NAME` says otherwise. See the [module
/// docs](self) and [`Telemetry`] for a different service name or log filter.
///
/// # Errors
/// A variable that does not parse, an exporter that cannot be built, or a global subscriber
/// installed already.
pub fn init() -> Result<TelemetryGuard, TelemetryError> {
    Telemetry::new().init()
}

/// Options of [`init`]: the default service name and log filter.
#[derive(Clone, Debug)]
pub struct Telemetry {
    service_name: String,
    default_filter: String,
}

impl Default for Telemetry {
    fn default() -> Self {
        Telemetry {
            service_name: "palgraph".into(),
            default_filter: "info,sqlx=warn".into(),
        }
    }
}

impl Telemetry {
    /// Service `palgraph`, logs filtered by `info,sqlx=warn` when `RUST_LOG` is unset.
    pub fn new() -> Self {
        Self::default()
    }

    /// The `service.name` spans carry when `OTEL_SERVICE_NAME` (and `service.name` in
    /// `OTEL_RESOURCE_ATTRIBUTES`) is unset.
    #[must_use]
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = name.into();
        self
    }

    /// The log filter when `RUST_LOG` is unset (an `EnvFilter` directive).
    #[must_use]
    pub fn default_filter(mut self, filter: impl Into<String>) -> Self {
        self.default_filter = filter.into();
        self
    }

    /// Installs the global subscriber from the process environment.
    ///
    /// # Errors
    /// As [`init`].
    pub fn init(self) -> Result<TelemetryGuard, TelemetryError> {
        let lookup = |k: &str| std::env::var(k).ok();
        let settings = OtelSettings::from_lookup(lookup)?;
        let logs = EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| EnvFilter::new(&self.default_filter));
        let Some(settings) = settings else {
            tracing_subscriber::registry()
                .with(log_layer(logs))
                .try_init()
                .map_err(|e| TelemetryError::AlreadyInstalled(e.to_string()))?;
            // No exporter reads the spans' OpenTelemetry names: they are not formatted.
            palgraph::observe::set_otel_names(false);
            return Ok(TelemetryGuard { provider: None });
        };
        let provider = provider(&settings, &self.service_name)?;
        let traces = tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("palgraph"))
            .with_location(false)
            .with_threads(false)
            .with_tracked_inactivity(false)
            .with_filter(EnvFilter::new(&settings.filter));
        tracing_subscriber::registry()
            .with(log_layer(logs))
            .with(traces)
            .try_init()
            .map_err(|e| TelemetryError::AlreadyInstalled(e.to_string()))?;
        context::enable();
        palgraph::observe::set_otel_names(true);
        tracing::info!(endpoint = %settings.endpoint, "exporting traces over OTLP");
        Ok(TelemetryGuard {
            provider: Some(provider),
        })
    }
}

/// The spans of palgraph's own that log lines leave out of their context, by target prefix
/// and name: each checkpoint write, durable step and LLM call, and the engine's run (inside
/// the server's `run` span, which names the same run and thread). Traces keep them all. A log
/// line still names the request, the run and the node it came from, and any span of the
/// user's own.
///
/// The log layer formats a span's fields when the span is created, whether or not anything
/// is ever logged inside it, and a span no layer records is not created at all. These spans,
/// about fifteen a PalAssist chat turn, would make the log layer a visible share of the
/// server's instructions per turn (benchmarks/server-log-spans.md).
const TRACE_ONLY_SPANS: &[(&str, &str)] = &[
    ("palgraph::", "run"),
    ("palgraph::", "checkpoint.put"),
    ("palgraph::", "checkpoint.put_writes"),
    ("palgraph::", "checkpoint.batch"),
    ("palgraph::", "durable_step"),
    ("palgraph_nodes::", "chat"),
    ("palgraph_agents::", "chat"),
];

/// Whether the log layer sees `meta`: every event its filter lets through, and every span
/// but palgraph's trace-only ones ([`TRACE_ONLY_SPANS`]).
fn logged(meta: &tracing::Metadata<'_>) -> bool {
    !(meta.is_span()
        && TRACE_ONLY_SPANS
            .iter()
            .any(|(target, name)| meta.name() == *name && meta.target().starts_with(target)))
}

/// Logs to stderr, filtered by `logs` and [`logged`]; in colour only on a terminal.
fn log_layer<S>(logs: EnvFilter) -> impl Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use std::io::IsTerminal as _;
    log_layer_to(logs, std::io::stderr, std::io::stderr().is_terminal())
}

/// [`log_layer`] writing to `writer`, with ANSI colours when `ansi`.
fn log_layer_to<S, W>(logs: EnvFilter, writer: W, ansi: bool) -> impl Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    use tracing_subscriber::filter::{filter_fn, FilterExt as _, LevelFilter};
    // No level of its own: the hint stays `logs`' (an unhinted part would drop it).
    let spans = filter_fn(logged).with_max_level_hint(LevelFilter::TRACE);
    tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(ansi)
        .with_filter(logs.and(spans))
}

/// The tracer provider: a batch exporter over OTLP http/protobuf to the settings' endpoint.
fn provider(
    settings: &OtelSettings,
    service_name: &str,
) -> Result<SdkTracerProvider, TelemetryError> {
    // reqwest is built with rustls and no crypto provider of its own (for https endpoints):
    // it needs one installed before a client is built; the first one installed stays.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(settings.endpoint.clone())
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    let mut resource = Resource::builder();
    if !settings.names_service {
        resource = resource.with_service_name(service_name.to_string());
    }
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(settings.sampling.sampler())
        .with_resource(resource.build())
        .build())
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    /// A log line written under the engine's spans and a user's: the request, the server's
    /// run, the node and the user's span name it; a checkpoint write, a durable step, the
    /// engine's run and an LLM call do not.
    #[test]
    fn a_log_line_names_its_run_and_node_but_not_the_finer_spans() {
        let out = Arc::new(Mutex::new(Vec::<u8>::new()));
        let sink = out.clone();
        let writer = move || Sink(sink.clone());
        let subscriber = tracing_subscriber::registry().with(log_layer_to(
            EnvFilter::new("info"),
            writer,
            false,
        ));
        tracing::subscriber::with_default(subscriber, || {
            // Each span inside the one before, as they nest in a served run.
            let make: [fn() -> tracing::Span; 9] = [
                || tracing::info_span!(target: "palgraph_server::telemetry::http", "request", request_id = "req-7"),
                || tracing::info_span!(target: "palgraph_server::runs::worker", "run", run_id = "run-1"),
                || tracing::info_span!(target: "palgraph::run::executor", "run", run_id = "engine-run"),
                || tracing::info_span!(target: "palgraph::run::step", "node", node = "summarize"),
                || tracing::info_span!(target: "palgraph::steps", "durable_step", step.name = "llm"),
                || tracing::info_span!(target: "palgraph_nodes::llm::span", "chat", model = "m"),
                || tracing::info_span!(target: "palgraph::run::executor", "checkpoint.put", seq = 4),
                || tracing::info_span!(target: "palgraph::run::step", "checkpoint.put_writes", writes = 1),
                || tracing::info_span!(target: "my_graph", "chat", mine = true),
            ];
            let _entered: Vec<_> = make.iter().map(|f| f().entered()).collect();
            tracing::warn!("inside them all");
            tracing::debug!("below the level");
        });
        let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
        let line = text.lines().find(|l| l.contains("inside them all"));
        let line = line.unwrap_or_else(|| panic!("the warning was logged: {text}"));
        for kept in [
            r#"request{request_id="req-7"}"#,
            r#"run{run_id="run-1"}"#,
            r#"node{node="summarize"}"#,
            "chat{mine=true}",
        ] {
            assert!(line.contains(kept), "{kept} in {line}");
        }
        for left in [
            "engine-run",
            "durable_step",
            "model=",
            "checkpoint.put",
            "seq=4",
            "writes=1",
        ] {
            assert!(!line.contains(left), "{left} not in {line}");
        }
        assert!(!text.contains("below the level"), "{text}");
        assert!(!text.contains('\u{1b}'), "no ANSI escapes: {text}");
    }

    #[derive(Clone)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
}
