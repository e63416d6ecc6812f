//! What an `Idempotency-Key` already has when a write names it: both stores answer with it.

/// What an idempotency key already has ([`super::Store::idempotency_begin`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begun {
    /// Nothing: run the write (its key is now in flight).
    Fresh,
    /// The first write's answer.
    Done { status: u16, body: Vec<u8> },
    /// The first write is still being answered.
    InFlight,
    /// The key was used for another request.
    Reused,
}
