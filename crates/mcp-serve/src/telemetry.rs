//! Traces: OpenTelemetry spans, exported over OTLP/HTTP when the standard variables say where.
//!
//! Off unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; then
//! the other `OTEL_*` variables are honoured by the SDK (service name and resource, the sampler,
//! the batch processor's delays). The spans are `tracing`'s, turned into OpenTelemetry spans by
//! `tracing-opentelemetry`, so a span and its log lines are one thing.
//!
//! - Every `tools/call` (and `prompts/get`, `resources/read`) is a server span the boundary
//!   makes as the OpenTelemetry MCP conventions say ([`mrtr::boundary::CallTracing`]); its
//!   parent is the request's `params._meta.traceparent` when valid (malformed context never
//!   fails a request), and the HTTP request's own `traceparent` is linked.
//! - One call, one trace: the first round's span context travels inside the sealed
//!   `requestState`, so every retry, on whichever replica, joins the first round's trace (its
//!   parent when the client sends no context of its own) with a link to the first round and
//!   `mcp.mrtr.round`, its round's number. This is this project's proposal; the conventions
//!   do not cover rounds yet.
//! - Context goes on to the services the server calls as a `traceparent` header
//!   ([`outgoing`]), and a service built on axum makes server spans of its own
//!   ([`http_server_spans`]).

use std::collections::HashMap;

use axum::{extract::Request, middleware::Next, response::Response};
use mrtr::boundary::CallTracing;
use opentelemetry::{
    Context,
    propagation::{Extractor, TextMapPropagator},
    trace::{TraceContextExt, TracerProvider as _},
};
use opentelemetry_sdk::{Resource, propagation::TraceContextPropagator, trace::SdkTracerProvider};
use rmcp::{RoleServer, service::RequestContext};
use tracing::{Instrument, Span};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The exporter and its spans' provider, while the process runs; [`Telemetry::shutdown`]
/// sends what is left.
pub struct Telemetry {
    provider: SdkTracerProvider,
    /// The service's name, which names its tracer too.
    service: String,
}

/// Why traces could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("OpenTelemetry: {0}")]
pub struct TelemetryError(String);

impl Telemetry {
    /// Traces to the OTLP endpoint the environment names, as `service` unless
    /// `OTEL_SERVICE_NAME` says otherwise; `None` when no endpoint is named.
    pub fn from_env(service: &str) -> Result<Option<Self>, TelemetryError> {
        let named = |name: &str| std::env::var_os(name).is_some_and(|value| !value.is_empty());
        if !named("OTEL_EXPORTER_OTLP_ENDPOINT") && !named("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            return Ok(None);
        }
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .build()
            .map_err(|error| TelemetryError(error.to_string()))?;
        let mut resource = Resource::builder();
        if !named("OTEL_SERVICE_NAME") {
            resource = resource.with_service_name(service.to_owned());
        }
        let provider =
            SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource.build()).build();
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        Ok(Some(Self { provider, service: service.to_owned() }))
    }

    /// The `tracing` layer that turns spans into OpenTelemetry spans.
    pub fn layer<S>(&self) -> tracing_opentelemetry::OpenTelemetryLayer<S, opentelemetry_sdk::trace::Tracer>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        tracing_opentelemetry::layer().with_tracer(self.provider.tracer(self.service.clone()))
    }

    /// Export what is left, and stop.
    pub fn shutdown(self) {
        if let Err(error) = self.provider.shutdown() {
            eprintln!("{}: could not send the last traces: {error}", self.service);
        }
    }
}

/// The W3C `traceparent` of `cx`'s span, if it has a valid one.
fn traceparent(cx: &Context) -> Option<String> {
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(cx, &mut carrier);
    carrier.remove("traceparent")
}

/// The context a `traceparent` (and `tracestate`) names, if valid.
fn context_of(carrier: &dyn Extractor) -> Option<Context> {
    let cx = TraceContextPropagator::new().extract(carrier);
    cx.span().span_context().is_valid().then_some(cx)
}

/// `_meta`'s string members, as a carrier.
struct MetaCarrier<'a>(&'a rmcp::model::RequestMetaObject);

impl Extractor for MetaCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.as_str())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// One `traceparent`, as a carrier.
struct Parent<'a>(&'a str);

impl Extractor for Parent<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        (key == "traceparent").then_some(self.0)
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent"]
    }
}

