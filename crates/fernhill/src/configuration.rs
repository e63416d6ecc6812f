//! The house's configuration file: one TOML file, a section per concern, read by every program
//! (`fernhill-mcp serve`, `fernhill shop-api`, `fernhill payment-provider`). This is the map
//! from each key to the flag it stands for in each command; the flags' types (`ServeConfig`,
//! `HttpConfig`, the commands' options) hold the help and the defaults. A flag beats its
//! environment variable, which beats the file, which beats the default.
//!
//! `docs/configuration.md` is rendered from this and those types (`fernhill-mcp config docs`);
//! a test fails when it is stale.

use config_file::{CommandKeys, Schema, Section};

/// The environment variable that names the file when `--config` does not.
pub const CONFIG_ENV: &str = "FERNHILL_CONFIG";

/// What `fernhill-mcp serve` reads (and `config check`, which checks what it would run with).
const SERVE: &[(&str, &str)] = &[
    ("listen.http", "listen"),
    ("listen.public_url", "public_url"),
    ("listen.allowed_hosts", "allowed_hosts"),
    ("listen.allowed_origins", "allowed_origins"),
    ("listen.trusted_proxies", "trusted_proxies"),
    ("listen.forwarded_header", "forwarded_header"),
    ("listen.metrics", "metrics_listen"),
    ("listen.public_metrics", "public_metrics"),
    ("authorization.issuer", "auth_issuer"),
    ("authorization.introspection", "auth_introspection"),
    ("authorization.person_claim", "auth_person_claim"),
    ("authorization.client_id", "auth_client_id"),
    ("authorization.client_secret", "auth_client_secret"),
    ("authorization.insecure_no_auth", "insecure_no_auth"),
    ("store.url", "store"),
    ("store.prefix", "store_prefix"),
    ("store.local_sessions", "local_sessions"),
    ("request_state.keys", "state_keys"),
    ("request_state.ttl", "state_ttl"),
    ("shop_api.url", "shop_api"),
    ("shop_api.token", "shop_api_token"),
    ("shop_api.token_file", "shop_api_token_file"),
    ("shop_api.quote_ttl", "quote_ttl"),
    ("payments.url", "provider"),
    ("payments.token", "token"),
    ("payments.token_file", "token_file"),
    ("payments.public_url", "payments_public_url"),
    ("payments.max_rounds", "max_rounds"),
    ("approvals.policy", "approval"),
    ("approvals.confirm_on", "confirm_on"),
    ("approvals.page_client_id", "approvals_client_id"),
    ("approvals.page_client_secret", "approvals_client_secret"),
    ("approvals.page_client_secret_file", "approvals_client_secret_file"),
    ("approvals.webhook", "approvals_webhook"),
    ("approvals.webhook_secret", "approvals_webhook_secret"),
    ("approvals.escalate_after", "escalate_after"),
    ("approvals.escalate_to", "escalate_to"),
    ("approvals.escalation_check", "escalation_check"),
    ("tasks.ttl", "task_ttl"),
    ("tasks.poll", "task_poll"),
    ("audit.log", "audit_log"),
    ("audit.replica", "replica_name"),
    ("stdio.lead", "lead"),
    ("telemetry.log_format", "log_format"),
    ("limits.max_tool_calls", "max_tool_calls"),
    ("limits.max_waiting", "max_waiting"),
    ("limits.max_waiting_per_caller", "max_waiting_per_caller"),
    ("limits.max_open_quotes", "max_open_quotes"),
    ("limits.ride_through", "ride_through"),
    ("limits.max_connections", "max_connections"),
    ("limits.max_connections_per_client", "max_connections_per_client"),
    ("limits.header_timeout", "header_timeout"),
    ("limits.read_timeout", "read_timeout"),
    ("limits.write_timeout", "write_timeout"),
    ("limits.max_requests_per_connection", "max_requests_per_connection"),
    ("limits.rate_limit", "rate_limit"),
    ("limits.rate_burst", "rate_burst"),
    ("limits.auth_checks_per_client", "auth_checks_per_client"),
    ("limits.auth_checks", "auth_checks"),
    ("limits.max_sessions", "max_sessions"),
    ("limits.max_sessions_per_caller", "max_sessions_per_caller"),
    ("limits.session_idle_timeout", "session_idle_timeout"),
    ("limits.drain_grace", "drain_grace"),
    ("limits.drain_timeout", "drain_timeout"),
];

