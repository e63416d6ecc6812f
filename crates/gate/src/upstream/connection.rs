//! The gate's connection to one upstream: started as a command or reached at its URL, of either
//! era; its tools as it lists them, listed again when it says they changed; calls sent on.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use backon::{BackoffBuilder as _, ExponentialBuilder};
use futures::FutureExt as _;

use mrtr::client::{Client, ClientError, modern_or_legacy};
use rmcp::{
    ErrorData, RoleClient, RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult, ErrorCode,
        GetPromptRequestParams, GetPromptResponse, Prompt, ProtocolVersion, ReadResourceRequestParams,
        ReadResourceResponse, Resource, ResourceTemplate, ServerCapabilities, SubscriptionFilter, Tool,
    },
    service::{Peer, ServiceError, Subscription},
};
use tokio::{sync::watch, task::AbortHandle};

use crate::{
    policy::{Reached, Upstream},
    upstream::command::{Command, Stderr},
    upstream::relay::{Changed, Host, Relay},
    upstream::watched::{Holds, Refused, WATCHED_AT_MOST, Watched, Watching},
};

/// A connection that could not be opened.
#[derive(Debug, thiserror::Error)]
#[error("upstream {upstream}: {why}")]
pub struct NotConnected {
    /// The upstream's name.
    pub upstream: String,
    /// Why, in words.
    pub why: String,
}

/// How an approved call sent to its upstream failed.
#[derive(Debug)]
pub enum NotRun {
    /// The upstream answered with a JSON-RPC error: it refused the call, which did not run.
    Refused(ErrorData),
    /// No answer came (the connection failed, or the upstream stopped): the call may or may
    /// not have run.
    Lost(String),
}

/// Where an approved call's upstream rounds are answered while it runs.
#[derive(Debug, Clone, Copy)]
pub enum Rounds<'a> {
    /// Here, by the gate: each question to this 2025 host, on its back-channel.
    Here(&'a Peer<RoleServer>),
    /// By the host whose call runs it, in its own rounds (a 2026-07-28 host) or through its
    /// task: the upstream's answer comes back as it came, a round (`input_required`) included,
    /// for the host to answer and carry on. A question on a 2025 upstream's back-channel goes
    /// to the one host behind the gate (over stdio).
    PassedBack,
}

/// One upstream, connected.
pub struct Connection {
    name: String,
    client: Client<Relay>,
    /// Where a call passed as its bytes is sent, read once from its URL: none over stdio, or
    /// for a URL that carries credentials (`passed_to`).
    url: Option<http::Uri>,
    tools: Mutex<ToolList>,
    /// The resources whose updates the gate's hosts asked of this upstream, each asked for
    /// while a host holds it: subscribed to at a 2025 upstream, named in the
    /// `subscriptions/listen` filter of a 2026-07-28 one.
    watched: Arc<Watched>,
    /// What hears a 2026-07-28 upstream's list changes, stopped with the connection.
    _listening: Option<Hearing>,
    /// The upstream's command, where the gate started it: stopped when the connection closes.
    command: Option<Command>,
}

/// The task that hears an upstream's list changes, stopped when this is dropped.
struct Hearing(AbortHandle);

