//! A person signs in on an approval page with the server's issuer: OpenID Connect's
//! authorization code flow with PKCE, as a confidential client, through the `openidconnect`
//! crate (discovery, the code exchange, the ID token's signature, issuer, audience, expiry and
//! nonce). The page itself (what it shows, its routes and words) is the server's; this is how
//! it knows who is there, for any server to mount.
//!
//! What the flow keeps between its two requests is the browser's, and nothing is stored for a
//! visitor until the issuer sends them back signed in:
//!
//! - a sign-in started: its `state` (256 random bits), the PKCE verifier, the nonce, the page
//!   to return to and when it lapses, sealed (AES-256-GCM, the request state's keys derived for
//!   this purpose: [`mrtr::seal::KeyRing::for_purpose`]) into a cookie of the browser that
//!   started it. A callback is taken only with that cookie, whose `state` must be the one the
//!   issuer sends back, and only once (the `state` is claimed in the server's store then, when
//!   a real sign-in came back, never before). Any replica with the same keys opens it;
//! - a session: a record in the server's store (memory, or the Redis a fleet shares) under a
//!   digest of its cookie's value, the person's principal (issuer and subject), when they signed
//!   in (`auth_time`), whether their token entitles them to decide (the scope the page asks
//!   for), and the form token the page's forms carry.
//!
//! Who the person is, and whether they may decide, is read from the access token the sign-in
//! got for the MCP endpoint, checked by the same gate as every request's bearer token (issuer,
//! audience, signature, its `scope`), so the page and `/mcp` name a person alike; the ID token
//! must name the same subject, and say when they signed in, no longer ago than a session.

use std::{future::Future, pin::Pin, sync::Arc, time::Duration};

use base64::Engine as _;
use clock::Clock;
use mrtr::seal::KeyRing;
use oauth_resource::gate::ResourceServer;
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, HttpRequest, HttpResponse, IssuerUrl, Nonce,
    OAuth2TokenResponse as _, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope, TokenResponse as _,
    core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata, CoreSubjectIdentifierType},
};
use records::Records;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use tokio::sync::RwLock;

/// Clocks differ: an `auth_time` this much older than a session is still taken.
const AUTH_TIME_SKEW: Duration = Duration::from_secs(60);
/// How long a sign-in may take, from the page to the issuer and back.
pub const SIGN_IN_LIFE: Duration = Duration::from_secs(10 * 60);
/// How long a session lasts: a lead signs in again after it.
pub const SESSION_LIFE: Duration = Duration::from_secs(15 * 60);

/// Why a sign-in could not start or finish: said to the person in words (`Display`); the
/// details it carries go to the log (`Debug`).
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// The issuer could not be reached, or its discovery read.
    #[error("the sign-in service could not be reached")]
    Issuer(String),
    /// A callback without its browser's sign-in, or one used already, or too late.
    #[error("this sign-in is unknown, was used already, or was started in another browser")]
    Unknown,
    /// The code exchange, the ID token or the access token did not check.
    #[error("the sign-in service's answer could not be verified")]
    Unverified(String),
    /// The server's store did not answer.
    #[error("the server's store did not answer")]
    Store(String),
    /// The issuer may give each client its own subject for one person, and nothing else tells
    /// people apart: a requester could sign in here as somebody else and decide their own.
    #[error("the approval page cannot tell people apart at this sign-in service; an operator must name a person claim")]
    Pairwise,
}

