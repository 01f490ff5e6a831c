//! W3C trace context in and out: the `traceparent` of the span a run was created under,
//! stored with the run, and the incoming header a request's span continues.
//!
//! Everything here does nothing (and reads nothing) unless [`super::init`] installed the
//! OpenTelemetry layer.

use std::sync::atomic::{AtomicBool, Ordering};

use axum::http::HeaderMap;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Marks traces as exported (the OpenTelemetry layer is installed).
pub(super) fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Whether spans are exported by this process.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

const TRACEPARENT: &str = "traceparent";

/// One header, for the propagator.
struct One<'a>(Option<&'a str>);

impl Extractor for One<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        (key == TRACEPARENT).then_some(self.0).flatten()
    }

    fn keys(&self) -> Vec<&str> {
        vec![TRACEPARENT]
    }
}

/// Collects the `traceparent` the propagator writes.
#[derive(Default)]
struct Out(Option<String>);

impl Injector for Out {
    fn set(&mut self, key: &str, value: String) {
        if key == TRACEPARENT {
            self.0 = Some(value);
        }
    }
}

/// The W3C `traceparent` (`00-{trace id}-{span id}-{flags}`) of the current span, when
/// traces are exported and the span belongs to a trace.
pub fn current_traceparent() -> Option<String> {
    if !enabled() {
        return None;
    }
    let cx = tracing::Span::current().context();
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut out = Out::default();
    TraceContextPropagator::new().inject_context(&cx, &mut out);
    out.0
}

/// Makes `span` (not entered yet) the child of the span a W3C `traceparent` names: the run
/// span of a run executed anywhere continues the trace of the request that created it. A
/// malformed value is ignored (the span starts a trace of its own).
pub fn set_remote_parent(span: &tracing::Span, traceparent: &str) {
    if !enabled() {
        return;
    }
    set_parent(span, Some(traceparent));
}

/// Makes a request's span the child of the caller's span named by its `traceparent` header.
pub(crate) fn set_parent_from_headers(span: &tracing::Span, headers: &HeaderMap) {
    if !enabled() {
        return;
    }
    let value = headers.get(TRACEPARENT).and_then(|v| v.to_str().ok());
    if value.is_some() {
        set_parent(span, value);
    }
}

fn set_parent(span: &tracing::Span, traceparent: Option<&str>) {
    let cx = TraceContextPropagator::new().extract(&One(traceparent));
    if cx.span().span_context().is_valid() {
        // Only fails when the layer is absent, which `enabled` ruled out.
        let _ = span.set_parent(cx);
    }
}
