//! Serving a [`Service`] on its listeners until told to stop, and draining as a load balancer
//! needs: on `shutdown` the replica is [`Phase::Draining`] at once (not ready, so nothing new is
//! sent to it), still serves for the drain grace while the balancer notices (a second signal
//! cuts it short), and its questions still waiting end in words within the drain timeout; then
//! it is [`Phase::Stopping`]: rmcp ends its sessions, the listeners close and the requests in
//! flight finish. An idle replica no load balancer watches (nobody asked `/readyz` within the
//! grace, and no question waits) has nobody to give the grace to: it stops at once, as a local
//! server on Ctrl-C should.

use std::future::Future;

use crate::{
    Listening, ServeError,
    connections::{self, ClientAddresses},
    drain::Phase,
    router::Service,
};

/// Serve `service` on `listening` until `shutdown` resolves and the drain is done.
pub async fn serve(
    listening: Listening,
    service: Service,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    connections::raise_open_file_limit();
    tracing::info!(url = %listening.url(), "serving MCP over Streamable HTTP");
    if !service.addresses.trusted.is_empty() {
        let how = match &service.addresses.forwarded_header {
            Some(header) => format!("the {header} header"),
            None => "a PROXY v2 header".to_owned(),
        };
        tracing::info!(trusted = ?service.addresses.trusted, "clients' addresses taken from trusted proxies, by {how}");
    }
    let Service {
        public,
        admin,
        bounds,
        addresses,
        drain,
        readiness,
        drain_grace,
        question_timeout,
        questions,
        rmcp,
        ..
    } = service;
    let admin_served = listening.admin.map(|listener| {
        if let Ok(address) = listener.local_addr() {
            tracing::info!(%address, "serving /livez, /readyz, /healthz and /metrics on the admin listener");
        }
        let stopped = drain.clone();
        // Health checks come straight from the load balancer, not through it.
        let direct = ClientAddresses::default();
        tokio::spawn(connections::serve(listener, admin, bounds, direct, async move {
            stopped.reached(Phase::Stopping).await
        }))
    });
    let stopped = drain.clone();
    tokio::spawn(async move {
        shutdown.await;
        // Listening for a second signal from here on, before anything says it drains.
        let second = web_service::shutdown::signal();
        drain.enter(Phase::Draining);
        // Idle: nobody to give the grace to (no load balancer asked, no question waits).
        let waiting = questions.as_ref().map_or(0, |questions| questions.waiting());
        let watched = readiness.watched_within(drain_grace) || waiting > 0;
        let grace = if watched { drain_grace } else { std::time::Duration::ZERO };
        if let Some(questions) = &questions {
            questions.close_after(question_timeout);
        }
        match watched {
            true => tracing::info!(
                grace_secs = grace.as_secs_f64(),
                "draining: /readyz answers 503, and requests are still served for the grace period (a second signal ends it)"
            ),
            false => tracing::info!("idle, and no load balancer asked /readyz lately: stopping without a grace period"),
        }
        tokio::select! {
            () = tokio::time::sleep(grace) => {}
            () = second => tracing::info!("a second signal: not waiting out the grace period"),
        }
        tracing::info!("stopping: finishing the requests in flight");
        drain.enter(Phase::Stopping);
        rmcp.cancel();
    });
    connections::serve(
        listening.public,
        public,
        bounds,
        addresses,
        async move { stopped.reached(Phase::Stopping).await },
    )
    .await;
    if let Some(served) = admin_served {
        let _ = served.await;
    }
    tracing::info!("stopped");
    Ok(())
}
