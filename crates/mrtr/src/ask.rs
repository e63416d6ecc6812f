//! The one way a tool asks: typed questions with stable keys, answers carried across rounds.
//!
//! A tool takes the [`Asking`] the boundary builds for its call (from the retry's
//! `inputResponses`, its opened `requestState`, the client's capabilities and era), and asks
//! [`Asking::form`] for each answer it needs. Each call gives the outcome when the
//! person has answered *that* question (accepted and valid, declined, or cancelled), or `None`
//! when it must still be asked; then the tool returns [`Asking::input_required`], which holds
//! every question still open (several keys ask several questions in one round) and a state
//! that carries every outcome so far, so answers of earlier rounds are never lost. A URL
//! question ([`Asking::url`]) is asked the same way; its accept means only that the person
//! agreed to open the page, so the tool says from its own records whether the flow finished.
//!
//! - Keys are names chosen in code, so every replica recognises every question.
//! - An answer counts only for the question that was asked: the state records a digest of each
//!   question as asked, and a question whose content changed is asked again.
//! - An accepted answer that does not match the form is asked again, with the problem named.
//! - Before a question goes out, the client's capability for its mode is checked (-32021).
//!
//! The protocol era is chosen per connection ([`Era::of`]): at 2026-07-28 and later a question
//! ends the round with `input_required`; on a connection that opened with the 2025
//! `initialize` handshake there are no rounds, so the same question goes out as a server-sent
//! `elicitation/create` on the back-channel and the call waits for the answer, at most a round's
//! lifetime. The tool's code is the same for both: [`Asking::form`] and [`Asking::url`] give an
//! outcome, or `None` when the round must end with the question.
//!
//! The state is plaintext JSON here; the boundary seals it like any other.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use rmcp::{
    ErrorData,
    model::{
        ClientCapabilities, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest,
        InputRequests, InputRequiredResult, InputResponses,
    },
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::Value;
use sha2::{Digest, Sha256};

use rmcp::{
    RoleServer, ServiceError,
    model::{CustomNotification, ErrorCode, ProtocolVersion, ServerNotification},
    service::{Peer, RequestContext},
};

use crate::{
    capability::{ElicitationMode, require_elicitation},
    form::FormSchema,
    once_only::{Claim, OnceOnly, OnceOnlyError},
    request_state::FUTURE_SKEW,
    waiting::{Busy, Work},
};

/// How many times a waiting call puts a form again when the answer does not fit it.
const WAITING_ATTEMPTS: usize = 3;

/// What the boundary opened for one request, in the request's extensions: the state the
/// handler minted last round and the question it names (both `None` on a first round), and
/// the state's lifetime. Its fields are the crate's, so nothing but the boundary makes one.
#[derive(Debug, Clone)]
pub(crate) struct CallOpened {
    pub(crate) state: Option<String>,
    pub(crate) question: Option<String>,
    pub(crate) lifetime: Duration,
}

impl CallOpened {
    /// A state opened from `token`: the question it names is a digest of the token, so every
    /// replay of the same answer names the same question.
    pub(crate) fn from_token(token: &str, state: String, lifetime: Duration) -> Self {
        let digest = Sha256::digest(token.as_bytes());
        Self { state: Some(state), question: Some(URL_SAFE_NO_PAD.encode(&digest[..18])), lifetime }
    }
}

/// A question ID for a question that no sealed state names: one put to the person on the
/// back-channel while the call waits (a 2025 connection). Random, so it meets no other claim.
fn fresh_question_id() -> String {
    URL_SAFE_NO_PAD.encode(rand::random::<[u8; 18]>())
}

/// How questions reach the person on one connection.
#[derive(Clone)]
pub enum Era {
    /// MCP 2026-07-28 and later: the round ends with `input_required`, and the retry answers.
    Rounds,
    /// Older revisions: a server-sent `elicitation/create`, answered while the call waits, for
    /// at most `wait`; the call's `work` slot is given back while it waits.
    BackChannel {
        /// The connection's peer: it sends `elicitation/create` and receives the answer.
        peer: Peer<RoleServer>,
        /// How long the call waits for each answer (then [`AskError::Unanswered`]), and for a
        /// URL flow to finish once the person agreed to open the page.
        wait: Duration,
        /// The call's hold on the server's slots for work, given back while it waits; `None`
        /// when the request carries none (the boundary gives one to each `tools/call`).
        work: Option<Arc<Work>>,
    },
}

impl Era {
    /// The era of the connection `context` came on: rounds unless it negotiated a revision
    /// before 2026-07-28 (the 2025 `initialize` handshake).
    pub fn of(context: &RequestContext<RoleServer>, wait: Duration) -> Self {
        match context.protocol_version() {
            Some(version) if version < ProtocolVersion::V_2026_07_28 => Self::back_channel(context, wait),
            _ => Era::Rounds,
        }
    }

