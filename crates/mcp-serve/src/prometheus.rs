//! What the server counts, in Prometheus's text format at `/metrics`.
//!
//! The counters come from two places: the sealing boundary, which sees every request (its
//! method, latency, rounds, refused states and their reasons, and -32021 by client name), and
//! the server's own tools, whose series it hands to [`install`] to start at zero. Both write
//! through the `metrics` facade; this module installs the Prometheus recorder that renders them.

use std::sync::{Arc, OnceLock};

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use mrtr::{
    boundary::{Observer, Seen, SeenOutcome},
    request_state::Rejection,
};

/// Every request that can carry a state, by method and outcome.
pub const REQUESTS: &str = "mcp_requests_total";
/// How long the server took over such a request, by method.
pub const REQUEST_DURATION: &str = "mcp_request_duration_seconds";
/// How many rounds a finished call took, by tool.
pub const ROUNDS_PER_CALL: &str = "mcp_rounds_per_call";
/// States refused, by reason (every reason at zero from the start).
pub const REQUEST_STATE_REJECTIONS: &str = "mcp_request_state_rejections_total";
/// Calls shed as state-only rounds, the server being busy (at zero from the start).
pub const SHED: &str = "mcp_shed_total";
/// Calls answered -32021, by client name.
pub const MISSING_CAPABILITY: &str = "mcp_missing_capability_total";
/// Requests past a caller's share (at zero from the start).
pub const RATE_LIMITED: &str = "mcp_rate_limited_total";
/// Connections refused, by reason (every reason at zero from the start).
pub const CONNECTIONS_REFUSED: &str = "mcp_connections_refused_total";
/// 2025 sessions refused, by the cap that refused them.
pub const SESSIONS_REFUSED: &str = "mcp_sessions_refused_total";
/// 2025 sessions ended on a full replica to make room for a newcomer.
pub const SESSIONS_ENDED_FOR_ROOM: &str = "mcp_sessions_ended_for_room_total";
/// 1 while the replica is ready, 0 while it is not.
pub const READY: &str = "mcp_ready";
/// Every HTTP request, by method and status.
pub const HTTP_REQUEST_DURATION: &str = "mcp_http_request_duration_seconds";
/// The OpenTelemetry MCP conventions' `mcp.server.operation.duration`, as Prometheus names it.
pub const OPERATION_DURATION: &str = "mcp_server_operation_duration_seconds";

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// The MCP methods a request may be labelled with; anything else is `other`, so a client
/// cannot grow the server's series by inventing methods.
pub const METHODS: [&str; 16] = [
    "initialize",
    "notifications/initialized",
    "notifications/cancelled",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "completion/complete",
    "logging/setLevel",
    "subscriptions/listen",
    "none",
];

/// `method` if it is one of [`METHODS`], else `other`.
pub fn method_label(method: Option<&str>) -> &'static str {
    let method = method.unwrap_or("none");
    METHODS.iter().find(|known| **known == method).copied().unwrap_or("other")
}

/// A response's status as a label: a fixed string for the statuses this server answers with,
/// so the common ones cost no allocation.
pub fn status_label(status: http::StatusCode) -> std::borrow::Cow<'static, str> {
    const STATUSES: [&str; 16] = [
        "200", "202", "204", "400", "401", "403", "404", "405", "406", "408", "413", "415", "429", "500", "502", "503",
    ];
    let code = status.as_str();
    match STATUSES.iter().find(|known| **known == code) {
        Some(known) => std::borrow::Cow::Borrowed(known),
        None => std::borrow::Cow::Owned(code.to_owned()),
    }
}

/// The most distinct client names the metrics keep; later names count as `other`.
pub const MAX_CLIENT_LABELS: usize = 32;

/// A client's self-reported name as a label: the first [`MAX_CLIENT_LABELS`] names seen, then
/// `other`, so a client cannot grow the series by naming itself anew on every request.
pub fn client_label(name: &str) -> String {
    static SEEN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let name: String = name.chars().filter(|c| !c.is_control()).take(64).collect();
    if seen.contains(&name) {
        return name;
    }
    if seen.len() < MAX_CLIENT_LABELS {
        seen.push(name.clone());
        return name;
    }
    "other".to_owned()
}

