//! What an upstream says to the gate, relayed to the host behind it: its questions (a 2025
//! `elicitation/create` on the back-channel, or a round of its own the gate runs for a 2025 host),
//! its lists' changes (tools, prompts, resources), and the progress of a host's call. A call
//! whose host asked for progress (a `progressToken` in its `_meta`) goes on under a token of the
//! gate's own ([`Host::relaying_progress`]: the gate's random prefix and a number), and the
//! progress its upstream (that one alone: another upstream's under it is not relayed) tells
//! under it goes to that host under the host's
//! token, for as long as the call lasts (none after its answer, as the spec asks; rmcp hands
//! each notification to the handler in a task of its own, so one told just as the call ends
//! may be dropped, and two told at once may arrive in either order).
//!
//! A resource's update goes to the hosts that asked for it: a 2026-07-28 stream that names its
//! URI, a 2025 session that subscribed to it (`resources/subscribe`).
//!
//! A list's change goes to every host that listens: each 2026-07-28 host's open
//! `subscriptions/listen` stream (tagged, and only the kinds it asked for), and each 2025
//! session on its own stream, over stdio or HTTP; never an untagged notification to a
//! 2026-07-28 host, which the spec forbids.
//!
//! The gate is an MCP client to each upstream; this is that client's handler. A question goes
//! to the host behind the gate, which shows it to its person: over stdio, the one host. Over
//! HTTP no host is set (many share each upstream's connection, and a back-channel question
//! says nothing of the call it is for), so such a question is refused; a round of the
//! upstream's that the gate runs for a 2025 host's call goes to that host ([`asking`]). An upstream that asks a host that cannot show
//! questions gets an error, never an answer the person did not give.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
};

use rmcp::{
    ClientHandler, ErrorData, RoleClient, RoleServer,
    model::{
        ClientConfig, ElicitRequestParams, ElicitResult, NumberOrString, ProgressNotificationParam, ProgressToken,
        ProtocolVersion, ResourceUpdatedNotification, ResourceUpdatedNotificationParam, ServerNotification,
    },
    service::{NotificationContext, Peer, RequestContext, SubscriptionSink},
};
use tokio::sync::watch;

use crate::upstream::watched::{Holds, Watching};

tokio::task_local! {
    /// The host whose call's rounds the gate is running: each round's question goes to it.
    static ASKING: Peer<RoleServer>;
}

/// Run `rounds`, an upstream call whose rounds the gate runs, with each round's question going
/// to `host`, the host whose call it is (the rounds are answered within the call's own future,
/// so the question finds its host whatever other hosts the gate serves meanwhile).
pub async fn asking<F: std::future::Future>(host: Peer<RoleServer>, rounds: F) -> F::Output {
    ASKING.scope(host, rounds).await
}

/// The hosts behind the gate, as the relays of every upstream reach them: the one host over
/// stdio, each call whose progress is relayed, and every host told of list changes.
#[derive(Debug, Clone, Default)]
pub struct Host {
    peer: Arc<Mutex<Option<Peer<RoleServer>>>>,
    progress: Arc<Progress>,
    listeners: Arc<Listeners>,
}

/// The hosts told when an upstream's lists change: each 2026-07-28 host's open
/// `subscriptions/listen` stream (its sink tags what it sends with the subscription and sends
/// only what the host asked for), and each 2025 session, on its own stream, over stdio or HTTP.
#[derive(Debug, Default)]
struct Listeners {
    next: AtomicU64,
    streams: Mutex<Vec<(u64, SubscriptionSink)>>,
    sessions: Mutex<Vec<Peer<RoleServer>>>,
    /// The resources each 2025 session subscribed to (`resources/subscribe`), told their
    /// updates on its stream (a 2026-07-28 host's stream names its own, and its sink keeps to
    /// them), each held of its upstream until the session unsubscribes or ends.
    subscribed: Mutex<Vec<(Peer<RoleServer>, Watching)>>,
}

/// Whether `a` and `b` are one session: the initialize info rmcp keeps once a session is made,
/// shared by every handle of its peer (rmcp's `Peer` has no equality of its own). A 2025
/// session has it from its `initialize` on, before it can subscribe to anything.
fn same_session(a: &Peer<RoleServer>, b: &Peer<RoleServer>) -> bool {
    a.peer_info().zip(b.peer_info()).is_some_and(|(a, b)| Arc::ptr_eq(&a, &b))
}

