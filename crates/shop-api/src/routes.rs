//! The HTTP routes: JSON in, JSON out, problems for errors.
//!
//! Handlers are thin: they parse IDs from the path, run one [`Database`] operation and turn
//! the outcome into a response.

use std::str::FromStr;

use axum::extract::rejection::JsonRejection;
use axum::extract::{DefaultBodyLimit, FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use tower_http::trace::TraceLayer;
use web_service::problem::{method_not_allowed, no_such_route};

use crate::ids::{IdError, OrderId, QuoteId, RefundId};
use crate::model::{Decision, ON_BEHALF_OF, Policy, QuoteRequest, Refund, RefundRequest, RefundStatus, ReturnRequest};
use crate::policy;
use crate::problem::Problem;
use crate::store::Database;
use caller::Party;
use web_service::credential::Shown;

/// Largest request body accepted (64 KiB); the API's bodies are tiny.
pub const BODY_LIMIT: usize = 64 * 1024;

/// The API's routes over `database`.
pub fn router(database: impl Into<Database>) -> Router {
    let database = database.into();
    Router::new()
        .route("/healthz", get(healthz))
        .route("/policy", get(get_policy))
        .route("/orders/{order_id}", get(get_order))
        .route("/quotes", post(create_quote))
        .route("/quotes/{quote_id}", get(get_quote))
        .route("/refunds", post(create_refund).get(list_refunds))
        .route("/refunds/{refund_id}", get(get_refund))
        .route("/refunds/{refund_id}/confirm", post(confirm_refund))
        .route("/refunds/{refund_id}/cancel", post(cancel_refund))
        .route("/returns", post(record_return))
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(no_such_route)
        .layer(axum::middleware::from_fn_with_state((database.clone(), BODY_LIMIT), crate::idempotency::replay_or_run))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(TraceLayer::new_for_http())
        .with_state(database)
}

/// The single `{…}` path parameter, parsed as an ID (400 when malformed).
struct PathId<T>(T);

impl<S, T> FromRequestParts<S> for PathId<T>
where
    S: Send + Sync,
    T: FromStr<Err = IdError>,
{
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Problem> {
        let Path(raw) = Path::<String>::from_request_parts(parts, state).await?;
        Ok(PathId(raw.parse()?))
    }
}

/// A 201 response with a `Location` header.
fn created<T: serde::Serialize>(location: String, body: T) -> Response {
    (StatusCode::CREATED, [(header::LOCATION, location)], Json(body)).into_response()
}

async fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok" }))
}

async fn get_policy(State(database): State<Database>) -> Json<Policy> {
    Json(policy::policy(database.approval()))
}

async fn get_order(State(database): State<Database>, PathId(order_id): PathId<OrderId>) -> Result<Response, Problem> {
    let order = database.order(order_id).await?;
    Ok(Json(order).into_response())
}

async fn create_quote(
    State(database): State<Database>,
    body: Result<Json<QuoteRequest>, JsonRejection>,
) -> Result<Response, Problem> {
    let Json(request) = body?;
    let quote = database.create_quote(request).await?;
    Ok(created(format!("/quotes/{}", quote.quote_id), quote))
}

async fn get_quote(State(database): State<Database>, PathId(quote_id): PathId<QuoteId>) -> Result<Response, Problem> {
    let quote = database.quote(quote_id).await?;
    Ok(Json(quote).into_response())
}

/// 201 with the new refund, or 200 with the refund the quote already has.
async fn create_refund(
    State(database): State<Database>,
    headers: HeaderMap,
    shown: Option<axum::Extension<Shown>>,
    body: Result<Json<RefundRequest>, JsonRejection>,
) -> Result<Response, Problem> {
    let Json(request) = body?;
    let by = on_behalf_of(&headers, shown.map(|shown| shown.0))?;
    let (refund, is_new) = database.create_refund(request.quote_id, by).await?;
    if is_new {
        Ok(created(format!("/refunds/{}", refund.refund_id), refund))
    } else {
        Ok(Json(refund).into_response())
    }
}

/// `GET /refunds[?status=needs_confirmation]`: every refund, or those in one status.
#[derive(serde::Deserialize)]
struct RefundsIn {
    status: Option<String>,
}