impl Drop for Hearing {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The longest wait before a stream to an upstream is opened again.
const MAX_WAIT: Duration = Duration::from_secs(60);

/// Hear what a 2026-07-28 upstream tells on a `subscriptions/listen` stream (the only way it
/// may): its list changes and the updates of the resources its connection watches, each handed
/// to its relay as a 2025 upstream's notification is; `None` for a 2025 upstream (its
/// notifications reach the relay as they come) or one that announces neither list changes nor
/// resource subscriptions. A resource watched anew opens a stream that names the resources
/// watched now (a released one is left out then, and its updates meanwhile not relayed); the
/// one before goes on until that is open (for good, if it cannot be), is then read of what it
/// told and closed, and the hosts are told each list may have changed (a stream left with
/// nothing to hear is closed until something is watched). A stream that cannot be
/// opened, or ends, is opened again, after a quarter of a second, then longer each time (to a
/// minute) while none lasts a minute, until the upstream's connection closes or it refuses one;
/// the gate lists the upstream's tools as they last were meanwhile, and once a stream is open
/// again every listening host is told each list may have changed (what changed while none was
/// open is not known).
fn listen(connection: &Connection) -> Option<Hearing> {
    let announced = connection.capabilities();
    let (tools, prompts, resources) = (
        announced.tools.as_ref().is_some_and(|tools| tools.list_changed == Some(true)),
        announced.prompts.as_ref().is_some_and(|prompts| prompts.list_changed == Some(true)),
        announced.resources.as_ref().is_some_and(|resources| resources.list_changed == Some(true)),
    );
    let updates = announced.resources.as_ref().is_some_and(|resources| resources.subscribe == Some(true));
    if !connection.modern() || !(tools || prompts || resources || updates) {
        return None;
    }
    let mut missed = Vec::new();
    if tools {
        missed.push(Changed::Tools);
    }
    if prompts {
        missed.push(Changed::Prompts);
    }
    if resources {
        missed.push(Changed::Resources);
    }
    let (peer, relay) = (connection.client.peer().clone(), connection.client.handler().clone());
    let mut watched = connection.watched.subscribe();
    let upstream = connection.name.clone();
    // Opened beside the gate's start, which does not wait on it.
    let hearing = tokio::spawn(async move {
        let waits = ExponentialBuilder::new()
            .with_min_delay(Duration::from_millis(250))
            .with_max_delay(MAX_WAIT)
            .with_jitter()
            .without_max_times();
        let mut wait = waits.build();
        // Whether a stream was asked for before: a change told while none was open is missed.
        let mut asked_before = false;
        // A stream that works, and the resources it names, kept while one naming the resources
        // watched now opens.
        let mut open: Option<(Subscription, Named)> = None;
        loop {
            let (filter, names) = {
                let holds = watched.borrow_and_update();
                (filter_for(&missed, &holds), holds.keys().cloned().collect::<Named>())
            };
            if filter == SubscriptionFilter::default() {
                // Nothing to hear: an upstream that tells only resources' updates, none watched
                // (yet, or any longer: the stream that named the last one is read and closed).
                if let Some((before, _)) = open.take() {
                    heard_so_far(before, &relay).await;
                }
                if watched.changed().await.is_err() {
                    return;
                }
                continue;
            }
            let (mut subscription, named) = match (peer.listen(filter).await, open.take()) {
                (Ok(subscription), before) => {
                    tracing::info!(%upstream, "listening to its list changes and watched resources");
                    if let Some((before, _)) = before {
                        // What the stream before told and was not yet read is heard now; a change
                        // told on it as it closes could be missed, so the lists are told again.
                        heard_so_far(before, &relay).await;
                    }
                    if asked_before {
                        for changed in &missed {
                            relay.changed(*changed).await;
                        }
                    }
                    (subscription, names)
                }
                (Err(error), Some(before)) => {
                    // The stream before goes on; the resources watched now are asked for again
                    // when another is.
                    tracing::warn!(%upstream, %error, "a stream naming the resources watched now could not be opened; the one before goes on");
                    before
                }
                // Refused as a request it does not take: asking again would be refused again.
                (Err(ServiceError::McpError(error)), None)
                    if [ErrorCode::METHOD_NOT_FOUND, ErrorCode::INVALID_PARAMS, ErrorCode::INVALID_REQUEST]
                        .contains(&error.code) =>
                {
                    tracing::warn!(%upstream, %error, "it refused to tell its list changes; its lists stay as last listed");
                    return;
                }
                // The connection closed (the gate is closing it, as a stdio session ends): no
                // fault to warn of.
                (Err(_), None) if peer.is_transport_closed() => {
                    tracing::info!(%upstream, "its connection closed: its list changes are no longer heard");
                    return;
                }
                (Err(error), None) => {
                    tracing::warn!(%upstream, %error, "its list changes could not be listened to; its lists stay as last listed");
                    asked_before = true;
                    if !waited(&peer, &upstream, wait.next()).await {
                        return;
                    }
                    continue;
                }
            };
            asked_before = true;
            let opened = Instant::now();
            let heeded = Heeded { lists: &missed, named: &named, upstream: &upstream };
            match hear(&mut subscription, &relay, &mut watched, heeded).await {
                Heard::WatchedChanged => {
                    open = Some((subscription, named));
                    continue;
                }
                Heard::GateGone => return,
                Heard::Ended => {}
            }
            if opened.elapsed() >= Duration::from_secs(60) {
                wait = waits.build();
            }
            if !waited(&peer, &upstream, wait.next()).await {
                return;
            }
        }
    });
    Some(Hearing(hearing.abort_handle()))
}

/// Whether the upstream `client` reaches speaks 2026-07-28 (or later) to the gate.
fn modern(client: &Client<Relay>) -> bool {
    client.protocol_version().is_some_and(|version| version >= ProtocolVersion::V_2026_07_28)
}

/// Where a call passed as its bytes is POSTed for an upstream at `url`: none for a URL that
/// carries credentials (`user:password@`), which rmcp's client (reqwest) sends as basic
/// authentication and the lane's own does not: such an upstream's calls go the typed way.
fn passed_to(url: &str) -> Option<http::Uri> {
    let parsed = url::Url::parse(url).ok()?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return None;
    }
    url.parse().ok()
}

