//! What a deployment tells the HTTP transport: one struct, [`HttpConfig`], read by a binary's
//! command line (flatten it into a `clap` command; each field has its environment twin, and a
//! configuration file's key through `config-file`) and built by hand in tests and programs.
//! Every default is written here once, in the flag's attribute: [`HttpConfig::default`] is
//! what clap makes of an empty command line.

use std::{net::SocketAddr, time::Duration};

/// Answers on one HTTP connection before it is closed unless told otherwise (nginx's default).
pub const DEFAULT_MAX_REQUESTS_PER_CONNECTION: usize = 1000;
/// Requests a second each caller may make unless told otherwise: far above what a host or a
/// load test's leads sharing one address send (about 6,000 a second from `bench/run`'s 16),
/// so it turns away only floods.
pub const DEFAULT_RATE_LIMIT: u32 = 20_000;

/// The largest request body the MCP endpoint over HTTP reads.
pub const MAX_BODY_BYTES: usize = 256 * 1024;
/// HTTP connections open at once unless told otherwise.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// HTTP connections one client holds at once unless told otherwise: a host keeps a handful,
/// a load test's sixteen leads sharing one address about as many.
pub const DEFAULT_MAX_CONNECTIONS_PER_CLIENT: usize = 64;
/// 2025 sessions a replica keeps at once unless told otherwise (each holds a task and its
/// buffers, tens of kilobytes).
pub const DEFAULT_MAX_SESSIONS: usize = 1000;
/// 2025 sessions one caller holds at once unless told otherwise.
pub const DEFAULT_MAX_SESSIONS_PER_CALLER: usize = 16;

/// Host header values the HTTP server accepts unless told otherwise: loopback names.
pub const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Streamable HTTP: where to listen, and whom to let in. Without an address, the server
/// speaks stdio.
#[derive(Debug, Clone, clap::Args)]
pub struct HttpConfig {
    /// Serve Streamable HTTP on this address (such as 127.0.0.1:8711) instead of stdio.
    #[arg(long = "http", value_name = "ADDRESS")]
    pub listen: Option<SocketAddr>,

    /// Host header values to accept over HTTP (repeat); loopback names by default.
    #[arg(long = "allowed-host", value_name = "HOST", default_values_t = LOOPBACK_HOSTS.map(String::from))]
    pub allowed_hosts: Vec<String>,

    /// Browser origins to accept over HTTP (repeat), such as https://support.fernhill.example;
    /// by default only this server's own loopback origin (http://localhost:PORT).
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,

    /// The OAuth authorization server (its issuer URL) whose access tokens callers must show
    /// over HTTP; its metadata and signing keys are found from it.
    #[arg(long, env = "FERNHILL_AUTH_ISSUER", value_name = "URL")]
    pub auth_issuer: Option<String>,

    /// The MCP endpoint's canonical URL as clients reach it, such as https://mcp.fernhill.example/mcp:
    /// the audience every token must name, and the protected resource metadata's `resource`.
    /// Without it, http://ADDRESS/mcp of the address the server listens on (right on loopback;
    /// behind a proxy or a name, give it).
    #[arg(long, env = "FERNHILL_PUBLIC_URL", value_name = "URL")]
    pub public_url: Option<String>,

    /// Accept opaque access tokens too, asking the authorization server about each (RFC 7662
    /// introspection) as this server's own client (--auth-client-id, secret in the environment).
    #[arg(long, requires_all = ["auth_issuer", "auth_client_id"])]
    pub auth_introspection: bool,

    /// The token claim that names a person the same to every client of the authorization
    /// server, such as `employee_id`: for an issuer that gives each client its own `sub` for one
    /// person (OpenID Connect pairwise subjects), where the host's token and the approval page's
    /// would otherwise name two people. Every person's token must then carry it; a token without
    /// it is refused (401). Required for the approval page under `--approval another-lead` when
    /// the issuer offers pairwise subjects.
    #[arg(long, env = "FERNHILL_AUTH_PERSON_CLAIM", value_name = "CLAIM", requires = "auth_issuer")]
    pub auth_person_claim: Option<String>,

    /// This server's own OAuth client at the authorization server, for introspection.
    #[arg(long, env = "FERNHILL_AUTH_CLIENT_ID", value_name = "ID")]
    pub auth_client_id: Option<String>,

    /// That client's secret.
    #[arg(long, env = "FERNHILL_AUTH_CLIENT_SECRET", hide_env_values = true, value_name = "SECRET")]
    pub auth_client_secret: Option<String>,

