//! What the transport put in a request for the handler to read: a value of type `T` in rmcp's
//! own extensions (a transport that is not HTTP puts it there), or, over Streamable HTTP, in
//! the extensions of the HTTP request's parts that rmcp hands the handler (where the serving
//! shell's middleware put it). The caller, the slot for the JSON-RPC error code, and the watch
//! on a shared session all arrive this way.

use rmcp::{RoleServer, service::RequestContext};

/// The `T` the transport put in `context`'s request, if any.
pub(crate) fn from_transport<T: Send + Sync + 'static>(context: &RequestContext<RoleServer>) -> Option<&T> {
    context.extensions.get::<T>().or_else(|| context.extensions.get::<http::request::Parts>()?.extensions.get::<T>())
}
