//! `fernhill-gate serve POLICY`: the policy read and checked, the held calls' store opened,
//! every upstream connected, and their tools served over stdio until the host closes stdin, or
//! over Streamable HTTP (`--http`) until SIGINT or SIGTERM.

use std::{path::Path, process::ExitCode};

use mcp_serve::logging::{self, LogFormat, Verbosity};

/// The gate's own crates, whose doings its log tells at info.
const LOG_TARGETS: &[&str] = &["gate", "fernhill"];

/// What `serve` was told.
#[derive(Clone, Copy)]
pub struct Serving<'a> {
    /// The policy's file.
    pub policy: &'a Path,
    /// Where the held calls are kept.
    pub held_calls: &'a gate::HeldCallsAt,
    /// Where what the gates of one policy share beside them is kept, and its keys' prefix.
    pub store: (&'a str, &'a str),
    /// Who asks and decides where no token names a person (over stdio, always).
    pub host_user: &'a str,
    /// The keys' secrets, if given.
    pub keys: Option<&'a str>,
    /// The webhook and its signing secret, if given.
    pub webhook: Option<(&'a str, &'a str)>,
    /// Streamable HTTP, if it names an address.
    pub http: &'a mcp_serve::HttpConfig,
    /// The approval page's client at the issuer, and its secret, if the page is served.
    pub page_client: Option<(&'a str, Option<&'a str>)>,
    /// The approval page another gate serves, if this one links to it.
    pub page_url: Option<&'a str>,
}

/// `serve`'s settings read and checked together, before anything is opened.
pub struct Settled {
    policy: gate::Policy,
    /// Who asks where no token names a person.
    person: gate::Person,
    /// The origin of the approval page another gate serves, if this one links to it.
    page_elsewhere: Option<String>,
    webhook: Option<approvals::channel::webhook::Webhook>,
    keys: gate::Keys,
    shared: gate::Shared,
}

impl Settled {
    /// The policy, read.
    pub fn policy(&self) -> &gate::Policy {
        &self.policy
    }
}

/// Read the policy and check `serving`'s settings with it, as `serve` does before it opens a
/// store or an upstream (what `config check` checks too); a mistake is said on stderr and
/// comes back as exit 2.
pub fn settle(serving: &Serving<'_>) -> Result<Settled, ExitCode> {
    let Serving { policy: path, held_calls, store, host_user, keys, webhook, http, page_client, page_url } = *serving;
    let refused = |said: String| {
        eprintln!("fernhill-gate: {said}");
        ExitCode::from(2)
    };
    let policy = super::gate_check::read_policy(path)?;
    // Over stdio the host's user is who the policy says they sign in as; over HTTP a caller
    // without a token (loopback, or --insecure-no-auth) is the host user, named by nothing else.
    let person = match http.listen {
        None => policy.host_user(host_user),
        Some(_) => policy.tokenless_caller(host_user),
    };
    let Some(person) = person else {
        return Err(refused(format!("--host-user {host_user:?} names nobody: give the host's user's name")));
    };
    let page_elsewhere = page_url
        .map(gate::ApprovalPage::origin_of)
        .transpose()
        .map_err(|error| refused(format!("--page-url: {error}")))?;
    let webhook = webhook
        .map(|(url, secret)| gate::webhook(url, secret))
        .transpose()
        .map_err(|error| refused(format!("--webhook: {error}")))?;
    let keys = gate::Keys::from_secrets(keys).map_err(|error| refused(format!("--keys: {error}")))?;
    held_calls.check().map_err(|error| refused(format!("--held-calls: {error}")))?;
    let shared = gate::Shared::at(store.0, store.1).map_err(|error| refused(format!("--store: {error}")))?;
    if let Some(listen) = http.listen
        && http.auth_issuer.is_none()
        && !listen.ip().is_loopback()
        && !http.insecure_no_auth
    {
        return Err(refused(format!(
            "--http {listen} is not loopback and names no --auth-issuer: every caller would be {host_user}; give an \
             issuer, or --insecure-no-auth"
        )));
    }
    if page_client.is_some() && (http.listen.is_none() || http.auth_issuer.is_none()) {
        return Err(refused(
            "--page-client-id needs --http and --auth-issuer: deciders sign in on the page at the issuer".to_owned(),
        ));
    }
    Ok(Settled { policy, person, page_elsewhere, webhook, keys, shared })
}

