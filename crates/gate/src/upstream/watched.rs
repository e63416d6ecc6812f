//! The resources whose updates the gate's hosts asked of one upstream, each asked for while a
//! host holds it and released when the last one lets go.
//!
//! A host holds a resource through a [`Watching`]: a 2026-07-28 host while its
//! `subscriptions/listen` stream naming it is open, a 2025 session from its
//! `resources/subscribe` until its `resources/unsubscribe` or its end (an ended session's are
//! let go when the gate next sees it ended: before any hold is taken, or at an update). The
//! first hold asks the upstream (a 2025 upstream's `resources/subscribe`; a 2026-07-28 one's is
//! the filter of the stream the gate listens on, which the connection opens again naming it);
//! the last one let go releases it: its updates are relayed no more, it no longer counts toward
//! an upstream's [`WATCHED_AT_MOST`] (so a host cannot use them up by asking and leaving), a
//! 2025 upstream is sent `resources/unsubscribe`, and a 2026-07-28 one's next stream leaves it
//! out.

use std::{collections::BTreeMap, sync::Arc};

use rmcp::{
    RoleClient,
    model::{SubscribeRequestParams, UnsubscribeRequestParams},
    service::Peer,
};
use tokio::sync::watch;

/// At most this many resources' updates are asked of one upstream at once for the gate's
/// hosts; a host asking for another is refused until one is let go.
pub const WATCHED_AT_MOST: usize = 1_000;

/// The gauge of how many resources each upstream is asked for now (of its [`WATCHED_AT_MOST`]),
/// by `upstream`.
const WATCHED_NOW: &str = "fernhill_gate_resources_watched";

/// Each resource asked of the upstream, and how many holds the gate's hosts have on it.
pub type Holds = BTreeMap<String, usize>;

/// The resources one upstream is asked to tell the updates of.
#[derive(Debug)]
pub struct Watched {
    upstream: String,
    /// Told to the connection's stream and relay when a resource is asked for or released (a
    /// hold more or less on one already asked for tells them nothing).
    holds: watch::Sender<Holds>,
    /// Held while a resource is asked for or released at the upstream, so that the two never
    /// cross: a host asking for one another host's request is still asking for waits for its
    /// answer, and a release finds it held again skips its `resources/unsubscribe`.
    asking: tokio::sync::Mutex<()>,
    /// A 2025 upstream, asked with `resources/subscribe` and `resources/unsubscribe`; `None`
    /// for a 2026-07-28 one, asked by the filter of the stream the gate listens on.
    subscribed_at: Option<Peer<RoleClient>>,
}

impl Watched {
    /// The resources `upstream` is asked for, told through `holds`; a 2025 upstream's peer is
    /// `subscribed_at`.
    pub fn new(upstream: &str, holds: watch::Sender<Holds>, subscribed_at: Option<Peer<RoleClient>>) -> Arc<Watched> {
        let watched =
            Watched { upstream: upstream.to_owned(), holds, asking: tokio::sync::Mutex::new(()), subscribed_at };
        watched.counted(&watched.holds.borrow());
        Arc::new(watched)
    }

    /// The gauge set to the resources asked for in `holds` (told from inside each change, so
    /// that two changes at once cannot leave it at the earlier one's count).
    fn counted(&self, holds: &Holds) {
        metrics::gauge!(WATCHED_NOW, "upstream" => self.upstream.clone()).set(holds.len() as f64);
    }

    /// What the connection's stream and relay read: each resource asked for, changed when one
    /// is asked for or released.
    pub fn subscribe(&self) -> watch::Receiver<Holds> {
        self.holds.subscribe()
    }