/// What `fernhill-gate serve` reads (and its `config check`): its own section, the policy
/// being its own file. The serving settings are the MCP server's flags, under keys of their own
/// here, so one file can run the shop's server and a gate in front of something else.
const GATE_SERVE: &[(&str, &str)] = &[
    ("gate.held_calls", "held_calls"),
    ("gate.store", "store"),
    ("gate.store_prefix", "store_prefix"),
    ("gate.host_user", "host_user"),
    ("gate.keys", "keys"),
    ("gate.webhook", "webhook"),
    ("gate.webhook_secret", "webhook_secret"),
    ("gate.page_client_id", "page_client_id"),
    ("gate.page_client_secret", "page_client_secret"),
    ("gate.page_url", "page_url"),
    ("gate.http", "listen"),
    ("gate.public_url", "public_url"),
    ("gate.allowed_hosts", "allowed_hosts"),
    ("gate.allowed_origins", "allowed_origins"),
    ("gate.trusted_proxies", "trusted_proxies"),
    ("gate.forwarded_header", "forwarded_header"),
    ("gate.metrics", "metrics_listen"),
    ("gate.public_metrics", "public_metrics"),
    ("gate.auth_issuer", "auth_issuer"),
    ("gate.auth_introspection", "auth_introspection"),
    ("gate.auth_person_claim", "auth_person_claim"),
    ("gate.auth_client_id", "auth_client_id"),
    ("gate.auth_client_secret", "auth_client_secret"),
    ("gate.insecure_no_auth", "insecure_no_auth"),
    ("gate.local_sessions", "local_sessions"),
    ("gate.max_connections", "max_connections"),
    ("gate.max_connections_per_client", "max_connections_per_client"),
    ("gate.header_timeout", "header_timeout"),
    ("gate.read_timeout", "read_timeout"),
    ("gate.write_timeout", "write_timeout"),
    ("gate.max_requests_per_connection", "max_requests_per_connection"),
    ("gate.rate_limit", "rate_limit"),
    ("gate.rate_burst", "rate_burst"),
    ("gate.auth_checks_per_client", "auth_checks_per_client"),
    ("gate.auth_checks", "auth_checks"),
    ("gate.max_sessions", "max_sessions"),
    ("gate.max_sessions_per_caller", "max_sessions_per_caller"),
    ("gate.session_idle_timeout", "session_idle_timeout"),
    ("gate.drain_grace", "drain_grace"),
    ("gate.drain_timeout", "drain_timeout"),
];

/// What `fernhill shop-api` reads.
const SHOP_API: &[(&str, &str)] = &[
    ("shop_api.listen", "listen"),
    ("shop_api.db", "db"),
    ("shop_api.token", "token"),
    ("shop_api.token_file", "token_file"),
    ("shop_api.client_tokens", "client_tokens"),
    ("shop_api.allowed_hosts", "allowed_hosts"),
    ("shop_api.insecure_no_auth", "insecure_no_auth"),
    ("shop_api.quote_ttl", "quote_ttl"),
    ("shop_api.workers", "workers"),
    ("approvals.policy", "approval"),
    ("approvals.deadline", "approval_deadline"),
    ("telemetry.log_format", "log_format"),
];

/// What `fernhill payment-provider` reads.
const PAYMENT_PROVIDER: &[(&str, &str)] = &[
    ("payments.listen", "listen"),
    ("payments.token", "token"),
    ("payments.token_file", "token_file"),
    ("payments.max_payment", "max_payment"),
    ("payments.insecure_no_auth", "insecure_no_auth"),
    ("payments.accounts", "accounts"),
    ("telemetry.log_format", "log_format"),
];

