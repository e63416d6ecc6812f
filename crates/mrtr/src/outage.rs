//! Riding through a short outage as rounds: a tool call that meets a store or a service it
//! depends on down, having done nothing it cannot do again, may answer a 2026-07-28 caller with
//! the load-shedding round ([`crate::shedding`]): an `input_required` that carries only a
//! `requestState`, holding the call's own state and the answers it brought. The client comes
//! back after its own pause, and the call goes on where it was, on any replica; the lead's
//! answer is not lost and they are not asked again.
//!
//! The held-over state remembers when the call first met the outage, so the rounds stop after a
//! window the tool chooses: past it, [`come_back`] says no, and the tool answers with its error,
//! as it would have at once. A caller of an earlier revision cannot be told to come back:
//! [`come_back`] says no to it too, and its call waits instead ([`wait_out`]): what failed is
//! done again within the same window, in the call, while its connection stays open.

use std::{future::Future, time::Duration};

use rmcp::{ErrorData, RoleServer, model::ProtocolVersion, service::RequestContext};
use serde_json::json;

/// The `data` key that marks a tool's answer as "come back".
const COME_BACK: &str = "mrtr/come_back";

/// When the call first met the outage (seconds since 1970), as its held-over state says; in
/// the request's extensions on a retry of such a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OutageSince(pub(crate) u64);

/// The answer that sends this call's client away to come back, if it can be: a 2026-07-28 call
/// whose outage began less than `window` ago (or now). `None`: answer as without it.
pub fn come_back(context: &RequestContext<RoleServer>, window: Duration) -> Option<ErrorData> {
    if !takes_rounds(context) {
        return None;
    }
    let now = clock::Clock::system().epoch_secs();
    let since = context.extensions.get::<OutageSince>().map_or(now, |since| since.0);
    (now.saturating_sub(since) < window.as_secs())
        .then(|| ErrorData::internal_error("come back shortly", Some(json!({COME_BACK: since}))))
}

/// Whether the caller can be sent away to come back (MCP 2026-07-28 and later).
fn takes_rounds(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version().is_none_or(|version| version >= ProtocolVersion::V_2026_07_28)
}

/// How long a waiting call pauses first, and at most, between tries.
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const LONGEST_PAUSE: Duration = Duration::from_secs(1);

/// Do `step`, and for a caller that cannot be sent away to come back (an earlier revision's),
/// do it again while it fails with an outage (`is_outage`) and `window` has not passed since the
/// first failure ended, pausing 100 ms, then twice as long each time (at most a second). `step` must
/// have done nothing it cannot do again when it fails so. A 2026-07-28 caller's step is done
/// once: its call rides the outage through as rounds ([`come_back`]).
pub async fn wait_out<T, E, F: Future<Output = Result<T, E>>>(
    context: &RequestContext<RoleServer>,
    window: Duration,
    is_outage: impl Fn(&E) -> bool,
    mut step: impl FnMut() -> F,
) -> Result<T, E> {
    if takes_rounds(context) {
        return step().await;
    }
    // The window runs from the first failure: a step that took long to fail (a service that
    // did not answer within its own timeout) still gets its window.
    let mut until = None;
    let mut pause = FIRST_PAUSE;
    loop {
        let done = step().await;
        let now = tokio::time::Instant::now();
        let until = *until.get_or_insert(now + window);
        match done {
            Err(error) if is_outage(&error) && now + pause <= until => {
                tracing::info!(pause_ms = pause.as_millis() as u64, "an outage: the call waits and tries again");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(LONGEST_PAUSE);
            }
            done => return done,
        }
    }
}

/// When the outage began, if `error` is [`come_back`]'s answer.
pub(crate) fn since(error: &ErrorData) -> Option<u64> {
    error.data.as_ref()?.get(COME_BACK)?.as_u64()
}
