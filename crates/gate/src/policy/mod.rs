//! The policy file: the upstreams a gate stands in front of and the rules that hold their
//! calls, in TOML, read whole and checked at start.
//!
//! ```toml
//! [[upstream]]
//! name = "files"
//! command = ["npx", "@modelcontextprotocol/server-filesystem", "/srv/shop"]
//!
//! [[rule]]
//! name = "price lists"
//! upstream = "files"
//! tools = ["write_file", "edit_file", "move_file"]
//! when = 'args.path.startsWith("/srv/shop/prices")'
//! decided_by = { scope = "approvals:decide" }
//! channels = ["page", "webhook"]
//! deadline = "72h"
//! ```
//!
//! The first rule that holds a call decides how it waits; a call no rule holds passes. Every
//! mistake is refused before anything is served, named by file, line and key.

pub mod call;
pub mod condition;
pub mod limits;
pub mod rule;
pub mod tool_name;

pub mod person;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::Duration,
};

use approvals::Channel;
use serde::Deserialize;
use toml::Spanned;

use self::limits::Limits;
use crate::{
    policy::call::Call,
    policy::condition::Condition,
    policy::person::{Holds, Person},
    policy::rule::{Decider, Hint, LostOutcome, Rule, parse_channel},
    policy::tool_name::ToolName,
};

/// A policy that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file says something a gate cannot use.
    #[error("{}:{line}: {key}: {message}", path.display())]
    Bad {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// The key (`rule.when`), or the table, where the mistake is.
        key: String,
        /// What is wrong, and what would be right.
        message: String,
    },
}

/// The longest a held call may wait for a decision: a deadline is a time a person can act by,
/// and a longer one is a mistake (a clock could not even hold some).
pub const LONGEST_DEADLINE: Duration = Duration::from_secs(10 * 366 * 24 * 3600);

/// An upstream MCP server the gate stands in front of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// Its name, as rules name it.
    pub name: String,
    /// How to reach it.
    pub reached: Reached,
    /// Whether its tools' annotations are believed (its operator trusts it), so rules may hold
    /// its tools by them.
    pub trust_annotations: bool,
}

/// How an upstream is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reached {
    /// A command the gate starts, spoken to over its stdin and stdout.
    Command(Vec<String>),
    /// A Streamable HTTP endpoint.
    Url(String),
}

/// The upstreams and the rules, as read.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Where it was read from.
    pub path: PathBuf,
    /// The upstreams, in the file's order.
    pub upstreams: Vec<Upstream>,
    /// The rules, in the file's order: the first that holds a call is its rule.
    pub rules: Vec<Rule>,
    /// What each host user named in `[people]` holds: who decides over stdio.
    pub people: BTreeMap<String, Holds>,
    /// Who a host user named in `[people]` is at the issuer (`signs_in_as`): the one person,
    /// whether they ask over stdio or sign in on the approval page.
    pub signs_in_as: BTreeMap<String, caller::Principal>,
    /// The policy's version, as receipts name it: the digest of its text.
    pub version: String,
    /// How many held calls may wait at once (`[limits]`).
    pub limits: Limits,
}

/// Why a call is held.
#[derive(Debug, Clone, Copy)]
pub struct Held<'p> {
    /// The rule that holds it.
    pub rule: &'p Rule,
    /// Whether its condition was evaluated; `false` where it could not be, and the call is held
    /// because a gate fails closed.
    pub evaluated: bool,
}