/// The approval page's client at the issuer.
#[derive(Clone)]
pub struct SignIn {
    issuer: IssuerUrl,
    client_id: ClientId,
    client_secret: Option<ClientSecret>,
    redirect: RedirectUrl,
    /// The MCP endpoint, asked for as the access token's resource: its scopes say whether the
    /// person is a lead.
    resource: String,
    http: reqwest::Client,
    /// The issuer's metadata and keys, fetched on first use and again when an ID token names
    /// a key they lack (the issuer rotated its keys).
    metadata: Arc<RwLock<Option<CoreProviderMetadata>>>,
    records: Arc<dyn Records>,
    /// Seals a sign-in under way into its browser's cookie.
    cookies: Arc<KeyRing>,
    /// Checks the access token as `/mcp` checks a bearer token.
    gate: ResourceServer,
    /// Whether a decision here must tell its decider apart from the requester (`another-lead`).
    tells_people_apart: bool,
    /// The scope the sign-in asks for, which entitles a person to decide.
    scope: String,
    /// Whether the scopes a token holds entitle its person to decide.
    entitled: fn(&[String]) -> bool,
    /// The server's one clock: a sign-in's lifetime, and how recent a person's sign-in is.
    clock: Clock,
}

/// The purpose the sign-in cookie's keys are derived for.
pub const COOKIE_PURPOSE: &str = "fernhill/approval-page/sign-in/v1";

/// A sign-in under way, as its browser's cookie carries it (sealed) between the page and the
/// callback.
#[derive(Serialize, Deserialize)]
struct Started {
    state: String,
    verifier: String,
    nonce: String,
    return_to: String,
    /// When it lapses, in seconds since the epoch.
    until: u64,
}

/// Who signed in on the page, as the session keeps them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Session {
    /// The issuer they signed in at.
    pub issuer: String,
    /// Who they are there: the access token's person (its `sub`, or the person claim).
    pub subject: String,
    /// When they signed in at the issuer (seconds since the epoch), if the ID token said.
    pub auth_time: Option<i64>,
    /// Whether their token entitles them to decide.
    pub entitled: bool,
    /// The scopes their token holds (a session kept before they were is taken as holding none).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The roles and groups their token says they have (none, for a session kept before).
    #[serde(default)]
    pub membership: oauth_resource::token::Membership,
    /// The token every form of this session carries.
    pub form_token: String,
}

/// Where the person goes next, and the cookie to set.
pub struct Redirect {
    /// Where the browser goes.
    pub location: String,
    /// The cookie's value to set.
    pub cookie_value: String,
}

/// The approval page as a client of the issuer.
pub struct PageClient<'a> {
    /// The issuer's URL.
    pub issuer: &'a str,
    /// The page's client there.
    pub client_id: &'a str,
    /// Its secret (a confidential client).
    pub client_secret: Option<&'a str>,
    /// Where the issuer sends the browser back (`/approvals/callback`).
    pub redirect: &'a str,
    /// Whether a decision on the page must tell its decider apart from the requester.
    pub tells_people_apart: bool,
    /// The scopes to ask for, space-separated, which entitle a person to decide
    /// (`refunds:write`, say); none but `openid` when empty.
    pub scope: &'a str,
    /// Whether the scopes a token holds entitle its person to decide.
    pub entitled: fn(&[String]) -> bool,
}

impl SignIn {
    /// Sign-ins as `client`, asking for an access token for `resource` (checked by `gate`);
    /// sessions kept in `records`, a sign-in under way sealed by `cookies`.
    pub fn new(
        client: PageClient<'_>,
        resource: &str,
        records: Arc<dyn Records>,
        cookies: KeyRing,
        gate: ResourceServer,
    ) -> Result<Self, String> {
        let PageClient { issuer, client_id, client_secret, redirect, tells_people_apart, scope, entitled } = client;
        let http = reqwest::Client::builder()
            // Following redirects would let an issuer's answer send this server elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|error| error.to_string())?;
        Ok(Self {
            issuer: IssuerUrl::new(issuer.to_owned()).map_err(|error| format!("the issuer {issuer}: {error}"))?,
            client_id: ClientId::new(client_id.to_owned()),
            client_secret: client_secret.map(|secret| ClientSecret::new(secret.to_owned())),
            redirect: RedirectUrl::new(redirect.to_owned()).map_err(|error| format!("{redirect}: {error}"))?,
            resource: resource.to_owned(),
            http,
            metadata: Arc::default(),
            records,
            cookies: Arc::new(cookies),
            gate,
            tells_people_apart,
            scope: scope.to_owned(),
            entitled,
            clock: Clock::system(),
        })
    }

