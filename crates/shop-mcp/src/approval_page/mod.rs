//! The approval page: a lead opens a waiting refund's link (`/approvals/R-0111`), signs in
//! with the shop's issuer ([`sign_in`]), sees what they approve (the order, its lines, the
//! amount, who asked) and releases or declines it. The decision goes through the same choke
//! point as every other (`Shop::act`, which checks `crate::approval` first and claims the
//! answer once), and the shop's API checks it again.
//!
//! Served beside `/mcp` by `serve --http` when `--approvals-client-id` names the page's client
//! at the issuer. Built as a careful web app is: a session cookie that is `HttpOnly`,
//! `SameSite=Lax` (the issuer's redirect back is a cross-site navigation) and `Secure` behind
//! HTTPS; every form carries its session's token, and a post must come from this origin; a
//! strict Content-Security-Policy with no script at all ([`pages`]); nothing about a person in
//! any URL (a refund's ID alone).

pub mod pages;

use std::sync::Arc;

use approvals::{Answered, Channel};
use axum::{
    Form, Router,
    extract::{Path, Query, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use caller::Principal;
use cookie::{Cookie, SameSite};
use mrtr::Outcome;
use serde::Deserialize;
use shop_api::{RefundId, RefundStatus};

use crate::{Shop, approval::RECEIPT_META, approval::ReleaseForm, audit::Who, caller::Caller};
use approvals::channel::sign_in::{self, SESSION_LIFE, Session, SignIn, SignInError};
use pages::Page;

/// Where the page lives under the server's origin.
pub const PATH: &str = "/approvals";

/// The approval page of one server.
pub struct ApprovalPage {
    shop: Shop,
    sign_in: SignIn,
    /// The origin the page is served from (`https://shop.example`), which posts must come from.
    origin: String,
    /// Cookies only over HTTPS (and then with the `__Host-` prefix).
    secure: bool,
}

impl ApprovalPage {
    /// The page of `shop`, served at `origin`, its people signed in through `sign_in`.
    pub fn new(shop: Shop, sign_in: SignIn, origin: &str) -> Self {
        Self { shop, sign_in, origin: origin.trim_end_matches('/').to_owned(), secure: origin.starts_with("https://") }
    }

    /// Whether the page may sign people in at its issuer, checked at start where it answers.
    pub async fn check_issuer(&self) -> Result<(), SignInError> {
        self.sign_in.check_issuer().await
    }

    /// The page's routes.
    pub fn routes(self) -> Router {
        Router::new()
            .route(&format!("{PATH}/callback"), get(callback))
            .route(&format!("{PATH}/{{refund_id}}"), get(show).post(decide))
            .with_state(Arc::new(self))
    }

    fn session_cookie(&self) -> &'static str {
        if self.secure { "__Host-fernhill-approvals" } else { "fernhill-approvals" }
    }

    fn sign_in_cookie(&self) -> &'static str {
        if self.secure { "__Host-fernhill-approvals-sign-in" } else { "fernhill-approvals-sign-in" }
    }

    fn cookie(&self, name: &'static str, value: String, life: std::time::Duration) -> HeaderValue {
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

/// `GET /approvals/{refund_id}`: sign in first; then the refund, if this lead may decide it.
async fn show(State(page): State<Arc<ApprovalPage>>, Path(refund_id): Path<String>, headers: HeaderMap) -> Response {
    let Ok(refund_id) = RefundId::parse(&refund_id) else {
        return Page::notice(StatusCode::NOT_FOUND, "no_such_refund", "There is no such refund.").into_response();
    };
    let session = match page.session(&headers).await {
        Ok(Some(session)) => session,
        Ok(None) => return page.start_sign_in(&format!("{PATH}/{refund_id}")).await,
        Err(response) => return response,
    };
    let refund = match page.shop.api.refund(&refund_id).await {
        Ok(refund) => refund,
        Err(error) if error.status() == Some(404) => {
            return Page::notice(StatusCode::NOT_FOUND, "no_such_refund", "There is no such refund.").into_response();
        }
        Err(error) => {
            tracing::warn!(%refund_id, %error, "the approval page could not read a refund");
            return unavailable();
        }
    };
    if refund.status != RefundStatus::NeedsConfirmation {
        let words = format!("Refund {refund_id} is {}; there is nothing to decide.", refund.status);
        return Page::notice(StatusCode::OK, "settled", &words).into_response();
    }
    // Looking is not deciding: a refusal is counted only when a decision is tried (`act`).
    if let Err(why) = page.shop.may_decide(&who(&session), refund.requested_by.as_deref()) {
        let words = format!("You can't decide refund {refund_id}: {why}.");
        return Page::notice(StatusCode::FORBIDDEN, "not_yours", &words).into_response();
    }
    match page.shop.api.order(&refund.order_id).await {
        Ok(order) => Page::review(&refund, &order, &format!("{PATH}/{refund_id}"), &session.form_token).into_response(),
        Err(error) => {
            tracing::warn!(%refund_id, %error, "the approval page could not read an order");
            unavailable()
        }
    }
}

/// The page's form.
#[derive(Deserialize)]
struct Decision {
    form_token: String,
    decision: String,
    /// The digest of the refund as the page showed it.
    seen: String,
}

/// `POST /approvals/{refund_id}`: the lead's decision, from this origin, with their session's
/// form token.
async fn decide(
    State(page): State<Arc<ApprovalPage>>,
    Path(refund_id): Path<String>,
    headers: HeaderMap,
    form: Result<Form<Decision>, axum::extract::rejection::FormRejection>,
) -> Response {
    let origin = headers.get(header::ORIGIN).and_then(|origin| origin.to_str().ok());
    if origin != Some(page.origin.as_str()) {
        tracing::warn!(?origin, "refused a decision posted from another origin");
        return Page::notice(StatusCode::FORBIDDEN, "cross_site", "A decision must be made on this page itself.")
            .into_response();
    }
    let Ok(Form(form)) = form else {
        return Page::notice(StatusCode::BAD_REQUEST, "bad_form", "The form could not be read.").into_response();
    };
    let session = match page.session(&headers).await {
        Ok(Some(session)) => session,
        Ok(None) => {
            let words = "Your sign-in has ended. Open the refund's link again to sign in.";
            return Page::notice(StatusCode::FORBIDDEN, "signed_out", words).into_response();
        }
        Err(response) => return response,
    };
    if !bool::from(subtle::ConstantTimeEq::ct_eq(form.form_token.as_bytes(), session.form_token.as_bytes())) {
        tracing::warn!("refused a decision whose form token is not its session's");
        return Page::notice(
            StatusCode::FORBIDDEN,
            "bad_form",
            "This form is not from your sign-in; open the link again.",
        )
        .into_response();
    }
    let Ok(refund_id) = RefundId::parse(&refund_id) else {
        return Page::notice(StatusCode::NOT_FOUND, "no_such_refund", "There is no such refund.").into_response();
    };
    let (said, outcome) = match form.decision.as_str() {
        "release" => (Outcome::Accepted(ReleaseForm::YES), "released"),
        "decline" => (Outcome::Declined, "declined"),
        _ => return Page::notice(StatusCode::BAD_REQUEST, "bad_form", "Choose release or decline.").into_response(),
    };
    // The question this page put: one per session, so a second post of the same decision is
    // a replay, refused by the once-only claim.
    let answered = Answered::to(
        format!("page:{}", sign_in::digest(&session.form_token)),
        Channel::Page,
        SESSION_LIFE + std::time::Duration::from_secs(24 * 3600),
    )
    .having_seen(form.seen)
    .signed_in_at(session.auth_time);
    match page.shop.act(&refund_id, said, &answered, &who(&session)).await {
        Ok(result) => {
            let note = result.content.first().and_then(|block| block.as_text()).map(|text| text.text.clone());
            let words = match (outcome, note) {
                ("declined", Some(note)) => note,
                _ => format!("Refund {refund_id} is {outcome}."),
            };
            let receipt = result.meta.as_ref().and_then(|meta| meta.0.get(RECEIPT_META)).and_then(|r| r.as_str());
            Page::decided(outcome, &words, receipt).into_response()
        }
        // Nothing was done, for a reason that passes: try again; otherwise refused.
        Err(error) if error.is_nothing_done() => {
            Page::notice(StatusCode::SERVICE_UNAVAILABLE, "unavailable", error.message()).into_response()
        }
        Err(error) => Page::notice(StatusCode::CONFLICT, "refused", error.message()).into_response(),
    }
}

#[derive(Deserialize)]
struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// `GET /approvals/callback`: the issuer sends the browser back here.
async fn callback(State(page): State<Arc<ApprovalPage>>, Query(back): Query<Callback>, headers: HeaderMap) -> Response {
    let (Some(code), Some(state)) = (back.code, back.state) else {
        if let Some(error) = &back.error {
            tracing::info!(error = %error.escape_debug(), "the issuer sent a sign-in back unfinished");
        }
        let words = match back.error {
            Some(_) => "The sign-in was not completed. Open the refund's link again to try once more.",
            None => "This address is where the sign-in service sends you back; open the refund's link instead.",
        };
        return Page::notice(StatusCode::BAD_REQUEST, "sign_in_failed", words).into_response();
    };
    let cookie = cookie_value(&headers, page.sign_in_cookie()).unwrap_or_default();
    match page.sign_in.finish(&code, &state, &cookie).await {
        Ok(redirect) if redirect.location.starts_with(&format!("{PATH}/")) => {
            let mut response = see_other(
                &redirect.location,
                Some(page.cookie(page.session_cookie(), redirect.cookie_value, SESSION_LIFE)),
            );
            response.headers_mut().append(
                header::SET_COOKIE,
                page.cookie(page.sign_in_cookie(), String::new(), std::time::Duration::ZERO),
            );
            response
        }
        Ok(_) => Page::notice(StatusCode::BAD_REQUEST, "sign_in_failed", "The sign-in came back to an unknown page.")
            .into_response(),
        Err(error) => {
            tracing::warn!(?error, "a sign-in on the approval page failed");
            let words = format!("The sign-in failed: {error}. Open the refund's link again to try once more.");
            Page::notice(StatusCode::BAD_REQUEST, "sign_in_failed", &words).into_response()
        }
    }
}

/// Who the session's person is, to the server's rules and its audit trail.
fn who(session: &Session) -> Who {
    Who {
        caller: Some(Caller::Principal(Principal::new(&session.issuer, &session.subject))),
        client: Some("approval page".to_owned()),
        client_version: None,
        era: None,
        lead: session.entitled,
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
    pages::secure(response.headers_mut());
    if let Ok(location) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    if let Some(cookie) = cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

fn unavailable() -> Response {
    Page::notice(
        StatusCode::SERVICE_UNAVAILABLE,
        "unavailable",
        "The approval page can't answer right now; try again shortly.",
    )
    .into_response()
}