/// HTTP headers, as a carrier.
struct Headers<'a>(&'a http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

/// The boundary's spans, placed in their calls' traces ([`CallTracing`]).
pub struct CallTraces;

impl CallTracing for CallTraces {
    fn follow(&self, span: &Span, context: &RequestContext<RoleServer>, first_round: Option<&str>) -> Option<String> {
        let own = context_of(&MetaCarrier(&context.meta));
        let first = first_round.and_then(|parent| context_of(&Parent(parent)));
        let parts = context.extensions.get::<http::request::Parts>();
        if let Some(parent) = own.clone().or_else(|| first.clone()) {
            let _ = span.set_parent(parent);
        }
        if let Some(first) = &first {
            span.add_link(first.span().span_context().clone());
        }
        if let Some(http) = parts.and_then(|parts| context_of(&Headers(&parts.headers))) {
            span.add_link(http.span().span_context().clone());
        }
        match parts {
            Some(parts) => {
                span.set_attribute("network.transport", "tcp");
                if let Some(peer) = parts.extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>() {
                    span.set_attribute("client.address", peer.0.ip().to_string());
                }
                if let Some(session) = parts.headers.get("mcp-session-id").and_then(|v| v.to_str().ok()) {
                    span.set_attribute("mcp.session.id", session.to_owned());
                }
            }
            None => span.set_attribute("network.transport", "pipe"),
        }
        match first_round {
            Some(first) => Some(first.to_owned()),
            None => traceparent(&span.context()),
        }
    }
}

/// The trace the current span is in, when traces are exported.
pub fn current_trace_id() -> Option<String> {
    let cx = Span::current().context();
    let span = cx.span();
    let context = span.span_context();
    context.is_valid().then(|| context.trace_id().to_string())
}

/// The `traceparent` header for a call made now to another service (a back end, the
/// payment provider), naming the current span: that service's spans become its children.
pub fn outgoing() -> Vec<(http::HeaderName, http::HeaderValue)> {
    let Some(parent) = traceparent(&Span::current().context()) else { return Vec::new() };
    match http::HeaderValue::from_str(&parent) {
        Ok(value) => vec![(http::HeaderName::from_static("traceparent"), value)],
        Err(_) => Vec::new(),
    }
}

/// The middleware that makes a server span for each request to a service (its
/// API, the payment provider), a child of the `traceparent` it was sent with, if any.
pub async fn http_server_spans(request: Request, next: Next) -> Response {
    let route = request.uri().path().to_owned();
    let method = request.method().to_string();
    let span = tracing::info_span!(
        "http",
        otel.name = %format!("{method} {}", route_template(&route)),
        otel.kind = "server",
        http.request.method = %method,
        url.path = %route.escape_debug(),
        http.response.status_code = tracing::field::Empty,
    );
    if let Some(parent) = context_of(&Headers(request.headers())) {
        let _ = span.set_parent(parent);
    }
    let response = next.run(request).instrument(span.clone()).await;
    span.record("http.response.status_code", response.status().as_u16());
    if response.status().is_server_error() {
        span.set_attribute("error.type", response.status().as_u16().to_string());
        span.set_status(opentelemetry::trace::Status::error("server error"));
    }
    response
}

/// A request path with its IDs replaced by placeholders, as a span's name (a name must not
/// grow with the values it sees): `/refunds/R-0111/confirm` → `/refunds/{id}/confirm`.
fn route_template(path: &str) -> String {
    path.split('/')
        .map(|segment| if segment.bytes().any(|b| b.is_ascii_digit()) { "{id}" } else { segment })
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_name_spans_without_their_ids() {
        assert_eq!(route_template("/refunds/R-0111/confirm"), "/refunds/{id}/confirm");
        assert_eq!(route_template("/quotes"), "/quotes");
        assert_eq!(route_template("/connect/ab12cd"), "/connect/{id}");
    }

    #[test]
    fn malformed_context_is_no_context() {
        for bad in ["", "garbage", "00-00000000000000000000000000000000-0000000000000000-01", "00-xyz"] {
            assert!(context_of(&Parent(bad)).is_none(), "{bad:?}");
        }
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let cx = context_of(&Parent(good)).unwrap();
        assert_eq!(traceparent(&cx).as_deref(), Some(good));
    }
}