/// One host's `subscriptions/listen` stream, told of list changes while this lives.
#[derive(Debug)]
pub struct Listening {
    listeners: Arc<Listeners>,
    id: u64,
}

impl Drop for Listening {
    fn drop(&mut self) {
        locked(&self.listeners.streams).retain(|(id, _)| *id != self.id);
    }
}

/// Which of an upstream's lists changed.
#[derive(Debug, Clone, Copy)]
pub enum Changed {
    /// Its tools.
    Tools,
    /// Its prompts.
    Prompts,
    /// Its resources.
    Resources,
}

impl Changed {
    /// The notification that tells a host so.
    fn notification(self) -> ServerNotification {
        match self {
            Changed::Tools => ServerNotification::ToolListChangedNotification(Default::default()),
            Changed::Prompts => ServerNotification::PromptListChangedNotification(Default::default()),
            Changed::Resources => ServerNotification::ResourceListChangedNotification(Default::default()),
        }
    }
}

fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The calls whose progress is relayed: the gate's token for each, the upstream it went to,
/// and the host it goes to under the host's own token.
#[derive(Debug)]
struct Progress {
    calls: Mutex<HashMap<ProgressToken, Relayed>>,
    /// Each token is this gate's random prefix and a number of its own: unique among its calls,
    /// and never one a gate before it gave (an upstream may still tell of a call that gate
    /// passed on). Neither part need be secret: an upstream knows the tokens of the calls it
    /// serves, and its progress is relayed only under those (`progress_of`).
    prefix: String,
    next: AtomicU64,
}

impl Default for Progress {
    fn default() -> Self {
        Progress { calls: Mutex::default(), prefix: web_service::credential::generate(), next: AtomicU64::new(0) }
    }
}

/// Where one call's progress goes.
#[derive(Debug, Clone)]
struct Relayed {
    upstream: Arc<str>,
    host: Peer<RoleServer>,
    named: ProgressToken,
}

