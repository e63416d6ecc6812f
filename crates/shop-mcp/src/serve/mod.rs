//! Serving the shop: one configuration ([`ServeConfig`]), one [`build`], and the two
//! transports side by side: `mcp_serve::stdio` for a host that launches the server, and
//! Streamable HTTP through `mcp_serve` (the serving shell, which knows nothing of the shop) with the shop's
//! scopes ([`authorization`]), its readiness checks and its metrics' series. [`state_keys`]
//! reads the sealing keys. Past `--max-tool-calls`, calls are shed as state-only rounds
//! (`mrtr::shedding`); a question waiting for its person holds no slot (`mrtr::waiting`).
//!
//! Only a sealed shop is served: [`build`] returns the shop behind its sealing boundary, and
//! the boundary is the only way in.

pub mod authorization;
pub mod config;
pub mod state_keys;

use std::{future::Future, sync::Arc};

use clock::Clock;

use mcp_serve::{Lifecycle, Listening, prometheus, readiness::Readiness, telemetry};
use mrtr::{boundary::Sealed, shedding::Shedding, waiting::WaitingRoom};
use payment_provider::{PaymentProvider, ProviderError};
use records::RecordsError;
use shop_api::{ApiError, ShopApi};

pub use config::{Contradiction, PaymentsConfig, ServeConfig, WhenBusy};
pub use mcp_serve::HttpConfig;

use approvals::channel::sign_in::{PageClient, SignIn};

use crate::{
    Payments, Shop,
    approval_page::{self, ApprovalPage},
    audit::{self, Audit, AuditError},
    serve::state_keys::StateKeyError,
};

