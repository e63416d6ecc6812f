//! Who is calling, when the transport authenticated someone.
//!
//! On stdio nobody is authenticated: the host's user is the one who launched the server. Over
//! HTTP with authorization, the transport's middleware puts a [`mrtr::boundary::Principal`] in
//! the request's extensions; the tools act for that person, and the boundary binds every state
//! to them. Both read it the same way.

use oauth_resource::Caller;
use rmcp::{RoleServer, service::RequestContext};

/// The authenticated caller's subject (the token's `sub`), if any.
pub fn subject(context: &RequestContext<RoleServer>) -> Option<String> {
    let parts = context.extensions.get::<http::request::Parts>();
    let caller = context.extensions.get::<Caller>().or_else(|| parts?.extensions.get::<Caller>());
    match caller {
        Some(caller) => Some(caller.subject.clone()),
        None => mrtr::boundary::principal(context),
    }
}
