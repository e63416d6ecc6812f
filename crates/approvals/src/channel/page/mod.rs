//! An approval page's visitors, for any server to mount (feature `page`): who is at the page,
//! signed in at the server's issuer ([`super::sign_in`]), and the plumbing every such page
//! needs around what it shows: the session's cookie, the sign-in's start and its callback, and
//! the checks on a decision posted (from this origin, with the session's form token). What a
//! page shows and what a decision there does are its server's (the shop's refunds, a gate's
//! held calls); [`html`] is the page's frame.
//!
//! Built as a careful web app is: a session cookie that is `HttpOnly`, `SameSite=Lax` (the
//! issuer's redirect back is a cross-site navigation) and `Secure` behind HTTPS (then with the
//! `__Host-` prefix); every form carries its session's token, and a post must come from this
//! origin; a strict Content-Security-Policy with no script at all; nothing about a person in any
//! URL.

pub mod html;

use std::time::Duration;

use axum::{
    Form,
    extract::rejection::FormRejection,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use cookie::{Cookie, SameSite};
use serde::Deserialize;

use super::sign_in::{self, SESSION_LIFE, Session, SignIn, SignInError};
use crate::{Answered, Channel};
use html::Page;

/// Where an approval page lives under its server's origin; its callback is `{PATH}/callback`.
pub const PATH: &str = "/approvals";

/// The visitors of one server's approval page.
pub struct Visitors {
    sign_in: SignIn,
    /// The origin the page is served from (`https://shop.example`), which posts must come from.
    origin: String,
    /// Cookies only over HTTPS (and then with the `__Host-` prefix).
    secure: bool,
    /// What a person opens again to start over, in words ("the refund's link").
    link: &'static str,
}

/// A decision as a page's form posts it.
#[derive(Debug, Deserialize)]
pub struct Decision {
    /// The session's form token.
    pub form_token: String,
    /// The button pressed (the page's own words for yes and no).
    pub decision: String,
    /// The digest of what the page showed.
    pub seen: String,
}

/// What the issuer sends back to `{PATH}/callback`.
#[derive(Debug, Deserialize)]
pub struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

impl Visitors {
    /// The visitors of a page served at `origin`, signed in through `sign_in`; `link` names, in
    /// words, what a person opens again to start over ("the refund's link").
    pub fn new(sign_in: SignIn, origin: &str, link: &'static str) -> Self {
        let origin = origin.trim_end_matches('/').to_owned();
        Self { sign_in, secure: origin.starts_with("https://"), origin, link }
    }

    /// The origin the page is served from.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Whether the page may sign people in at its issuer, checked at start where it answers.
    pub async fn check_issuer(&self) -> Result<(), SignInError> {
        self.sign_in.check_issuer().await
    }

    /// The person at the page, signed in; or, for one who is not, the answer that sends them
    /// to sign in and back to `return_to` (a path of the page).
    pub async fn signed_in(&self, headers: &HeaderMap, return_to: &str) -> Result<Session, Response> {
        match self.session(headers).await? {
            Some(session) => Ok(session),
            None => Err(self.start_sign_in(return_to).await),
        }
    }

    /// A decision `form` posted, and who posted it: refused unless the form reads, and it came
    /// from this page's origin, within a session, with that session's form token.
    pub async fn decision(
        &self,
        headers: &HeaderMap,
        form: Result<Form<Decision>, FormRejection>,
    ) -> Result<(Session, Decision), Response> {
        let Ok(Form(form)) = form else {
            return Err(
                Page::notice(StatusCode::BAD_REQUEST, "bad_form", "The form could not be read.").into_response()
            );
        };
        let session = self.posted(headers, &form.form_token).await?;
        Ok((session, form))
    }

    /// The person who posted a decision with `form_token`: refused unless it came from this
    /// page's origin, within a session, with that session's form token.
    async fn posted(&self, headers: &HeaderMap, form_token: &str) -> Result<Session, Response> {
        let origin = headers.get(header::ORIGIN).and_then(|origin| origin.to_str().ok());
        if origin != Some(self.origin.as_str()) {
            tracing::warn!(?origin, "refused a decision posted from another origin");
            return Err(Page::notice(
                StatusCode::FORBIDDEN,
                "cross_site",
                "A decision must be made on this page itself.",
            )
            .into_response());
        }
        let Some(session) = self.session(headers).await? else {
            let words = format!("Your sign-in has ended. Open {} again to sign in.", self.link);
            return Err(Page::notice(StatusCode::FORBIDDEN, "signed_out", &words).into_response());
        };
        if !bool::from(subtle::ConstantTimeEq::ct_eq(form_token.as_bytes(), session.form_token.as_bytes())) {
            tracing::warn!("refused a decision whose form token is not its session's");
            let words = "This form is not from your sign-in; open the link again.";
            return Err(Page::notice(StatusCode::FORBIDDEN, "bad_form", words).into_response());
        }
        Ok(session)
    }

    /// The question a decision posted in `session` answers, having seen `seen`: one per
    /// session, so a second post of the same decision is a replay, refused by the once-only
    /// claim.
    pub fn answered(session: &Session, seen: String) -> Answered {
        Answered::to(
            format!("page:{}", sign_in::digest(&session.form_token)),
            Channel::Page,
            SESSION_LIFE + Duration::from_secs(24 * 3600),
        )
        .having_seen(seen)
        .signed_in_at(session.auth_time)
    }

    /// `GET {PATH}/callback`: the issuer sends the browser back here; on to the page it left.
    pub async fn callback(&self, back: Callback, headers: &HeaderMap) -> Response {
        let (Some(code), Some(state)) = (back.code, back.state) else {
            if let Some(error) = &back.error {
                tracing::info!(error = %error.escape_debug(), "the issuer sent a sign-in back unfinished");
            }
            let words = match back.error {
                Some(_) => format!("The sign-in was not completed. Open {} again to try once more.", self.link),
                None => {
                    format!("This address is where the sign-in service sends you back; open {} instead.", self.link)
                }
            };
            return Page::notice(StatusCode::BAD_REQUEST, "sign_in_failed", &words).into_response();
        };
        let cookie = cookie_value(headers, self.sign_in_cookie()).unwrap_or_default();
        match self.sign_in.finish(&code, &state, &cookie).await {
            Ok(redirect) if redirect.location.starts_with(&format!("{PATH}/")) || redirect.location == PATH => {
                let mut response = see_other(
                    &redirect.location,
                    Some(self.cookie(self.session_cookie(), redirect.cookie_value, SESSION_LIFE)),
                );
                response
                    .headers_mut()
                    .append(header::SET_COOKIE, self.cookie(self.sign_in_cookie(), String::new(), Duration::ZERO));
                response
            }
            Ok(_) => {
                Page::notice(StatusCode::BAD_REQUEST, "sign_in_failed", "The sign-in came back to an unknown page.")
                    .into_response()
            }
            Err(error) => {
                tracing::warn!(?error, "a sign-in on the approval page failed");
                let words = format!("The sign-in failed: {error}. Open {} again to try once more.", self.link);
                Page::notice(StatusCode::BAD_REQUEST, "sign_in_failed", &words).into_response()
            }
        }
    }

    fn session_cookie(&self) -> &'static str {
        if self.secure { "__Host-fernhill-approvals" } else { "fernhill-approvals" }
    }

    fn sign_in_cookie(&self) -> &'static str {
        if self.secure { "__Host-fernhill-approvals-sign-in" } else { "fernhill-approvals-sign-in" }
    }

    fn cookie(&self, name: &'static str, value: String, life: Duration) -> HeaderValue {
        let cookie = Cookie::build((name, value))
            .http_only(true)
            .same_site(SameSite::Lax)
            .secure(self.secure)
            .path("/")
            .max_age(cookie::time::Duration::seconds(i64::try_from(life.as_secs()).unwrap_or(i64::MAX)))
            .build();
        // A cookie built from our own token and names is always a header value.
        HeaderValue::from_str(&cookie.to_string()).unwrap_or_else(|_| HeaderValue::from_static(""))
    }

    /// The session the cookies of the session's name open: every such cookie is tried, not the
    /// first alone. Without the `__Host-` prefix (over plain HTTP) another port of the same host
    /// may set one of its own for a longer path, which the browser sends first: a value that
    /// opens nothing does not shadow the visitor's own, and where two open sessions (one
    /// planted, whoever's it is) neither is taken, and the visitor signs in anew.
    async fn session(&self, headers: &HeaderMap) -> Result<Option<Session>, Response> {
        let mut opened = None;
        for value in cookie_values(headers, self.session_cookie()).take(MOST_COOKIES_TRIED) {
            let session = self.sign_in.session(&value).await.map_err(|error| {
                tracing::error!(?error, "the approval page could not read a session");
                unavailable()
            })?;
            match (session, &opened) {
                (Some(_), Some(_)) => {
                    tracing::warn!("a request carried two sessions' cookies (one planted): neither is taken");
                    return Ok(None);
                }
                (Some(session), None) => opened = Some(session),
                (None, _) => {}
            }
        }
        Ok(opened)
    }

    /// Send the browser to the issuer, to come back to `return_to`.
    async fn start_sign_in(&self, return_to: &str) -> Response {
        match self.sign_in.start(return_to).await {
            Ok(redirect) => {
                let cookie = self.cookie(self.sign_in_cookie(), redirect.cookie_value, sign_in::SIGN_IN_LIFE);
                see_other(&redirect.location, Some(cookie))
            }
            Err(error) => {
                tracing::error!(?error, "the approval page could not start a sign-in");
                unavailable()
            }
        }
    }
}