/// The crates whose doings a server's log tells at its default verbosity over HTTP, and whose
/// spans go to OpenTelemetry: this project's.
pub const LOG_TARGETS: &[&str] =
    &["fernhill", "shop_mcp", "shop_api", "payment_provider", "host", "wire", "load", "conformance"];

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    StateKeys(#[from] StateKeyError),
    #[error("the shop's API at {url}: {source}")]
    ShopApi { url: String, source: ApiError },
    #[error("the payment provider at {url}: {source}")]
    Payments { url: String, source: ProviderError },
    #[error("the store: {0}")]
    Records(#[from] RecordsError),
    #[error("the task store: {0}")]
    Tasks(#[from] mrtr::tasks::TaskStoreError),
    #[error("reading a credential from {path}: {source}")]
    Credential { path: std::path::PathBuf, source: std::io::Error },
    #[error(transparent)]
    Audit(#[from] AuditError),
    #[error("a tool's form: {0}")]
    Form(#[from] mrtr::form::FormError),
    #[error(transparent)]
    Stdio(#[from] mcp_serve::stdio::StdioError),
    #[error(transparent)]
    Http(#[from] mcp_serve::ServeError),
    #[error(
        "refusing to serve HTTP on {0} without authorization: anyone who reaches it could release refunds. \
         Give --auth-issuer and --public-url, or --insecure-no-auth if something else guards it"
    )]
    Insecure(std::net::SocketAddr),
    #[error("approvals: {0}")]
    Approvals(String),
    /// Settings that cannot hold together ([`ServeConfig::contradictions`]), with their flags.
    #[error("{}: {}", .0.flags().join(" with "), .0.words)]
    Contradiction(config::Contradiction),
}

/// The shop's server behind its sealing boundary, observed for metrics.
pub fn build(config: &ServeConfig) -> Result<Sealed<Shop>, ServeError> {
    build_with_clock(config, Clock::system())
}

/// As [`build`], every part of the server telling the time by `clock`: the sealed states'
/// lifetimes, the tasks', the approvals' claims and receipts, the trail's lines, the approval
/// page's sign-ins, the webhook's signatures. The server's one clock; a test moves its own.
pub fn build_with_clock(config: &ServeConfig, clock: Clock) -> Result<Sealed<Shop>, ServeError> {
    // Both transports pass here: a configuration that cannot hold together serves neither.
    if let Some(contradiction) = config.contradictions().into_iter().next() {
        return Err(ServeError::Contradiction(contradiction));
    }
    let (security, source) = state_keys::state_security(config.state_keys.as_deref(), config.state_ttl, clock.clone())?;
    tracing::info!(keys = ?source, kid = %security.ring().sealing_kid(), ttl_secs = security.ttl().as_secs_f64(), "sealing requestState");
    let api_token = secret(config.shop_api_token.clone(), config.shop_api_token_file.as_deref())?;
    let api = ShopApi::new(&config.shop_api)
        .map_err(|source| ServeError::ShopApi { url: config.shop_api.clone(), source })?
        .with_token(api_token)
        .with_headers(Arc::new(telemetry::outgoing));
    let records = records::from_url(&config.store, &config.store_prefix)?;
    tracing::info!(records = %records.describe(), "keeping quotes and once-only claims");
    let audit = match &config.audit_log {
        None => Audit::off(),
        Some(path) => {
            let replica = config.replica_name.clone().unwrap_or_else(replica_name);
            let audit = Audit::to_file(path, &replica)?.with_clock(clock.clone());
            audit.reopen_on_hangup();
            tracing::info!(path = %path.display(), %replica, "recording decisions about money in the audit log");
            audit
        }
    };
    let (receipt_keys, receipt_source) = state_keys::receipt_keys(config.state_keys.as_deref())?;
    tracing::info!(keys = ?receipt_source, kid = %receipt_keys.signing_kid(), "signing receipts of decisions");
    let mut shop = Shop::new(api, security.ttl())?
        .with_clock(clock.clone())
        .with_receipt_keys(Arc::new(receipt_keys))
        .with_ask_style(config.ask_style)
        .with_approval(config.approval, config.confirm_on)
        .riding_through(std::time::Duration::from_secs(config.ride_through))
        .with_webhook(webhook(config)?.map(|webhook| webhook.with_clock(clock.clone())))
        .with_records(records, config.quote_ttl(), config.max_open_quotes)
        .with_audit(audit.clone(), &config.lead);
    if let Some(payments) = payments(&config.payments, &config.lead)? {
        tracing::info!(lead = %payments.lead, "paying refunds through the payment provider");
        shop = shop.with_payments(payments);
    }
    // Tasks in the same store as the records: a refund waiting for its lead is a record any
    // replica reads, answers and finishes.
    let task_store = mrtr::tasks::from_url(&config.store, &config.store_prefix, config::TASK_GRACE)?;
    let tasks =
        mrtr::tasks::Tasks::new(task_store, config.task_times()).with_clock(clock).working(Arc::new(shop.clone()));
    // The Prometheus recorder is installed by the HTTP transport, which serves /metrics; over
    // stdio nothing would read it, and installing it calibrates a clock (milliseconds of
    // spinning at every start). Without it the metrics below cost nothing.
    let sealed = Sealed::new(shop, Arc::clone(&security))
        .observed(audit::observing(audit, prometheus::observer()))
        .waiting(WaitingRoom::new(config.max_waiting, config.max_waiting_per_caller))
        .traced(Arc::new(telemetry::CallTraces))
        .tasks(tasks);
    Ok(match (config.max_tool_calls, config.when_busy) {
        (0, _) => sealed,
        (limit, WhenBusy::Shed) => {
            tracing::info!(limit, "tool calls past the limit are shed as state-only rounds");
            sealed.shedding(Shedding::new(limit))
        }
        (limit, WhenBusy::Wait) => {
            tracing::info!(limit, "tool calls past the limit wait for a slot");
            sealed.shedding(Shedding::queueing(limit))
        }
    })
}

fn payments(config: &PaymentsConfig, lead: &str) -> Result<Option<Payments>, ServeError> {
    let Some(url) = &config.provider else { return Ok(None) };
    let token = secret(config.token.clone(), config.token_file.as_deref())?;
    let provider = PaymentProvider::new(url)
        .map_err(|source| ServeError::Payments { url: url.clone(), source })?
        .with_token(token)
        .with_headers(Arc::new(telemetry::outgoing));
    Ok(Some(Payments {
        public_url: config.public_url.clone().unwrap_or_else(|| url.clone()),
        provider,
        lead: lead.to_owned(),
        max_rounds: config.max_rounds,
    }))
}

/// Serve over HTTP when the configuration names an address, else over stdio, until the
/// client closes stdin or `shutdown` resolves. Over HTTP, `listening` is told where the
/// server listens once it does (the binary says it).
pub async fn run(
    config: &ServeConfig,
    listening: impl FnOnce(&Listening),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let Some(listen) = config.http.listen else {
        return Ok(mcp_serve::stdio::serve(build(config)?).await?);
    };
    if config.http.auth_issuer.is_none() && !listen.ip().is_loopback() {
        if !config.http.insecure_no_auth {
            return Err(ServeError::Insecure(listen));
        }
        tracing::warn!(%listen, "serving HTTP without authorization (--insecure-no-auth): anyone who reaches it can release refunds");
    }
    // The recorder first: the layers built below make their series exist at zero through it.
    let metrics = prometheus::install(crate::series::SERIES);
    let sealed = build(config)?;
    let receipt_keys = sealed.inner().receipt_keys.clone();
    let lifecycle = Lifecycle {
        readiness: readiness_of(sealed.inner()),
        questions: Some(sealed.waiting_room().clone()),
        longest_wait: std::time::Duration::from_secs_f64(config.state_ttl.max(0.0)),
        // A store every replica shares holds the 2025 sessions too, unless told not to: one
        // outlives its replica.
        shared_sessions: (!config.http.local_sessions && config.store != "memory").then(|| {
            let keep =
                config.http.session_idle_timeout.max(std::time::Duration::from_secs_f64(config.state_ttl.max(0.0)));
            mcp_serve::shared_sessions::SharedSessions::new(sealed.inner().records.clone(), keep)
        }),
        shortcut: None,
    };
    let bound = Listening::bind(&config.http).await?;
    let gate = mcp_serve::gate(
        &config.http,
        bound.address(),
        "Fernhill shop",
        Box::new(authorization::ShopScopes { approval: config.approval }),
    )?;
    if let Some(gate) = &gate {
        gate.start().await;
    }
    let page = approval_page(config, sealed.inner(), bound.address(), gate.as_ref())?;
    if let Some(page) = &page {
        page.check_issuer().await.map_err(|error| ServeError::Approvals(error.to_string()))?;
    }
    sealed.inner().watch_overdue(config.escalation());
    // Said once the issuer's keys are had (or given up on for now), as callers come next.
    listening(&bound);
    let mut service = mcp_serve::router(&config.http, bound.address(), sealed, gate, lifecycle, metrics);
    if let Some(page) = page {
        service.serve_beside(page.routes());
    }
    service.serve_beside(approvals::channel::jwks::routes(&receipt_keys));
    Ok(mcp_serve::serve(bound, service, shutdown).await?)
}

/// The approval page, when `--approvals-client-id` names its client at the issuer: served at
/// the public URL's origin (or the address bound), its sign-in asking for a token for the MCP
/// endpoint, whose scopes say whether the person is a lead. Its links are given from then on.
fn approval_page(
    config: &ServeConfig,
    shop: &Shop,
    bound: std::net::SocketAddr,
    gate: Option<&oauth_resource::gate::ResourceServer>,
) -> Result<Option<ApprovalPage>, ServeError> {
    // `build` refused a page without its client, issuer or address (`contradictions`).
    let Some(client_id) = &config.approvals_client_id else { return Ok(None) };
    let (Some(issuer), Some(gate)) = (&config.http.auth_issuer, gate) else {
        return Err(ServeError::Approvals("--approvals-client-id needs --auth-issuer: leads sign in there".into()));
    };
    let endpoint = config.http.public_url.clone().unwrap_or_else(|| format!("http://{bound}/mcp"));
    let origin = match url_origin(&endpoint) {
        Some(origin) => origin,
        None => return Err(ServeError::Approvals(format!("the public URL {endpoint} has no origin"))),
    };
    let secret = secret(config.approvals_client_secret.clone(), config.approvals_client_secret_file.as_deref())?;
    let redirect = format!("{origin}{}/callback", approval_page::PATH);
    // A sign-in under way is its browser's cookie, sealed under the request state's keys
    // derived for it: any replica with the same keys takes the callback.
    let (cookies, source) =
        state_keys::ring_for(config.state_keys.as_deref(), approvals::channel::sign_in::COOKIE_PURPOSE)?;
    if source == state_keys::KeySource::MadeAtStart && config.store != "memory" {
        tracing::warn!(
            "the approval page's sign-ins are sealed under a key made at start: give every replica the same \
             SHOP_REQUEST_STATE_KEY, or a lead who signs in on one replica and comes back to another starts again"
        );
    }
    let tells_people_apart = config.approval == shop_api::Approval::AnotherLead;
    let client = PageClient {
        issuer,
        client_id,
        client_secret: secret.as_deref(),
        redirect: &redirect,
        tells_people_apart,
        scope: authorization::REFUNDS_WRITE,
        entitled: authorization::is_lead,
    };
    let sign_in = SignIn::new(client, &endpoint, shop.records.clone(), cookies, gate.clone())
        .map_err(ServeError::Approvals)?
        .with_clock(shop.clock.clone());
    let _ = shop.approval_page.set(format!("{origin}{}", approval_page::PATH));
    tracing::info!(page = %format!("{origin}{}", approval_page::PATH), "serving the approval page");
    Ok(Some(ApprovalPage::new(shop.clone(), sign_in, &origin)))
}

/// The approvals webhook, when one is named.
fn webhook(config: &ServeConfig) -> Result<Option<crate::webhook::Webhook>, ServeError> {
    let Some(url) = &config.approvals_webhook else { return Ok(None) };
    // Its secret's length is one of `contradictions`, which `build` checked first.
    let secret = config.approvals_webhook_secret.as_deref().unwrap_or_default();
    crate::webhook::webhook(url, secret).map(Some).map_err(ServeError::Approvals)
}

/// `scheme://host[:port]` of `url`, as a browser writes it in `Origin` (the default port left
/// out, the host in lower case).
fn url_origin(url: &str) -> Option<String> {
    let origin = url::Url::parse(url).ok()?.origin();
    origin.is_tuple().then(|| origin.ascii_serialization())
}

/// A credential given, or read from the file named.
fn secret(given: Option<String>, file: Option<&std::path::Path>) -> Result<Option<String>, ServeError> {
    match file {
        None => Ok(given.filter(|token| !token.is_empty())),
        Some(path) => web_service::credential::read_secret(path)
            .map(Some)
            .map_err(|source| ServeError::Credential { path: path.to_owned(), source }),
    }
}

/// This process, as the audit trail names it: the host's name and the process's ID.
fn replica_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host = host.trim();
    format!("{}/{}", if host.is_empty() { "localhost" } else { host }, std::process::id())
}

/// The shop is ready when its API answers, its store can be read and its audit trail written.
fn readiness_of(shop: &Shop) -> Readiness {
    let api = shop.api.clone();
    let records = shop.records.clone();
    let audit = shop.audit.clone();
    Readiness::new(vec![
        Arc::new(move || {
            let writable = audit.writable();
            Box::pin(async move {
                match writable {
                    true => Ok(()),
                    false => Err("the audit trail could not be written".to_owned()),
                }
            })
        }),
        Arc::new(move || {
            let api = api.clone();
            Box::pin(async move { api.health().await.map_err(|error| error.to_string()) })
        }),
        Arc::new(move || {
            let records = records.clone();
            Box::pin(async move { records.get("readyz").await.map(drop).map_err(|error| error.to_string()) })
        }),
    ])
}
