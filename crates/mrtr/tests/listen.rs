//! A client's `subscriptions/listen` stream through the transport that numbers its requests
//! from 1: the acknowledgment and every notification reach the stream (they name it by its id
//! on the wire), and cancelling it ends the server's side.

use std::sync::{Arc, Mutex};

use mrtr::client::{Client, ScriptedUser};
use rmcp::{
    ErrorData, ServerHandler, ServiceExt,
    model::{ServerCapabilities, ServerConfig, ServerNotification, SubscriptionFilter},
    service::{SubscriptionContext, SubscriptionSink},
};
use tokio::sync::{Notify, watch};

/// A server whose tools change when the test says: it keeps each listen's sink, counts the
/// listens open, and says when one ends.
#[derive(Clone, Default)]
struct Changing {
    sinks: Arc<Mutex<Vec<SubscriptionSink>>>,
    open: Arc<watch::Sender<usize>>,
    ended: Arc<Notify>,
}

impl ServerHandler for Changing {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        self.sinks.lock().unwrap().push(subscription.sink().clone());
        self.open.send_modify(|open| *open += 1);
        subscription.cancelled().await;
        self.ended.notify_one();
        Ok(())
    }
}

#[tokio::test]
async fn a_listen_streams_notifications_named_by_its_wire_id_and_its_cancel_reaches_the_server() {
    let server = Changing::default();
    let mut open = server.open.subscribe();
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    tokio::spawn({
        let server = server.clone();
        async move {
            if let Ok(running) = server.serve(theirs).await {
                let _ = running.waiting().await;
            }
        }
    });
    let client = Client::connect(ScriptedUser::unable_to_ask(), ours).await.unwrap();
    // A request first, so the listen's id on the wire is not its id in the client.
    client.peer().list_all_tools().await.unwrap();
    let tools = SubscriptionFilter::builder().tools_list_changed().build();
    let wait = std::time::Duration::from_secs(10);
    let mut stream = tokio::time::timeout(wait, client.peer().listen(tools)).await.expect("acknowledged").unwrap();
    open.wait_for(|open| *open == 1).await.unwrap();
    let sink = server.sinks.lock().unwrap()[0].clone();
    sink.notify_tool_list_changed().await.unwrap();
    let told = tokio::time::timeout(wait, stream.next()).await.expect("told");
    assert!(matches!(told, Ok(Some(ServerNotification::ToolListChangedNotification(_)))), "{told:?}");
    stream.cancel().await.unwrap();
    assert!(tokio::time::timeout(wait, server.ended.notified()).await.is_ok(), "the server's listen did not end");
    client.close().await.unwrap();
}