    /// Tell the time by `clock` (the server's one clock).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Whether this page may sign people in at this issuer: where a decision must tell the
    /// decider apart from the requester and the issuer offers pairwise subjects (each client
    /// its own `sub` for one person: the host's and this page's would name two people), only
    /// with a person claim named (`--auth-person-claim`), which both tokens then carry.
    fn may_sign_in_at(&self, metadata: &CoreProviderMetadata) -> Result<(), SignInError> {
        let pairwise = metadata.subject_types_supported().contains(&CoreSubjectIdentifierType::Pairwise);
        if pairwise && self.tells_people_apart && self.gate.person_claim().is_none() {
            tracing::error!(
                issuer = %self.issuer.as_str(),
                "the issuer offers pairwise subjects, under which the host's token and the approval page's may name \
                 one person as two; under --approval another-lead the page signs nobody in until --auth-person-claim \
                 names a claim both carry"
            );
            return Err(SignInError::Pairwise);
        }
        Ok(())
    }

    /// Check at start, if the issuer answers, that the page may sign people in there
    /// (`may_sign_in_at`); an issuer that does not answer yet is checked at the first
    /// sign-in.
    pub async fn check_issuer(&self) -> Result<(), SignInError> {
        match self.metadata(false).await {
            Err(SignInError::Issuer(error)) => {
                tracing::warn!(%error, "the approval page's issuer did not answer at start; checked at the first sign-in");
                Ok(())
            }
            other => other.map(drop),
        }
    }

    /// The issuer's metadata: as fetched before, unless `fresh` asks for it again.
    async fn metadata(&self, fresh: bool) -> Result<CoreProviderMetadata, SignInError> {
        if !fresh && let Some(known) = self.metadata.read().await.as_ref() {
            return Ok(known.clone());
        }
        let fetched = CoreProviderMetadata::discover_async(self.issuer.clone(), &oauth_http(self.http.clone()))
            .await
            .map_err(|error| SignInError::Issuer(format!("discovery: {error}")))?;
        self.may_sign_in_at(&fetched)?;
        *self.metadata.write().await = Some(fetched.clone());
        Ok(fetched)
    }

    /// Start a sign-in that returns to `return_to` (a path on this server): the issuer's
    /// address to send the browser to, and the value of the cookie that carries the sign-in,
    /// sealed, to the callback. Nothing is stored.
    pub async fn start(&self, return_to: &str) -> Result<Redirect, SignInError> {
        let metadata = self.metadata(false).await?;
        let client = CoreClient::from_provider_metadata(metadata, self.client_id.clone(), self.client_secret.clone())
            .set_redirect_uri(self.redirect.clone());
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (address, state, nonce) = client
            .authorize_url(CoreAuthenticationFlow::AuthorizationCode, CsrfToken::new_random, Nonce::new_random)
            .add_scopes(self.scope.split_whitespace().map(|scope| Scope::new(scope.to_owned())))
            .add_extra_param("resource", &self.resource)
            // A sign-in no older than a session: the issuer asks again past it, and says when
            // the person signed in (`auth_time`), which the decision records.
            .set_max_age(SESSION_LIFE)
            .set_pkce_challenge(challenge)
            .url();
        let started = Started {
            state: state.secret().clone(),
            verifier: verifier.secret().clone(),
            nonce: nonce.secret().clone(),
            return_to: return_to.to_owned(),
            until: self.clock.epoch_secs().saturating_add(SIGN_IN_LIFE.as_secs()),
        };
        // A few strings always serialize.
        let started = serde_json::to_vec(&started).unwrap_or_default();
        Ok(Redirect { location: address.to_string(), cookie_value: self.cookies.seal(&started) })
    }

