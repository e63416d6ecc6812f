//! What a deployment tells the shop's server: one struct, read by the binary's command line
//! (each field has its environment twin through clap, and a configuration file's key through
//! `config-file`) and built by hand in tests and programs. Every default is written here once,
//! in the flag's attribute: [`ServeConfig::new`] is what clap makes of a command line that names
//! the shop's API alone. [`ServeConfig::contradictions`] says which settings cannot hold together.

use std::time::Duration;

use mcp_serve::HttpConfig;

use mrtr::request_state::DEFAULT_TTL;

use crate::{
    quote_store::{DEFAULT_MAX_OPEN_QUOTES, DEFAULT_QUOTE_TTL},
    tools::issue_refund::AskStyle,
};

/// The environment variable that names the shop's API.
pub const SHOP_API_ENV: &str = "SHOP_API_URL";
/// The environment variable that holds the sealing keys.
pub const STATE_KEY_ENV: &str = "SHOP_REQUEST_STATE_KEY";
/// The environment variable that names the payment provider's API.
pub const PAYMENTS_ENV: &str = "PAYMENT_PROVIDER_URL";
/// The environment variable that names the payment provider's public address.
pub const PAYMENTS_PUBLIC_ENV: &str = "PAYMENT_PUBLIC_URL";

/// Where quotes and once-only claims live unless told otherwise: this process's memory.
pub const DEFAULT_STORE: &str = "memory";
/// The prefix of every key in a shared store unless told otherwise.
pub const DEFAULT_STORE_PREFIX: &str = "fernhill:";

