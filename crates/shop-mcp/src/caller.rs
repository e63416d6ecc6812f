//! Who is calling, when the transport authenticated someone.
//!
//! On stdio nobody is authenticated: the host's user is the one who launched the server. Over
//! HTTP with authorization, the transport's middleware puts a [`mrtr::boundary::Principal`] in
//! the request's extensions; the tools act for that person, and the boundary binds every state
//! to them. Both read it the same way.

use rmcp::{RoleServer, service::RequestContext};

/// The authenticated caller's subject, if any.
pub fn subject(context: &RequestContext<RoleServer>) -> Option<String> {
    mrtr::boundary::principal(context)
}