    /// Finish the sign-in `state` names, from the browser whose sign-in cookie is `cookie`:
    /// exchange `code`, verify the ID token, and open a session. Where to go, and the session
    /// cookie's value.
    pub async fn finish(&self, code: &str, state: &str, cookie: &str) -> Result<Redirect, SignInError> {
        let opened = self.cookies.open(cookie).ok();
        let started: Started =
            opened.and_then(|plain| serde_json::from_slice(&plain).ok()).ok_or(SignInError::Unknown)?;
        let same_state = subtle::ConstantTimeEq::ct_eq(state.as_bytes(), started.state.as_bytes());
        if !bool::from(same_state) || started.until <= self.clock.epoch_secs() {
            return Err(SignInError::Unknown);
        }
        // One use: a second callback with the same cookie and state is refused. Claimed now,
        // once the issuer has sent a real sign-in back, for as long as the cookie could open.
        match self.records.claim(&finished_key(state), SIGN_IN_LIFE).await {
            Ok(records::once_only::Claim::First) => {}
            Ok(records::once_only::Claim::Taken) => return Err(SignInError::Unknown),
            Err(error) => return Err(SignInError::Store(error.to_string())),
        }
        let metadata = self.metadata(false).await?;
        let client = CoreClient::from_provider_metadata(metadata, self.client_id.clone(), self.client_secret.clone())
            .set_redirect_uri(self.redirect.clone());
        let tokens = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|error| SignInError::Issuer(error.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(started.verifier))
            .request_async(&oauth_http(self.http.clone()))
            .await
            .map_err(|error| SignInError::Unverified(format!("the code exchange: {error}")))?;
        let id_token = tokens.id_token().ok_or_else(|| SignInError::Unverified("no ID token".to_owned()))?;
        let nonce = Nonce::new(started.nonce);
        // The sign-in must be recent (`max_age` was asked for; an issuer that ignores it is not
        // taken at its word) and say when it was.
        let verify = |client: &CoreClient<_, _, _, _, _, _>| {
            let verifier = client.id_token_verifier().set_auth_time_verifier_fn(|auth_time| {
                let at = auth_time.ok_or("the ID token does not say when the person signed in")?.timestamp();
                let now = i64::try_from(self.clock.epoch_secs()).unwrap_or(i64::MAX);
                let oldest = i64::try_from((SESSION_LIFE + AUTH_TIME_SKEW).as_secs()).unwrap_or(i64::MAX);
                match now.saturating_sub(at) <= oldest {
                    true => Ok(()),
                    false => Err(format!("the person signed in {} s ago, longer than a session", now - at)),
                }
            });
            id_token
                .claims(&verifier, &nonce)
                .map(|claims| (claims.issuer().to_string(), claims.subject().to_string(), claims.auth_time()))
        };
        let (id_issuer, id_subject, auth_time) = match verify(&client) {
            Ok(verified) => verified,
            // The issuer may have rotated its keys since they were fetched: once more, fresh.
            Err(first) => {
                let metadata = self.metadata(true).await?;
                let client =
                    CoreClient::from_provider_metadata(metadata, self.client_id.clone(), self.client_secret.clone())
                        .set_redirect_uri(self.redirect.clone());
                verify(&client)
                    .map_err(|again| SignInError::Unverified(format!("the ID token: {again} (first: {first})")))?
            }
        };
        // Who they are and what they may do, as /mcp would read it from the same token.
        let access = self
            .gate
            .check_token(tokens.access_token().secret())
            .await
            .map_err(|refusal| SignInError::Unverified(format!("the access token: {refusal}")))?;
        // Both tokens were issued to this page's client: the same `sub` (pairwise or not).
        if access.issuer != id_issuer || access.sub.as_deref() != Some(id_subject.as_str()) || !access.person {
            return Err(SignInError::Unverified("the ID token and the access token name different people".into()));
        }
        let session = Session {
            issuer: access.issuer.clone(),
            subject: access.subject.clone(),
            auth_time: auth_time.map(|at| at.timestamp()),
            entitled: (self.entitled)(&access.scopes),
            scopes: access.scopes.clone(),
            membership: access.membership.clone(),
            form_token: random_token(),
        };
        let cookie_value = random_token();
        let kept = serde_json::to_string(&session).map_err(|error| SignInError::Store(error.to_string()))?;
        self.records
            .put(&session_key(&cookie_value), kept, SESSION_LIFE)
            .await
            .map_err(|error| SignInError::Store(error.to_string()))?;
        tracing::info!(subject = %session.subject.escape_debug(), entitled = session.entitled, "signed in on the approval page");
        Ok(Redirect { location: started.return_to, cookie_value })
    }