/// Whether `schema` puts an argument in a header anywhere (`x-mcp-header`, on a property at any
/// depth or misplaced): a superset of what rmcp's client reads, which it keeps private; a tool
/// this says yes to is called the typed way, its headers written by rmcp.
fn names_a_header(schema: &serde_json::Map<String, serde_json::Value>) -> bool {
    use serde_json::Value;
    schema.iter().any(|(key, value)| {
        key == "x-mcp-header"
            || match value {
                Value::Object(inner) => names_a_header(inner),
                Value::Array(items) => {
                    items.iter().any(|item| matches!(item, Value::Object(inner) if names_a_header(inner)))
                }
                _ => false,
            }
    })
}

/// What a stream asks an upstream to tell: the changes of `lists`, the updates of `watched`.
fn filter_for(lists: &[Changed], watched: &Holds) -> SubscriptionFilter {
    let mut filter = SubscriptionFilter::builder();
    for changed in lists {
        filter = match changed {
            Changed::Tools => filter.tools_list_changed(),
            Changed::Prompts => filter.prompts_list_changed(),
            Changed::Resources => filter.resources_list_changed(),
        };
    }
    if !watched.is_empty() {
        filter = filter.resource_subscriptions(watched.keys().cloned());
    }
    filter.build()
}

/// The resources a stream the gate listens on names.
type Named = std::collections::BTreeSet<String>;

/// What the stream being heard is for: the lists it tells the changes of, the resources it
/// names, whose upstream.
struct Heeded<'a> {
    lists: &'a [Changed],
    named: &'a Named,
    upstream: &'a str,
}

/// How a stream the gate listens on stopped being read.
enum Heard {
    /// It ended, or failed: to be opened again.
    Ended,
    /// A resource was watched anew: a stream naming those watched now is to be opened (or, with
    /// nothing left to hear, none).
    WatchedChanged,
    /// The connection is gone.
    GateGone,
}

/// Hand what `subscription` tells to `relay` until it ends, a resource is watched anew, or
/// nothing is left to hear on it. A resource released alone keeps the stream (its updates are
/// no longer relayed, `Relay::updated`): a stream opened anew tells every host each list may
/// have changed, which a host opening and closing its own stream must not set off at will. The
/// upstream is asked for it no more from the next stream, opened when a resource is watched anew.
async fn hear(
    subscription: &mut Subscription,
    relay: &Relay,
    watched: &mut watch::Receiver<Holds>,
    Heeded { lists, named, upstream }: Heeded<'_>,
) -> Heard {
    loop {
        tokio::select! {
            next = subscription.next() => match next {
                Ok(Some(notification)) => relay.heard(notification).await,
                Ok(None) => return Heard::Ended,
                Err(error) => {
                    tracing::warn!(%upstream, %error, "its list changes' stream failed");
                    return Heard::Ended;
                }
            },
            changed = watched.changed() => {
                if changed.is_err() {
                    return Heard::GateGone;
                }
                let holds = watched.borrow_and_update();
                let grown = holds.keys().any(|uri| !named.contains(uri));
                if grown || filter_for(lists, &holds) == SubscriptionFilter::default() {
                    return Heard::WatchedChanged;
                }
            }
        }
    }
}

