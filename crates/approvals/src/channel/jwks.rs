//! The public keys of the receipts this server signs (`approvals::receipt`), as a JWK Set at
//! `/.well-known/jwks.json`: whoever holds a receipt checks it against them offline
//! (`fernhill verify receipt`). Every key of the ring is published, the one that signs first,
//! so a receipt signed before a rotation verifies while its key is kept.

use axum::{Json, Router, http::header, response::IntoResponse, routing::get};

/// Where the keys are served.
pub const PATH: &str = "/.well-known/jwks.json";

/// The route that serves `keys`' public half.
pub fn routes(keys: &crate::ReceiptKeys) -> Router {
    let set = keys.jwks();
    Router::new().route(
        PATH,
        get(move || {
            let set = set.clone();
            // A verifier may keep them a while; a rotation publishes the new key beside the old.
            std::future::ready(([(header::CACHE_CONTROL, "public, max-age=300")], Json(set)).into_response())
        }),
    )
}