    /// The session whose cookie is `cookie_value`, if it is one and has not lapsed.
    pub async fn session(&self, cookie_value: &str) -> Result<Option<Session>, SignInError> {
        let kept = self
            .records
            .get(&session_key(cookie_value))
            .await
            .map_err(|error| SignInError::Store(error.to_string()))?;
        Ok(kept.and_then(|kept| serde_json::from_str(&kept).ok()))
    }
}

/// 32 random bytes in unpadded base64url: a form token, a session's cookie.
///
/// # Panics
///
/// When the operating system has no random numbers to give, which leaves no safe way to go on.
fn random_token() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random numbers");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The record that the sign-in `state` names came back once (its own prefix: an earlier
/// release kept sign-ins under way as `approval-sign-in:`).
fn finished_key(state: &str) -> String {
    format!("approval-sign-in-finished:{}", digest(state))
}

/// Sessions are kept under a digest of their cookie: the store alone does not give them away.
fn session_key(cookie_value: &str) -> String {
    format!("approval-session:{}", digest(cookie_value))
}

/// A digest of `value`, URL-safe: what is kept in place of a secret.
pub fn digest(value: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(value.as_bytes()))
}

/// An HTTP failure, as the OAuth library takes it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HttpError(String);

type Answer = Pin<Box<dyn Future<Output = Result<HttpResponse, HttpError>> + Send>>;