/// Hand `relay` what `before` told and is not yet read, and close it.
async fn heard_so_far(mut before: Subscription, relay: &Relay) {
    while let Some(Ok(Some(notification))) = before.next().now_or_never() {
        relay.heard(notification).await;
    }
}

/// Wait `after` (at most a minute: jitter may double a wait) before a stream is opened again;
/// `false` if the upstream's connection has closed, when none will be.
async fn waited(peer: &Peer<RoleClient>, upstream: &str, after: Option<Duration>) -> bool {
    if peer.is_transport_closed() {
        tracing::info!(%upstream, "its connection closed: its list changes are no longer heard");
        return false;
    }
    let after = after.unwrap_or(MAX_WAIT).min(MAX_WAIT);
    tracing::info!(%upstream, after = ?after, "its list changes' stream is opened again");
    tokio::time::sleep(after).await;
    true
}

/// An upstream's tools as last listed, each found by its name without reading the list (an
/// upstream may list many, and each call looks its tool up).
#[derive(Default)]
struct ToolList {
    tools: Vec<Tool>,
    by_name: HashMap<String, usize>,
}

impl ToolList {
    /// `tools`, found by name: of two of one name, the first.
    fn of(tools: Vec<Tool>) -> ToolList {
        let mut by_name = HashMap::with_capacity(tools.len());
        for (place, tool) in tools.iter().enumerate() {
            by_name.entry(tool.name.to_string()).or_insert(place);
        }
        ToolList { tools, by_name }
    }

    fn named(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name).map(|&place| &self.tools[place])
    }
}

/// How long an upstream is given to connect and list its tools when the gate starts, and to
/// list them again when it says they changed: one that does not answer, or pages its list
/// without end, stops the gate's start rather than holding it for ever.
pub const LIST_WAIT: Duration = Duration::from_secs(30);

impl Connection {
    /// Open a connection to `upstream`, whose questions go to `host`, and list its tools, within
    /// [`LIST_WAIT`].
    pub async fn open(upstream: &Upstream, host: Host) -> Result<Connection, NotConnected> {
        let waited = || NotConnected {
            upstream: upstream.name.clone(),
            why: format!("no connection and list of tools within {} s", LIST_WAIT.as_secs()),
        };
        tokio::time::timeout(LIST_WAIT, Connection::opened(upstream, host)).await.map_err(|_| waited())?
    }

    async fn opened(upstream: &Upstream, host: Host) -> Result<Connection, NotConnected> {
        let holds = watch::Sender::new(Holds::new());
        let relay = Relay::new(&upstream.name, host, holds.subscribe());
        let not = |why: String| NotConnected { upstream: upstream.name.clone(), why };
        let (client, command) = match &upstream.reached {
            Reached::Command(argv) => {
                // The upstream's log goes where the gate's goes: its stderr is the gate's.
                let mut command = Command::start(argv, Stderr::Relayed).map_err(not)?;
                let transport = command.transport().ok_or_else(|| not("no transport".to_owned()))?;
                match Client::connect_with(relay, transport, modern_or_legacy()).await {
                    Ok(client) => (client, Some(command)),
                    Err(error) => {
                        return Err(not(match command.ended().await {
                            Some(ended) => format!("no connection: {ended}"),
                            None => format!("no connection: {}", error.in_words()),
                        }));
                    }
                }
            }
            Reached::Url(url) => {
                let client = Client::connect_http_either(relay, url, 64)
                    .await
                    .map_err(|error| not(format!("no connection: {}", error.in_words())))?;
                (client, None)
            }
        };
        let tools = match client.peer().list_all_tools().await {
            Ok(tools) => tools,
            Err(error) => {
                // Closed and stopped as at the end, not left to be killed as it is dropped.
                let _ = client.close().await;
                if let Some(command) = command {
                    command.stop().await;
                }
                return Err(not(format!("tools/list: {error}")));
            }
        };
        tracing::info!(upstream = %upstream.name, tools = tools.len(), version = ?client.protocol_version().map(|v| v.to_string()), "upstream connected");
        let subscribed_at = (!modern(&client)).then(|| client.peer().clone());
        let mut connection = Connection {
            name: upstream.name.clone(),
            client,
            url: match &upstream.reached {
                Reached::Url(url) => passed_to(url),
                Reached::Command(_) => None,
            },
            tools: Mutex::new(ToolList::of(tools)),
            watched: Watched::new(&upstream.name, holds, subscribed_at),
            _listening: None,
            command,
        };
        connection._listening = listen(&connection);
        Ok(connection)
    }

