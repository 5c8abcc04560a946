//! OpenTelemetry traces of `serve`, off unless configured: `--otlp-endpoint URL`, or the
//! standard `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT` variables
//! (with `OTEL_EXPORTER_OTLP_HEADERS` for a collector's credentials). Spans go to the
//! collector over OTLP/HTTP (protobuf), batched on a thread of their own.
//!
//! ```text
//! tools/call Exec            (server span; child of the client's trace when the request
//!  └─ Exec                    carries W3C trace context in `_meta` or, over HTTP, headers)
//!      ├─ tool_call mcp__a__b (one per nested call, through the funnel)
//!      └─ tool_call read_file
//! ```
//!
//! The spans are `tracing` spans the host makes anyway (`exec`, `tool_call`); the layer made
//! here hands them to OpenTelemetry, so without it they cost a disabled callsite.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TracerProvider;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use rmcp::service::{RequestContext, RoleServer};

/// The W3C trace context fields a client may send.
const TRACE_FIELDS: [&str; 2] = ["traceparent", "tracestate"];

/// The path of traces under a collector's OTLP/HTTP address.
const TRACES_PATH: &str = "/v1/traces";

/// The exporter while `serve` runs; [`Traces::finish`] sends what is left.
pub struct Traces {
    provider: SdkTracerProvider,
}

impl Traces {
    /// The exporter to `endpoint` (a collector's OTLP/HTTP address, `http://HOST:4318`), or to
    /// what the standard variables name; `None` when neither is set: traces are off.
    /// Called before any async runtime starts (the exporter's HTTP client blocks).
    pub fn start<S>(endpoint: Option<&str>) -> Result<Option<(Traces, impl tracing_subscriber::Layer<S>)>, String>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        let from_environment = ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"]
            .iter()
            .any(|name| std::env::var_os(name).is_some_and(|value| !value.is_empty()));
        if endpoint.is_none() && !from_environment {
            return Ok(None);
        }
        let mut exporter = opentelemetry_otlp::SpanExporter::builder().with_http().with_protocol(Protocol::HttpBinary);
        if let Some(endpoint) = endpoint {
            exporter = exporter.with_endpoint(traces_url(endpoint));
        }
        let exporter = exporter.build().map_err(|e| format!("the OpenTelemetry exporter cannot be made: {e}"))?;
        let resource = opentelemetry_sdk::Resource::builder().with_service_name("exec-host").build();
        let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("exec-host"));
        Ok(Some((Traces { provider }, layer)))
    }

    /// Sends the spans still waiting, and stops the exporter.
    pub fn finish(self) {
        if let Err(error) = self.provider.shutdown() {
            tracing::warn!("the last traces could not be sent: {error}");
        }
    }
}

/// `endpoint` with the traces path, unless it names a path already.
fn traces_url(endpoint: &str) -> String {
    let trimmed = endpoint.trim_end_matches('/');
    let has_path = trimmed.split_once("://").is_some_and(|(_, rest)| rest.contains('/'));
    if has_path { endpoint.to_string() } else { format!("{trimmed}{TRACES_PATH}") }
}

/// The trace context the client sent with this request: in its `_meta` (MCP's place for
/// it, on every transport) or else, over HTTP, in the request's headers.
pub fn client_context(context: &RequestContext<RoleServer>) -> Option<opentelemetry::Context> {
    let mut fields = HashMap::new();
    for name in TRACE_FIELDS {
        let value = context.meta.get(name).and_then(|value| value.as_str()).map(str::to_string).or_else(|| {
            let parts = context.extensions.get::<axum::http::request::Parts>()?;
            parts.headers.get(name)?.to_str().ok().map(str::to_string)
        });
        if let Some(value) = value {
            fields.insert(name.to_string(), value);
        }
    }
    if !fields.contains_key("traceparent") {
        return None;
    }
    Some(TraceContextPropagator::new().extract(&fields))
}

#[cfg(test)]
mod tests {
    use super::traces_url;

    #[test]
    fn a_collector_address_gets_the_traces_path_and_a_full_url_is_kept() {
        assert_eq!(traces_url("http://collector:4318"), "http://collector:4318/v1/traces");
        assert_eq!(traces_url("http://collector:4318/"), "http://collector:4318/v1/traces");
        assert_eq!(traces_url("https://otel.example.com/custom/traces"), "https://otel.example.com/custom/traces");
    }
}