/// Serve as `serving` says, logging at `verbose` on stderr; what to exit with (2 for a mistake
/// in the policy, the keys, the held calls' URL or the address, or a user name that names
/// nobody, 1 for a store or an upstream that could not be opened, or serving that failed).
pub async fn run(serving: Serving<'_>, verbose: u8) -> ExitCode {
    logging::init(Verbosity::Info.raised(verbose), LogFormat::Text, None, LOG_TARGETS);
    let Settled { policy, person, page_elsewhere, webhook, mut keys, shared } = match settle(&serving) {
        Ok(settled) => settled,
        Err(code) => return code,
    };
    let Serving { held_calls, store, host_user, http, page_client, .. } = serving;
    let held = match gate::HeldCalls::open_at(held_calls, clock::Clock::system()).await {
        Ok(held) => held,
        Err(error) => {
            eprintln!("fernhill-gate: {held_calls}: {error}");
            return ExitCode::FAILURE;
        }
    };
    if matches!(held_calls, gate::HeldCallsAt::Postgres(_)) && store.0 == "memory" {
        tracing::warn!(
            "held calls are in PostgreSQL, which a fleet of gates shares, but their tasks, decisions' claims and \
             the page's sessions are kept in this gate alone: give every gate of the fleet the same --store redis://…"
        );
    }
    let decides = policy.decides_at_own_host(&person);
    // A host user asking over stdio whose calls are decided on a page where people sign in.
    let unknown_on_the_page = http.listen.is_none() && policy.page_cannot_tell(&person);
    let policy_scopes = gate::GateScopes::of(&policy);
    // The page's sign-in asks for the scopes the rules name their deciders by.
    let page_scopes = oauth_resource::scopes::ScopePolicy::supported(&policy_scopes).join(" ");
    tracing::info!(%held_calls, host_user, person = %person.party, decides, keys = keys.configured, "held calls kept");
    if http.listen.is_some() {
        // Before the upstreams are opened, so that each one's gauges are there from zero.
        mcp_serve::prometheus::install(&[]);
    }
    let opening =
        gate::Opening { held, host_user: person, receipts: Some(keys.receipts.clone()), webhook, shared: &shared };
    let gate = match gate::Gate::open(policy, opening).await {
        Ok(gate) => gate,
        Err(error) => {
            eprintln!("fernhill-gate: {error}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(origin) = page_elsewhere {
        if unknown_on_the_page {
            tracing::warn!(
                host_user,
                "the approval page names people as they sign in at its issuer, and the policy's [people] gives \
                 {host_user} no signs_in_as: the page cannot tell {host_user} from who signs in there, so it decides \
                 none of the calls {host_user} asks here under a rule that needs another person (they are decided \
                 with review_approvals); say signs_in_as for {host_user} to have them decided there"
            );
        }
        tracing::info!(page = %format!("{origin}{}", approvals::channel::page::PATH), "held calls are decided on the approval page another gate serves");
        gate.page_served_at(origin);
    }
    let page = page_client.zip(keys.page_cookies()).map(|((client_id, client_secret), cookies)| PageSetup {
        gate: gate.clone(),
        client_id,
        client_secret,
        scopes: page_scopes,
        cookies,
        sessions: shared.records.clone(),
    });
    let receipts = keys.receipts.clone();
    let sealed = keys.seal(gate.clone(), gate.tasks());
    let served = match http.listen {
        None => mcp_serve::stdio::serve(sealed).await.map_err(|error| error.to_string()),
        Some(_) => {
            let passing = gate::Passthrough::new(&gate, sealed.passage());
            let shortcut = passing.map(|passing| std::sync::Arc::new(Lane(passing)) as _);
            over_http(http, &policy_scopes, sealed, shortcut, page, receipts).await
        }
    };
    gate.close().await;
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("fernhill-gate: {error}");
            ExitCode::FAILURE
        }
    }
}