    /// The upstream's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the upstream speaks 2026-07-28 (or later) to the gate.
    fn modern(&self) -> bool {
        modern(&self.client)
    }

    /// Its tools: as last listed, or listed again if it said they changed (within
    /// [`LIST_WAIT`]: an upstream that does not finish its list keeps the one before).
    pub async fn tools(&self) -> Vec<Tool> {
        if self.client.handler().take_tools_changed() {
            match tokio::time::timeout(LIST_WAIT, self.client.peer().list_all_tools()).await {
                Ok(Ok(tools)) => *self.tool_list() = ToolList::of(tools),
                Ok(Err(error)) => {
                    tracing::warn!(upstream = %self.name, %error, "its changed tools could not be listed")
                }
                Err(_) => {
                    tracing::warn!(upstream = %self.name, waited = ?LIST_WAIT, "its changed tools were not listed in time; its list stays as last listed")
                }
            }
        }
        self.tool_list().tools.clone()
    }

    /// Its tools as last listed, not listed again.
    pub fn tools_as_listed(&self) -> Vec<Tool> {
        self.tool_list().tools.clone()
    }

    fn tool_list(&self) -> std::sync::MutexGuard<'_, ToolList> {
        self.tools.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether the upstream lists the tool `name` (as last listed).
    pub fn serves(&self, name: &str) -> bool {
        self.tool_list().by_name.contains_key(name)
    }

    /// Where a call to its tool `name` may be passed on as its bytes ([`crate::passthrough`]): its
    /// URL, where it speaks 2026-07-28 over HTTP and lists the tool (as last listed) taking
    /// none of its arguments in headers (`x-mcp-header`, which the gate's client writes).
    pub fn passes_at(&self, name: &str) -> Option<&http::Uri> {
        let url = self.url.as_ref().filter(|_| self.modern())?;
        let listed = self.tool_list();
        let tool = listed.named(name)?;
        (!names_a_header(&tool.input_schema)).then_some(url)
    }

    /// Whether any call to it may be passed on as its bytes: it speaks 2026-07-28 over HTTP.
    pub fn passes_calls(&self) -> bool {
        self.url.is_some() && self.modern()
    }

    /// Its tool `name`, as last listed.
    pub fn tool(&self, name: &str) -> Option<Tool> {
        self.tool_list().named(name).cloned()
    }

    /// Send `params` on as they came: the upstream's answer as it came, `input_required`
    /// (its own sealed state, which the host carries back) or complete. For a 2026-07-28 host.
    pub async fn call_once(&self, params: CallToolRequestParams) -> Result<CallToolResponse, ErrorData> {
        self.client.call_tool_once(params).await.map_err(|error| self.failed(error))
    }

    /// Send `params` on and run the upstream's rounds here, each question relayed to `host`
    /// (the host whose call it is) on its back-channel: for a 2025 host, which cannot carry
    /// rounds itself.
    pub async fn call_with_rounds(
        &self,
        params: CallToolRequestParams,
        host: &Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        crate::upstream::relay::asking(host.clone(), self.client.call_tool_rounds(params))
            .await
            .map_err(|error| self.failed(error))
    }