/// The shop's MCP server: where its API is, how it seals and keeps state, what it pays through.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeConfig {
    /// The shop's API, such as http://127.0.0.1:8710.
    #[arg(long, env = SHOP_API_ENV, value_name = "URL")]
    pub shop_api: String,

    /// The shop's API's service credential: the server calls the API as itself, never with a
    /// caller's token. Give it in the environment, or --shop-api-token-file.
    #[arg(long, env = "SHOP_API_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    pub shop_api_token: Option<String>,

    /// Read the shop's API's service credential from this file (what `shop-api --token-file`
    /// wrote).
    #[arg(long, env = "SHOP_API_TOKEN_FILE", conflicts_with = "shop_api_token", value_name = "PATH")]
    pub shop_api_token_file: Option<std::path::PathBuf>,

    /// Where quotes and once-only claims live: `memory` (one process) or a redis:// URL (a fleet).
    #[arg(long, env = "SHOP_STORE", default_value = DEFAULT_STORE, value_name = "STORE")]
    pub store: String,

    /// Keys under this prefix in a shared store (fleets that share one Redis keep apart).
    #[arg(long, env = "SHOP_STORE_PREFIX", default_value = DEFAULT_STORE_PREFIX, value_name = "PREFIX")]
    pub store_prefix: String,

    /// Sealing keys for requestState, comma-separated, each at least 32 bytes: the first seals,
    /// every one opens. Give it in the environment (a command line is visible to other users).
    /// Unset: a random key made at start, for as long as the process lives.
    #[arg(long, env = STATE_KEY_ENV, hide_env_values = true, value_name = "KEYS")]
    pub state_keys: Option<String>,

    /// One round's lifetime in seconds: how long a person may take to answer.
    #[arg(long, env = "SHOP_REQUEST_STATE_TTL", default_value_t = DEFAULT_TTL.as_secs_f64(), value_name = "SECONDS")]
    pub state_ttl: f64,

    /// How long a refund waits as a task for its lead, in seconds from when it was asked (for a
    /// client that declares the Tasks extension): 72 hours unless told. Past it, the task fails
    /// in words and the refund stays held.
    #[arg(long, env = "SHOP_TASK_TTL", default_value_t = DEFAULT_TASK_TTL.as_secs(), value_name = "SECONDS")]
    pub task_ttl: u64,

    /// How often a client should ask about a task at the longest, in seconds: a task's
    /// `pollIntervalMs` is 250 ms while it has just changed, then a quarter of how long it has
    /// stood, up to this (a person decides in minutes, so seconds are enough).
    #[arg(long, env = "SHOP_TASK_POLL", default_value_t = DEFAULT_TASK_POLL.as_secs_f64(), value_name = "SECONDS")]
    pub task_poll: f64,

    /// How long a quote stays issuable, in seconds.
    #[arg(long, env = "SHOP_QUOTE_TTL", default_value_t = DEFAULT_QUOTE_TTL.as_secs(), value_name = "SECONDS")]
    pub quote_ttl: u64,

    /// Quotes one caller may hold that are not issued yet (each is a row in the shop's API and
    /// an entry here for its lifetime); past it, quote_refund says so. 0: no bound.
    #[arg(long, env = "SHOP_MAX_OPEN_QUOTES", default_value_t = DEFAULT_MAX_OPEN_QUOTES, value_name = "N")]
    pub max_open_quotes: u64,

    /// How issue_refund asks: `input-required` (MCP 2026-07-28), or `wait`, the 2025 way of a
    /// server-sent elicitation/create, which fails at 2026-07-28 (for showing that it does).
    /// Hidden: it shows a behaviour, it does not configure one.
    #[arg(long, value_enum, default_value_t = AskStyle::InputRequired, hide = true)]
    pub ask_style: AskStyle,

    /// Who may decide a held refund: `self` (the lead who asks for it may confirm it, the
    /// chapter's flow) or `another-lead` (never the one who asked: their refund waits for
    /// another lead, who decides it with review_refunds). Set the shop's API the same: it
    /// checks again.
    #[arg(long, env = "SHOP_APPROVAL", default_value = "self", value_name = "POLICY")]
    pub approval: shop_api::Approval,

    /// Where a lead's decision counts: `host` (wherever they are asked) or `page` (on the
    /// approval page alone, after signing in at the issuer: issue_refund sends the lead there by
    /// URL-mode elicitation, and a host's accept never decides a refund). `page` needs
    /// --approvals-client-id.
    #[arg(long, env = "SHOP_CONFIRM_ON", value_enum, default_value_t = crate::approval::ConfirmOn::Host)]
    pub confirm_on: crate::approval::ConfirmOn,

    /// Serve the approval page (`/approvals/R-0111`), where a lead signs in with the issuer
    /// (--auth-issuer) and decides a waiting refund; this names the page's client there.
    #[arg(long, env = "SHOP_APPROVALS_CLIENT_ID", value_name = "ID")]
    pub approvals_client_id: Option<String>,

    /// The approval page's client secret at the issuer.
    #[arg(long, env = "SHOP_APPROVALS_CLIENT_SECRET", hide_env_values = true, value_name = "SECRET")]
    pub approvals_client_secret: Option<String>,

    /// A file holding the approval page's client secret.
    #[arg(
        long,
        env = "SHOP_APPROVALS_CLIENT_SECRET_FILE",
        value_name = "PATH",
        conflicts_with = "approvals_client_secret"
    )]
    pub approvals_client_secret_file: Option<std::path::PathBuf>,

    /// Announce each refund that waits for a lead (with its approval page link), and each
    /// decision, to this webhook: JSON a chat's incoming webhook takes (`text`), signed with
    /// --approvals-webhook-secret, retried with backoff.
    #[arg(long, env = "SHOP_APPROVALS_WEBHOOK", value_name = "URL", requires = "approvals_webhook_secret")]
    pub approvals_webhook: Option<String>,

    /// The secret the webhook's posts are signed with (HMAC-SHA256, the Fernhill-Signature header).
    #[arg(long, env = "SHOP_APPROVALS_WEBHOOK_SECRET", hide_env_values = true, value_name = "SECRET")]
    pub approvals_webhook_secret: Option<String>,

    /// Seconds a held refund may wait for a lead before it is overdue: counted in
    /// fernhill_approvals_overdue and announced to the approvals webhook, once.
    #[arg(long, env = "SHOP_ESCALATE_AFTER", default_value_t = DEFAULT_ESCALATE_AFTER.as_secs(), value_name = "SECONDS")]
    pub escalate_after: u64,

    /// Whom an overdue approval's announcement names (a chat handle, a team).
    #[arg(long, env = "SHOP_ESCALATE_TO", value_name = "NAME")]
    pub escalate_to: Option<String>,

    /// Seconds between two looks for overdue approvals (each replica looks).
    #[arg(long, env = "SHOP_ESCALATION_CHECK", default_value_t = DEFAULT_ESCALATION_CHECK.as_secs_f64(), value_name = "SECONDS")]
    pub escalation_check: f64,

    /// Seconds a call may ride through an outage of the shop's API or the store
    /// (quote_refund, issue_refund): a 2026-07-28 call is answered with a state-only round and comes back,
    /// the lead's answer held, a 2025 call waits in the call, until the outage ends or this
    /// window passes; then the error, in words. 0: no riding through.
    #[arg(long, env = "SHOP_RIDE_THROUGH", default_value_t = DEFAULT_RIDE_THROUGH.as_secs(), value_name = "SECONDS")]
    pub ride_through: u64,

    /// Tool calls worked on at once. Past it, a 2026-07-28 caller's call is answered at once
    /// with a state-only round (it comes back shortly and finishes; nothing is lost), and an
    /// earlier caller's waits. 0: no bound.
    #[arg(long, env = "SHOP_MAX_TOOL_CALLS", default_value_t = DEFAULT_MAX_TOOL_CALLS, value_name = "N")]
    pub max_tool_calls: usize,

    /// Past --max-tool-calls: `shed` answers a 2026-07-28 caller with a state-only round;
    /// `wait` queues every call until a slot is free (to compare with: hidden, for
    /// fernhill-load's comparisons).
    #[arg(long, env = "SHOP_WHEN_BUSY", value_enum, default_value_t = WhenBusy::Shed, hide = true)]
    pub when_busy: WhenBusy,

    /// Questions waiting for their person at once (a 2025 host's question, a payment
    /// sign-in), beside --max-tool-calls: a waiting question holds no tool-call slot. Past it,
    /// the tool says the server is busy and nothing is asked.
    #[arg(long, env = "SHOP_MAX_WAITING", default_value_t = DEFAULT_MAX_WAITING, value_name = "N")]
    pub max_waiting: usize,

    /// Questions one caller may have waiting at once.
    #[arg(long, env = "SHOP_MAX_WAITING_PER_CALLER", default_value_t = DEFAULT_MAX_WAITING_PER_CALLER, value_name = "N")]
    pub max_waiting_per_caller: usize,

    /// Append every decision about money (questions, answers, releases, declines, refusals,
    /// payments, returns) to this file, one JSON object a line, synced per line; reopened on
    /// SIGHUP. Each replica writes its own.
    #[arg(long, env = "SHOP_AUDIT_LOG", value_name = "PATH")]
    pub audit_log: Option<std::path::PathBuf>,

    /// This replica's name in the audit trail (default: the host's name and this process's ID).
    #[arg(long, env = "SHOP_REPLICA_NAME", value_name = "NAME")]
    pub replica_name: Option<String>,

    /// Who the host's user is over stdio: whom payments are for and whom the audit trail
    /// names. Over HTTP nobody is named but an authenticated caller.
    #[arg(long, env = "SHOP_LEAD", default_value = DEFAULT_LEAD, value_name = "NAME")]
    pub lead: String,

    #[command(flatten)]
    pub payments: PaymentsConfig,

    #[command(flatten)]
    pub http: HttpConfig,
}

