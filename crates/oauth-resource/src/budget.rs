//! The work a sender who has proved nothing can make the gate do, bounded.
//!
//! A token the gate has not seen lately costs a signature check, or a call to the issuer's
//! introspection endpoint (and, naming an unknown key, a fetch of the issuer's keys, which
//! [`crate::keys`] spaces out on its own). Each such check spends one from the client's share
//! (its address, [`caller::ClientAddress::share`]: an IPv6 client by its /64) and one from the
//! server's. A token refused lately, sent again, is refused from memory: it costs the server
//! nothing but still spends the client's share, so a client that keeps sending one bad token is
//! turned away as one that sends many. A client past its share is answered 429 with `Retry-After`, its token not looked
//! at; past the server's share, every new token is answered 503 with `Retry-After`, so a
//! sender who spreads its tokens over many addresses or many values costs the server no more
//! than the server's share. A token already checked ([`crate::token_cache`]) costs nothing and
//! passes whatever the budget: a lead whose token was checked is answered while a flood goes
//! on. A trusted proxy's own address has no share: it carries every client's requests, and only
//! the server's share applies to it. Requests without any token cost a header's read and are
//! not counted.

use std::{
    num::NonZeroU32,
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

use caller::{ClientAddress, ShareKey};
use governor::{
    DefaultDirectRateLimiter, DefaultKeyedRateLimiter, Quota, RateLimiter, clock::Clock as _, clock::DefaultClock,
};

/// New tokens one client may have checked a second unless told otherwise (and five times as
/// many at once): a host holds one token for its session, a fleet's load test a few dozen.
pub const DEFAULT_PER_CLIENT: u32 = 10;
/// New tokens the server checks a second in all unless told otherwise (and twice as many at
/// once): an ES256 signature check takes tens of microseconds, so this is a few percent of a
/// core; an introspection call is the issuer's work.
pub const DEFAULT_IN_ALL: u32 = 500;

/// Why a new token was not checked, and how long the sender should wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spent {
    /// This client has had its share of new tokens checked.
    Client(Duration),
    /// The server has checked its share of new tokens, from whoever sent them.
    Server(Duration),
}

/// The shares of token checks: each client's, and the server's.
pub struct CheckBudget {
    per_client: DefaultKeyedRateLimiter<ShareKey>,
    in_all: DefaultDirectRateLimiter,
    /// Checks spent, to tidy the clients' buckets now and then.
    spent: AtomicU64,
}

/// How many checks between two tidyings of the clients' buckets.
const TIDY_EVERY: u64 = 4096;

impl CheckBudget {
    /// `per_client` new tokens a second for each client and `in_all` for the server, each at
    /// least one.
    pub fn new(per_client: u32, in_all: u32) -> Self {
        let quota = |rate: u32, burst: u32| {
            let rate = NonZeroU32::new(rate).unwrap_or(NonZeroU32::MIN);
            Quota::per_second(rate).allow_burst(NonZeroU32::new(burst).unwrap_or(rate))
        };
        Self {
            per_client: RateLimiter::keyed(quota(per_client, per_client.saturating_mul(5))),
            in_all: RateLimiter::direct(quota(in_all, in_all.saturating_mul(2))),
            spent: AtomicU64::new(0),
        }
    }

    /// Spend one check for a token `client` sent, or say whose share is spent. A client that
    /// is not known (a trusted proxy's own address, or a transport that named none) spends the
    /// server's share alone.
    pub fn spend(&self, client: Option<ClientAddress>) -> Result<(), Spent> {
        self.spend_clients(client)?;
        let now = DefaultClock::default().now();
        self.in_all.check().map_err(|not_until| Spent::Server(not_until.wait_time_from(now)))
    }

    /// Spend the client's share alone, for a token refused lately and sent again.
    pub fn spend_refused(&self, client: Option<ClientAddress>) -> Result<(), Spent> {
        self.spend_clients(client)
    }

    fn spend_clients(&self, client: Option<ClientAddress>) -> Result<(), Spent> {
        if self.spent.fetch_add(1, Ordering::Relaxed) % TIDY_EVERY == TIDY_EVERY - 1 {
            self.per_client.retain_recent();
            self.per_client.shrink_to_fit();
        }
        let Some(share) = client.and_then(|client| client.share()) else { return Ok(()) };
        let now = DefaultClock::default().now();
        self.per_client.check_key(&share).map_err(|not_until| Spent::Client(not_until.wait_time_from(now)))
    }
}

impl Default for CheckBudget {
    fn default() -> Self {
        Self::new(DEFAULT_PER_CLIENT, DEFAULT_IN_ALL)
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use super::*;

    fn client(ip: &str) -> Option<ClientAddress> {
        Some(ClientAddress::client(ip.parse::<IpAddr>().unwrap()))
    }

    #[test]
    fn a_client_past_its_share_is_turned_away_and_another_is_not() {
        let budget = CheckBudget::new(2, 1000);
        let spent: Vec<_> = (0..20).map(|_| budget.spend(client("10.0.0.1"))).collect();
        assert_eq!(spent.iter().filter(|s| s.is_ok()).count(), 10, "a burst of five times the rate, then none");
        assert!(matches!(spent.last(), Some(Err(Spent::Client(_)))));
        assert_eq!(budget.spend(client("10.0.0.2")), Ok(()), "another client has its own share");
        // One subscriber's IPv6 network is one client, whatever address it takes in it.
        let many: Vec<_> = (0..20).map(|n| budget.spend(client(&format!("2001:db8::{n:x}")))).collect();
        assert_eq!(many.iter().filter(|s| s.is_ok()).count(), 10);
    }

    #[test]
    fn senders_spread_over_many_addresses_meet_the_servers_share() {
        let budget = CheckBudget::new(10, 50);
        let spent: Vec<_> =
            (0..500u32).map(|n| budget.spend(client(&format!("10.1.{}.{}", n / 250, n % 250)))).collect();
        assert_eq!(spent.iter().filter(|s| s.is_ok()).count(), 100, "twice the server's rate at once, then none");
        assert!(matches!(spent.last(), Some(Err(Spent::Server(_)))));
    }

    #[test]
    fn a_trusted_proxys_own_address_spends_only_the_servers_share() {
        let budget = CheckBudget::new(1, 1000);
        let proxy = Some(ClientAddress::proxy_itself("10.0.0.9".parse().unwrap()));
        assert!((0..100).all(|_| budget.spend(proxy).is_ok()), "the proxy is never barred");
    }
}