    /// Run an approved call (or carry on its run with a round's answers): sent once, its
    /// rounds answered where `rounds` says, waited for `within`; a refusal told apart from an
    /// answer that was lost (or did not come in time: the request is cancelled at the upstream).
    pub async fn run(
        &self,
        params: CallToolRequestParams,
        rounds: Rounds<'_>,
        within: Duration,
    ) -> Result<CallToolResponse, NotRun> {
        let sent = async {
            match rounds {
                Rounds::Here(host) => {
                    crate::upstream::relay::asking(host.clone(), self.client.call_tool_rounds(params))
                        .await
                        .map(Into::into)
                }
                Rounds::PassedBack => self.client.call_tool_once(params).await,
            }
        };
        let Ok(sent) = tokio::time::timeout(within, sent).await else {
            let waited = humantime::format_duration(within);
            tracing::warn!(upstream = %self.name, %waited, "an approved call's upstream did not answer in time: its outcome is not known");
            return Err(NotRun::Lost(format!("{} did not answer within {waited}", self.name)));
        };
        match sent {
            Ok(result) => Ok(result),
            Err(ClientError::Service(rmcp::ServiceError::McpError(error))) => Err(NotRun::Refused(error)),
            Err(other) => {
                tracing::warn!(upstream = %self.name, error = %other, "an approved call's answer was lost");
                Err(NotRun::Lost(other.in_words()))
            }
        }
    }

    /// What the upstream said it serves, when it connected.
    pub fn capabilities(&self) -> ServerCapabilities {
        self.client.peer().peer_info().map(|info| info.capabilities.clone()).unwrap_or_default()
    }

    /// Its prompts, as it lists them now (the client keeps a list until the upstream says it
    /// changed); none, logged, if it does not answer.
    pub async fn prompts(&self) -> Vec<Prompt> {
        let served = self.capabilities().prompts.is_some();
        self.listed("prompts", served, self.client.peer().list_all_prompts()).await
    }

    /// Its resources, as it lists them now; none, logged, if it does not answer.
    pub async fn resources(&self) -> Vec<Resource> {
        let served = self.capabilities().resources.is_some();
        self.listed("resources", served, self.client.peer().list_all_resources()).await
    }

    /// Its resource templates, as it lists them now; none, logged, if it does not answer.
    pub async fn resource_templates(&self) -> Vec<ResourceTemplate> {
        let served = self.capabilities().resources.is_some();
        self.listed("resource templates", served, self.client.peer().list_all_resource_templates()).await
    }

    /// What `listing` lists of `what`, where the upstream `serves` it; none, logged, if it fails.
    async fn listed<T>(
        &self,
        what: &str,
        serves: bool,
        listing: impl Future<Output = Result<Vec<T>, rmcp::ServiceError>>,
    ) -> Vec<T> {
        if !serves {
            return Vec::new();
        }
        listing.await.unwrap_or_else(|error| {
            tracing::warn!(upstream = %self.name, %error, "its {what} could not be listed");
            Vec::new()
        })
    }

    /// Get a prompt: its answer as it came (a round of its own included, for the host to carry).
    pub async fn get_prompt(&self, params: GetPromptRequestParams) -> Result<GetPromptResponse, ErrorData> {
        self.client.peer().get_prompt_once(params).await.map_err(|error| self.failed(ClientError::Service(error)))
    }

    /// Read a resource: its answer as it came.
    pub async fn read_resource(&self, params: ReadResourceRequestParams) -> Result<ReadResourceResponse, ErrorData> {
        self.client.peer().read_resource_once(params).await.map_err(|error| self.failed(ClientError::Service(error)))
    }

    /// A hold on the updates of the resource `uri`, asked of the upstream if no host held it
    /// (subscribed to at a 2025 upstream, named by the next stream a 2026-07-28 one is listened
    /// to on) and released there when the last hold is let go. Refused where the upstream tells
    /// no updates, or past [`WATCHED_AT_MOST`] resources; a 2025 upstream's refusal is worded as
    /// any failed call to it is.
    pub async fn watch(&self, uri: &str) -> Result<Watching, ErrorData> {
        let tells = self.capabilities().resources.is_some_and(|resources| resources.subscribe == Some(true));
        if !tells {
            return Err(ErrorData::invalid_params(
                format!("upstream {} does not tell updates of its resources ({uri})", self.name),
                None,
            ));
        }
        self.watched.hold(uri).await.map_err(|refused| match refused {
            Refused::Full => ErrorData::invalid_params(
                format!("the gate watches {WATCHED_AT_MOST} resources of upstream {} already ({uri})", self.name),
                None,
            ),
            Refused::Upstream(error) => self.failed(ClientError::Service(error)),
        })
    }

    /// Complete a prompt's or a resource template's argument.
    pub async fn complete(&self, params: CompleteRequestParams) -> Result<CompleteResult, ErrorData> {
        self.client.peer().complete(params).await.map_err(|error| self.failed(ClientError::Service(error)))
    }