/// The OAuth library's HTTP client over this server's reqwest: its own `reqwest` feature is on
/// an older reqwest, which would put a second HTTP stack in the binary.
fn oauth_http(http: reqwest::Client) -> impl Fn(HttpRequest) -> Answer {
    move |request: HttpRequest| {
        let http = http.clone();
        Box::pin(async move {
            let request = reqwest::Request::try_from(request).map_err(|error| HttpError(error.to_string()))?;
            let response = http.execute(request).await.map_err(|error| HttpError(error.to_string()))?;
            let mut answer = http::Response::builder().status(response.status());
            for (name, value) in response.headers() {
                answer = answer.header(name, value);
            }
            let body = response.bytes().await.map_err(|error| HttpError(error.to_string()))?;
            answer.body(body.to_vec()).map_err(|error| HttpError(error.to_string()))
        }) as Answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "a secret of at least thirty-two bytes, for tests";

    /// A resource whose one scope, `decide`, every call needs.
    struct Deciders;

    impl oauth_resource::scopes::ScopePolicy for Deciders {
        fn supported(&self) -> Vec<String> {
            vec!["decide".into()]
        }

        fn needed(&self, _: &str, _: Option<&str>) -> Vec<String> {
            vec!["decide".into()]
        }
    }
    /// Nothing listens here: a sign-in that passes every check of its own fails at the issuer.
    const NOWHERE: &str = "http://127.0.0.1:9";

    fn sign_in() -> SignIn {
        let scopes = Box::new(Deciders);
        let gate = ResourceServer::new(NOWHERE, &format!("{NOWHERE}/mcp"), "test", scopes, 1024).unwrap();
        let client = PageClient {
            issuer: NOWHERE,
            client_id: "approvals",
            client_secret: None,
            redirect: &format!("{NOWHERE}/approvals/callback"),
            tells_people_apart: true,
            scope: "decide",
            entitled: |scopes| scopes.iter().any(|scope| scope == "decide"),
        };
        let records = Arc::new(records::InMemory::new());
        let cookies = KeyRing::for_purpose(&[SECRET], COOKIE_PURPOSE).unwrap();
        SignIn::new(client, &format!("{NOWHERE}/mcp"), records, cookies, gate).unwrap()
    }

    /// The cookie a browser got when it was sent to sign in for `state`, lapsing at `until`.
    fn cookie(sign_in: &SignIn, state: &str, until: u64) -> String {
        let started = Started {
            state: state.to_owned(),
            verifier: "verifier".into(),
            nonce: "nonce".into(),
            return_to: "/approvals/R-0111".into(),
            until,
        };
        sign_in.cookies.seal(&serde_json::to_vec(&started).unwrap())
    }

    fn unknown(finished: Result<Redirect, SignInError>) -> bool {
        matches!(finished, Err(SignInError::Unknown))
    }

    /// A callback is taken only with the cookie of the browser that started that sign-in, in
    /// its time, once; every other is refused before the issuer is asked anything.
    #[tokio::test]
    async fn a_callback_is_taken_once_from_its_own_browser_in_its_time() {
        let sign_in = sign_in();
        let later = Clock::system().epoch_secs() + 600;
        let own = cookie(&sign_in, "state-1", later);
        // Another browser's sign-in, its cookie sealed for its own state.
        assert!(unknown(sign_in.finish("code", "state-1", &cookie(&sign_in, "state-2", later)).await));
        // No cookie, a cookie not sealed here, one sealed under the request state's own keys.
        assert!(unknown(sign_in.finish("code", "state-1", "").await));
        assert!(unknown(sign_in.finish("code", "state-1", "v1.AAAA").await));
        let states = KeyRing::new(&[SECRET]).unwrap();
        assert!(unknown(sign_in.finish("code", "state-1", &states.seal(b"{}")).await));
        // Lapsed.
        assert!(unknown(
            sign_in.finish("code", "state-3", &cookie(&sign_in, "state-3", Clock::system().epoch_secs() - 1)).await
        ));
        // Its own: past every check here, it reaches the issuer (not there); sent again, refused.
        assert!(matches!(sign_in.finish("code", "state-1", &own).await, Err(SignInError::Issuer(_))));
        assert!(unknown(sign_in.finish("code", "state-1", &own).await), "a callback replayed");
    }

    /// An issuer that offers pairwise subjects may name one person as two (the host's token
    /// and the page's): where a decision must tell its decider from the requester, the page
    /// signs nobody in there unless a person claim is named; elsewhere, it does.
    #[test]
    fn a_page_that_must_tell_people_apart_refuses_a_pairwise_issuer_without_a_person_claim() {
        let metadata = |subject_types: &[&str]| -> CoreProviderMetadata {
            serde_json::from_value(serde_json::json!({
                "issuer": NOWHERE,
                "authorization_endpoint": format!("{NOWHERE}/auth"),
                "jwks_uri": format!("{NOWHERE}/jwks"),
                "response_types_supported": ["code"],
                "subject_types_supported": subject_types,
                "id_token_signing_alg_values_supported": ["ES256"],
            }))
            .unwrap()
        };
        let (pairwise, public) = (metadata(&["public", "pairwise"]), metadata(&["public"]));
        let page = sign_in();
        assert!(matches!(page.may_sign_in_at(&pairwise), Err(SignInError::Pairwise)));
        assert!(page.may_sign_in_at(&public).is_ok());
        let scopes = Box::new(Deciders);
        let gate = ResourceServer::new(NOWHERE, &format!("{NOWHERE}/mcp"), "test", scopes, 1024).unwrap();
        let named = SignIn { gate: gate.with_person_claim(Some("staff_id".into())), ..page.clone() };
        assert!(named.may_sign_in_at(&pairwise).is_ok(), "the claim tells people apart");
        let anyone = SignIn { tells_people_apart: false, ..page };
        assert!(anyone.may_sign_in_at(&pairwise).is_ok(), "under `self`, nobody need be told apart");
    }
}