    /// Ask on the back-channel whatever the connection: the pre-2026 way, which at 2026-07-28
    /// fails with -32600 before anything is sent: what a server written for 2025 meets today.
    pub fn back_channel(context: &RequestContext<RoleServer>, wait: Duration) -> Self {
        Era::BackChannel { peer: context.peer.clone(), wait, work: Work::of(context) }
    }

    /// Run `waiting`, a wait for the person, as this era waits: in the back-channel era without
    /// the call's slot for work ([`Work::wait_for_person`]); [`AskError::Busy`] when too many
    /// already wait. In the rounds era nothing waits, and `waiting` just runs.
    pub async fn wait_for_person<F: std::future::Future>(&self, waiting: F) -> Result<F::Output, AskError> {
        match self {
            Era::BackChannel { work: Some(work), .. } => Ok(work.wait_for_person(waiting).await?),
            _ => Ok(waiting.await),
        }
    }
}

impl std::fmt::Debug for Era {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Era::Rounds => f.write_str("Rounds"),
            Era::BackChannel { wait, .. } => f.debug_struct("BackChannel").field("wait", wait).finish_non_exhaustive(),
        }
    }
}

/// Why a question got no outcome.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// A protocol error for the client: it cannot show the question (-32021), or the
    /// connection has no back-channel (-32600).
    #[error("{}", .0.message)]
    Protocol(ErrorData),
    /// A waiting call: nobody answered within the round's lifetime.
    #[error("nobody answered within {} seconds", .0.as_secs())]
    Unanswered(Duration),
    /// A waiting call: the client went away (or cancelled the call) before answering.
    #[error("the client went away before answering")]
    Gone,
    /// Too many calls already wait for their people: nothing was asked.
    #[error(transparent)]
    Busy(#[from] Busy),
}

impl From<ErrorData> for AskError {
    fn from(error: ErrorData) -> Self {
        AskError::Protocol(error)
    }
}

/// What became of one question.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    /// The person answered, and the answer fits the form.
    Accepted(T),
    /// An explicit no: it stands.
    Declined,
    /// The person dismissed the question: it is still open.
    Cancelled,
}

/// A question that sends the person to a page: a sign-in, a payment, anything the MCP client
/// must not see.
#[derive(Debug, Clone)]
pub struct UrlQuestion<'a> {
    /// The question's stable key.
    pub key: &'a str,
    /// The page. It should carry no personal data and sign nobody in by itself.
    pub url: String,
    /// What the person reads before they open it.
    pub message: &'a str,
    /// The flow's own ID: a 2025 client gets it as `elicitationId`; in the rounds era it is
    /// the tool's to keep in its own state.
    pub flow_id: &'a str,
    /// How often a waiting call (the back-channel era) asks whether the flow finished.
    pub poll: Duration,
    /// Whether the question may go out again this round. A tool that has asked as many
    /// rounds as it allows says no: a flow still unfinished is then [`UrlOutcome::Unfinished`],
    /// and nothing is asked (not even whether the client can open URLs).
    pub ask_again: bool,
}

impl<'a> UrlQuestion<'a> {
    /// The question `key`: open `url`, after reading `message`; `flow_id` names the flow.
    pub fn new(key: &'a str, url: String, message: &'a str, flow_id: &'a str) -> Self {
        Self { key, url, message, flow_id, poll: Duration::from_millis(500), ask_again: true }
    }

    /// Ask again only if `ask_again` (see [`UrlQuestion::ask_again`]).
    pub fn asking_again(mut self, ask_again: bool) -> Self {
        self.ask_again = ask_again;
        self
    }
}

/// What became of a URL question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlOutcome {
    /// The tool's records say the flow finished.
    Finished,
    /// The person would not open the page.
    Declined,
    /// The person dismissed the question.
    Cancelled,
    /// The flow has not finished and the question is not asked again: a waiting call's person
    /// agreed, but the flow did not finish within a round's lifetime; or, in rounds, the tool
    /// said not to ask again ([`UrlQuestion::ask_again`]).
    Unfinished,
}

/// What the state carries from round to round.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Carried {
    /// The format of this envelope.
    ask: u8,
    /// Each question's key, and a digest of the question as it was asked.
    asked: BTreeMap<String, String>,
    /// Each answered question's key, and the answer.
    answered: BTreeMap<String, Value>,
    /// The tool's own state, if it keeps any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    own: Option<String>,
}

const ENVELOPE: u8 = 1;

/// How the state carries a call from round to round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Carrying {
    /// This layer's envelope: the questions asked, the answers so far, the tool's own state.
    Envelope,
    /// The tool's own string alone, as a tool written by hand for the Python SDK sends it.
    Bare,
}