impl Policy {
    /// Read the policy at `path`.
    pub fn read(path: &Path) -> Result<Policy, PolicyError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| PolicyError::Read { path: path.to_owned(), source })?;
        Policy::parse(path, &text)
    }

    /// The policy `text` says, read from `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Policy, PolicyError> {
        let source = Source { path, text };
        let file: FileTables = toml::from_str(text).map_err(|error| {
            let offset = error.span().map_or(0, |span| span.start);
            source.bad(offset, "", error.message().trim().to_owned())
        })?;
        let mut upstreams: Vec<Upstream> = Vec::new();
        for table in file.upstream {
            let upstream = source.upstream(table, &upstreams)?;
            upstreams.push(upstream);
        }
        // Each rule's identity and content, as its held calls are bound to it: its table as
        // written, read again as TOML values (so that layout and comments are not part of it).
        let tables: Vec<toml::Value> = match text.parse::<toml::Table>() {
            Ok(mut whole) => match whole.remove("rule") {
                Some(toml::Value::Array(tables)) => tables,
                _ => Vec::new(),
            },
            Err(_) => Vec::new(),
        };
        let mut rules: Vec<Rule> = Vec::with_capacity(file.rule.len());
        for (index, table) in file.rule.into_iter().enumerate() {
            let at = table.span().start;
            let rule = source.rule(table, &upstreams, tables.get(index))?;
            if let Some(first) = rules.iter().find(|known| known.name == rule.name) {
                return Err(source.bad(
                    at,
                    "rule.name",
                    format!(
                        "a second rule named `{}` (the first is on line {}): a held call is bound to its rule, and \
                         each rule's name must say which",
                        rule.name, first.line
                    ),
                ));
            }
            rules.push(rule);
        }
        let (mut people, mut signs_in_as) = (BTreeMap::new(), BTreeMap::new());
        for (name, table) in file.people {
            let at = table.span().start;
            let (holds, principal) = source.person(&name, table)?;
            if let Some(principal) = principal {
                if let Some((other, _)) = signs_in_as.iter().find(|(_, known)| **known == principal) {
                    return Err(source.bad(
                        at,
                        "people.signs_in_as",
                        format!("{name} and {other} sign in as one person, {principal}: name each person once"),
                    ));
                }
                signs_in_as.insert(name.clone(), principal);
            }
            people.insert(name, holds);
        }
        let limits = match file.limits {
            None => Limits::default(),
            Some(table) => {
                let at = table.span().start;
                let table = table.into_inner();
                let default = Limits::default();
                let limits = Limits {
                    per_requester: table.waiting_per_requester.unwrap_or(default.per_requester),
                    in_all: table.waiting_in_all.unwrap_or(default.in_all),
                    announcements_per_minute: table
                        .announcements_per_minute
                        .unwrap_or(default.announcements_per_minute),
                };
                if limits.per_requester == 0 || limits.in_all == 0 || limits.announcements_per_minute == 0 {
                    return Err(source.bad(at, "limits", "a limit of 0 would hold no call at all".into()));
                }
                limits
            }
        };
        let version = approvals::Digest::of_bytes(text.as_bytes()).to_string();
        Ok(Policy { path: path.to_owned(), upstreams, rules, people, signs_in_as, version, limits })
    }

    /// What the host user `name` holds, as `[people]` says (nothing, for a name it does not
    /// list).
    pub fn holds_of(&self, name: &str) -> Holds {
        self.people.get(name).cloned().unwrap_or_default()
    }

    /// The host's user `name` as a caller over HTTP without a token is named (loopback, or
    /// no issuer): holding what `[people]` says of them, named by nothing else.
    pub fn tokenless_caller(&self, name: &str) -> Option<Person> {
        Person::host_user(name, self.holds_of(name))
    }

    /// Whether `person` decides some rule's calls from their own host (`review_approvals`).
    pub fn decides_at_own_host(&self, person: &Person) -> bool {
        self.rules.iter().any(|rule| rule.decides_on(Channel::Review) && person.holds.meets(&rule.decided_by))
    }

    /// Whether the approval page cannot tell `person`'s calls from those of who signs in there
    /// while a rule deciding on the page forbids self-approval: a host user the policy gives no
    /// `signs_in_as`.
    pub fn page_cannot_tell(&self, person: &Person) -> bool {
        matches!(person.party, caller::Party::HostUser(_))
            && self.rules.iter().any(|rule| !rule.self_approval.allowed() && rule.decides_on(Channel::Page))
    }

    /// The host's user `name`, over stdio: holding what `[people]` says of them, and named as the
    /// person they sign in as at the issuer where `[people]` says it (so that the calls they ask
    /// here are theirs on the approval page too), else as the host user; `None` for a name that
    /// names nobody.
    pub fn host_user(&self, name: &str) -> Option<Person> {
        let person = Person::host_user(name, self.holds_of(name))?;
        Some(match self.signs_in_as.get(name) {
            Some(principal) => Person { party: caller::Party::Principal(principal.clone()), holds: person.holds },
            None => person,
        })
    }

    /// The person a token names, `principal`, holding its `scopes`, the roles and groups its
    /// `membership` says, and what `[people]` says of `"ISSUER SUBJECT"` and of the host user
    /// who signs in as them (for what a token does not carry).
    pub fn person_of(
        &self,
        principal: caller::Principal,
        scopes: &[String],
        membership: &oauth_resource::token::Membership,
    ) -> Person {
        let mut holds = self.holds_of(&caller::Party::Principal(principal.clone()).to_string());
        // And what it says of the host user who signs in as them.
        if let Some((name, _)) = self.signs_in_as.iter().find(|(_, known)| **known == principal) {
            let theirs = self.holds_of(name);
            holds.scopes.extend(theirs.scopes);
            holds.roles.extend(theirs.roles);
            holds.groups.extend(theirs.groups);
        }
        holds.scopes.extend(scopes.iter().cloned());
        holds.roles.extend(membership.roles.iter().cloned());
        holds.groups.extend(membership.groups.iter().cloned());
        Person { party: caller::Party::Principal(principal), holds }
    }

    /// The rule a held call bound to `digest` was held by, as this policy has it: `None` where
    /// the rule was changed or removed since (or the call was bound to none).
    pub fn rule_of(&self, digest: Option<&approvals::Digest>) -> Option<&Rule> {
        let digest = digest?;
        self.rules.iter().find(|rule| rule.digest == *digest)
    }

    /// The upstreams rules pinned to one name the tool `tool` for, in the rules' order: where
    /// more than one upstream lists it, the first of these that does serves it.
    pub fn pinning(&self, tool: &str) -> impl Iterator<Item = &str> {
        self.rules
            .iter()
            .filter_map(|rule| rule.upstream.as_deref().filter(|_| rule.tools.iter().any(|name| name.matches(tool))))
    }

    /// Which of `listing` (the upstreams that list the tool `name`, in the policy's order)
    /// claims it, where more than one does: the first a rule pinned to an upstream names it
    /// for, else the first (the gate's `ToolOwners`, and `check`'s inventory).
    pub fn claimant<'a>(&self, name: &str, listing: impl Iterator<Item = &'a str>) -> Option<&'a str> {
        let listing: Vec<&str> = listing.collect();
        self.pinning(name)
            .find_map(|pinned| listing.iter().copied().find(|upstream| *upstream == pinned))
            .or_else(|| listing.first().copied())
    }

    /// The upstream named `name`.
    pub fn upstream(&self, name: &str) -> Option<&Upstream> {
        self.upstreams.iter().find(|upstream| upstream.name == name)
    }

    /// The rule that holds `call`, if any: the first that names its tool and whose condition is
    /// true of it, or cannot be evaluated for it (held, failing closed).
    pub fn held(&self, call: &Call<'_>) -> Option<Held<'_>> {
        let trusted = self.upstream(call.upstream).is_some_and(|upstream| upstream.trust_annotations);
        self.rules.iter().find_map(|rule| match rule.holds(call, trusted) {
            Ok(true) => Some(Held { rule, evaluated: true }),
            Ok(false) => None,
            Err(_) => Some(Held { rule, evaluated: false }),
        })
    }

    /// Whether some rule names the tool `tool` of `upstream` by its name (whatever its hints and
    /// condition): a call to any other tool passes without being judged further.
    pub fn names_tool(&self, upstream: &str, tool: &str) -> bool {
        self.rules.iter().any(|rule| rule.names_tool(upstream, tool))
    }

    /// The rules that name the tool `tool` of `upstream` (whatever their conditions), in order:
    /// what `check` shows.
    pub fn naming(&self, upstream: &str, tool: &str, annotations: &serde_json::Value) -> Vec<&Rule> {
        let trusted = self.upstream(upstream).is_some_and(|upstream| upstream.trust_annotations);
        self.rules.iter().filter(|rule| rule.names(upstream, tool, annotations, trusted)).collect()
    }
}