    /// Serve HTTP on a non-loopback address without authorization. Anyone who reaches the port
    /// can then release and pay refunds; the server warns at every start.
    #[arg(long)]
    pub insecure_no_auth: bool,

    /// Proxies whose word on the client's address is taken (repeat), such as 10.0.0.0/8 or
    /// 127.0.0.1/32: their connections must open with a PROXY v2 header (HAProxy's
    /// send-proxy-v2), unless --forwarded-header says where they name the client instead.
    #[arg(long = "trusted-proxy", env = "FERNHILL_TRUSTED_PROXIES", value_delimiter = ',', value_name = "CIDR")]
    pub trusted_proxies: Vec<ipnet::IpNet>,

    /// Where PROXY protocol cannot be used: the request header in which trusted proxies name
    /// the client, such as X-Forwarded-For (the rightmost address not a trusted proxy's counts).
    #[arg(long, env = "FERNHILL_FORWARDED_HEADER", requires = "trusted_proxies", value_name = "HEADER")]
    pub forwarded_header: Option<axum::http::HeaderName>,

    /// HTTP connections open at once; past it, the oldest that has not sent a whole request
    /// yet is closed to make room for a new one, and when there is none the new one is
    /// answered 503 and closed.
    #[arg(long, env = "FERNHILL_MAX_CONNECTIONS", default_value_t = DEFAULT_MAX_CONNECTIONS, value_name = "N")]
    pub max_connections: usize,

    /// HTTP connections one client (an address; an IPv6 /64) holds at once; past it, 429. The
    /// clients of one network (an IPv4 /24, an IPv6 /48) hold a quarter of --max-connections
    /// together, or this if it is more.
    #[arg(long, env = "FERNHILL_MAX_CONNECTIONS_PER_CLIENT", default_value_t = DEFAULT_MAX_CONNECTIONS_PER_CLIENT, value_name = "N")]
    pub max_connections_per_client: usize,

    /// Seconds a connection's first request (its headers, and a PROXY header before them) may
    /// take to arrive; else the connection is closed.
    // A client that connects sends at once.
    #[arg(long, env = "FERNHILL_HEADER_TIMEOUT", default_value = "5", value_parser = seconds, value_name = "SECONDS")]
    pub header_timeout: Duration,

    /// Seconds a later request's headers may take to arrive from the connection's last answer
    /// (else the connection is closed), and a body from its headers (else 408).
    // hyper's own default for headers. Hosts' HTTP clients drop idle connections sooner
    // (httpx after 5 s, Node's after 4 s, ours 20 s).
    #[arg(long, env = "FERNHILL_READ_TIMEOUT", default_value = "30", value_parser = seconds, value_name = "SECONDS")]
    pub read_timeout: Duration,

    /// Seconds an answer may wait to be written, its peer not reading it, before the connection
    /// is closed.
    #[arg(long, env = "FERNHILL_WRITE_TIMEOUT", default_value = "30", value_parser = seconds, value_name = "SECONDS")]
    pub write_timeout: Duration,

    /// Answers on one connection before it is closed (the client opens another); 0: no bound.
    #[arg(long, env = "FERNHILL_MAX_REQUESTS_PER_CONNECTION", default_value_t = DEFAULT_MAX_REQUESTS_PER_CONNECTION, value_name = "N")]
    pub max_requests_per_connection: usize,

    /// Requests a second each caller may make (the token's subject, or the peer's address
    /// without authorization); past it, 429 with Retry-After. 0: no limit.
    #[arg(long, env = "FERNHILL_RATE_LIMIT", default_value_t = DEFAULT_RATE_LIMIT, value_name = "PER_SECOND")]
    pub rate_limit: u32,

    /// Requests a caller may make at once before the rate applies (defaults to the rate).
    #[arg(long, env = "FERNHILL_RATE_BURST", value_name = "N")]
    pub rate_burst: Option<u32>,

    /// New access tokens one client may have checked a second (five times as many at once);
    /// past it, 429 without the token being looked at. A token checked lately costs nothing.
    #[arg(long, env = "FERNHILL_AUTH_CHECKS_PER_CLIENT", default_value_t = oauth_resource::budget::DEFAULT_PER_CLIENT, value_name = "PER_SECOND")]
    pub auth_checks_per_client: u32,

