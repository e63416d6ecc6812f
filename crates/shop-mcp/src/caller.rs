//! Who is calling, when the transport authenticated someone.
//!
//! On stdio nobody is authenticated: the host's user is the one who launched the server. Over
//! HTTP with authorization, the transport puts a [`mrtr::boundary::Principal`] in the request's
//! extensions, and the tools act for that person.

use mrtr::boundary::Principal;
use rmcp::{RoleServer, service::RequestContext};

/// The authenticated caller's subject, if any.
pub fn subject(context: &RequestContext<RoleServer>) -> Option<String> {
    context.extensions.get::<Principal>().map(|Principal(who)| who.clone())
}
