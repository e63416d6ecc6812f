//! One rule of a policy: which calls it holds, and what a person must do to let one run.

use std::time::Duration;

use approvals::Channel;

use crate::{policy::call::Call, policy::condition::Condition, policy::tool_name::ToolName};

/// Who may decide a call a rule holds: a person whose token carries this scope, role or group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decider {
    /// An OAuth scope the decider's token holds.
    Scope(String),
    /// A role in the decider's token's roles claim.
    Role(String),
    /// A group in the decider's token's groups claim.
    Group(String),
}

/// Who decides a rule's calls, in words ("a person with the role support-lead").
impl std::fmt::Display for Decider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Decider::Scope(scope) => write!(f, "a person whose token carries the scope {scope}"),
            Decider::Role(role) => write!(f, "a person with the role {role}"),
            Decider::Group(group) => write!(f, "a member of the group {group}"),
        }
    }
}

/// Where a person may decide: the approvals engine's channels, as a policy writes them (`host`,
/// `review`, `page`); `webhook` is not one of them but says that held calls are announced, with
/// a link to the page. `None` for a name that is neither.
pub fn parse_channel(name: &str) -> Option<Option<Channel>> {
    match name {
        "host" => Some(Some(Channel::Host)),
        "review" => Some(Some(Channel::Review)),
        "page" => Some(Some(Channel::Page)),
        "webhook" => Some(None),
        _ => None,
    }
}

/// What a call becomes whose upstream's answer was lost after it was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LostOutcome {
    /// Its outcome is unknown, shown to the requester and the decider; it is never sent again.
    #[default]
    Unknown,
    /// The tool is safe to repeat: it is sent again.
    Repeat,
}

/// An annotation a rule may hold tools by, for an upstream whose annotations its operator
/// trusts. Absent from a tool's annotations, each means what the spec says it defaults to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hint {
    /// `readOnlyHint` (default false).
    ReadOnly,
    /// `destructiveHint` (default true, and only where the tool is not read-only).
    Destructive,
    /// `idempotentHint` (default false).
    Idempotent,
    /// `openWorldHint` (default true).
    OpenWorld,
}

impl Hint {
    /// The hint a policy names by its wire name (`destructiveHint`).
    pub fn parse(name: &str) -> Option<Hint> {
        match name {
            "readOnlyHint" => Some(Hint::ReadOnly),
            "destructiveHint" => Some(Hint::Destructive),
            "idempotentHint" => Some(Hint::Idempotent),
            "openWorldHint" => Some(Hint::OpenWorld),
            _ => None,
        }
    }

    /// What `annotations` (a tool's, or `Null`) say of this hint, the spec's default where
    /// they say nothing.
    pub fn said_by(self, annotations: &serde_json::Value) -> bool {
        let said = |name: &str| annotations.get(name).and_then(serde_json::Value::as_bool);
        match self {
            Hint::ReadOnly => said("readOnlyHint").unwrap_or(false),
            Hint::Destructive => !Hint::ReadOnly.said_by(annotations) && said("destructiveHint").unwrap_or(true),
            Hint::Idempotent => said("idempotentHint").unwrap_or(false),
            Hint::OpenWorld => said("openWorldHint").unwrap_or(true),
        }
    }
}

/// A call's effect that its rule's expression could not evaluate: the rule's own unevaluated
/// effect, which every such call of the rule shares, so at most one of them runs (a gate fails
/// closed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unevaluated {
    /// The effect the call is kept under.
    pub effect: String,
    /// Why the expression could not be evaluated.
    pub why: String,
}