/// One tool call's questions and answers, across its rounds.
///
/// # Examples
///
/// Behind the boundary a tool takes its `Asking` as an argument: the boundary builds it from the
/// opened state, the retry's answers, the client's capabilities and its era (see the example
/// on [`Asking`]'s extractor, in [`crate::boundary`]). Built here by hand with [`Asking::new`],
/// as a test does: a first round asks a form question; the retry reads the answer. The state
/// passes from round to round as plaintext; the boundary seals and opens it in between.
///
/// ```
/// use mrtr::ask::{Asking, Outcome};
/// use mrtr::form::FormSchema;
/// use rmcp::model::{ClientCapabilities, InputResponses};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use serde_json::json;
///
/// #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
/// struct Confirm {
///     /// Deploy it now?
///     confirm: bool,
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let form = FormSchema::<Confirm>::of()?;
/// // A client that declared `elicitation: {}`: it can show forms.
/// let caps: ClientCapabilities = serde_json::from_value(json!({"elicitation": {}}))?;
///
/// // The first round has no state and no answers: the question must be asked.
/// let mut first = Asking::new(None, None, Some(caps.clone()));
/// assert_eq!(first.form("confirm", &form, "Deploy build 412?").await?, None);
/// let asked = first.input_required();
/// let questions = asked.input_requests.as_ref().expect("one question");
/// assert!(questions.contains_key("confirm"));
///
/// // The client asks the person and retries with the answer, under the question's key, and
/// // the state it was given.
/// let responses: InputResponses =
///     serde_json::from_value(json!({"confirm": {"action": "accept", "content": {"confirm": true}}}))?;
/// let mut second = Asking::new(asked.request_state, Some(responses), Some(caps));
/// assert_eq!(
///     second.form("confirm", &form, "Deploy build 412?").await?,
///     Some(Outcome::Accepted(Confirm { confirm: true })),
/// );
/// assert!(!second.has_questions());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct Asking {
    /// The state as it came back (for [`Asking::expecting`]).
    state: Option<String>,
    responses: InputResponses,
    carried: Carried,
    next: Carried,
    pending: InputRequests,
    capabilities: Option<ClientCapabilities>,
    carrying: Carrying,
    era: Era,
    /// The question this retry answers, or a fresh one for a question not yet sealed.
    question: String,
    /// How long a claim on this call's answer is kept: as long as its state can still open.
    claim_life: Duration,
}

impl Asking {
    /// From a retry's opened state and answers, and the client's declared capabilities, asking
    /// in rounds and claiming for [`DEFAULT_TTL`](crate::request_state::DEFAULT_TTL) plus the
    /// skew: for tests and handlers outside the boundary. Behind [`Sealed`](crate::Sealed), a
    /// tool takes the `Asking` the boundary builds, in the right era and with the state's real
    /// lifetime.
    pub fn new(
        state: Option<String>,
        responses: Option<InputResponses>,
        capabilities: Option<ClientCapabilities>,
    ) -> Self {
        let claim_life = crate::request_state::DEFAULT_TTL + FUTURE_SKEW;
        Self::from_parts(state, responses, capabilities, fresh_question_id(), claim_life)
    }

    fn from_parts(
        state: Option<String>,
        responses: Option<InputResponses>,
        capabilities: Option<ClientCapabilities>,
        question: String,
        claim_life: Duration,
    ) -> Self {
        // A state this layer did not write (or none) carries nothing: every question is new.
        let carried = state
            .as_deref()
            .and_then(|s| serde_json::from_str::<Carried>(s).ok())
            .filter(|c| c.ask == ENVELOPE)
            .unwrap_or_default();
        let next = Carried { ask: ENVELOPE, own: carried.own.clone(), ..Carried::default() };
        Self {
            state,
            responses: responses.unwrap_or_default(),
            carried,
            next,
            pending: InputRequests::new(),
            capabilities,
            carrying: Carrying::Envelope,
            era: Era::Rounds,
            question,
            claim_life,
        }
    }

    /// The `Asking` the boundary builds for a tool call ([`crate::boundary`]'s extractor).
    pub(crate) fn for_call(
        opened: CallOpened,
        responses: Option<InputResponses>,
        context: &RequestContext<RoleServer>,
    ) -> Self {
        let question = opened.question.unwrap_or_else(fresh_question_id);
        let claim_life = opened.lifetime + FUTURE_SKEW;
        let capabilities = context.client_capabilities();
        let mut asking = Self::from_parts(opened.state, responses, capabilities, question, claim_life);
        asking.era = Era::of(context, opened.lifetime);
        asking
    }

    /// The `Asking` the boundary opened for a `tools/call` that its handler answers by hand
    /// rather than through rmcp's tool router (a gate, which passes most calls on and asks of
    /// a few): from the request's `context` and the retry's `responses`. `None` for a request
    /// that did not come through [`Sealed`](crate::Sealed).
    pub fn of_call(context: &RequestContext<RoleServer>, responses: Option<InputResponses>) -> Option<Self> {
        let opened = context.extensions.get::<CallOpened>()?.clone();
        Some(Self::for_call(opened, responses, context))
    }