/// The policy's text, to say where in it a mistake is.
struct Source<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Source<'_> {
    /// The line (from 1) of byte `offset`.
    fn line(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())].bytes().filter(|&b| b == b'\n').count() + 1
    }

    /// The mistake `message` about `key`, at byte `offset`.
    fn bad(&self, offset: usize, key: &str, message: String) -> PolicyError {
        PolicyError::Bad { path: self.path.to_owned(), line: self.line(offset), key: key.to_owned(), message }
    }

    /// `written`, the value of `key`, read by `read`; a refusal placed where it is written.
    fn one<T>(
        &self,
        key: &str,
        written: Spanned<String>,
        read: impl Fn(&str) -> Result<T, String>,
    ) -> Result<T, PolicyError> {
        read(written.get_ref()).map_err(|message| self.bad(written.span().start, key, message))
    }

    /// Each of `written`, the values of `key`, read by `read` ([`Source::one`]).
    fn each<T>(
        &self,
        key: &str,
        written: Vec<Spanned<String>>,
        read: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Vec<T>, PolicyError> {
        written.into_iter().map(|value| self.one(key, value, &read)).collect()
    }

    /// One `[[upstream]]`, after the `known` ones.
    fn upstream(&self, table: Spanned<UpstreamTable>, known: &[Upstream]) -> Result<Upstream, PolicyError> {
        let bad = |offset: usize, key: &str, message: String| self.bad(offset, key, message);
        let at = table.span().start;
        let table = table.into_inner();
        let name = table.name.get_ref().trim().to_owned();
        if name.is_empty() {
            return Err(bad(table.name.span().start, "upstream.name", "an upstream's name is empty".into()));
        }
        if known.iter().any(|known| known.name == name) {
            return Err(bad(table.name.span().start, "upstream.name", format!("a second upstream named `{name}`")));
        }
        let reached = match (table.command, table.url) {
            (Some(command), None) if !command.get_ref().is_empty() => Reached::Command(command.into_inner()),
            (None, Some(url)) if url.get_ref().starts_with("http://") || url.get_ref().starts_with("https://") => {
                Reached::Url(url.into_inner())
            }
            (None, Some(url)) => {
                return Err(bad(
                    url.span().start,
                    "upstream.url",
                    format!("`{}` is not an http(s) URL", url.get_ref()),
                ));
            }
            _ => {
                return Err(bad(
                    at,
                    "upstream",
                    format!("upstream `{name}` names neither a command (command = [\"npx\", ...]) nor a url, or both"),
                ));
            }
        };
        Ok(Upstream { name, reached, trust_annotations: table.trust_annotations })
    }

    /// One person of `[people]`: what the host user `name` holds, and who they sign in as at
    /// the issuer, if the policy says.
    fn person(
        &self,
        name: &str,
        table: Spanned<PersonTable>,
    ) -> Result<(Holds, Option<caller::Principal>), PolicyError> {
        let at = table.span().start;
        let table = table.into_inner();
        let holds = Holds { scopes: table.scopes, roles: table.roles, groups: table.groups };
        if crate::policy::person::Person::host_user(name, Holds::default()).is_none() {
            return Err(self.bad(at, "people", format!("`{name}` is not a host user's name")));
        }
        let signs_in_as = match table.signs_in_as {
            None => None,
            Some(text) => match caller::Party::parse(text.get_ref()) {
                Ok(caller::Party::Principal(principal)) if principal.is_person() => Some(principal),
                _ => {
                    return Err(self.bad(
                        text.span().start,
                        "people.signs_in_as",
                        format!(
                            "`{}` names no person at an issuer: \"ISSUER SUBJECT\", as \"https://login.example {name}\"",
                            text.get_ref()
                        ),
                    ));
                }
            },
        };
        if holds.is_empty() && signs_in_as.is_none() {
            return Err(self.bad(
                at,
                "people",
                format!(
                    "{name} holds nothing: {name} = {{ roles = [\"support-lead\"] }}, or scopes, or groups, or \
                     signs_in_as"
                ),
            ));
        }
        Ok((holds, signs_in_as))
    }

    /// One `[[rule]]`, over the `upstreams` already read; `written` is its table as TOML values,
    /// whose digest binds its held calls to it.
    fn rule(
        &self,
        table: Spanned<RuleTable>,
        upstreams: &[Upstream],
        written: Option<&toml::Value>,
    ) -> Result<Rule, PolicyError> {
        let bad = |offset: usize, key: &str, message: String| self.bad(offset, key, message);
        let line = |offset: usize| self.line(offset);
        let at = table.span().start;
        let table = table.into_inner();
        let Some(name) = table.name else {
            return Err(bad(
                at,
                "rule.name",
                "a rule has no name: name = \"large payments\" (a held call is bound to its rule by it and its \
                 content, never by its place in the file)"
                    .into(),
            ));
        };
        let name = name.get_ref().trim().to_owned();
        if name.is_empty() || name.chars().any(char::is_control) {
            return Err(bad(at, "rule.name", "a rule's name is empty or holds control characters".into()));
        }
        let digest = approvals::Digest::of(&written)
            .map_err(|error| bad(at, "rule", format!("{name} cannot be digested: {error}")))?;
        let upstream = match table.upstream {
            None => None,
            Some(named) if upstreams.iter().any(|known| &known.name == named.get_ref()) => Some(named.into_inner()),
            Some(named) => {
                let known: Vec<_> = upstreams.iter().map(|known| known.name.as_str()).collect();
                return Err(bad(
                    named.span().start,
                    "rule.upstream",
                    format!("no upstream is named `{}`; the upstreams are {}", named.get_ref(), known.join(", ")),
                ));
            }
        };
        let tools = self.each("rule.tools", table.tools.unwrap_or_default(), ToolName::parse)?;
        if tools.is_empty() {
            return Err(bad(at, "rule.tools", format!("{name} names no tools: tools = [\"write_file\"], or [\"*\"]")));
        }
        let when = table.when.map(|when| self.one("rule.when", when, Condition::compile)).transpose()?;
        let effect = table.effect.map(|effect| self.one("rule.effect", effect, Condition::compile)).transpose()?;
        let hints = self.each("rule.annotations", table.annotations, |hint| {
            Hint::parse(hint).ok_or_else(|| {
                format!(
                    "`{hint}` is not an annotation a rule can hold tools by: readOnlyHint, destructiveHint, \
                     idempotentHint or openWorldHint"
                )
            })
        })?;
        // A rule for one upstream may hold its tools by their annotations only where they
        // are trusted; a rule for every upstream reads them where they are, and elsewhere
        // holds every tool it names (`Rule::names`).
        if !hints.is_empty()
            && let Some(named) = &upstream
            && let Some(untrusted) = upstreams.iter().find(|known| &known.name == named && !known.trust_annotations)
        {
            return Err(bad(
                at,
                "rule.annotations",
                format!(
                    "{name} holds tools by their annotations, which upstream `{}` does not have trusted: say \
                     trust_annotations = true on it if its operator vouches for them",
                    untrusted.name
                ),
            ));
        }
        let Some(decider) = table.decided_by else {
            return Err(bad(
                at,
                "rule.decided_by",
                format!("{name} names nobody to decide: decided_by = {{ scope = \"approvals:decide\" }}"),
            ));
        };
        let decided_by = match decider.get_ref() {
            DeciderTable { scope: Some(scope), role: None, group: None } => Decider::Scope(scope.clone()),
            DeciderTable { scope: None, role: Some(role), group: None } => Decider::Role(role.clone()),
            DeciderTable { scope: None, role: None, group: Some(group) } => Decider::Group(group.clone()),
            _ => {
                return Err(bad(
                    decider.span().start,
                    "rule.decided_by",
                    "name one of scope, role or group: decided_by = { scope = \"approvals:decide\" }".into(),
                ));
            }
        };
        let named = match table.channels {
            None => vec![Some(Channel::Review), Some(Channel::Page), None],
            Some(channels) => self.each("rule.channels", channels, |channel| {
                parse_channel(channel)
                    .ok_or_else(|| format!("`{channel}` is not a channel: host, review, page or webhook"))
            })?,
        };
        let announced = named.contains(&None);
        let channels: Vec<Channel> = named.into_iter().flatten().collect();
        if channels.is_empty() && !announced {
            return Err(bad(
                at,
                "rule.channels",
                format!("{name} leaves nowhere to decide: host, review, page or webhook"),
            ));
        }
        if channels.contains(&Channel::Host) && !table.self_approval {
            return Err(bad(
                at,
                "rule.channels",
                format!(
                    "{name} asks at the requester's host but forbids self_approval: only the requester is at \
                     their host; drop \"host\" or say self_approval = true"
                ),
            ));
        }
        let duration = |text: Spanned<String>, key: &str| {
            self.one(key, text, |text| {
                humantime::parse_duration(text)
                    .map_err(|error| format!("`{text}`: {error} (such as \"72h\" or \"30m\")"))
            })
        };
        let Some(deadline) = table.deadline else {
            return Err(bad(at, "rule.deadline", format!("{name} has no deadline: deadline = \"72h\"")));
        };
        let deadline = duration(deadline, "rule.deadline")?;
        if deadline.is_zero() {
            return Err(bad(at, "rule.deadline", format!("{name}'s deadline leaves no time to decide")));
        }
        if deadline > LONGEST_DEADLINE {
            return Err(bad(
                at,
                "rule.deadline",
                format!("{name}'s deadline is longer than a call may wait: 10 years"),
            ));
        }
        let escalate_after = table.escalate_after.map(|after| duration(after, "rule.escalate_after")).transpose()?;
        if escalate_after.is_some_and(|after: Duration| after >= deadline) {
            return Err(bad(at, "rule.escalate_after", format!("{name} escalates after its deadline has passed")));
        }
        let effect_again_after =
            table.effect_again_after.map(|after| duration(after, "rule.effect_again_after")).transpose()?;
        if effect_again_after.is_some() && effect.is_none() {
            return Err(bad(
                at,
                "rule.effect_again_after",
                format!("{name} says when its effect may happen again but names no effect: effect = '...'"),
            ));
        }
        let lost_outcome = match table.lost_outcome.as_ref().map(|lost| lost.get_ref().as_str()) {
            None | Some("unknown") => LostOutcome::Unknown,
            Some("repeat") => LostOutcome::Repeat,
            Some(other) => {
                let at = table.lost_outcome.as_ref().map_or(at, |lost| lost.span().start);
                return Err(bad(at, "rule.lost_outcome", format!("`{other}` is not unknown or repeat")));
            }
        };
        Ok(Rule {
            name,
            digest,
            line: line(at),
            upstream,
            tools,
            when,
            hints,
            decided_by,
            self_approval: match table.self_approval {
                true => approvals::SelfApproval::Allowed,
                false => approvals::SelfApproval::Forbidden,
            },
            channels,
            announced,
            deadline,
            escalate_after,
            lost_outcome,
            effect,
            effect_again_after,
        })
    }
}