    /// New access tokens the server checks a second in all, whoever sends them (twice as many
    /// at once); past it, 503 with Retry-After.
    #[arg(long, env = "FERNHILL_AUTH_CHECKS", default_value_t = oauth_resource::budget::DEFAULT_IN_ALL, value_name = "PER_SECOND")]
    pub auth_checks: u32,

    /// 2025 sessions this replica keeps at once; past it, the longest-idle session of the
    /// caller holding the most ends for a newcomer, and when that caller has none idle, an
    /// initialize gets 503.
    #[arg(long, env = "FERNHILL_MAX_SESSIONS", default_value_t = DEFAULT_MAX_SESSIONS, value_name = "N")]
    pub max_sessions: usize,

    /// 2025 sessions one caller (a principal, or a client's address without authorization)
    /// holds at once; past it, an initialize gets 429.
    #[arg(long, env = "FERNHILL_MAX_SESSIONS_PER_CALLER", default_value_t = DEFAULT_MAX_SESSIONS_PER_CALLER, value_name = "N")]
    pub max_sessions_per_caller: usize,

    /// Seconds a 2025 session with no request in flight lives (a question waiting for its
    /// person is a request in flight).
    #[arg(long, env = "FERNHILL_SESSION_IDLE_TIMEOUT", default_value = "60", value_parser = seconds, value_name = "SECONDS")]
    pub session_idle_timeout: Duration,

    /// Keep 2025 sessions on this replica alone, even with a shared --store. By default a
    /// shared store holds them too, so that any replica serves one and it outlives its replica
    /// (a question waiting when its session moves to another replica ends in words, and the
    /// host's next call is asked there).
    #[arg(long, env = "FERNHILL_LOCAL_SESSIONS")]
    pub local_sessions: bool,

    /// The admin listener: serve /livez, /readyz (with its reasons), /healthz and /metrics on
    /// this address of its own too (such as 127.0.0.1:9464), for the load balancer's checks and
    /// Prometheus; /metrics is then not served beside /mcp.
    #[arg(long, visible_alias = "admin-listen", env = "FERNHILL_METRICS_LISTEN", value_name = "ADDRESS")]
    pub metrics_listen: Option<SocketAddr>,

    /// Serve /metrics beside /mcp even on a public address with authorization, where by
    /// default it is not (give --metrics-listen instead).
    #[arg(long)]
    pub public_metrics: bool,

    /// Seconds a stopping replica keeps serving after SIGTERM, answering /readyz with 503, so
    /// its load balancer stops sending it requests first (a second signal cuts it short).
    #[arg(long, env = "FERNHILL_DRAIN_GRACE", default_value = "5", value_parser = seconds, value_name = "SECONDS")]
    pub drain_grace: Duration,

    /// Seconds after SIGTERM that a question waiting for its person (a 2025 host's) may still
    /// be answered; then it ends in words, the refund held (at most the grace period).
    #[arg(long, env = "FERNHILL_DRAIN_TIMEOUT", default_value = "4", value_parser = seconds, value_name = "SECONDS")]
    pub drain_timeout: Duration,
}

/// A positive number of seconds, such as `10` or `0.5`.
fn seconds(text: &str) -> Result<Duration, String> {
    match text.trim().parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs > 0.0 && secs < 1e6 => Ok(Duration::from_secs_f64(secs)),
        _ => Err(format!("{text:?} is not a positive number of seconds")),
    }
}

impl HttpConfig {
    /// Listen on `listen`, letting in loopback hosts and no browser origin.
    pub fn loopback(listen: SocketAddr) -> Self {
        Self { listen: Some(listen), ..Self::default() }
    }

    /// HTTP connections the clients of one network hold at once: a quarter of the replica's,
    /// or one client's share if that is more.
    pub fn max_connections_per_network(&self) -> usize {
        self.max_connections_per_client.max(self.max_connections / 4)
    }
}

impl Default for HttpConfig {
    /// Every setting at the default its flag declares.
    fn default() -> Self {
        // The definition is this file's, not a peer's input: a test parses it.
        config_file::defaults(&[]).expect("HttpConfig's defaults are well formed")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_flags_defaults() {
        let config = HttpConfig::default();
        assert_eq!(config.header_timeout, Duration::from_secs(5));
        assert_eq!(config.drain_timeout, Duration::from_secs(4));
        assert_eq!(config.allowed_hosts, LOOPBACK_HOSTS.map(String::from));
        assert_eq!(config.max_connections, DEFAULT_MAX_CONNECTIONS);
        assert!(config.listen.is_none() && !config.insecure_no_auth);
    }
}