    /// The same call, whose state is the tool's own string `expected` alone, with no envelope:
    /// for a tool whose state must read as another SDK's tool writes it by hand. Answers count
    /// only when the state that came back is `expected`: an answer with no state, or with
    /// another record's, is an answer to a question never asked, and the question is asked
    /// again.
    pub fn expecting(self, expected: &str) -> Self {
        let responses = if self.state.as_deref() == Some(expected) {
            self.responses
        } else {
            if !self.responses.is_empty() {
                tracing::info!("discarding answers: they came without this call's state, so nothing asked them");
            }
            InputResponses::new()
        };
        let next = Carried { ask: ENVELOPE, own: Some(expected.to_owned()), ..Carried::default() };
        Self {
            responses,
            carried: Carried::default(),
            next,
            pending: InputRequests::new(),
            carrying: Carrying::Bare,
            ..self
        }
    }

    /// The state the tool minted last round, as the boundary opened it (`None` on a first
    /// round): the envelope this layer writes, or a tool's own string (see
    /// [`Asking::expecting`]).
    pub fn opened_state(&self) -> Option<&str> {
        self.state.as_deref()
    }

    /// The question this retry answers: a digest of the sealed state it came back with, so
    /// every replay of the same answer names the same question and another question, even
    /// about the same record, names another. For a question not yet sealed (one asked on a
    /// 2025 back-channel while the call waits), a random ID that meets no other claim.
    pub fn question_id(&self) -> &str {
        &self.question
    }

    /// Claim `key` in `record` before acting on this call's answer, for as long as a state
    /// naming the question can still open (its lifetime plus
    /// [`FUTURE_SKEW`]): of two identical retries, one gets [`Claim::First`] and acts. Key it
    /// by [`Asking::question_id`] (and what the answer acts on).
    pub async fn claim_once<R: OnceOnly + ?Sized>(&self, record: &R, key: &str) -> Result<Claim, OnceOnlyError> {
        record.claim(key, self.claim_life).await
    }

    /// How long a claim of this call's answer is kept ([`Asking::claim_once`]): the state's
    /// lifetime plus the allowed skew.
    pub fn claim_life(&self) -> Duration {
        self.claim_life
    }

    /// Ask in `era` ([`Era::Rounds`] unless told).
    pub fn in_era(mut self, era: Era) -> Self {
        self.era = era;
        self
    }

    /// Whether the retry brought an answer to the question `key` that was asked (readable or not).
    pub fn has_answer(&self, key: &str) -> bool {
        self.was_asked(key) && (self.responses.contains_key(key) || self.carried.answered.contains_key(key))
    }

    /// Whether the question `key` went out last round (a bare state cannot tell, so it trusts
    /// the state's match).
    fn was_asked(&self, key: &str) -> bool {
        match self.carrying {
            Carrying::Envelope => self.carried.asked.contains_key(key),
            Carrying::Bare => true,
        }
    }

    /// -32021 unless the client declared `mode`: for a tool that must know before a side effect
    /// that only makes sense if the question can then be asked.
    pub fn require(&self, mode: ElicitationMode) -> Result<(), ErrorData> {
        require_elicitation(self.capabilities.as_ref(), mode)
    }

    /// The tool's own state, carried from the last round.
    pub fn own_state(&self) -> Option<&str> {
        self.next.own.as_deref()
    }

    /// Keep `state` for the next round.
    pub fn set_own_state(&mut self, state: impl Into<String>) {
        self.next.own = Some(state.into());
    }

    /// The outcome of the form question `key`, or `None` if it must (still) be asked; then it
    /// joins this round's questions. -32021 if the client cannot show a form. In the
    /// back-channel era the question is sent now and the outcome awaited: never `None`.
    pub async fn form<T: JsonSchema + DeserializeOwned>(
        &mut self,
        key: &str,
        form: &FormSchema<T>,
        message: &str,
    ) -> Result<Option<Outcome<T>>, AskError> {
        if let Era::BackChannel { peer, wait, .. } = &self.era {
            let (peer, wait) = (peer.clone(), *wait);
            let era = self.era.clone();
            return era.wait_for_person(self.form_waiting(&peer, wait, form, message)).await?.map(Some);
        }
        Ok(self.form_in_rounds(key, form, message)?)
    }

    /// The outcome of the form question `key` if the retry brought an answer that counts and
    /// fits the form, without asking anything: for a tool that can finish from its state alone
    /// and would otherwise need more to word the question. Rounds only.
    pub fn answered<T: JsonSchema + DeserializeOwned>(&self, key: &str, form: &FormSchema<T>) -> Option<Outcome<T>> {
        if !matches!(self.era, Era::Rounds) || !self.was_asked(key) {
            return None;
        }
        let answer = self.carried.answered.get(key).or_else(|| self.responses.get(key))?;
        let answer: ElicitResult = serde_json::from_value(answer.clone()).ok()?;
        read_form_answer(&answer, form).ok()
    }

