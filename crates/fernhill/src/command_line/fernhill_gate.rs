//! `fernhill-gate`'s command line: `serve` (over stdio, what a desktop host launches, or over
//! Streamable HTTP), `check`, and `config` (check a configuration, print an example). `serve`'s
//! settings are keys of the house's configuration file too (its `[gate]` section); the policy
//! is its own file.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use super::ConfigFlag;

/// Fernhill's approvals in front of any MCP server: calls a policy names wait until a person
/// who may decide them says yes, and then run once.
#[derive(Parser)]
#[command(name = "fernhill-gate", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub config: ConfigFlag,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Serve the upstreams' tools over stdio, as a desktop host launches a server, or over
    /// Streamable HTTP (--http ADDRESS): calls no rule holds pass on unchanged, both ways (the
    /// upstreams' questions and list changes too); a call a rule holds waits for a person's
    /// decision, then runs once. Logs go to stderr.
    Serve(Box<Serve>),
    /// Read a policy, ask each of its upstreams for its tools, and show which rule holds each
    /// tool's calls. Exits 2 on a mistake in the policy (naming its file, line and key), 1 when
    /// an upstream does not list its tools.
    Check {
        /// The policy: [[upstream]] and [[rule]] tables in TOML.
        #[arg(value_name = "POLICY")]
        policy: PathBuf,
        /// How long each upstream may take to start and list its tools, in seconds.
        #[arg(long, default_value_t = 30, value_name = "SECONDS")]
        timeout: u64,
    },
    /// Check a configuration, or print an example of one.
    #[command(subcommand)]
    Config(ConfigCommand),
}

/// What `serve` runs with.
#[derive(clap::Args)]
pub struct Serve {
    /// The policy: [[upstream]] and [[rule]] tables in TOML.
    #[arg(value_name = "POLICY")]
    pub policy: PathBuf,
    /// Where held calls are kept: a SQLite file (they outlive the session that asked, and a
    /// gate started later on the same file finds them), or a postgres:// URL, the database
    /// a fleet of gates shares. Default: beside the policy, its name with `.held.sqlite`
    /// (gate.toml: gate.held.sqlite).
    #[arg(long, value_name = "PATH|URL", env = "FERNHILL_GATE_HELD_CALLS", hide_env_values = true,
          value_parser = |text: &str| Ok::<_, String>(gate::HeldCallsAt::parse(text)))]
    pub held_calls: Option<gate::HeldCallsAt>,
    #[command(flatten)]
    pub shared: SharedStore,
    /// Who asks, over stdio: the host's user, as held calls name their requester. The
    /// policy's [people] table says what they hold, and so which held calls they decide
    /// (with the review_approvals tool, served to them alone). Default: the login's $USER,
    /// else `host`.
    #[arg(long, value_name = "NAME", env = "FERNHILL_GATE_HOST_USER")]
    pub host_user: Option<String>,
    /// Secrets, comma-separated, each at least 32 bytes: they seal the state of the gate's
    /// rounds and sign receipts. Give every gate of one policy the same, so one key set
    /// verifies every receipt; without, keys are made at start.
    #[arg(long, value_name = "SECRETS", env = "FERNHILL_GATE_KEYS", hide_env_values = true)]
    pub keys: Option<String>,
    /// Announce held calls that wait, and decisions, to this webhook (a chat tool's incoming
    /// webhook takes the posts as they are), for rules whose channels hold `webhook`.
    #[arg(long, value_name = "URL", env = "FERNHILL_GATE_WEBHOOK", requires = "webhook_secret")]
    pub webhook: Option<String>,
    /// The secret each post to the webhook is signed with (at least 16 characters).
    #[arg(long, value_name = "SECRET", env = "FERNHILL_GATE_WEBHOOK_SECRET", hide_env_values = true)]
    pub webhook_secret: Option<String>,
    #[command(flatten)]
    pub page: PageFlags,
    #[command(flatten)]
    pub http: mcp_serve::HttpConfig,
    /// Log verbosity: -v for debug, -vv for trace (RUST_LOG overrides).
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

#[derive(Subcommand)]
pub enum ConfigCommand {
    /// Print what `serve POLICY` would run with (the file, the environment and these flags),
    /// each value with where it came from, secrets redacted, and check the policy and the
    /// settings together as `serve` does before it opens anything; exit 2 on an unknown key, a
    /// bad value, a mistake in the policy or settings that cannot hold together.
    Check(Box<Serve>),
    /// Print a commented configuration file with every key, its help and its default.
    Example,
}

/// Where the gates of one policy keep what they share beside the held calls.
#[derive(clap::Args)]
pub struct SharedStore {
    /// Where the gates of one policy keep what they share beside the held calls (decisions'
    /// claims, the approval page's sessions, the tasks hosts wait on): memory (this gate
    /// alone), or a Redis URL (redis://, redis+sentinel://, redis+cluster://) for a fleet.
    #[arg(long, value_name = "URL", env = "FERNHILL_GATE_STORE", default_value = "memory", hide_env_values = true)]
    pub store: String,
    /// The prefix of every key the gate keeps in --store: gates of one policy share it.
    #[arg(long, value_name = "PREFIX", env = "FERNHILL_GATE_STORE_PREFIX", default_value = "fernhill-gate:")]
    pub store_prefix: String,
}

/// Where held calls are decided in a browser: the page this gate serves, or another gate's.
#[derive(clap::Args)]
pub struct PageFlags {
    /// Serve the approval page (over --http, with --auth-issuer): deciders sign in there as
    /// this client of the issuer, and decide the held calls their rules name them for; the
    /// webhook's announcements and a held call's requester are given its link.
    #[arg(long, value_name = "CLIENT_ID", env = "FERNHILL_GATE_PAGE_CLIENT_ID")]
    pub page_client_id: Option<String>,
    /// The approval page's client secret at the issuer.
    #[arg(long, value_name = "SECRET", env = "FERNHILL_GATE_PAGE_CLIENT_SECRET", hide_env_values = true)]
    pub page_client_secret: Option<String>,
    /// The approval page another gate of this policy serves, on the same held calls (its
    /// URL: https://gate.example, or that and /approvals): this gate's requesters and webhook
    /// announcements are given its links. For a gate over stdio, which serves no page.
    #[arg(long, value_name = "URL", env = "FERNHILL_GATE_PAGE_URL", conflicts_with = "page_client_id")]
    pub page_url: Option<String>,
}