impl ServeConfig {
    /// The defaults, over the shop's API at `shop_api`.
    pub fn new(shop_api: impl Into<String>) -> Self {
        let shop_api = shop_api.into();
        // The definition is this file's, not a peer's input: a test parses it.
        config_file::defaults(&["--shop-api", &shop_api]).expect("ServeConfig's defaults are well formed")
    }

    /// Settings that cannot hold together, each with the arguments (clap IDs) that make it,
    /// so an error can say where each was set. Serving refuses to start on any.
    pub fn contradictions(&self) -> Vec<Contradiction> {
        let mut found = Vec::new();
        let mut say =
            |args: &'static [&'static str], words: &str| found.push(Contradiction { args, words: words.to_owned() });
        if self.confirm_on == crate::approval::ConfirmOn::Page && self.approvals_client_id.is_none() {
            say(
                &["confirm_on", "approvals_client_id"],
                "deciding on the page needs the page: name its client at the issuer",
            );
        }
        if self.approvals_client_id.is_some() && self.http.auth_issuer.is_none() {
            say(&["approvals_client_id", "auth_issuer"], "the approval page needs the issuer its leads sign in at");
        }
        if self.approvals_client_id.is_some() && self.http.listen.is_none() {
            say(
                &["approvals_client_id", "listen"],
                "the approval page is served over HTTP: give the address to listen on",
            );
        }
        if self.approvals_webhook.is_some()
            && self.approvals_webhook_secret.as_deref().is_none_or(|secret| secret.len() < 16)
        {
            say(
                &["approvals_webhook", "approvals_webhook_secret"],
                "the webhook's signing secret must be at least 16 characters",
            );
        }
        if self.http.auth_introspection && self.http.auth_client_id.is_none() {
            say(
                &["auth_introspection", "auth_client_id"],
                "introspection asks the issuer as this server's own client: name it",
            );
        }
        found
    }

    pub fn quote_ttl(&self) -> Duration {
        Duration::from_secs(self.quote_ttl)
    }

    /// When a waiting approval is overdue, how often to look, and whom to tell.
    pub fn escalation(&self) -> crate::escalation::Escalation {
        crate::escalation::Escalation {
            after: Duration::from_secs(self.escalate_after),
            every: Duration::try_from_secs_f64(self.escalation_check).unwrap_or(DEFAULT_ESCALATION_CHECK),
            to: self.escalate_to.clone(),
        }
    }

    /// How tasks live and are polled: `--task-ttl`, `--task-poll` (at least a millisecond).
    pub fn task_times(&self) -> mrtr::tasks::TaskTimes {
        let poll =
            Duration::try_from_secs_f64(self.task_poll).unwrap_or(DEFAULT_TASK_POLL).max(Duration::from_millis(1));
        mrtr::tasks::TaskTimes {
            lifetime: Duration::from_secs(self.task_ttl),
            poll,
            ..mrtr::tasks::TaskTimes::default()
        }
    }
}