/// One `[[rule]]`: the calls it holds and how they are decided.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Its name, unique in its policy.
    pub name: String,
    /// The digest of its table as written (its name and every key): a held call is bound to the
    /// rule by it, so a rule changed, or another in its place, never decides a call held before.
    pub digest: approvals::Digest,
    /// The line of the policy file it starts on.
    pub line: usize,
    /// The upstream whose tools it holds; every upstream's when `None`.
    pub upstream: Option<String>,
    /// The tools it holds, by name or glob.
    pub tools: Vec<ToolName>,
    /// The condition on the call a held call meets; every call to its tools when `None`.
    pub when: Option<Condition>,
    /// Annotations a held tool has (all of them), read only where the upstream is trusted.
    pub hints: Vec<Hint>,
    /// Who decides.
    pub decided_by: Decider,
    /// Whether the requester may decide their own call.
    pub self_approval: approvals::SelfApproval,
    /// Where a decision may be made, beside the page the webhook links to.
    pub channels: Vec<Channel>,
    /// Whether its held calls, escalations and decisions are announced to the webhook, each
    /// with the approval page's link (where decisions are then made).
    pub announced: bool,
    /// How long a held call waits for a decision before it is declined.
    pub deadline: Duration,
    /// How long it waits before it is escalated, if it is.
    pub escalate_after: Option<Duration>,
    /// What a call whose answer was lost becomes.
    pub lost_outcome: LostOutcome,
    /// The call's effect in the world, an expression over the call: two calls with one effect
    /// never both run.
    pub effect: Option<Condition>,
    /// How long after a call with an effect ran another with the same effect may run; never,
    /// when `None`.
    pub effect_again_after: Option<Duration>,
}

impl Rule {
    /// Whether this rule takes decisions on `channel`: on the page, where its channels hold it
    /// or the webhook announces the page's link.
    pub fn decides_on(&self, channel: Channel) -> bool {
        match channel {
            Channel::Page => self.announced || self.channels.contains(&Channel::Page),
            channel => self.channels.contains(&channel),
        }
    }

    /// Whether this rule names the tool `tool` of `upstream`, whose annotations are `annotations`
    /// and are `trusted` or not: its upstream, one of its names, and, for a trusted upstream,
    /// every hint it asks for. Where the annotations are not trusted, the hints are not read
    /// and the rule names every tool its names match (a gate fails closed).
    pub fn names(&self, upstream: &str, tool: &str, annotations: &serde_json::Value, trusted: bool) -> bool {
        self.names_tool(upstream, tool) && (!trusted || self.hints.iter().all(|hint| hint.said_by(annotations)))
    }

    /// Whether this rule names the tool `tool` of `upstream` by its upstream and one of its
    /// names, before any hint is read.
    pub fn names_tool(&self, upstream: &str, tool: &str) -> bool {
        self.upstream.as_deref().is_none_or(|named| named == upstream)
            && self.tools.iter().any(|name| name.matches(tool))
    }

    /// The effect `call` has in the world, by this rule's `effect`; `None` for a rule that names
    /// none. One that cannot be evaluated for the call is [`Unevaluated`], with the reason.
    pub fn effect_of(&self, call: &Call<'_>) -> Option<Result<String, Unevaluated>> {
        let effect = self.effect.as_ref()?;
        Some(effect.text(call).map_err(|why| Unevaluated { effect: format!("{}: unevaluated", self.name), why }))
    }

    /// Whether this rule holds `call` (its upstream's annotations `trusted` or not): it names
    /// the tool, and its condition is true of the call. A condition that cannot be evaluated
    /// for the call holds it (`Err`, with the reason).
    pub fn holds(&self, call: &Call<'_>, trusted: bool) -> Result<bool, String> {
        if !self.names(call.upstream, call.tool, call.annotations, trusted) {
            return Ok(false);
        }
        match &self.when {
            None => Ok(true),
            Some(condition) => condition.holds(call),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_absent_annotation_means_what_the_spec_says_it_defaults_to() {
        let none = serde_json::Value::Null;
        assert!(Hint::Destructive.said_by(&none) && Hint::OpenWorld.said_by(&none));
        assert!(!Hint::ReadOnly.said_by(&none) && !Hint::Idempotent.said_by(&none));
        // Destructive only where not read-only.
        assert!(!Hint::Destructive.said_by(&json!({"readOnlyHint": true, "destructiveHint": true})));
        assert!(!Hint::Destructive.said_by(&json!({"destructiveHint": false})));
    }
}
