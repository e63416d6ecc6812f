//! Waiting is not work: a call that waits for its person gives its tool-call slot back.
//!
//! On a 2025 connection a question goes out on the back-channel and the call waits for the
//! answer, up to a round's lifetime; a payment sign-in waits for the provider to see it. Such a
//! call does nothing while it waits, so it should not hold one of the server's bounded slots for
//! work ([`crate::shedding`]): sixty-four unanswered questions would otherwise stop every other
//! call for ten minutes. The boundary gives every tool call a [`Work`] (in its request's
//! extensions), holding its slot; [`Work::wait_for_person`] lets the slot go for the wait, takes
//! a seat in a [`WaitingRoom`] instead, and takes a slot again when the person has answered.
//!
//! The room has its own bounds: seats for the whole server, and for each caller (the principal
//! the transport authenticated; a caller nobody authenticated is bounded by the server's seats
//! alone). A wait that finds no seat is refused at once with [`Busy`], before anything is asked.
//!
//! A server that is stopping closes the room ([`WaitingRoom::close_after`]): waits still going
//! then end with [`Busy::Stopping`], so each call can say so in words and finish while its
//! connection is still there, and new waits are refused at once.
//!
//! A 2025 session that replicas share may be moved by a load balancer while a question waits in
//! it: the answer then reaches another replica, which cannot hand it to this call. The transport
//! that shares sessions says so through a [`SessionWatch`] in the request's extensions; the wait
//! ends with [`Busy::Moved`] when it fires, so the call says in words to call again (and is
//! asked again where the session now is) instead of waiting out a round for an answer that went
//! elsewhere.

use std::{
    collections::HashMap,
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use caller::Principal;
use rmcp::{RoleServer, service::RequestContext};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use crate::{
    shedding::{Shedding, Slot},
    transport_extensions::from_transport,
};

/// Why a call could not wait for its person: every seat for waiting is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Busy {
    /// Every seat of the server is taken; the number is the server's limit.
    #[error("{0} questions are already waiting for an answer on this server")]
    Server(usize),
    /// Every seat this caller may hold is taken; the number is the limit per caller.
    #[error("{0} of this caller's questions are already waiting for an answer")]
    Caller(usize),
    /// The server is stopping: its room is closed ([`WaitingRoom::close_after`]).
    #[error("this server is stopping")]
    Stopping,
    /// The call's session was taken up by another server while its question waited: the answer
    /// goes there ([`SessionWatch`]).
    #[error("this call's session moved to another server")]
    Moved,
}

/// Where the session a call waits in is served. A transport that shares 2025 sessions among
/// replicas puts an `Arc<dyn SessionWatch>` in the request's extensions (directly, or in the
/// HTTP request parts' extensions); [`Work::wait_for_person`] ends a wait with [`Busy::Moved`]
/// once [`SessionWatch::moved`] resolves.
pub trait SessionWatch: Send + Sync + 'static {
    /// Resolves once another server has taken the session up (a request of it reached that
    /// server after this call's request reached this one). Never, while it stays here.
    fn moved(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

impl std::fmt::Debug for dyn SessionWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionWatch")
    }
}

/// Where calls wait for their people, and how many may.
#[derive(Debug, Clone)]
pub struct WaitingRoom {
    seats: Arc<Semaphore>,
    limit: usize,
    per_caller: usize,
    callers: Callers,
    /// True once the server has stopped waiting for people.
    closed: Arc<watch::Sender<bool>>,
}

/// How many seats each caller holds.
type Callers = Arc<Mutex<HashMap<Principal, usize>>>;

/// A seat in the room, given back when dropped.
#[derive(Debug)]
struct Seat {
    _seat: OwnedSemaphorePermit,
    caller: Option<(Principal, Callers)>,
}

impl Drop for Seat {
    fn drop(&mut self) {
        if let Some((caller, callers)) = &self.caller {
            let mut callers = callers.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(count) = callers.get_mut(caller) {
                *count -= 1;
                if *count == 0 {
                    callers.remove(caller);
                }
            }
        }
    }
}

impl WaitingRoom {
    /// At most `limit` calls waiting at once, and `per_caller` of one caller's (each at least one).
    pub fn new(limit: usize, per_caller: usize) -> Self {
        let limit = limit.max(1);
        Self {
            seats: Arc::new(Semaphore::new(limit)),
            limit,
            per_caller: per_caller.max(1),
            callers: Arc::default(),
            closed: Arc::new(watch::channel(false).0),
        }
    }