/// How long a call rides through an outage, by default: within what clients' own limits on
/// rounds allow (this project's client comes back ten times, 50 ms doubling to 250 ms apart).
pub const DEFAULT_RIDE_THROUGH: Duration = Duration::from_secs(2);
/// How long a held refund waits before it is overdue, by default (24 hours).
pub const DEFAULT_ESCALATE_AFTER: Duration = Duration::from_secs(24 * 3600);
/// How often each replica looks for overdue approvals, by default.
pub const DEFAULT_ESCALATION_CHECK: Duration = Duration::from_secs(60);
/// How long a refund waits as a task for its lead unless told otherwise.
pub const DEFAULT_TASK_TTL: Duration = Duration::from_secs(72 * 3600);
/// How often a client should ask about a task unless told otherwise.
pub const DEFAULT_TASK_POLL: Duration = Duration::from_secs(5);
/// How long an ended task is still told of after its lifetime, before it is forgotten.
pub const TASK_GRACE: Duration = Duration::from_secs(24 * 3600);

/// Tool calls one server works on at once unless told otherwise: enough to keep the shop's API
/// and Redis busy from one replica, few enough that a burst is shed rather than queued.
pub const DEFAULT_MAX_TOOL_CALLS: usize = 64;

/// Questions waiting for their person at once unless told otherwise: a waiting question costs
/// a task and a few kilobytes, not a tool-call slot.
pub const DEFAULT_MAX_WAITING: usize = 1024;
/// Questions one caller may have waiting at once unless told otherwise.
pub const DEFAULT_MAX_WAITING_PER_CALLER: usize = 64;

/// What a call past `--max-tool-calls` gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum WhenBusy {
    /// A state-only round: come back shortly (callers before 2026-07-28 wait).
    #[default]
    Shed,
    /// A place in the queue.
    Wait,
}

/// Who the host's user is where no caller is authenticated (stdio), unless told otherwise.
pub const DEFAULT_LEAD: &str = "lead-1";
/// How many rounds a payment sign-in may take before `pay_refund` stops asking.
pub const DEFAULT_PAY_ROUNDS: u32 = 5;

/// Settings that cannot hold together: the arguments that make it, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contradiction {
    /// clap IDs of the arguments, such as `confirm_on`.
    pub args: &'static [&'static str],
    pub words: String,
}