/// The file as TOML has it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTables {
    #[serde(default)]
    upstream: Vec<Spanned<UpstreamTable>>,
    #[serde(default)]
    rule: Vec<Spanned<RuleTable>>,
    #[serde(default)]
    people: BTreeMap<String, Spanned<PersonTable>>,
    limits: Option<Spanned<LimitsTable>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsTable {
    waiting_per_requester: Option<usize>,
    waiting_in_all: Option<usize>,
    announcements_per_minute: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PersonTable {
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(default)]
    roles: Vec<String>,
    #[serde(default)]
    groups: Vec<String>,
    signs_in_as: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpstreamTable {
    name: Spanned<String>,
    command: Option<Spanned<Vec<String>>>,
    url: Option<Spanned<String>>,
    #[serde(default)]
    trust_annotations: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleTable {
    name: Option<Spanned<String>>,
    upstream: Option<Spanned<String>>,
    tools: Option<Vec<Spanned<String>>>,
    when: Option<Spanned<String>>,
    #[serde(default)]
    annotations: Vec<Spanned<String>>,
    decided_by: Option<Spanned<DeciderTable>>,
    #[serde(default)]
    self_approval: bool,
    channels: Option<Vec<Spanned<String>>>,
    deadline: Option<Spanned<String>>,
    escalate_after: Option<Spanned<String>>,
    lost_outcome: Option<Spanned<String>>,
    effect: Option<Spanned<String>>,
    effect_again_after: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeciderTable {
    scope: Option<String>,
    role: Option<String>,
    group: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    const SHOP: &str = r#"
[[upstream]]
name = "files"
command = ["npx", "@modelcontextprotocol/server-filesystem", "/srv/shop"]

[[upstream]]
name = "payments"
url = "http://127.0.0.1:8711/mcp"
trust_annotations = true

[[rule]]
name = "price lists"
upstream = "files"
tools = ["write_file", "edit_file", "move_file"]
when = 'args.path.startsWith("/srv/shop/prices")'
decided_by = { scope = "approvals:decide" }
deadline = "72h"

[[rule]]
name = "large payments"
upstream = "payments"
tools = ["pay_*"]
when = "args.amount > 150.0"
decided_by = { role = "finance-lead" }
self_approval = true
channels = ["host", "page"]
deadline = "4h"
escalate_after = "1h"
effect = '"payment:" + args.invoice'

[[rule]]
name = "anything destructive"
tools = ["*"]
annotations = ["destructiveHint"]
decided_by = { group = "operators" }
deadline = "1d"
lost_outcome = "repeat"
"#;

    fn policy(text: &str) -> Result<Policy, PolicyError> {
        Policy::parse(Path::new("gate.toml"), text)
    }

    fn call<'a>(upstream: &'a str, tool: &'a str, annotations: &'a Value, arguments: &'a Value) -> Call<'a> {
        Call { upstream, tool, annotations, arguments }
    }

    fn held_by(policy: &Policy, call: Call<'_>) -> Option<String> {
        policy.held(&call).map(|held| held.rule.name.clone())
    }

    #[test]
    fn the_first_rule_that_holds_a_call_is_its_rule_and_other_calls_pass() {
        let policy = policy(SHOP).unwrap();
        let (none, read_only) = (Value::Null, json!({"readOnlyHint": true}));
        let prices = json!({"path": "/srv/shop/prices.csv", "content": "..."});
        assert_eq!(held_by(&policy, call("files", "write_file", &none, &prices)).as_deref(), Some("price lists"));
        // The filesystem server's annotations are not trusted: the catch-all rule holds every
        // tool there, reads included, as a gate that fails closed must.
        let notes = json!({"path": "/srv/shop/notes.txt"});
        assert_eq!(
            held_by(&policy, call("files", "write_file", &none, &notes)).as_deref(),
            Some("anything destructive")
        );
        assert_eq!(
            held_by(&policy, call("files", "read_file", &read_only, &notes)).as_deref(),
            Some("anything destructive")
        );
        // The payments server's are: a read-only tool passes, a large payment waits for finance.
        assert_eq!(held_by(&policy, call("payments", "get_invoice", &read_only, &json!({}))), None);
        let large = json!({"amount": 180, "invoice": "I-7"});
        assert_eq!(
            held_by(&policy, call("payments", "pay_invoice", &read_only, &large)).as_deref(),
            Some("large payments")
        );
        let rule = &policy.rules[1];
        assert_eq!(
            (rule.decided_by.clone(), rule.deadline),
            (Decider::Role("finance-lead".into()), Duration::from_secs(4 * 3600))
        );
        let effect = rule.effect.as_ref().unwrap().text(&call("payments", "pay_invoice", &none, &large));
        assert_eq!(effect.as_deref(), Ok("payment:I-7"));
        assert_eq!((policy.rules[0].line, policy.rules[2].lost_outcome), (11, LostOutcome::Repeat));
        let names: Vec<_> = policy.naming("files", "move_file", &none).iter().map(|rule| rule.name.clone()).collect();
        assert_eq!(names, ["price lists", "anything destructive"]);
    }

    #[test]
    fn a_tool_no_rule_names_is_one_no_rule_can_hold() {
        // SHOP without its catch-all: only the named tools of each upstream can be held.
        let named = &SHOP[..SHOP.find("[[rule]]\nname = \"anything destructive\"").unwrap()];
        let only_named = policy(named).unwrap();
        let destructive = json!({"destructiveHint": true});
        let large = json!({"path": "/srv/shop/prices.csv", "amount": 900, "invoice": "I-7"});
        for (upstream, tool, named) in [
            ("files", "write_file", true),
            ("files", "move_file", true),
            ("files", "read_file", false),
            ("payments", "pay_invoice", true),
            ("payments", "write_file", false),
            ("files", "pay_invoice", false),
            ("payments", "get_invoice", false),
        ] {
            assert_eq!(only_named.names_tool(upstream, tool), named, "{upstream} {tool}");
            let held = [&Value::Null, &destructive].map(|hints| only_named.held(&call(upstream, tool, hints, &large)));
            assert_eq!(held.iter().any(Option::is_some), named, "{upstream} {tool}");
        }
        // With the catch-all, every tool of every upstream is named.
        assert!(policy(SHOP).unwrap().names_tool("files", "read_file"));
    }

    #[test]
    fn a_condition_that_cannot_be_evaluated_holds_the_call() {
        let policy = policy(SHOP).unwrap();
        let read_only = json!({"readOnlyHint": true});
        let held = policy.held(&call("payments", "pay_invoice", &read_only, &json!({"amount": "a lot"}))).unwrap();
        assert_eq!((held.rule.name.as_str(), held.evaluated), ("large payments", false));
    }

    fn refusal(text: &str) -> String {
        policy(text).unwrap_err().to_string()
    }

    #[test]
    fn each_mistake_is_named_by_file_line_and_key() {
        let rule = |body: &str| {
            format!("[[upstream]]\nname = \"files\"\ncommand = [\"fs\"]\n\n[[rule]]\n{body}name = \"rule 1\"\n")
        };
        let whole = "tools = [\"write_file\"]\ndecided_by = { scope = \"s\" }\ndeadline = \"1h\"\n";
        for (body, expected) in [
            (format!("{whole}whne = \"true\"\n"), "gate.toml:9: : unknown field `whne`"),
            (format!("{whole}when = \"args.amount >\"\n"), "gate.toml:9: rule.when: `args.amount >` is not CEL"),
            (
                format!("{whole}upstream = \"file\"\n"),
                "gate.toml:9: rule.upstream: no upstream is named `file`; the upstreams are files",
            ),
            (
                format!("{whole}channels = [\"host\"]\n"),
                "gate.toml:5: rule.channels: rule 1 asks at the requester's host but forbids self_approval",
            ),
            (format!("{whole}channels = [\"chat\"]\n"), "gate.toml:9: rule.channels: `chat` is not a channel"),
            (whole.replace("1h", "soon"), "gate.toml:8: rule.deadline: `soon`"),
            (
                whole.replace("1h", "11y"),
                "gate.toml:5: rule.deadline: rule 1's deadline is longer than a call may wait",
            ),
            (whole.replace("scope", "scopes"), "gate.toml:7: : unknown field `scopes`"),
            (whole.replace("write_file", "write_["), "gate.toml:6: rule.tools: `write_[` is not a glob"),
            (
                format!("{whole}upstream = \"files\"\nannotations = [\"destructiveHint\"]\n"),
                "gate.toml:5: rule.annotations: rule 1 holds tools by their annotations, which upstream `files` does not have trusted",
            ),
            (
                format!("{whole}escalate_after = \"2h\"\n"),
                "gate.toml:5: rule.escalate_after: rule 1 escalates after its deadline",
            ),
            (
                "decided_by = { scope = \"s\" }\ndeadline = \"1h\"\n".into(),
                "gate.toml:5: rule.tools: rule 1 names no tools",
            ),
        ] {
            let refused = refusal(&rule(&body));
            assert!(refused.starts_with(expected), "{body}\n=> {refused}\n(expected {expected})");
        }
        assert!(refusal("[[upstream]]\nname = \"x\"\n").contains("names neither a command"));
        let twice = "[[upstream]]\nname = \"x\"\ncommand = [\"a\"]\n[[upstream]]\nname = \"x\"\ncommand = [\"b\"]\n";
        assert!(
            refusal(twice).starts_with("gate.toml:5: upstream.name: a second upstream named `x`"),
            "{}",
            refusal(twice)
        );
        assert!(refusal("[[upstream]]\nname = \"x\"\nurl = \"ftp://x\"\n").contains("not an http(s) URL"));
        for (people, expected) in [
            ("[people]\nlee = {}\n", "gate.toml:2: people: lee holds nothing"),
            ("[people]\n\" lee\" = { roles = [\"r\"] }\n", "gate.toml:2: people: ` lee` is not a host user's name"),
            ("[people]\nlee = { role = [\"r\"] }\n", "gate.toml:2: : unknown field `role`"),
            (
                "[people]\nlee = { signs_in_as = \"lee\" }\n",
                "gate.toml:2: people.signs_in_as: `lee` names no person at an issuer",
            ),
            (
                "[people]\nlee = { signs_in_as = \"https://x lee\" }\nlea = { signs_in_as = \"https://x lee\" }\n",
                "gate.toml:2: people.signs_in_as: lee and lea sign in as one person",
            ),
            (
                "[people]\nlee = { signs_in_as = \"client https://login.example lee\" }\n",
                "gate.toml:2: people.signs_in_as: `client https://login.example lee` names no person",
            ),
        ] {
            let refused = refusal(people);
            assert!(refused.starts_with(expected), "{people}\n=> {refused}\n(expected {expected})");
        }
    }

    #[test]
    fn the_people_named_hold_what_the_policy_says_and_anyone_else_nothing() {
        let text = "[people]\nlee = { roles = [\"support-lead\"], groups = [\"operators\"] }\n";
        let policy = policy(text).unwrap();
        assert_eq!(policy.holds_of("lee").roles, ["support-lead"]);
        assert!(policy.holds_of("alice").is_empty());
        assert_eq!(policy.host_user("lee").unwrap().party, caller::Party::host_user("lee"));
        assert!(policy.host_user("").is_none());
        // A rule's default channels take decisions at a decider's own host, the page and the webhook.
        let rule = policy_rule("tools = [\"write_file\"]\ndecided_by = { scope = \"s\" }\ndeadline = \"1h\"\n");
        assert_eq!(rule.channels, [Channel::Review, Channel::Page]);
        assert!(rule.announced);
    }

    #[test]
    fn a_host_user_the_policy_says_signs_in_at_the_issuer_is_that_person_over_stdio_too() {
        let text = "[people]\nalice = { signs_in_as = \"https://login.example alice\" }\n\
                    lee = { roles = [\"lead\"], signs_in_as = \"https://login.example u-42\" }\n";
        let policy = policy(text).unwrap();
        let alice = policy.host_user("alice").unwrap();
        // The same party the approval page names her by once she signs in there.
        let none = oauth_resource::token::Membership::default();
        let signed_in = policy.person_of(caller::Principal::new("https://login.example", "alice"), &[], &none);
        assert_eq!(alice.party, signed_in.party);
        assert!(alice.holds.is_empty(), "she holds nothing: {alice:?}");
        let lee = policy.host_user("lee").unwrap();
        assert_eq!(lee.party.to_string(), "https://login.example u-42");
        assert_eq!(lee.holds.roles, ["lead"]);
        // Signed in on the page, lee holds what the table says of him, and his token's scopes.
        let on_the_page =
            policy.person_of(caller::Principal::new("https://login.example", "u-42"), &["s".into()], &none);
        assert_eq!(
            (on_the_page.party, on_the_page.holds.roles, on_the_page.holds.scopes),
            (lee.party, vec!["lead".to_owned()], vec!["s".to_owned()])
        );
        // Anyone the table does not name is the host user they are.
        assert_eq!(policy.host_user("sam").unwrap().party, caller::Party::host_user("sam"));
    }

    fn policy_rule(body: &str) -> Rule {
        policy(&format!("[[rule]]\nname = \"r\"\n{body}")).unwrap().rules.remove(0)
    }
}
