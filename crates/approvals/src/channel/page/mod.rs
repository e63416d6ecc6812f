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

    async fn session(&self, headers: &HeaderMap) -> Result<Option<Session>, Response> {
        let Some(value) = cookie_value(headers, self.session_cookie()) else { return Ok(None) };
        self.sign_in.session(&value).await.map_err(|error| {
            tracing::error!(?error, "the approval page could not read a session");
            unavailable()
        })
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

fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|cookie| cookie.name() == name)
        .map(|cookie| cookie.value().to_owned())
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