    /// Put the form to the person over the back-channel and wait for a fitting answer.
    async fn form_waiting<T: JsonSchema + DeserializeOwned>(
        &self,
        peer: &Peer<RoleServer>,
        wait: Duration,
        form: &FormSchema<T>,
        message: &str,
    ) -> Result<Outcome<T>, AskError> {
        self.require(ElicitationMode::Form)?;
        let mut shown = message.to_owned();
        let mut problem = String::new();
        for _ in 0..WAITING_ATTEMPTS {
            let answer = elicit_waiting(peer, form_params(form, shown), wait).await?;
            match read_form_answer(&answer, form) {
                Ok(outcome) => return Ok(outcome),
                Err(why) => problem = why,
            }
            // Ask again, naming what was wrong, as the rounds do.
            shown = format!("That answer didn't fit: {problem}. {message}");
        }
        tracing::info!(%problem, "no fitting answer after {WAITING_ATTEMPTS} attempts; treating it as dismissed");
        Ok(Outcome::Cancelled)
    }

    fn form_in_rounds<T: JsonSchema + DeserializeOwned>(
        &mut self,
        key: &str,
        form: &FormSchema<T>,
        message: &str,
    ) -> Result<Option<Outcome<T>>, ErrorData> {
        let digest = digest_of(&form_params(form, message.to_owned()));
        let asked_this = match self.carrying {
            Carrying::Envelope => self.carried.asked.get(key) == Some(&digest),
            Carrying::Bare => true,
        };
        let answer = match (self.carried.answered.get(key), self.responses.get(key)) {
            (Some(earlier), _) if asked_this => Some(earlier.clone()),
            (_, Some(now)) if asked_this => Some(now.clone()),
            (_, Some(_)) => {
                tracing::info!(
                    key,
                    "discarding an answer: the question changed since it was asked, or was never asked"
                );
                None
            }
            _ => None,
        };
        let mut problem = None;
        if let Some(answer) = answer {
            match serde_json::from_value::<ElicitResult>(answer.clone()) {
                Ok(result) => match read_form_answer(&result, form) {
                    Ok(outcome) => {
                        self.next.asked.insert(key.to_owned(), digest);
                        self.next.answered.insert(key.to_owned(), answer);
                        return Ok(Some(outcome));
                    }
                    Err(why) => problem = Some(why),
                },
                Err(_) => problem = Some("the answer could not be read".to_owned()),
            }
        }
        require_elicitation(self.capabilities.as_ref(), ElicitationMode::Form)?;
        let shown = match &problem {
            // Ask again, naming what was wrong; the question's identity stays the same.
            Some(problem) => format!("That answer didn't fit: {problem}. {message}"),
            None => message.to_owned(),
        };
        let question = form_params(form, shown);
        self.pending.insert(key.to_owned(), InputRequest::Elicitation(ElicitRequest::new(question)));
        self.next.asked.insert(key.to_owned(), digest);
        Ok(None)
    }