    /// A hold on the resource `uri`, asked of the upstream if no host held it; refused past
    /// [`WATCHED_AT_MOST`], or where a 2025 upstream refuses it (then not held: a later host
    /// asks again).
    pub async fn hold(self: &Arc<Self>, uri: &str) -> Result<Watching, Refused> {
        let _turn = self.asking.lock().await;
        let mut full = false;
        let added = self.holds.send_if_modified(|holds| {
            if let Some(held) = holds.get_mut(uri) {
                *held += 1;
                return false;
            }
            full = holds.len() >= WATCHED_AT_MOST;
            if full {
                return false;
            }
            holds.insert(uri.to_owned(), 1);
            self.counted(holds);
            true
        });
        if full {
            return Err(Refused::Full);
        }
        // Made before the upstream is asked, so that a hold whose asking is dropped half-way
        // is let go, not left counted; until the upstream says yes, letting it go asks nothing.
        let mut watching = Watching { watched: self.clone(), uri: uri.to_owned(), asked: true };
        if let Some(peer) = self.subscribed_at.as_ref().filter(|_| added) {
            watching.asked = false;
            // rmcp marks `resources/subscribe` deprecated as 2025's alone: this is a 2025 upstream.
            #[allow(deprecated)]
            if let Err(error) = peer.subscribe(SubscribeRequestParams::new(uri)).await {
                // Not kept: the hold just made is the only one (others wait for their turn).
                drop(watching);
                return Err(Refused::Upstream(error));
            }
            watching.asked = true;
        }
        Ok(watching)
    }

    /// One hold on `uri` let go: the resource released once none is left (and unsubscribed
    /// from, where it was `asked` of a 2025 upstream).
    fn let_go(self: &Arc<Self>, uri: &str, asked: bool) {
        let released = self.holds.send_if_modified(|holds| match holds.get_mut(uri) {
            Some(held) if *held > 1 => {
                *held -= 1;
                false
            }
            Some(_) => {
                holds.remove(uri);
                self.counted(holds);
                true
            }
            None => false,
        });
        if !released {
            return;
        }
        tracing::debug!(upstream = %self.upstream, %uri, "no host asks for a resource's updates now: released");
        let (Some(peer), true, Ok(runtime)) =
            (self.subscribed_at.clone(), asked, tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let (watched, uri) = (self.clone(), uri.to_owned());
        runtime.spawn(async move {
            let _turn = watched.asking.lock().await;
            if watched.holds.borrow().contains_key(&uri) {
                // Held again meanwhile, and asked for again: it stays.
                return;
            }
            #[allow(deprecated)] // resources/unsubscribe: 2025's, what this upstream speaks
            if let Err(error) = peer.unsubscribe(UnsubscribeRequestParams::new(&uri)).await {
                tracing::warn!(upstream = %watched.upstream, %uri, %error, "a resource no host asks for could not be unsubscribed from");
            }
        });
    }
}

/// A host's hold on one resource's updates, let go when dropped.
#[derive(Debug)]
pub struct Watching {
    watched: Arc<Watched>,
    uri: String,
    /// Whether the upstream was asked for it and said yes (or needed no asking).
    asked: bool,
}

impl Watching {
    /// The resource held.
    pub fn uri(&self) -> &str {
        &self.uri
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.watched.let_go(&self.uri, self.asked);
    }
}

/// Why a resource's updates are not held.
#[derive(Debug)]
pub enum Refused {
    /// The upstream has [`WATCHED_AT_MOST`] resources asked of it already.
    Full,
    /// A 2025 upstream refused `resources/subscribe`, or did not answer it.
    Upstream(rmcp::ServiceError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_resource_is_released_when_its_last_hold_is_let_go_and_makes_room_for_another() {
        let watched = Watched::new("shop", watch::Sender::new(Holds::new()), None);
        let told = watched.subscribe();
        let mut holds = Vec::new();
        for n in 0..WATCHED_AT_MOST {
            holds.push(watched.hold(&format!("file:///r{n}")).await.unwrap());
        }
        assert!(matches!(watched.hold("file:///more").await, Err(Refused::Full)));
        // A resource already asked for takes no room: held twice, it stays until both let go.
        let again = watched.hold("file:///r0").await.unwrap();
        drop(holds.swap_remove(0));
        assert_eq!(told.borrow().get("file:///r0"), Some(&1));
        assert!(matches!(watched.hold("file:///more").await, Err(Refused::Full)));
        drop(again);
        assert!(!told.borrow().contains_key("file:///r0"));
        let more = watched.hold("file:///more").await.unwrap();
        assert_eq!((told.borrow().len(), more.uri()), (WATCHED_AT_MOST, "file:///more"));
        drop(holds);
        assert_eq!(told.borrow().keys().collect::<Vec<_>>(), ["file:///more"]);
    }
}
