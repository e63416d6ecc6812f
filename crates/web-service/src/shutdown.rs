//! Stopping calmly: SIGINT or SIGTERM ends a server after the requests in flight finish.

use std::{future::Future, pin::Pin};

/// Resolves on SIGINT or SIGTERM, so requests in flight finish before the process exits.
///
/// The handlers are installed when this is called, not when the future is first polled: a
/// signal that arrives after a server printed its address but before it polled its shutdown
/// future still stops it calmly instead of killing it. Call it inside a Tokio runtime.
pub fn signal() -> Pin<Box<dyn Future<Output = ()> + Send>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let (Ok(mut terminate), Ok(mut interrupt)) =
            (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
        {
            return Box::pin(async move {
                tokio::select! {
                    _ = terminate.recv() => {}
                    _ = interrupt.recv() => {}
                }
            });
        }
    }
    Box::pin(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}