    /// The outcome of the URL question `question`, or `None` when it must (still) be asked:
    /// then it joins this round's questions. -32021 unless the client can open URLs.
    ///
    /// A page's answer is the person's consent to open it, not the end of what they do there,
    /// so the tool says whether the flow finished: `finished` reads the tool's own records (a
    /// provider's, say). In the rounds era it is read once: finished, or the last round's
    /// decline or cancel, is the outcome; otherwise the question goes out (again). In the
    /// back-channel era the question is sent now and, once accepted, `finished` is polled every
    /// [`UrlQuestion::poll`] for at most a round's lifetime, the call's slot for work given back
    /// meanwhile; a finished flow is announced with `notifications/elicitation/complete`, and a
    /// flow still open at the end is [`UrlOutcome::Unfinished`]. Never `None` there.
    pub async fn url<E, F, Fut>(&mut self, question: UrlQuestion<'_>, mut finished: F) -> Result<Option<UrlOutcome>, E>
    where
        E: From<AskError>,
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<bool, E>>,
    {
        let Era::BackChannel { peer, wait, .. } = &self.era else {
            if finished().await? {
                return Ok(Some(UrlOutcome::Finished));
            }
            match self.url_answered(question.key) {
                Some(Outcome::Declined) => return Ok(Some(UrlOutcome::Declined)),
                Some(Outcome::Cancelled) => return Ok(Some(UrlOutcome::Cancelled)),
                _ if !question.ask_again => return Ok(Some(UrlOutcome::Unfinished)),
                _ => {}
            }
            self.ask_url(question.key, question.url, question.message).map_err(AskError::from)?;
            return Ok(None);
        };
        self.require(ElicitationMode::Url).map_err(AskError::from)?;
        let (peer, wait) = (peer.clone(), *wait);
        let era = self.era.clone();
        let flow_id = question.flow_id.to_owned();
        let outcome = era
            .wait_for_person(async {
                let asked = url_params(question.url, question.message, flow_id.clone());
                let answer = elicit_waiting(&peer, asked, wait).await?;
                match answer.action {
                    ElicitationAction::Accept => {}
                    ElicitationAction::Decline => return Ok(UrlOutcome::Declined),
                    _ => return Ok(UrlOutcome::Cancelled),
                }
                let until = tokio::time::Instant::now() + wait;
                loop {
                    if finished().await? {
                        announce_finished(&peer, &flow_id).await;
                        return Ok(UrlOutcome::Finished);
                    }
                    if tokio::time::Instant::now() + question.poll > until {
                        return Ok(UrlOutcome::Unfinished);
                    }
                    tokio::time::sleep(question.poll).await;
                }
            })
            .await
            .map_err(E::from)?;
        outcome.map(Some)
    }

    /// The person's answer to the URL question `key` of the last round, if it was asked and
    /// answered (an accept says only that they agreed to open the page).
    pub fn url_answered(&self, key: &str) -> Option<Outcome<()>> {
        if !self.was_asked(key) {
            return None;
        }
        read_url(self.responses.get(key)?)
    }

    /// Ask the URL question `key` this round: send the person to `url` with `message`.
    /// -32021 unless the client can open URLs.
    fn ask_url(&mut self, key: &str, url: String, message: &str) -> Result<(), ErrorData> {
        self.require(ElicitationMode::Url)?;
        // The flow's own ID rides in the state instead of `elicitationId`.
        let question = url_params(url, message, String::new());
        self.next.asked.insert(key.to_owned(), digest_of(&question));
        self.pending.insert(key.to_owned(), InputRequest::Elicitation(ElicitRequest::new(question)));
        Ok(())
    }

    /// Whether any question is still to be asked this round.
    pub fn has_questions(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The `input_required` result: this round's questions and the state that carries the
    /// answers so far.
    pub fn input_required(self) -> InputRequiredResult {
        let state = match self.carrying {
            // A map of strings and JSON values always serializes.
            Carrying::Envelope => serde_json::to_string(&self.next).unwrap_or_default(),
            Carrying::Bare => self.next.own.unwrap_or_default(),
        };
        let requests = (!self.pending.is_empty()).then_some(self.pending);
        InputRequiredResult::new(requests, Some(state))
    }
}

/// The form question `message` as a whole request (`elicitation/create`), for a question that
/// is asked elsewhere than in a round: a task's, answered through `tasks/update`.
pub fn form_question<T: JsonSchema + DeserializeOwned>(form: &FormSchema<T>, message: &str) -> InputRequest {
    InputRequest::Elicitation(ElicitRequest::new(form_params(form, message.to_owned())))
}

/// The form question `message`, as every era and every asker sends it.
fn form_params<T: JsonSchema + DeserializeOwned>(form: &FormSchema<T>, message: String) -> ElicitRequestParams {
    ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: form.requested_schema() }
}

/// The URL question `message`, sending the person to `url`. rmcp 3.11 still has the
/// 2025-11-25 `elicitationId` (a 2025 client gets the flow's ID there); 2026-07-28 removed it,
/// and an empty one is not sent.
fn url_params(url: String, message: &str, elicitation_id: String) -> ElicitRequestParams {
    ElicitRequestParams::UrlElicitationParams { meta: None, message: message.to_owned(), url, elicitation_id }
}

/// The URL question `message`, sending the person to `url`, as a whole request
/// (`elicitation/create`, URL mode), for a question asked elsewhere than in a round: a task's.
/// Its answer says only whether the person agreed to open the page; the tool's own records say
/// whether what the page is for was done.
pub fn url_question(url: String, message: &str) -> InputRequest {
    InputRequest::Elicitation(ElicitRequest::new(url_params(url, message, String::new())))
}

/// What `answer` (an `ElicitResult` as JSON, from a round or a task) says to a URL question:
/// accepted (the person agreed to open the page, no more), declined or cancelled; `None` when
/// it does not read.
pub fn read_url(answer: &Value) -> Option<Outcome<()>> {
    let answer: ElicitResult = serde_json::from_value(answer.clone()).ok()?;
    match answer.action {
        ElicitationAction::Accept => Some(Outcome::Accepted(())),
        ElicitationAction::Decline => Some(Outcome::Declined),
        ElicitationAction::Cancel => Some(Outcome::Cancelled),
        _ => None,
    }
}

/// What `answer` (an `ElicitResult` as JSON, from a round or a task) says to the form: the
/// outcome, or why it does not count (it does not read, or an accept does not fit).
pub fn read_form<T: JsonSchema + DeserializeOwned>(answer: &Value, form: &FormSchema<T>) -> Result<Outcome<T>, String> {
    let answer: ElicitResult =
        serde_json::from_value(answer.clone()).map_err(|_| "the answer could not be read".to_owned())?;
    read_form_answer(&answer, form)
}

/// What an answer to a form says, in either era: the outcome, or why it does not count.
fn read_form_answer<T: JsonSchema + DeserializeOwned>(
    answer: &ElicitResult,
    form: &FormSchema<T>,
) -> Result<Outcome<T>, String> {
    match answer.action {
        ElicitationAction::Accept => form.accept(answer.content.as_ref()).map(Outcome::Accepted),
        ElicitationAction::Decline => Ok(Outcome::Declined),
        ElicitationAction::Cancel => Ok(Outcome::Cancelled),
        _ => Err("the answer's action is not accept, decline or cancel".to_owned()),
    }
}

/// Tell a 2025 client that the URL flow `elicitation_id` finished (2025-11-25's
/// `notifications/elicitation/complete`; 2026-07-28 removed it, and the retry says it instead).
async fn announce_finished(peer: &Peer<RoleServer>, elicitation_id: &str) {
    // rmcp 3.11 has no typed notification for it: a custom one carries the same JSON.
    let params = serde_json::json!({ "elicitationId": elicitation_id });
    let notification = CustomNotification::new("notifications/elicitation/complete", Some(params));
    if let Err(error) = peer.send_notification(ServerNotification::CustomNotification(notification)).await {
        tracing::info!(%error, "could not tell the client that the URL flow finished");
    }
}

/// Send `question` to the client on the back-channel and wait at most `wait` for the answer.
async fn elicit_waiting(
    peer: &Peer<RoleServer>,
    question: ElicitRequestParams,
    wait: Duration,
) -> Result<ElicitResult, AskError> {
    match peer.create_elicitation_with_timeout(question, Some(wait)).await {
        Ok(answer) => Ok(answer),
        // rmcp refuses a server-sent request on a 2026-07-28 connection before sending it.
        Err(ServiceError::McpError(error)) if error.code == ErrorCode::INVALID_REQUEST => {
            Err(AskError::Protocol(no_back_channel("elicitation/create")))
        }
        Err(ServiceError::McpError(error)) => Err(AskError::Protocol(error)),
        Err(ServiceError::Timeout { timeout }) => Err(AskError::Unanswered(timeout)),
        Err(other) => {
            tracing::info!(error = %other, "the question on the back-channel got no answer");
            Err(AskError::Gone)
        }
    }
}

/// -32600 for a server-to-client request that this transport context cannot carry: at
/// 2026-07-28 there is no channel from server to client in the middle of a call, and rmcp
/// refuses the request before anything is sent. Worded as the Python SDK's `NoBackChannelError`,
/// so a host sees the same -32600 from either SDK.
pub fn no_back_channel(method: &str) -> ErrorData {
    ErrorData::invalid_request(
        format!("Cannot send '{method}': this transport context has no back-channel for server-initiated requests."),
        None,
    )
}

/// A digest of a question as sent: key-independent, so the same question reads the same.
fn digest_of(question: &ElicitRequestParams) -> String {
    let json = serde_json::to_vec(question).unwrap_or_default();
    URL_SAFE_NO_PAD.encode(&Sha256::digest(&json)[..12])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
    struct Pick {
        /// How many
        #[schemars(range(min = 1, max = 5))]
        count: u8,
    }

    fn caps() -> Option<ClientCapabilities> {
        serde_json::from_value(json!({"elicitation": {}})).ok()
    }

    fn round(state: Option<String>, answers: Value) -> Asking {
        let responses: InputResponses = serde_json::from_value(answers).unwrap();
        Asking::new(state, Some(responses), caps())
    }

    #[test]
    fn asks_then_reads_the_answer_and_carries_it_forward() {
        let form = FormSchema::<Pick>::of().unwrap();
        let mut first = Asking::new(None, None, caps());
        assert_eq!(first.form_in_rounds("pick", &form, "How many?").unwrap(), None);
        assert_eq!(first.form_in_rounds("second", &form, "And now?").unwrap(), None);
        let asked = first.input_required();
        assert_eq!(asked.input_requests.as_ref().unwrap().len(), 2);

        let mut second = round(asked.request_state, json!({"pick": {"action": "accept", "content": {"count": 3}}}));
        assert_eq!(
            second.form_in_rounds("pick", &form, "How many?").unwrap(),
            Some(Outcome::Accepted(Pick { count: 3 }))
        );
        assert_eq!(second.form_in_rounds("second", &form, "And now?").unwrap(), None);
        let asked = second.input_required();
        assert_eq!(asked.input_requests.as_ref().unwrap().keys().collect::<Vec<_>>(), ["second"]);

        // The third round brings only the second answer; the first rides in the state.
        let mut third = round(asked.request_state, json!({"second": {"action": "decline"}}));
        assert_eq!(
            third.form_in_rounds("pick", &form, "How many?").unwrap(),
            Some(Outcome::Accepted(Pick { count: 3 }))
        );
        assert_eq!(third.form_in_rounds("second", &form, "And now?").unwrap(), Some(Outcome::Declined));
        assert!(!third.has_questions());
    }

    #[test]
    fn an_answer_to_another_question_is_no_answer() {
        let form = FormSchema::<Pick>::of().unwrap();
        let mut first = Asking::new(None, None, caps());
        first.form_in_rounds("pick", &form, "How many?").unwrap();
        let state = first.input_required().request_state;
        let mut changed = round(state, json!({"pick": {"action": "accept", "content": {"count": 3}}}));
        assert_eq!(changed.form_in_rounds("pick", &form, "How many now?").unwrap(), None);
        // Without any state the answer was never asked for.
        let mut stateless = round(None, json!({"pick": {"action": "accept", "content": {"count": 3}}}));
        assert_eq!(stateless.form_in_rounds("pick", &form, "How many?").unwrap(), None);
    }

    #[test]
    fn an_answer_that_does_not_fit_is_asked_again_with_the_problem() {
        let form = FormSchema::<Pick>::of().unwrap();
        let mut first = Asking::new(None, None, caps());
        first.form_in_rounds("pick", &form, "How many?").unwrap();
        let state = first.input_required().request_state;
        let mut second = round(state, json!({"pick": {"action": "accept", "content": {"count": 9}}}));
        assert_eq!(second.form_in_rounds("pick", &form, "How many?").unwrap(), None);
        let again = second.input_required();
        let request = serde_json::to_value(&again.input_requests.unwrap()["pick"]).unwrap();
        assert_eq!(request["params"]["message"], "That answer didn't fit: count must be at most 5. How many?");
        // The re-asked question is still the same question: a fitting answer now counts.
        let mut third = round(again.request_state, json!({"pick": {"action": "accept", "content": {"count": 2}}}));
        assert_eq!(
            third.form_in_rounds("pick", &form, "How many?").unwrap(),
            Some(Outcome::Accepted(Pick { count: 2 }))
        );
    }

    #[test]
    fn a_bare_state_counts_answers_only_when_it_names_the_record() {
        let form = FormSchema::<Pick>::of().unwrap();
        let mut first = Asking::new(None, None, caps()).expecting("R-0111");
        assert_eq!(first.form_in_rounds("pick", &form, "How many?").unwrap(), None);
        let asked = first.input_required();
        assert_eq!(asked.request_state.as_deref(), Some("R-0111"));
        let answer = json!({"pick": {"action": "accept", "content": {"count": 3}}});
        let responses: InputResponses = serde_json::from_value(answer).unwrap();
        let mut right = Asking::new(Some("R-0111".into()), Some(responses.clone()), caps()).expecting("R-0111");
        assert!(right.has_answer("pick"));
        assert_eq!(
            right.form_in_rounds("pick", &form, "How many?").unwrap(),
            Some(Outcome::Accepted(Pick { count: 3 }))
        );
        let mut other = Asking::new(Some("R-0112".into()), Some(responses.clone()), caps()).expecting("R-0111");
        assert!(!other.has_answer("pick"));
        assert_eq!(other.form_in_rounds("pick", &form, "How many?").unwrap(), None);
        let mut stateless = Asking::new(None, Some(responses), caps()).expecting("R-0111");
        assert_eq!(stateless.form_in_rounds("pick", &form, "How many?").unwrap(), None);
    }

    #[test]
    fn a_url_question_is_asked_and_its_answer_read_next_round() {
        let both = serde_json::from_value(json!({"elicitation": {"form": {}, "url": {}}})).ok();
        let mut first = Asking::new(None, None, both.clone());
        assert_eq!(first.url_answered("connect"), None);
        first.set_own_state("flow-1");
        first.ask_url("connect", "https://pay.example/connect/flow-1".into(), "Connect").unwrap();
        let asked = first.input_required();
        let responses: InputResponses = serde_json::from_value(json!({"connect": {"action": "accept"}})).unwrap();
        let second = Asking::new(asked.request_state, Some(responses.clone()), both);
        assert_eq!(second.own_state(), Some("flow-1"));
        assert_eq!(second.url_answered("connect"), Some(Outcome::Accepted(())));
        // Never asked: no answer counts.
        assert_eq!(Asking::new(None, Some(responses), caps()).url_answered("connect"), None);
        // A client that declared forms only cannot be sent to a page.
        assert_eq!(Asking::new(None, None, caps()).ask_url("connect", "u".into(), "m").unwrap_err().code.0, -32021);
    }

    #[test]
    fn a_client_without_forms_gets_32021() {
        let form = FormSchema::<Pick>::of().unwrap();
        let url_only = serde_json::from_value(json!({"elicitation": {"url": {}}})).ok();
        let mut asking = Asking::new(None, None, url_only);
        assert_eq!(asking.form_in_rounds("pick", &form, "How many?").unwrap_err().code.0, -32021);
    }
}
