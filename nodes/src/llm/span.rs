//! The span of one LLM call, named and attributed by the OpenTelemetry GenAI semantic
//! conventions (`chat {model}`, `gen_ai.*`), plus what the call cost.

use tracing::field::Empty;

use super::Usage;

/// A chat call to `model` (an OpenAI-compatible server), not entered yet.
pub(super) fn chat(model: &str) -> tracing::Span {
    let span = tracing::info_span!(
        "chat",
        otel.name = Empty,
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = "openai",
        gen_ai.request.model = model,
        gen_ai.response.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        palgraph.llm.cost_usd = Empty,
    );
    palgraph::observe::name_span(&span, format_args!("chat {model}"));
    span
}

/// The model that answered, as the server named it.
pub(super) fn response_model(span: &tracing::Span, model: &str) {
    span.record("gen_ai.response.model", model);
}

/// The call's tokens and cost.
pub(super) fn usage(span: &tracing::Span, usage: &Usage) {
    // As i64: OpenTelemetry has no unsigned integers (a u64 would be sent as text).
    let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    span.record("gen_ai.usage.input_tokens", int(usage.prompt_tokens));
    span.record("gen_ai.usage.output_tokens", int(usage.completion_tokens));
    span.record("palgraph.llm.cost_usd", usage.cost_usd);
}

/// The call failed.
pub(super) fn failed(span: &tracing::Span) {
    span.record("otel.status_code", "error");
}