/// What the approval page is served with.
struct PageSetup<'a> {
    gate: gate::Gate,
    /// Its client at the issuer.
    client_id: &'a str,
    /// The client's secret, for a confidential client.
    client_secret: Option<&'a str>,
    /// The scopes its sign-in asks for.
    scopes: String,
    cookies: mrtr::seal::KeyRing,
    /// Where its visitors' sessions are kept.
    sessions: std::sync::Arc<dyn records::Records>,
}

/// The gate's calls passed on as their bytes ([`gate::Passthrough`]), as the serving shell's
/// shortcut in front of rmcp.
struct Lane(gate::Passthrough);

impl mcp_serve::shortcut::Shortcut for Lane {
    fn answer(&self, request: axum::extract::Request) -> mcp_serve::shortcut::Answering {
        let passing = self.0.clone();
        Box::pin(async move { passing.answer(request).await })
    }
}

/// Serve `sealed` over Streamable HTTP as `http` says, with `scopes`, `shortcut` in front of
/// rmcp, the approval page where `page` says, and the public keys of `receipts` (at
/// `/.well-known/jwks.json`, page or not: a receipt is checked against them), until SIGINT or
/// SIGTERM; where it listens goes on stdout first.
async fn over_http<H: rmcp::ServerHandler + Clone + Send + Sync + 'static>(
    http: &mcp_serve::HttpConfig,
    scopes: &gate::GateScopes,
    sealed: H,
    shortcut: Option<std::sync::Arc<dyn mcp_serve::shortcut::Shortcut>>,
    page: Option<PageSetup<'_>>,
    receipts: std::sync::Arc<approvals::ReceiptKeys>,
) -> Result<(), String> {
    let metrics = mcp_serve::prometheus::install(&[]);
    let bound = mcp_serve::Listening::bind(http).await.map_err(|error| error.to_string())?;
    let gate = mcp_serve::gate(http, bound.address(), "Fernhill gate", Box::new(scopes.clone()))
        .map_err(|error| error.to_string())?;
    if let Some(gate) = &gate {
        gate.start().await;
    }
    let page = match (page, &gate) {
        (Some(page), Some(resource)) => Some(approval_page(http, bound.address(), page, resource).await?),
        _ => None,
    };
    println!("{}", bound.url());
    if let Some(admin) = bound.admin_url() {
        println!("{admin}");
    }
    let lifecycle = mcp_serve::Lifecycle {
        readiness: mcp_serve::readiness::Readiness::default(),
        questions: None,
        longest_wait: mrtr::request_state::DEFAULT_TTL,
        shared_sessions: None,
        shortcut,
    };
    let mut service = mcp_serve::router(http, bound.address(), sealed, gate, lifecycle, metrics);
    if let Some(page) = page {
        service.serve_beside(page.routes());
    }
    service.serve_beside(approvals::channel::jwks::routes(&receipts));
    mcp_serve::serve(bound, service, web_service::shutdown::signal()).await.map_err(|error| error.to_string())
}

/// The approval page `setup` says, served at the public URL's origin (or the address bound),
/// its people signed in at the issuer `resource` checks tokens of, asking for a token for the
/// MCP endpoint (whose scopes, with `[people]`, say what they hold); checked against the issuer
/// where it answers.
async fn approval_page(
    http: &mcp_serve::HttpConfig,
    bound: std::net::SocketAddr,
    setup: PageSetup<'_>,
    resource: &oauth_resource::gate::ResourceServer,
) -> Result<gate::ApprovalPage, String> {
    let issuer = http.auth_issuer.as_deref().ok_or("--page-client-id needs --auth-issuer")?;
    let endpoint = http.public_url.clone().unwrap_or_else(|| format!("http://{bound}/mcp"));
    let sign_in = gate::PageSignIn {
        issuer,
        client_id: setup.client_id,
        client_secret: setup.client_secret,
        endpoint: &endpoint,
        scopes: &setup.scopes,
        cookies: setup.cookies,
        sessions: setup.sessions,
        resource,
    };
    let page = setup.gate.approval_page(sign_in)?;
    let origin = page.origin().to_owned();
    page.check_issuer().await.map_err(|error| format!("the approval page: {error}"))?;
    tracing::info!(page = %format!("{origin}{}", approvals::channel::page::PATH), "serving the approval page");
    Ok(page)
}
