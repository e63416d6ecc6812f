//! The client's address, and the key its share is counted under.

use std::{
    fmt,
    net::{IpAddr, Ipv4Addr, Ipv6Addr},
};

/// Where a request came from, as the transport learned it: the TCP peer's address, or the
/// client's address as a trusted proxy named it (PROXY protocol, `X-Forwarded-For`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientAddress {
    ip: IpAddr,
    /// The address is a trusted proxy's own: the proxy named no client (its health checks, a
    /// `LOCAL` PROXY header, a request without `X-Forwarded-For`).
    proxy: bool,
}

impl ClientAddress {
    /// A client at `ip` (an IPv4 address mapped into IPv6 is read as IPv4).
    pub fn client(ip: IpAddr) -> Self {
        Self { ip: ip.to_canonical(), proxy: false }
    }

    /// A trusted proxy at `ip`, speaking for nobody in particular.
    pub fn proxy_itself(ip: IpAddr) -> Self {
        Self { ip: ip.to_canonical(), proxy: true }
    }

    /// The address.
    pub fn ip(&self) -> IpAddr {
        self.ip
    }

    /// Whether this is a trusted proxy's own address, not a client's.
    pub fn is_proxy(&self) -> bool {
        self.proxy
    }

    /// The key this client's per-client shares are counted under: an IPv4 address whole, an
    /// IPv6 address by its /64 (one subscriber's network, which hands its hosts any address in
    /// it). `None` for a trusted proxy's own address: it carries every client's requests, so
    /// barring it would bar them all.
    pub fn share(&self) -> Option<ShareKey> {
        if self.proxy {
            return None;
        }
        Some(ShareKey(match self.ip {
            IpAddr::V4(v4) => IpAddr::V4(v4),
            IpAddr::V6(v6) => {
                let bits = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(Ipv6Addr::from(bits))
            }
        }))
    }

    /// The network this client's address is in, whose connections are also counted together:
    /// an IPv4 address by its /24, an IPv6 one by its /48 (a site's). Many addresses of one
    /// network are often one sender (a host given a range, a cloud tenant), and an address
    /// share alone lets them hold as many shares as addresses. `None` for a trusted proxy's own
    /// address, as for [`ClientAddress::share`].
    pub fn network(&self) -> Option<NetworkKey> {
        if self.proxy {
            return None;
        }
        Some(match self.ip {
            IpAddr::V4(v4) => NetworkKey(IpAddr::V4(Ipv4Addr::from(u32::from(v4) & !0xff)), 24),
            IpAddr::V6(v6) => NetworkKey(IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 80) - 1))), 48),
        })
    }

    /// The address the transport put in a request's extensions, if any.
    pub fn of(extensions: &http::Extensions) -> Option<ClientAddress> {
        extensions.get::<ClientAddress>().copied()
    }
}

impl fmt::Display for ClientAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.proxy {
            false => write!(f, "{}", self.ip),
            true => write!(f, "{} (a trusted proxy)", self.ip),
        }
    }
}

impl fmt::Debug for ClientAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// What one client's shares are counted under (see [`ClientAddress::share`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ShareKey(IpAddr);

/// A network of clients' addresses, counted together (see [`ClientAddress::network`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct NetworkKey(IpAddr, u8);

impl fmt::Display for NetworkKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.0, self.1)
    }
}

impl fmt::Display for ShareKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            IpAddr::V4(v4) => write!(f, "{v4}"),
            IpAddr::V6(v6) => write!(f, "{v6}/64"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn an_ipv6_client_is_counted_by_its_64_and_an_ipv4_one_whole() {
        let one = ClientAddress::client(ip("2001:db8:1:2:aaaa::1"));
        let same_network = ClientAddress::client(ip("2001:db8:1:2:ffff:ffff:ffff:fffe"));
        let next_network = ClientAddress::client(ip("2001:db8:1:3::1"));
        assert_eq!(one.share(), same_network.share());
        assert_ne!(one.share(), next_network.share());
        assert_eq!(one.share().unwrap().to_string(), "2001:db8:1:2::/64");
        assert_ne!(ClientAddress::client(ip("10.0.0.1")).share(), ClientAddress::client(ip("10.0.0.2")).share());
        assert_eq!(
            ClientAddress::client(ip("::ffff:10.0.0.1")).share(),
            ClientAddress::client(ip("10.0.0.1")).share(),
            "an IPv4 address mapped into IPv6 is the IPv4 client"
        );
    }

    #[test]
    fn an_ipv4_client_s_network_is_its_24_and_an_ipv6_one_s_its_48() {
        let one = ClientAddress::client(ip("203.0.113.7"));
        assert_eq!(one.network(), ClientAddress::client(ip("203.0.113.250")).network());
        assert_ne!(one.network(), ClientAddress::client(ip("203.0.114.7")).network());
        assert_eq!(one.network().unwrap().to_string(), "203.0.113.0/24");
        let six = ClientAddress::client(ip("2001:db8:1:2::1"));
        assert_eq!(six.network(), ClientAddress::client(ip("2001:db8:1:ffff::9")).network());
        assert_eq!(six.network().unwrap().to_string(), "2001:db8:1::/48");
        assert_eq!(ClientAddress::proxy_itself(ip("10.0.0.9")).network(), None);
    }

    #[test]
    fn a_trusted_proxy_itself_has_no_share_to_bar() {
        let proxy = ClientAddress::proxy_itself(ip("10.0.0.9"));
        assert_eq!(proxy.share(), None);
        assert!(proxy.is_proxy());
        assert_eq!(proxy.to_string(), "10.0.0.9 (a trusted proxy)");
    }
}
