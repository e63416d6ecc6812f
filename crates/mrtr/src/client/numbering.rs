//! JSON-RPC ids from 1 rather than rmcp's 0.
//!
//! rmcp's client numbers its requests from 0 and offers no way to choose otherwise. The Python
//! and TypeScript SDKs number from 1, and some peers still treat a falsy id of 0 as "no id".
//! This transport adds one to the id of every request the client sends and takes one off the
//! id of every response that comes back, so the wire reads as the other SDKs' wires do and
//! traces of one flow line up across SDKs. Requests from the server and the client's answers
//! to them pass untouched.
//!
//! Every other place a message names one of the client's requests by its id is shifted the
//! same way: a `subscriptions/listen` stream's notifications and its final result (their
//! `_meta` subscription id), the client's `notifications/cancelled`, a server's cancelling of a
//! listen, and a server request that came on the stream of one of the client's requests.

use std::collections::HashSet;

use rmcp::{
    RoleClient,
    model::{
        ClientNotification, ClientRequest, GetExtensions, GetMeta, JsonRpcMessage, NumberOrString, ServerNotification,
        ServerResult,
    },
    service::{InboundStreamOrigin, RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};

/// Wraps a client transport so its outgoing request ids start at 1.
pub struct FromOne<T> {
    inner: T,
    /// The ids, on the wire, of the `subscriptions/listen` requests sent (a server's
    /// `notifications/cancelled` names one of them, or a request of its own).
    listens: HashSet<NumberOrString>,
}

impl<T> FromOne<T> {
    /// Wrap `inner`: the requests sent through it are numbered from 1.
    pub fn new(inner: T) -> Self {
        Self { inner, listens: HashSet::new() }
    }
}

fn shift(id: &mut NumberOrString, by: i64) {
    if let NumberOrString::Number(n) = id {
        *n = n.saturating_add(by);
    }
}

/// A server's `notification` as the client numbered what it names: a listen stream's
/// subscription id, and a cancelled listen's id (`listens` holds their wire ids).
fn received_notification(notification: &mut ServerNotification, listens: &HashSet<NumberOrString>) {
    if let ServerNotification::CancelledNotification(cancelled) = notification
        && let Some(id) = cancelled.params.request_id.as_mut()
        && listens.contains(id)
    {
        shift(id, -1);
    }
    // Read first: a notification without a subscription is left as it came.
    if let Some(mut id) = notification.get_meta().subscription_id() {
        shift(&mut id, -1);
        notification.get_meta_mut().set_subscription_id(id);
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for FromOne<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        mut item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        match &mut item {
            JsonRpcMessage::Request(request) => {
                shift(&mut request.id, 1);
                if let ClientRequest::SubscriptionsListenRequest(_) = request.request {
                    self.listens.insert(request.id.clone());
                }
            }
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) = &mut notification.notification
                    && let Some(id) = cancelled.params.request_id.as_mut()
                {
                    shift(id, 1);
                    self.listens.remove(id);
                }
            }
            _ => {}
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let mut item = self.inner.receive().await?;
        match &mut item {
            JsonRpcMessage::Response(response) => {
                self.listens.remove(&response.id);
                shift(&mut response.id, -1);
                if let ServerResult::SubscriptionsListenResult(ended) = &mut response.result
                    && let Some(mut id) = ended.meta.subscription_id()
                {
                    shift(&mut id, -1);
                    ended.meta.set_subscription_id(id);
                }
            }
            JsonRpcMessage::Error(error) => {
                if let Some(id) = &mut error.id {
                    self.listens.remove(id);
                    shift(id, -1);
                }
            }
            JsonRpcMessage::Notification(notification) => {
                received_notification(&mut notification.notification, &self.listens);
            }
            JsonRpcMessage::Request(request) => {
                if let Some(InboundStreamOrigin::OutboundRequest(id)) = request.request.extensions_mut().get_mut() {
                    shift(id, -1);
                }
            }
        }
        Some(item)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