/// A counter to start at zero: its name, and the label and values it is counted under (if
/// any), so an alert can tell "none" from "missing" on a fresh replica.
#[derive(Debug, Clone, Copy)]
pub struct Series {
    pub name: &'static str,
    pub label: Option<(&'static str, &'static [&'static str])>,
}

impl Series {
    /// A counter with no labels.
    pub const fn counter(name: &'static str) -> Self {
        Self { name, label: None }
    }

    /// A counter under `label`, one series for each of `values`.
    pub const fn labelled(name: &'static str, label: &'static str, values: &'static [&'static str]) -> Self {
        Self { name, label: Some((label, values)) }
    }

    fn start_at_zero(&self) {
        match self.label {
            None => metrics::counter!(self.name).increment(0),
            Some((label, values)) => {
                for value in values {
                    metrics::counter!(self.name, label => *value).increment(0);
                }
            }
        }
    }
}

/// Make every counter this module counts, and `also`, exist at zero.
fn start_at_zero(also: &[Series]) {
    for reason in Rejection::ALL {
        metrics::counter!(REQUEST_STATE_REJECTIONS, "reason" => reason.label()).increment(0);
    }
    metrics::counter!(SHED).increment(0);
    for series in also {
        series.start_at_zero();
    }
}

/// A JSON-RPC error code as a label: the codes this server answers, else `other`.
fn error_label(code: i32) -> &'static str {
    match code {
        -32700 => "-32700",
        -32600 => "-32600",
        -32601 => "-32601",
        -32602 => "-32602",
        -32603 => "-32603",
        -32020 => "-32020",
        -32021 => "-32021",
        -32022 => "-32022",
        _ => "other",
    }
}

/// How often histograms' samples are folded into their buckets (the exporter's own default).
const UPKEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Install the recorder (once per process, on a Tokio runtime) and return the handle that
/// renders it, with every series it counts and `series` at zero.
pub fn install(series: &[Series]) -> PrometheusHandle {
    HANDLE
        .get_or_init(|| {
            let seconds = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5];
            let rounds = [1.0, 2.0, 3.0, 4.0, 5.0, 10.0];
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Full(REQUEST_DURATION.into()), &seconds)
                .and_then(|b| b.set_buckets_for_metric(Matcher::Full(HTTP_REQUEST_DURATION.into()), &seconds))
                .and_then(|b| b.set_buckets_for_metric(Matcher::Full(ROUNDS_PER_CALL.into()), &rounds))
                .and_then(|b| {
                    // The OpenTelemetry MCP conventions' buckets for `mcp.server.operation.duration`.
                    let conventions = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];
                    b.set_buckets_for_metric(Matcher::Full(OPERATION_DURATION.into()), &conventions)
                });
            match builder.map(PrometheusBuilder::install_recorder) {
                Ok(Ok(handle)) => {
                    start_at_zero(series);
                    // A histogram keeps every sample until upkeep folds it into its buckets,
                    // which `install_recorder` leaves to its caller: without this, a server
                    // nobody scrapes grew by about 55 bytes a request (measured: 10 MiB for
                    // every 100,000 questions asked). The exporter's own `install` does the same.
                    let upkept = handle.clone();
                    tokio::spawn(async move {
                        let mut every = tokio::time::interval(UPKEEP_EVERY);
                        loop {
                            every.tick().await;
                            upkept.run_upkeep();
                        }
                    });
                    handle
                }
                _ => {
                    tracing::warn!("could not install the metrics recorder; /metrics will be empty");
                    PrometheusBuilder::new().build_recorder().handle()
                }
            }
        })
        .clone()
}

/// The boundary's observer: counts every request it answers.
pub fn observer() -> Observer {
    Arc::new(|seen: &Seen<'_>| {
        let method = seen.method.to_owned();
        let outcome = match seen.outcome {
            SeenOutcome::Complete => "complete",
            SeenOutcome::InputRequired => "input_required",
            SeenOutcome::Rejected(_) => "rejected_state",
            SeenOutcome::Error(_) => "error",
            SeenOutcome::Shed => "shed",
        };
        metrics::counter!(REQUESTS, "method" => method.clone(), "outcome" => outcome).increment(1);
        metrics::histogram!(REQUEST_DURATION, "method" => method.clone()).record(seen.elapsed.as_secs_f64());
        // The conventions' metric, with their attribute names; `error_type` from a closed set.
        let error_type = match seen.outcome {
            SeenOutcome::Error(code) => error_label(code),
            SeenOutcome::Rejected(_) => "-32602",
            _ => "",
        };
        let mut attributes = vec![("mcp_method_name", method)];
        if !error_type.is_empty() {
            attributes.push(("error_type", error_type.to_owned()));
        }
        metrics::histogram!(OPERATION_DURATION, &attributes).record(seen.elapsed.as_secs_f64());
        match seen.outcome {
            SeenOutcome::Rejected(reason) => {
                metrics::counter!(REQUEST_STATE_REJECTIONS, "reason" => reason.label()).increment(1);
            }
            SeenOutcome::Error(-32021) => {
                let client = client_label(seen.client.unwrap_or("unknown"));
                metrics::counter!(MISSING_CAPABILITY, "client" => client).increment(1);
            }
            SeenOutcome::Shed => metrics::counter!(SHED).increment(1),
            SeenOutcome::Complete if seen.target.is_some() => {
                let tool = seen.target.unwrap_or_default().to_owned();
                metrics::histogram!(ROUNDS_PER_CALL, "tool" => tool).record(f64::from(seen.round));
            }
            _ => {}
        }
    })
}
