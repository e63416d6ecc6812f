//! The HTTP routes: JSON endpoints for the MCP server (problems for errors)
//! and HTML pages for the support lead's browser.
//!
//! Handlers are thin: they parse the path and body, run one
//! [`ProviderState`] operation (quick, in memory) and turn the outcome into
//! a response.

use std::sync::Arc;

use axum::extract::rejection::{FormRejection, JsonRejection};
use axum::extract::{DefaultBodyLimit, FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use serde::Deserialize;
use tower_http::trace::TraceLayer;
use web_service::problem::{method_not_allowed, no_such_route};

use crate::ids::{FlowId, IdError};
use crate::model::{FlowStatus, NewFlow, PaymentRequest};
use crate::pages::Page;
use crate::problem::Problem;
use crate::state::{ProviderState, SignIn, StateError};

/// Largest request body accepted (16 KiB); every body here is tiny.
pub const BODY_LIMIT: usize = 16 * 1024;

/// The provider's routes over `state`.
pub fn router(state: Arc<ProviderState>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/flows", post(register_flow))
        .route("/flows/{flow_id}", get(get_flow))
        .route("/payments", post(pay))
        .route("/connect/{flow_id}", get(connect_page).post(sign_in))
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(no_such_route)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// The `{flow_id}` path parameter of a JSON endpoint (400 when malformed).
struct PathFlowId(FlowId);

impl<S: Send + Sync> FromRequestParts<S> for PathFlowId {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Problem> {
        let Path(raw) = Path::<String>::from_request_parts(parts, state).await?;
        FlowId::parse(&raw).map(PathFlowId).map_err(|error| Problem::from(StateError::from(error)))
    }
}

/// The `{flow_id}` path parameter of a page; anything that is not a flow ID
/// gets the same 404 page as an unknown flow.
struct PageFlowId(FlowId);

impl<S: Send + Sync> FromRequestParts<S> for PageFlowId {
    type Rejection = Page;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Page> {
        let Ok(Path(raw)) = Path::<String>::from_request_parts(parts, state).await else {
            return Err(Page::not_found());
        };
        FlowId::parse(&raw).map(PageFlowId).map_err(|_: IdError| Page::not_found())
    }
}

/// 201 for a new resource, 200 for one that already existed.
fn created_or_existing<T: serde::Serialize>(created: bool, location: Option<String>, body: T) -> Response {
    match (created, location) {
        (true, Some(location)) => (StatusCode::CREATED, [(header::LOCATION, location)], Json(body)).into_response(),
        (true, None) => (StatusCode::CREATED, Json(body)).into_response(),
        (false, _) => Json(body).into_response(),
    }
}

async fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok" }))
}

/// `POST /flows`: 201 with a new flow, 200 with the same one again, 409 if
/// the ID is taken by a different flow.
async fn register_flow(
    State(state): State<Arc<ProviderState>>,
    body: Result<Json<NewFlow>, JsonRejection>,
) -> Result<Response, Problem> {
    let Json(new) = body?;
    let (flow, created) = state.register(&new)?;
    let location = format!("/flows/{}", flow.flow_id);
    Ok(created_or_existing(created, Some(location), flow))
}

async fn get_flow(
    State(state): State<Arc<ProviderState>>,
    PathFlowId(flow_id): PathFlowId,
) -> Result<Response, Problem> {
    Ok(Json(state.flow(&flow_id)?).into_response())
}

/// `POST /payments`: 201 with a new payment, 200 with the refund's earlier one.
async fn pay(
    State(state): State<Arc<ProviderState>>,
    body: Result<Json<PaymentRequest>, JsonRejection>,
) -> Result<Response, Problem> {
    let Json(request) = body?;
    let (payment, created) = state.pay(&request)?;
    Ok(created_or_existing(created, None, payment))
}

/// `GET /connect/{flow_id}`: the sign-in page, or the finished page.
async fn connect_page(State(state): State<Arc<ProviderState>>, PageFlowId(flow_id): PageFlowId) -> Page {
    match state.connect_view(&flow_id) {
        Ok(view) if view.status == FlowStatus::Finished => Page::already_connected(&view),
        Ok(view) => Page::sign_in(&flow_id, &view),
        Err(_) => Page::not_found(),
    }
}

/// The sign-in form; a missing field reads as empty.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SignInForm {
    username: String,
    password: String,
    csrf: String,
}

/// `POST /connect/{flow_id}`: a sign-in from the connect page.
async fn sign_in(
    State(state): State<Arc<ProviderState>>,
    PageFlowId(flow_id): PageFlowId,
    headers: HeaderMap,
    form: Result<Form<SignInForm>, FormRejection>,
) -> Page {
    let Ok(view) = state.connect_view(&flow_id) else {
        return Page::not_found();
    };
    // A browser marks a form posted from another site; refuse it outright.
    if headers.get("sec-fetch-site").is_some_and(|site| site == "cross-site") {
        tracing::warn!(%flow_id, "sign-in refused: form posted from another site");
        return Page::bad_csrf();
    }
    let Form(form) = match form {
        Ok(form) => form,
        Err(rejection) => return Page::bad_form(&rejection.body_text()),
    };
    match state.sign_in(&flow_id, &form.csrf, &form.username, &form.password) {
        Ok(SignIn::Connected) => Page::connected(&view),
        Ok(SignIn::WrongPassword) => Page::wrong_password(&flow_id, &view),
        Ok(SignIn::WrongPerson) => Page::wrong_person(&flow_id, &view),
        Err(StateError::BadCsrf(_)) => Page::bad_csrf(),
        Err(_) => Page::not_found(),
    }
}