    /// Close the connection (a command's process sees its input end).
    pub async fn close(self) {
        let _ = self.client.close().await;
        if let Some(command) = self.command {
            command.stop().await;
        }
    }

    /// The upstream's own refusal passes on unchanged; a failure to reach it is the gate's,
    /// in words that name it.
    fn failed(&self, error: ClientError) -> ErrorData {
        match error {
            ClientError::Service(rmcp::ServiceError::McpError(error)) => error,
            other => {
                tracing::warn!(upstream = %self.name, error = %other, "a call to the upstream failed");
                ErrorData::internal_error(format!("upstream {} did not answer: {}", self.name, other.in_words()), None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rmcp::{
        RoleServer, ServerHandler,
        model::{self, CallToolRequestParams},
        service::RequestContext,
    };

    use super::{Connection, NotRun, Rounds, passed_to};
    use crate::{
        policy::{Reached, Upstream},
        upstream::relay::Host,
    };

    /// An upstream whose one tool, `hang`, never answers, and says when it is cancelled.
    #[derive(Clone, Default)]
    struct Hangs {
        cancelled: Arc<tokio::sync::Notify>,
    }

    impl ServerHandler for Hangs {
        fn get_info(&self) -> model::ServerConfig {
            model::ServerConfig::new(model::ServerCapabilities::builder().enable_tools().build())
        }

        async fn list_tools(
            &self,
            _: Option<model::PaginatedRequestParams>,
            _: RequestContext<RoleServer>,
        ) -> Result<model::ListToolsResult, rmcp::ErrorData> {
            let tool = model::Tool::new("hang", "Never answers.", Arc::new(serde_json::Map::new()));
            Ok(model::ListToolsResult::with_all_items(vec![tool]))
        }

        async fn call_tool(
            &self,
            _: CallToolRequestParams,
            context: RequestContext<RoleServer>,
        ) -> Result<model::CallToolResponse, rmcp::ErrorData> {
            context.ct.cancelled().await;
            self.cancelled.notify_one();
            Err(rmcp::ErrorData::internal_error("cancelled", None))
        }
    }

    /// `upstream` served over Streamable HTTP in this process: its URL.
    async fn served(upstream: Hangs) -> String {
        use rmcp::transport::streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
        };
        let service = StreamableHttpService::new(
            move || Ok(upstream.clone()),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, axum::Router::new().route_service("/mcp", service)).await });
        url
    }

    #[tokio::test]
    async fn an_approved_run_its_upstream_never_answers_is_lost_when_its_wait_ends_and_cancelled_there() {
        let upstream = Hangs::default();
        let cancelled = upstream.cancelled.clone();
        let url = served(upstream).await;
        let hangs = Upstream { name: "hangs".into(), reached: Reached::Url(url), trust_annotations: false };
        let connection = Connection::open(&hangs, Host::default()).await.unwrap();
        let told_cancelled = cancelled.notified();
        let within = std::time::Duration::from_millis(200);
        let ran = connection.run(CallToolRequestParams::new("hang"), Rounds::PassedBack, within).await;
        let Err(NotRun::Lost(why)) = ran else { panic!("{ran:?}") };
        assert!(why.contains("did not answer within 200ms"), "{why}");
        let told = tokio::time::timeout(std::time::Duration::from_secs(10), told_cancelled).await;
        assert!(told.is_ok(), "the upstream was never told the call is cancelled");
        connection.close().await;
    }

    #[test]
    fn a_url_that_carries_credentials_takes_no_call_as_its_bytes() {
        let plain = passed_to("http://127.0.0.1:8080/mcp").expect("a plain URL takes them");
        assert_eq!(plain.to_string(), "http://127.0.0.1:8080/mcp");
        assert!(passed_to("https://shop.example/mcp?tenant=7").is_some());
        for with_credentials in [
            "http://lee:secret@127.0.0.1:8080/mcp",
            "http://lee@127.0.0.1:8080/mcp",
            "https://:secret@shop.example/mcp",
        ] {
            assert!(passed_to(with_credentials).is_none(), "{with_credentials}");
        }
        assert!(passed_to("not a url").is_none());
    }
}