async fn list_refunds(
    State(database): State<Database>,
    query: Result<axum::extract::Query<RefundsIn>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Vec<Refund>>, Problem> {
    let query = query.map_err(|rejection| {
        Problem::new(StatusCode::BAD_REQUEST, "bad_query", "The query could not be read", rejection.body_text())
    })?;
    let status = match query.0.status {
        None => None,
        Some(status) => Some(status.parse::<RefundStatus>().map_err(|unknown| {
            Problem::new(StatusCode::BAD_REQUEST, "bad_status", "No such status", unknown.to_string())
        })?),
    };
    Ok(Json(database.refunds_in(status).await?))
}

async fn get_refund(
    State(database): State<Database>,
    PathId(refund_id): PathId<RefundId>,
) -> Result<Json<Refund>, Problem> {
    Ok(Json(database.refund(refund_id).await?))
}

/// Why a request's word on for whom it acts was not taken.
#[derive(Debug, Clone, Copy)]
enum NotNamed {
    /// `Fernhill-On-Behalf-Of` names no party.
    NamesNobody,
    /// A release that names nobody: over a client credential (`true`), or the service's
    /// without the header.
    ReleaseByNobody { client_credential: bool },
}

impl From<NotNamed> for Problem {
    fn from(not: NotNamed) -> Problem {
        match not {
            NotNamed::NamesNobody => Problem::new(
                StatusCode::BAD_REQUEST,
                "bad_on_behalf_of",
                "Fernhill-On-Behalf-Of names nobody",
                "Name the party as `ISSUER SUBJECT`, `client ISSUER CLIENT_ID`, `host user NAME` or \
                 `unauthenticated [ADDRESS]`, in at most 512 bytes.",
            ),
            NotNamed::ReleaseByNobody { client_credential } => {
                let detail = match client_credential {
                    true => "A client credential may read, quote, issue and cancel refunds, never release one.",
                    false => "A release names who decides it: send Fernhill-On-Behalf-Of.",
                };
                Problem::new(StatusCode::FORBIDDEN, "decider_unknown", "Not this caller's to release", detail)
            }
        }
    }
}

/// For whom the caller says it acts: counted from the service credential (the MCP server's)
/// alone, and read as a [`Party`] (400 `bad_on_behalf_of` when it names nobody); from any
/// other caller the header is ignored, and nobody is recorded as asking or deciding.
fn on_behalf_of(headers: &HeaderMap, shown: Option<Shown>) -> Result<Option<String>, NotNamed> {
    let Some(value) = headers.get(ON_BEHALF_OF) else { return Ok(None) };
    if shown != Some(Shown::Service) {
        tracing::warn!("ignored Fernhill-On-Behalf-Of from a caller without the service credential");
        return Ok(None);
    }
    let named = value.to_str().ok().filter(|text| text.len() <= 512).map(Party::parse);
    match named {
        Some(Ok(party)) => Ok(Some(party.to_string())),
        _ => Err(NotNamed::NamesNobody),
    }
}

/// Who releases a refund: a release names its decider under every policy. Over the service
/// credential the header must name them; a client credential may read, quote, issue and
/// cancel, never release. Only an API that runs open (its operator told it to, and is warned)
/// releases for nobody named, and then under `self` alone.
fn releaser(headers: &HeaderMap, shown: Option<Shown>) -> Result<Option<String>, NotNamed> {
    let by = on_behalf_of(headers, shown)?;
    match (by, shown) {
        (None, Some(Shown::Client(_))) => Err(NotNamed::ReleaseByNobody { client_credential: true }),
        (None, Some(Shown::Service)) => Err(NotNamed::ReleaseByNobody { client_credential: false }),
        (by, _) => Ok(by),
    }
}

async fn confirm_refund(
    State(database): State<Database>,
    headers: HeaderMap,
    shown: Option<axum::Extension<Shown>>,
    PathId(refund_id): PathId<RefundId>,
    body: Result<Json<Decision>, JsonRejection>,
) -> Result<Json<Refund>, Problem> {
    let Json(decision) = body?;
    let by = releaser(&headers, shown.map(|shown| shown.0))?;
    Ok(Json(database.decide(refund_id, RefundStatus::Requested, by, decision.seen).await?))
}

async fn cancel_refund(
    State(database): State<Database>,
    headers: HeaderMap,
    shown: Option<axum::Extension<Shown>>,
    PathId(refund_id): PathId<RefundId>,
    body: Result<Json<Decision>, JsonRejection>,
) -> Result<Json<Refund>, Problem> {
    let Json(decision) = body?;
    let by = on_behalf_of(&headers, shown.map(|shown| shown.0))?;
    Ok(Json(database.decide(refund_id, RefundStatus::Cancelled, by, decision.seen).await?))
}

/// 201 with the new return, or 200 with the one already recorded for that order line.
async fn record_return(
    State(database): State<Database>,
    body: Result<Json<ReturnRequest>, JsonRejection>,
) -> Result<Response, Problem> {
    let Json(request) = body?;
    let (record, is_new) = database.record_return(request).await?;
    if is_new {
        Ok(created(format!("/returns/{}", record.return_id), record))
    } else {
        Ok(Json(record).into_response())
    }
}