    /// How many calls wait for their people now.
    pub fn waiting(&self) -> usize {
        self.limit.saturating_sub(self.seats.available_permits())
    }

    /// Stop waiting for people `after` from now: waits still going then end with
    /// [`Busy::Stopping`]; from now, new waits are refused with it at once.
    pub fn close_after(&self, after: Duration) {
        let closed = self.closed.clone();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            closed.send_replace(true);
        });
        self.seats.close();
    }

    /// Resolves once the room is closed.
    async fn closed(&self) {
        let mut closed = self.closed.subscribe();
        let _ = closed.wait_for(|closed| *closed).await;
    }

    fn seat(&self, caller: Option<&Principal>) -> Result<Seat, Busy> {
        if self.seats.is_closed() {
            return Err(Busy::Stopping);
        }
        let seat = self.seats.clone().try_acquire_owned().map_err(|_| Busy::Server(self.limit))?;
        let Some(caller) = caller else { return Ok(Seat { _seat: seat, caller: None }) };
        let mut callers = self.callers.lock().unwrap_or_else(PoisonError::into_inner);
        let count = callers.entry(caller.clone()).or_default();
        if *count >= self.per_caller {
            return Err(Busy::Caller(self.per_caller));
        }
        *count += 1;
        Ok(Seat { _seat: seat, caller: Some((caller.clone(), self.callers.clone())) })
    }
}

/// One tool call's hold on the server: its slot for work, if the server bounds them, and where
/// it may wait for its person. In the request's extensions, as the boundary put it there.
#[derive(Debug)]
pub struct Work {
    held: Mutex<Held>,
    shedding: Option<Shedding>,
    room: WaitingRoom,
    caller: Option<Principal>,
    session: Option<Arc<dyn SessionWatch>>,
}

#[derive(Debug, Default)]
struct Held {
    slot: Option<Slot>,
    seat: Option<Seat>,
}

impl Work {
    /// A call working in `slot` (if `shedding` bounds calls), that waits in `room`, for `caller`.
    pub fn new(slot: Option<Slot>, shedding: Option<Shedding>, room: WaitingRoom, caller: Option<Principal>) -> Self {
        Self { held: Mutex::new(Held { slot, seat: None }), shedding, room, caller, session: None }
    }

    /// The same, in a session that `session` watches: a wait ends when it moves.
    pub fn in_session(mut self, session: Option<Arc<dyn SessionWatch>>) -> Self {
        self.session = session;
        self
    }

    /// The call's own, as the boundary put it in `context`.
    pub fn of(context: &RequestContext<RoleServer>) -> Option<Arc<Work>> {
        context.extensions.get::<Arc<Work>>().cloned()
    }