/// The most cookies of one name a request has looked up (a browser holds a few at most).
const MOST_COOKIES_TRIED: usize = 16;

fn cookie_values<'h>(headers: &'h HeaderMap, name: &'h str) -> impl Iterator<Item = String> + 'h {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .filter(move |cookie| cookie.name() == name)
        .map(|cookie| cookie.value().to_owned())
}

fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    cookie_values(headers, name).next()
}

fn see_other(location: &str, cookie: Option<HeaderValue>) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    html::secure(response.headers_mut());
    if let Ok(location) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    if let Some(cookie) = cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// The page cannot answer now: its store or its issuer did not.
pub fn unavailable() -> Response {
    Page::notice(
        StatusCode::SERVICE_UNAVAILABLE,
        "unavailable",
        "The approval page can't answer right now; try again shortly.",
    )
    .into_response()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use mrtr::seal::KeyRing;
    use oauth_resource::gate::ResourceServer;
    use records::Records as _;

    use super::*;
    use crate::channel::sign_in::{COOKIE_PURPOSE, PageClient};

    /// Nothing listens here: the page's issuer is never reached by these tests.
    const ORIGIN: &str = "http://127.0.0.1:9";

    struct Deciders;

    impl oauth_resource::scopes::ScopePolicy for Deciders {
        fn supported(&self) -> Vec<String> {
            vec!["decide".into()]
        }

        fn needed(&self, _: &str, _: Option<&str>) -> Vec<String> {
            vec!["decide".into()]
        }
    }

    /// A page's visitors, with lee signed in: his browser's cookie `c-lee`, his forms' token
    /// `tok-lee`.
    async fn page_with_lee() -> Visitors {
        let gate = ResourceServer::new(ORIGIN, &format!("{ORIGIN}/mcp"), "test", Box::new(Deciders), 1024).unwrap();
        let client = PageClient {
            issuer: ORIGIN,
            client_id: "approvals",
            client_secret: None,
            redirect: &format!("{ORIGIN}/approvals/callback"),
            tells_people_apart: true,
            scope: "decide",
            entitled: |_| true,
        };
        let records = Arc::new(records::InMemory::new());
        let cookies = KeyRing::for_purpose(&["a secret of at least thirty-two bytes, for tests"], COOKIE_PURPOSE);
        let sign_in = SignIn::new(client, &format!("{ORIGIN}/mcp"), records.clone(), cookies.unwrap(), gate).unwrap();
        let lee = Session {
            issuer: ORIGIN.into(),
            subject: "lee".into(),
            auth_time: None,
            entitled: true,
            scopes: vec!["decide".into()],
            membership: Default::default(),
            form_token: "tok-lee".into(),
        };
        let key = format!("approval-session:{}", sign_in::digest("c-lee"));
        records.put(&key, serde_json::to_string(&lee).unwrap(), SESSION_LIFE).await.unwrap();
        Visitors::new(sign_in, ORIGIN, "the approval's link")
    }

    fn headers(origin: Option<&'static str>, cookie: Option<&'static str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(origin) = origin {
            headers.insert(header::ORIGIN, HeaderValue::from_static(origin));
        }
        if let Some(cookie) = cookie {
            headers.insert(header::COOKIE, HeaderValue::from_static(cookie));
        }
        headers
    }

    fn form(token: &str) -> Result<Form<Decision>, FormRejection> {
        Ok(Form(Decision { form_token: token.into(), decision: "run".into(), seen: "digest".into() }))
    }

    async fn outcome(refused: Response) -> (StatusCode, String) {
        let status = refused.status();
        let body = axum::body::to_bytes(refused.into_body(), 1 << 20).await.unwrap();
        let body = String::from_utf8(body.to_vec()).unwrap();
        let outcome = body.split("data-outcome=\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap_or("");
        (status, outcome.to_owned())
    }

    #[tokio::test]
    async fn a_decision_posted_from_anywhere_but_the_page_or_its_session_decides_nothing() {
        let page = page_with_lee().await;
        let lee = Some("fernhill-approvals=c-lee");
        for (origin, cookie, token, expected) in [
            (None, lee, "tok-lee", "cross_site"),
            (Some("null"), lee, "tok-lee", "cross_site"),
            (Some("http://evil.example"), lee, "tok-lee", "cross_site"),
            (Some("http://127.0.0.1:9.evil.example"), lee, "tok-lee", "cross_site"),
            (Some(ORIGIN), None, "tok-lee", "signed_out"),
            (Some(ORIGIN), Some("fernhill-approvals=c-mallory"), "tok-lee", "signed_out"),
            (Some(ORIGIN), lee, "tok-mallory", "bad_form"),
            (Some(ORIGIN), lee, "", "bad_form"),
        ] {
            let refused = page.decision(&headers(origin, cookie), form(token)).await.err();
            let refused = outcome(refused.expect("decided")).await;
            assert_eq!(refused, (StatusCode::FORBIDDEN, expected.to_owned()), "{origin:?} {cookie:?} {token}");
        }
        let (session, _) = page.decision(&headers(Some(ORIGIN), lee), form("tok-lee")).await.unwrap();
        assert_eq!(session.subject, "lee");
    }

    #[tokio::test]
    async fn a_cookie_planted_for_a_longer_path_does_not_shadow_the_visitors_own() {
        let page = page_with_lee().await;
        // What a browser sends when another port of the host set one for /approvals.
        let shadowed = headers(Some(ORIGIN), Some("fernhill-approvals=planted; fernhill-approvals=c-lee"));
        let (session, _) = page.decision(&shadowed, form("tok-lee")).await.unwrap();
        assert_eq!(session.subject, "lee");
        // A planted cookie that opens a session of its own (the planter's): neither is taken.
        let two = headers(Some(ORIGIN), Some("fernhill-approvals=c-lee; fernhill-approvals=c-lee"));
        let refused = page.decision(&two, form("tok-lee")).await.err();
        let refused = outcome(refused.expect("taken")).await;
        assert_eq!(refused, (StatusCode::FORBIDDEN, "signed_out".to_owned()));
    }
}