/// The file's shape for every program of the house.
pub static SCHEMA: Schema = Schema {
    env: CONFIG_ENV,
    sections: &[
        Section {
            name: "listen",
            title: "Listen and edge",
            about: "Where the MCP server listens and whom it lets in: Streamable HTTP at `http`, else stdio.",
        },
        Section {
            name: "authorization",
            title: "Authorization",
            about: "Whose access tokens callers over HTTP must show (OAuth 2.1; the server is a resource server).",
        },
        Section {
            name: "store",
            title: "Store",
            about: "Where quotes, once-only claims, tasks and shared sessions live: this process's memory, or Redis for a fleet.",
        },
        Section {
            name: "request_state",
            title: "Request state",
            about: "How a round's `requestState` is sealed: the keys (the first seals, every one opens) and how long a person may take.",
        },
        Section {
            name: "shop_api",
            title: "The shop's API",
            about: "The shop's HTTP API: where it listens and keeps its data, and how the MCP server reaches it.",
        },
        Section {
            name: "payments",
            title: "Payments",
            about: "The payment provider `pay_refund` pays through, and the stand-in provider's own settings.",
        },
        Section {
            name: "approvals",
            title: "Approvals",
            about: "Who decides a held refund, where the decision counts, and who is told.",
        },
        Section {
            name: "tasks",
            title: "Tasks",
            about: "A refund that waits for its lead as a task (for clients that declare the Tasks extension).",
        },
        Section { name: "audit", title: "Audit trail", about: "The audit trail of every decision about money." },
        Section { name: "stdio", title: "Over stdio", about: "Over stdio, where nobody signs in." },
        Section {
            name: "telemetry",
            title: "Telemetry",
            about: "Logs on stderr (traces and metrics take OpenTelemetry's own OTEL_* variables).",
        },
        Section {
            name: "limits",
            title: "Limits",
            about: "How much the server takes on at once, and how long it waits.",
        },
        Section {
            name: "gate",
            title: "The gate",
            about: "`fernhill-gate serve`: where held calls are kept, who asks over stdio, its keys, webhook and approval page, and how it serves over HTTP. Its policy is its own file (`fernhill-gate serve POLICY`).",
        },
    ],
    commands: &[
        CommandKeys { path: &["fernhill-mcp", "serve"], keys: SERVE },
        CommandKeys { path: &["fernhill-mcp", "config", "check"], keys: SERVE },
        CommandKeys { path: &["fernhill", "shop-api"], keys: SHOP_API },
        CommandKeys { path: &["fernhill", "payment-provider"], keys: PAYMENT_PROVIDER },
        CommandKeys { path: &["fernhill-gate", "serve"], keys: GATE_SERVE },
        CommandKeys { path: &["fernhill-gate", "config", "check"], keys: GATE_SERVE },
    ],
    renamed_env: &[
        ("SHOP_LOG_FORMAT", "FERNHILL_LOG_FORMAT"),
        ("SHOP_AUTH_ISSUER", "FERNHILL_AUTH_ISSUER"),
        ("SHOP_PUBLIC_URL", "FERNHILL_PUBLIC_URL"),
        ("SHOP_AUTH_PERSON_CLAIM", "FERNHILL_AUTH_PERSON_CLAIM"),
        ("SHOP_AUTH_CLIENT_ID", "FERNHILL_AUTH_CLIENT_ID"),
        ("SHOP_AUTH_CLIENT_SECRET", "FERNHILL_AUTH_CLIENT_SECRET"),
        ("SHOP_TRUSTED_PROXIES", "FERNHILL_TRUSTED_PROXIES"),
        ("SHOP_FORWARDED_HEADER", "FERNHILL_FORWARDED_HEADER"),
        ("SHOP_MAX_CONNECTIONS", "FERNHILL_MAX_CONNECTIONS"),
        ("SHOP_MAX_CONNECTIONS_PER_CLIENT", "FERNHILL_MAX_CONNECTIONS_PER_CLIENT"),
        ("SHOP_HEADER_TIMEOUT", "FERNHILL_HEADER_TIMEOUT"),
        ("SHOP_READ_TIMEOUT", "FERNHILL_READ_TIMEOUT"),
        ("SHOP_WRITE_TIMEOUT", "FERNHILL_WRITE_TIMEOUT"),
        ("SHOP_MAX_REQUESTS_PER_CONNECTION", "FERNHILL_MAX_REQUESTS_PER_CONNECTION"),
        ("SHOP_RATE_LIMIT", "FERNHILL_RATE_LIMIT"),
        ("SHOP_RATE_BURST", "FERNHILL_RATE_BURST"),
        ("SHOP_AUTH_CHECKS_PER_CLIENT", "FERNHILL_AUTH_CHECKS_PER_CLIENT"),
        ("SHOP_AUTH_CHECKS", "FERNHILL_AUTH_CHECKS"),
        ("SHOP_MAX_SESSIONS", "FERNHILL_MAX_SESSIONS"),
        ("SHOP_MAX_SESSIONS_PER_CALLER", "FERNHILL_MAX_SESSIONS_PER_CALLER"),
        ("SHOP_SESSION_IDLE_TIMEOUT", "FERNHILL_SESSION_IDLE_TIMEOUT"),
        ("SHOP_LOCAL_SESSIONS", "FERNHILL_LOCAL_SESSIONS"),
        ("SHOP_METRICS_LISTEN", "FERNHILL_METRICS_LISTEN"),
        ("SHOP_DRAIN_GRACE", "FERNHILL_DRAIN_GRACE"),
        ("SHOP_DRAIN_TIMEOUT", "FERNHILL_DRAIN_TIMEOUT"),
    ],
    examples: &[
        ("shop_api.url", "http://127.0.0.1:8710"),
        ("shop_api.db", "fernhill.sqlite"),
        ("shop_api.token_file", "api.token"),
    ],
};

