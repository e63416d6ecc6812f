//! The approval page: a lead opens a waiting refund's link (`/approvals/R-0111`), signs in
//! with the shop's issuer ([`approvals::channel::sign_in`]), sees what they approve (the order, its lines, the
//! amount, who asked) and releases or declines it. The decision goes through the same choke
//! point as every other (`Shop::act`, which checks `crate::approval` first and claims the
//! answer once), and the shop's API checks it again.
//!
//! Served beside `/mcp` by `serve --http` when `--approvals-client-id` names the page's client
//! at the issuer. Its sessions, cookies, sign-in and the checks on a post are the approvals
//! crate's ([`Visitors`]), as a gate's page's are; nothing about a person is in any URL (a
//! refund's ID alone).

use std::sync::Arc;

pub use approvals::channel::page::PATH;

use approvals::channel::page::{Callback, Decision, Visitors, html::Page, unavailable};
use approvals::channel::sign_in::{Session, SignIn, SignInError};
use axum::{
    Form, Router,
    extract::{Path, Query, State, rejection::FormRejection},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::get,
};
use caller::Principal;
use mrtr::Outcome;
use shop_api::{Order, Refund, RefundId, RefundStatus};
use web_service::html::escape;

use crate::{Shop, approval::RECEIPT_META, approval::ReleaseForm, audit::Who, caller::Caller};

/// The approval page of one server.
pub struct ApprovalPage {
    shop: Shop,
    visitors: Visitors,
}

impl ApprovalPage {
    /// The page of `shop`, served at `origin`, its people signed in through `sign_in`.
    pub fn new(shop: Shop, sign_in: SignIn, origin: &str) -> Self {
        Self { shop, visitors: Visitors::new(sign_in, origin, "the refund's link") }
    }

    /// Whether the page may sign people in at its issuer, checked at start where it answers.
    pub async fn check_issuer(&self) -> Result<(), SignInError> {
        self.visitors.check_issuer().await
    }

    /// The page's routes.
    pub fn routes(self) -> Router {
        Router::new()
            .route(&format!("{PATH}/callback"), get(callback))
            .route(&format!("{PATH}/{{refund_id}}"), get(show).post(decide))
            .with_state(Arc::new(self))
    }
}

/// `GET /approvals/{refund_id}`: sign in first; then the refund, if this lead may decide it.
async fn show(State(page): State<Arc<ApprovalPage>>, Path(refund_id): Path<String>, headers: HeaderMap) -> Response {
    let Ok(refund_id) = RefundId::parse(&refund_id) else {
        return Page::notice(StatusCode::NOT_FOUND, "no_such_refund", "There is no such refund.").into_response();
    };
    let session = match page.visitors.signed_in(&headers, &format!("{PATH}/{refund_id}")).await {
        Ok(session) => session,
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
        Ok(order) => review(&refund, &order, &format!("{PATH}/{refund_id}"), &session.form_token).into_response(),
        Err(error) => {
            tracing::warn!(%refund_id, %error, "the approval page could not read an order");
            unavailable()
        }
    }
}

/// `POST /approvals/{refund_id}`: the lead's decision, from this origin, with their session's
/// form token.
async fn decide(
    State(page): State<Arc<ApprovalPage>>,
    Path(refund_id): Path<String>,
    headers: HeaderMap,
    form: Result<Form<Decision>, FormRejection>,
) -> Response {
    let (session, form) = match page.visitors.decision(&headers, form).await {
        Ok(posted) => posted,
        Err(response) => return response,
    };
    let Ok(refund_id) = RefundId::parse(&refund_id) else {
        return Page::notice(StatusCode::NOT_FOUND, "no_such_refund", "There is no such refund.").into_response();
    };
    let (said, outcome) = match form.decision.as_str() {
        "release" => (Outcome::Accepted(ReleaseForm::YES), "released"),
        "decline" => (Outcome::Declined, "declined"),
        _ => return Page::notice(StatusCode::BAD_REQUEST, "bad_form", "Choose release or decline.").into_response(),
    };
    let answered = Visitors::answered(&session, form.seen);
    match page.shop.act(&refund_id, said, &answered, &who(&session)).await {
        Ok(result) => {
            let note = result.content.first().and_then(|block| block.as_text()).map(|text| text.text.clone());
            let words = match (outcome, note) {
                ("declined", Some(note)) => note,
                _ => format!("Refund {refund_id} is {outcome}."),
            };
            let receipt = result.meta.as_ref().and_then(|meta| meta.0.get(RECEIPT_META)).and_then(|r| r.as_str());
            Page::decided(outcome, &words, receipt, approvals::channel::jwks::PATH).into_response()
        }
        // Nothing was done, for a reason that passes: try again; otherwise refused.
        Err(error) if error.is_nothing_done() => {
            Page::notice(StatusCode::SERVICE_UNAVAILABLE, "unavailable", error.message()).into_response()
        }
        Err(error) => Page::notice(StatusCode::CONFLICT, "refused", error.message()).into_response(),
    }
}

/// `GET /approvals/callback`: the issuer sends the browser back here.
async fn callback(State(page): State<Arc<ApprovalPage>>, Query(back): Query<Callback>, headers: HeaderMap) -> Response {
    page.visitors.callback(back, &headers).await
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

/// The refund, what it is for and who asked, with the lead's two buttons.
fn review(refund: &Refund, order: &Order, action: &str, form_token: &str) -> Page {
    let lines: String = order
        .lines
        .iter()
        .map(|line| {
            format!(
                "<tr><td>{}</td><td>{}</td><td>x{}</td><td>{}</td></tr>",
                escape(line.sku.as_str()),
                escape(&line.name),
                line.quantity,
                escape(&line.unit_price.to_string())
            )
        })
        .collect();
    let body = format!(
        "<h1>Refund {refund_id}</h1>\n\
             <p>{amount} {currency} on order {order_id} for {customer}, asked by {asked}.</p>\n\
             <table><tr><th>SKU</th><th>Item</th><th>Qty</th><th>Price</th></tr>{lines}</table>\n\
             <p>Shipping {shipping}; the order's total {total}.</p>\n\
             <form method=\"post\" action=\"{action}\">\n\
             <input type=\"hidden\" name=\"form_token\" value=\"{token}\">\n\
             <input type=\"hidden\" name=\"seen\" value=\"{seen}\">\n\
             <button type=\"submit\" name=\"decision\" value=\"release\">Release this refund</button>\n\
             <button type=\"submit\" name=\"decision\" value=\"decline\">Decline it</button>\n\
             </form>",
        refund_id = escape(refund.refund_id.as_str()),
        amount = escape(&refund.amount.to_string()),
        currency = escape(&refund.currency),
        order_id = escape(order.order_id.as_str()),
        customer = escape(&order.customer),
        asked = escape(refund.requested_by.as_deref().unwrap_or("someone unnamed")),
        shipping = escape(&order.shipping.to_string()),
        total = escape(&order.total.to_string()),
        action = escape(action),
        token = escape(form_token),
        seen = escape(&refund.digest()),
    );
    Page::new(StatusCode::OK, "review", body)
}