impl Progress {
    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, Relayed>> {
        self.calls.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A call's progress relayed to its host while this lives: dropped with the call, so nothing
/// of it reaches the host after its answer.
#[derive(Debug)]
pub struct RelayingProgress {
    progress: Arc<Progress>,
    token: ProgressToken,
}

impl RelayingProgress {
    /// The token the call carries to its upstream.
    pub fn token(&self) -> ProgressToken {
        self.token.clone()
    }
}

impl Drop for RelayingProgress {
    fn drop(&mut self) {
        self.progress.calls().remove(&self.token);
    }
}

impl Host {
    /// Relay the progress `upstream` tells of a call `host` named by `named`, under the token
    /// returned, for as long as that lives.
    pub fn relaying_progress(&self, upstream: &str, host: &Peer<RoleServer>, named: ProgressToken) -> RelayingProgress {
        let number = self.progress.next.fetch_add(1, Ordering::Relaxed);
        let token =
            ProgressToken(NumberOrString::String(format!("fernhill-gate-{}-{number}", self.progress.prefix).into()));
        let relayed = Relayed { upstream: upstream.into(), host: host.clone(), named };
        self.progress.calls().insert(token.clone(), relayed);
        RelayingProgress { progress: self.progress.clone(), token }
    }

    /// Where the progress `upstream` tells under `token` goes.
    fn progress_of(&self, upstream: &str, token: &ProgressToken) -> Option<Relayed> {
        self.progress.calls().get(token).filter(|relayed| &*relayed.upstream == upstream).cloned()
    }

    /// The host now behind the gate: the peer of the session whose request is being served.
    pub fn is(&self, peer: &Peer<RoleServer>) {
        *self.peer.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(peer.clone());
    }

    fn peer(&self) -> Option<Peer<RoleServer>> {
        self.peer.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// Tell the host whose `subscriptions/listen` stream `sink` is of list changes, for as long
    /// as the returned guard lives (the stream is open).
    pub fn listening(&self, sink: SubscriptionSink) -> Listening {
        let id = self.listeners.next.fetch_add(1, Ordering::Relaxed);
        locked(&self.listeners.streams).push((id, sink));
        Listening { listeners: self.listeners.clone(), id }
    }

    /// Tell the 2025 session `peer` of list changes on its own stream, until it closes.
    pub fn session(&self, peer: Peer<RoleServer>) {
        let mut sessions = locked(&self.listeners.sessions);
        sessions.retain(|session| !session.is_transport_closed());
        sessions.push(peer);
    }

    /// Tell the 2025 session `peer` of the updates of the resource `watching` holds, until it
    /// unsubscribes or closes, when the hold is let go (a session subscribed to it already
    /// keeps the one hold it has; ended sessions' are let go before a hold is taken,
    /// [`Host::forget_ended_sessions`]).
    pub fn subscribed(&self, peer: Peer<RoleServer>, watching: Watching) {
        let again = {
            let mut subscribed = locked(&self.listeners.subscribed);
            let uri = watching.uri();
            if subscribed.iter().any(|(session, held)| held.uri() == uri && same_session(session, &peer)) {
                Some(watching)
            } else {
                subscribed.push((peer, watching));
                None
            }
        };
        // Let go outside the lock.
        drop(again);
    }

    /// Let go the holds of the 2025 sessions that ended without unsubscribing (before a host
    /// asks for a resource: their holds could leave no room for it).
    pub fn forget_ended_sessions(&self) {
        drop(self.taken_out(|session, _| session.is_transport_closed()));
    }

    /// Tell the 2025 session `peer` no more of the resource `uri`, and let go its hold.
    pub fn unsubscribed(&self, peer: &Peer<RoleServer>, uri: &str) {
        drop(self.taken_out(|session, held| held.uri() == uri && same_session(session, peer)));
    }

    /// The 2025 sessions' subscriptions `which` picks, taken out: their holds are let go when
    /// the caller drops them, once the lock is released.
    fn taken_out(&self, which: impl Fn(&Peer<RoleServer>, &Watching) -> bool) -> Vec<(Peer<RoleServer>, Watching)> {
        let mut subscribed = locked(&self.listeners.subscribed);
        let (gone, kept) =
            std::mem::take(&mut *subscribed).into_iter().partition(|(session, held)| which(session, held));
        *subscribed = kept;
        gone
    }

    /// Tell every host that asked for them the updates of the resource `uri` `upstream` told:
    /// each 2026-07-28 stream that names it, each 2025 session subscribed to it.
    async fn updated(&self, upstream: &str, uri: &str) {
        self.forget_ended_sessions();
        let sessions: Vec<Peer<RoleServer>> = locked(&self.listeners.subscribed)
            .iter()
            .filter(|(_, held)| held.uri() == uri)
            .map(|(session, _)| session.clone())
            .collect();
        let update = ResourceUpdatedNotification::new(ResourceUpdatedNotificationParam::new(uri));
        let update = ServerNotification::ResourceUpdatedNotification(update);
        self.tell(upstream, "a resource's update", update, sessions).await;
    }

    /// Tell every listening host that an upstream's `changed` list changed.
    async fn told(&self, upstream: &str, changed: Changed) {
        let sessions: Vec<Peer<RoleServer>> = {
            let mut sessions = locked(&self.listeners.sessions);
            sessions.retain(|session| !session.is_transport_closed());
            sessions.clone()
        };
        self.tell(upstream, "a list changed", changed.notification(), sessions).await;
    }

    /// Send `notification` (`what` `upstream` told) on every 2026-07-28 host's open stream (its
    /// sink sends only what the host asked for: the kinds of list, the resources it named) and
    /// to the 2025 `sessions`.
    async fn tell(
        &self,
        upstream: &str,
        what: &str,
        notification: ServerNotification,
        sessions: Vec<Peer<RoleServer>>,
    ) {
        let streams: Vec<SubscriptionSink> = locked(&self.listeners.streams).iter().map(|(_, s)| s.clone()).collect();
        for stream in streams {
            if let Err(error) = stream.send(notification.clone()).await {
                tracing::debug!(%upstream, %error, "a listening host was not told {what}");
            }
        }
        for session in sessions {
            if let Err(error) = session.send_notification(notification.clone()).await {
                tracing::debug!(%upstream, %error, "a 2025 session was not told {what}");
            }
        }
    }
}

/// The handler of the gate's connection to one upstream.
#[derive(Debug, Clone)]
pub struct Relay {
    upstream: Arc<str>,
    host: Host,
    tools_changed: Arc<AtomicBool>,
    /// The resources the gate asked this upstream for: an update of another is not relayed
    /// (hosts watching it asked the upstream that serves it).
    watched: watch::Receiver<Holds>,
}

impl Relay {
    /// The relay of `upstream`'s connection to `host`, which relays the updates of the
    /// resources `watched` says the gate asked it for.
    pub fn new(upstream: &str, host: Host, watched: watch::Receiver<Holds>) -> Relay {
        Relay { upstream: upstream.into(), host, tools_changed: Arc::new(AtomicBool::new(false)), watched }
    }

    /// The upstream told that the resource `uri` changed: relayed if the gate asked it for them.
    async fn updated(&self, uri: &str) {
        if !self.watched.borrow().contains_key(uri) {
            tracing::debug!(upstream = %self.upstream, %uri, "an update of a resource not asked of it; not relayed");
            return;
        }
        self.host.updated(&self.upstream, uri).await;
    }

    /// Whether the upstream said its tools changed since this was last asked (and no more).
    pub fn take_tools_changed(&self) -> bool {
        self.tools_changed.swap(false, Ordering::AcqRel)
    }

    /// The upstream's list `changed`: its tools listed again when next asked, and every
    /// listening host told.
    pub async fn changed(&self, changed: Changed) {
        if let Changed::Tools = changed {
            self.tools_changed.store(true, Ordering::Release);
        }
        self.host.told(&self.upstream, changed).await;
    }

    /// What a 2026-07-28 upstream told on its `subscriptions/listen` stream.
    pub async fn heard(&self, notification: ServerNotification) {
        match notification {
            ServerNotification::ToolListChangedNotification(_) => self.changed(Changed::Tools).await,
            ServerNotification::PromptListChangedNotification(_) => self.changed(Changed::Prompts).await,
            ServerNotification::ResourceListChangedNotification(_) => self.changed(Changed::Resources).await,
            ServerNotification::ResourceUpdatedNotification(update) => self.updated(&update.params.uri).await,
            _ => tracing::debug!(upstream = %self.upstream, "a notification on its list changes' stream not relayed"),
        }
    }
}

impl ClientHandler for Relay {
    fn get_info(&self) -> ClientConfig {
        // Both modes are declared: what the host behind can show is known only per call, and
        // a question it cannot show is refused there (below), in words.
        mrtr::client::client_config("fernhill-gate", Some(mrtr::client::form_and_url()))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        // A round's question goes to the host whose call it is; a question on the upstream's
        // back-channel, which names no call, to the one host behind the gate (over stdio).
        let Some(peer) = ASKING.try_with(Peer::clone).ok().or_else(|| self.host.peer()) else {
            return Err(ErrorData::invalid_request(
                format!("upstream {} asked a question, and no host is behind the gate to show it", self.upstream),
                None,
            ));
        };
        // Only a 2025 session has a back-channel: a 2026-07-28 host is asked in rounds, which
        // an upstream asks by answering `input_required` (passed back as it came), never here.
        let session = peer.peer_info().filter(|host| host.protocol_version < ProtocolVersion::V_2026_07_28);
        let Some(session) = session else {
            return Err(ErrorData::invalid_request(
                format!(
                    "upstream {} asked a question on the back-channel, which the host behind the gate \
                     (2026-07-28) does not have",
                    self.upstream
                ),
                None,
            ));
        };
        let can_show = session.capabilities.elicitation.as_ref().is_some_and(|elicitation| match &request {
            ElicitRequestParams::UrlElicitationParams { .. } => elicitation.url.is_some(),
            _ => elicitation.form.is_some() || elicitation.url.is_none(),
        });
        if !can_show {
            return Err(ErrorData::invalid_request(
                format!("upstream {} asked a question the host behind the gate cannot show", self.upstream),
                None,
            ));
        }
        tracing::debug!(upstream = %self.upstream, "relaying the upstream's question to the host");
        peer.create_elicitation(request).await.map_err(|error| match error {
            rmcp::ServiceError::McpError(error) => error,
            other => {
                tracing::warn!(upstream = %self.upstream, error = %other, "the host did not answer a relayed question");
                ErrorData::internal_error("the host behind the gate did not answer the question", None)
            }
        })
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        let Some(to) = self.host.progress_of(&self.upstream, &params.progress_token) else {
            // A call that has ended, or progress under a token the gate never sent this upstream.
            tracing::debug!(upstream = %self.upstream, "progress of no call in flight; not relayed");
            return;
        };
        let mut relayed = params;
        relayed.progress_token = to.named;
        if let Err(error) = to.host.notify_progress(relayed).await {
            tracing::debug!(upstream = %self.upstream, %error, "the host was not told a call's progress");
        }
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed(Changed::Prompts).await;
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed(Changed::Resources).await;
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed(Changed::Tools).await;
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.updated(&params.uri).await;
    }
}