    /// The watch on the call's session that the transport put in `context`, if any.
    pub fn session_of(context: &RequestContext<RoleServer>) -> Option<Arc<dyn SessionWatch>> {
        from_transport::<Arc<dyn SessionWatch>>(context).cloned()
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Run `waiting` (a wait for the person) with a seat in the room instead of a slot for
    /// work; then take a slot again (waiting for one: the person has answered, and the call
    /// should finish). A wait within a wait keeps the seat it has. [`Busy`] when no seat is free.
    pub async fn wait_for_person<F: Future>(&self, waiting: F) -> Result<F::Output, Busy> {
        if self.held().seat.is_some() {
            return Ok(waiting.await);
        }
        let seat = self.room.seat(self.caller.as_ref())?;
        let slot = {
            let mut held = self.held();
            held.seat = Some(seat);
            held.slot.take()
        };
        drop(slot);
        let moved = async {
            match &self.session {
                Some(session) => session.moved().await,
                None => std::future::pending().await,
            }
        };
        let outcome = tokio::select! {
            outcome = waiting => Ok(outcome),
            () = self.room.closed() => Err(Busy::Stopping),
            () = moved => Err(Busy::Moved),
        };
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(busy) => {
                // The wait ended unanswered: the call ends in words, and its seat is another's.
                self.held().seat = None;
                return Err(busy);
            }
        };
        let slot = match &self.shedding {
            Some(shedding) => Some(shedding.enter().await),
            None => None,
        };
        let mut held = self.held();
        held.slot = slot;
        held.seat = None;
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_waiting_call_gives_its_slot_to_work_and_takes_it_back() {
        let shedding = Shedding::new(1);
        let work = Work::new(shedding.try_enter(false).await, Some(shedding.clone()), WaitingRoom::new(4, 4), None);
        assert!(shedding.try_enter(false).await.is_none(), "the one slot is the call's");
        let other_worked = work.wait_for_person(async { shedding.try_enter(false).await.is_some() }).await.unwrap();
        assert!(other_worked, "while the call waits, another takes the slot");
        assert!(shedding.try_enter(false).await.is_none(), "after the wait, the slot is the call's again");
    }

    #[tokio::test]
    async fn the_room_bounds_the_server_and_each_caller() {
        let room = WaitingRoom::new(3, 2);
        let alice = || Work::new(None, None, room.clone(), Some(Principal::new("https://issuer.example", "alice")));
        let (first, second, third) = (alice(), alice(), alice());
        let (hold_1, release_1) = tokio::sync::oneshot::channel::<()>();
        let (hold_2, release_2) = tokio::sync::oneshot::channel::<()>();
        let waits = async {
            let a = first.wait_for_person(release_1);
            let b = second.wait_for_person(release_2);
            tokio::join!(a, b)
        };
        let checks = async {
            tokio::task::yield_now().await;
            assert_eq!(third.wait_for_person(async {}).await, Err(Busy::Caller(2)));
            let bob = Work::new(None, None, room.clone(), Some(Principal::new("https://issuer.example", "bob")));
            assert_eq!(bob.wait_for_person(async { 7 }).await, Ok(7), "another caller has a seat");
            let carol = Work::new(None, None, room.clone(), None);
            let (hold_3, release_3) = tokio::sync::oneshot::channel::<()>();
            let waiting = carol.wait_for_person(release_3);
            let full = async {
                tokio::task::yield_now().await;
                let dave = Work::new(None, None, room.clone(), Some(Principal::new("https://issuer.example", "dave")));
                assert_eq!(dave.wait_for_person(async {}).await, Err(Busy::Server(3)));
                drop(hold_3);
            };
            let _ = tokio::join!(waiting, full);
            drop((hold_1, hold_2));
        };
        let _ = tokio::join!(waits, checks);
        // Every seat is back.
        assert_eq!(third.wait_for_person(async { 1 }).await, Ok(1));
    }

    #[tokio::test]
    async fn a_closed_room_ends_the_waits_and_takes_no_more() {
        let room = WaitingRoom::new(4, 4);
        let work = Work::new(None, None, room.clone(), None);
        room.close_after(Duration::ZERO);
        assert_eq!(work.wait_for_person(std::future::pending::<()>()).await, Err(Busy::Stopping));
        assert_eq!(room.waiting(), 0, "its seat is given back");
        let later = Work::new(None, None, room, None);
        assert_eq!(later.wait_for_person(async {}).await, Err(Busy::Stopping));
    }

    /// A session that moves when told.
    struct Movable(watch::Sender<bool>);

    impl SessionWatch for Movable {
        fn moved(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
            let mut moved = self.0.subscribe();
            Box::pin(async move {
                let _ = moved.wait_for(|moved| *moved).await;
            })
        }
    }

    #[tokio::test]
    async fn a_wait_ends_when_its_session_moves_and_not_before() {
        let room = WaitingRoom::new(2, 2);
        let session = Arc::new(Movable(watch::channel(false).0));
        let work = Work::new(None, None, room.clone(), None).in_session(Some(session.clone()));
        assert_eq!(work.wait_for_person(async { 3 }).await, Ok(3), "a session that stays: the answer");
        let (answer, answered) = tokio::sync::oneshot::channel::<u8>();
        let waiting = work.wait_for_person(answered);
        let moving = async {
            tokio::task::yield_now().await;
            session.0.send_replace(true);
        };
        let (waited, ()) = tokio::join!(waiting, moving);
        assert_eq!(waited, Err(Busy::Moved));
        drop(answer);
        assert_eq!(room.waiting(), 0, "its seat is given back");
    }

    #[tokio::test]
    async fn a_wait_within_a_wait_keeps_its_seat() {
        let room = WaitingRoom::new(1, 1);
        let work = Work::new(None, None, room, Some(Principal::new("https://issuer.example", "alice")));
        let inner = work.wait_for_person(async { work.wait_for_person(async { 5 }).await }).await;
        assert_eq!(inner, Ok(Ok(5)));
    }
}