impl Contradiction {
    /// The arguments as their flags, such as `--confirm-on`, for a caller who gave flags.
    pub fn flags(&self) -> Vec<String> {
        let command = <ServeConfig as clap::Args>::augment_args(clap::Command::new("serve"));
        let flag = |id: &str| {
            let long = command.get_arguments().find(|arg| arg.get_id() == id).and_then(|arg| arg.get_long());
            long.map_or_else(|| id.to_owned(), |long| format!("--{long}"))
        };
        self.args.iter().map(|id| flag(id)).collect()
    }
}

/// Where `pay_refund` pays refunds; without a provider it says payments are off.
#[derive(Debug, Clone, clap::Args)]
pub struct PaymentsConfig {
    /// The payment provider's API, for pay_refund.
    #[arg(long = "payments", env = PAYMENTS_ENV, value_name = "URL")]
    pub provider: Option<String>,

    /// The payment provider's service credential (give it in the environment, or
    /// --payments-token-file).
    #[arg(long = "payments-token", env = "PAYMENT_PROVIDER_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    pub token: Option<String>,

    /// Read the payment provider's service credential from this file (what `payment-provider
    /// --token-file` wrote).
    #[arg(
        long = "payments-token-file",
        env = "PAYMENT_PROVIDER_TOKEN_FILE",
        conflicts_with = "token",
        value_name = "PATH"
    )]
    pub token_file: Option<std::path::PathBuf>,

    /// The payment provider's address as a lead's browser reaches it (defaults to --payments).
    #[arg(id = "payments_public_url", long = "payments-public-url", env = PAYMENTS_PUBLIC_ENV, value_name = "URL")]
    pub public_url: Option<String>,

    /// How many rounds a payment sign-in may take before pay_refund stops asking.
    #[arg(long = "pay-rounds", env = "SHOP_PAY_MAX_ROUNDS", default_value_t = DEFAULT_PAY_ROUNDS, value_name = "N")]
    pub max_rounds: u32,
}

impl Default for PaymentsConfig {
    /// No provider: payments are off.
    fn default() -> Self {
        // The definition is this file's, not a peer's input: a test parses it.
        config_file::defaults(&[]).expect("PaymentsConfig's defaults are well formed")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::ConfirmOn;

    /// Each contradiction is found, named by its flags, and refused by `build`, through which
    /// both transports pass; the defaults hold together.
    #[test]
    fn settings_that_cannot_hold_together_are_refused_by_build() {
        let defaults = ServeConfig::new("http://127.0.0.1:9");
        assert_eq!(defaults.contradictions(), []);
        let listen = Some("127.0.0.1:0".parse().unwrap());
        type Change = Box<dyn Fn(&mut ServeConfig)>;
        let cases: [(&str, Change, &[&str]); 5] = [
            (
                "page, no client",
                Box::new(|c| c.confirm_on = ConfirmOn::Page),
                &["--confirm-on", "--approvals-client-id"],
            ),
            (
                "client, no issuer",
                Box::new(move |c| {
                    c.approvals_client_id = Some("page".into());
                    c.http.listen = listen;
                }),
                &["--approvals-client-id", "--auth-issuer"],
            ),
            (
                "client over stdio",
                Box::new(|c| {
                    c.approvals_client_id = Some("page".into());
                    c.http.auth_issuer = Some("https://login.example".into());
                }),
                &["--approvals-client-id", "--http"],
            ),
            (
                "a short webhook secret",
                Box::new(|c| {
                    c.approvals_webhook = Some("https://chat.example/hook".into());
                    c.approvals_webhook_secret = Some("short".into());
                }),
                &["--approvals-webhook", "--approvals-webhook-secret"],
            ),
            (
                "introspection without a client",
                Box::new(|c| {
                    c.http.auth_introspection = true;
                    c.http.auth_issuer = Some("https://login.example".into());
                }),
                &["--auth-introspection", "--auth-client-id"],
            ),
        ];
        for (case, change, flags) in cases {
            let mut config = defaults.clone();
            change(&mut config);
            let found = config.contradictions();
            assert_eq!(found.len(), 1, "{case}: {found:?}");
            assert_eq!(found[0].flags(), flags, "{case}");
            let refused = crate::serve::build(&config).err().map(|error| error.to_string());
            assert_eq!(refused, Some(format!("{}: {}", flags.join(" with "), found[0].words)), "{case}");
        }
    }
}
