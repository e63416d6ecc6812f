//! JSON-RPC ids from 1 rather than rmcp's 0.
//!
//! rmcp's client numbers its requests from 0 and offers no way to choose otherwise. The Python
//! and TypeScript SDKs number from 1, and some peers still treat a falsy id of 0 as "no id".
//! This transport adds one to the id of every request the client sends and takes one off the
//! id of every response that comes back, so the wire reads as the other SDKs' wires do and
//! traces of one flow line up across SDKs. Requests from the server and the client's answers
//! to them pass untouched.

use rmcp::{
    RoleClient,
    model::{JsonRpcMessage, NumberOrString},
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};

/// Wraps a client transport so its outgoing request ids start at 1.
pub struct FromOne<T> {
    inner: T,
}

impl<T> FromOne<T> {
    /// Wrap `inner`: the requests sent through it are numbered from 1.
    pub fn new(inner: T) -> Self {
        Self { inner }
    }
}

fn shift(id: &mut NumberOrString, by: i64) {
    if let NumberOrString::Number(n) = id {
        *n = n.saturating_add(by);
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for FromOne<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        mut item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(request) = &mut item {
            shift(&mut request.id, 1);
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let mut item = self.inner.receive().await?;
        match &mut item {
            JsonRpcMessage::Response(response) => shift(&mut response.id, -1),
            JsonRpcMessage::Error(error) => {
                if let Some(id) = &mut error.id {
                    shift(id, -1);
                }
            }
            _ => {}
        }
        Some(item)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