/// The top of `docs/configuration.md`.
pub const REFERENCE_INTRO: &str = "\
# Configuration

<!-- Rendered by `fernhill-mcp config docs` from the programs' flags; a test fails when it is stale. -->

Every program of the house reads one TOML file, a section per concern: `fernhill-mcp serve`,
`fernhill shop-api`, `fernhill payment-provider` and `fernhill-gate serve` (its `[gate]`
section; a gate's policy is its own file). Name it with `--config PATH`, or in the
environment as `FERNHILL_CONFIG`. Each key stands for a flag, and has an environment variable
too: a flag beats its environment variable, which beats the file, which beats the default.
A key two programs read (`shop_api.token_file`, `approvals.policy`) is set once for both.

```sh
fernhill-mcp config example > fernhill.toml       # every key, with its help and default
fernhill-mcp config check --config fernhill.toml  # what serve would run with, and from where
fernhill-gate config check --config fernhill.toml gate.toml  # the same for a gate and its policy
```

`config check` prints each effective value with its source (a flag, a variable, the file's
line, the default), secrets redacted, and fails naming the file, the line and the key on an
unknown key, a value of the wrong kind, or settings that cannot hold together. Settings only a
command line gives (`-v`, `--load-orders`) and the hidden ones that show a behaviour rather than
configure one (`--ask-style wait`, `--when-busy wait`) are not in the file.

The environment variables of the serving settings were named `SHOP_*` before this release
(`SHOP_MAX_SESSIONS`): the old names still work for this release, each with a warning that
names the new one.
";

/// The top of `config example`'s file.
pub const EXAMPLE_INTRO: &str = "\
Fernhill's configuration: one file for fernhill-mcp serve, fernhill shop-api, fernhill
payment-provider and fernhill-gate serve (--config PATH or FERNHILL_CONFIG). A flag beats its environment variable,
which beats this file, which beats the default. A key commented out has the default shown;
a relative path is read from this file's directory. docs/configuration.md says more.";
