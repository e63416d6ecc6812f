//! The client's address, as a replica behind a proxy must learn it.
//!
//! Behind a load balancer every connection comes from the balancer's one address: keyed by the
//! TCP peer, one client's flood would bar every client. So a replica learns the client's address
//! from the proxies it trusts (`--trusted-proxy CIDR`), and from nobody else:
//!
//! - **PROXY protocol v2** (HAProxy's `send-proxy-v2`; the default): a connection from a trusted
//!   proxy must open with a PROXY header, which names the client (or, with `LOCAL`, nobody: the
//!   proxy's own health checks). A connection from anyone else is read as HTTP from its first
//!   byte, so a client cannot name an address of its choosing.
//! - **A forwarded header** (`--forwarded-header X-Forwarded-For`), where PROXY cannot be used: on
//!   a request from a trusted proxy, the rightmost address in the header that is not a trusted
//!   proxy's (what the first trusted proxy saw); the header is ignored from anyone else.
//!
//! A trusted proxy that names no client is [`ClientAddress::proxy_itself`]: it has no per-client
//! share, so it is never barred. The parsing of PROXY headers is the `ppp` crate's.

use std::{net::IpAddr, time::Duration};

use axum::http::HeaderMap;
use caller::ClientAddress;
use ipnet::IpNet;
use ppp::v2::{Addresses, Command, Header};
use tokio::io::{AsyncRead, AsyncReadExt};

/// The longest PROXY v2 header read (its addresses and a few TLVs; HAProxy's are far shorter).
const LONGEST_PROXY_HEADER: usize = 16 + 536;

/// How a replica learns its clients' addresses.
#[derive(Debug, Clone, Default)]
pub struct ClientAddresses {
    /// The proxies whose word on the client's address is taken.
    pub trusted: Vec<IpNet>,
    /// Where trusted proxies name the client: PROXY protocol (`None`) or this request header.
    pub forwarded_header: Option<axum::http::HeaderName>,
}

/// Why a connection from a trusted proxy named no client.
#[derive(Debug, thiserror::Error)]
pub enum ProxyHeaderError {
    #[error("no PROXY header within {0:?}")]
    Timeout(Duration),
    #[error("reading the PROXY header: {0}")]
    Read(#[from] std::io::Error),
    #[error("not a PROXY v2 header: {0}")]
    Malformed(String),
}

impl ClientAddresses {
    /// Whether `peer` is a proxy this replica trusts.
    pub fn trusts(&self, peer: IpAddr) -> bool {
        let peer = peer.to_canonical();
        self.trusted.iter().any(|net| net.contains(&peer))
    }

    /// Whether connections from `peer` open with a PROXY header.
    pub fn expects_proxy_header(&self, peer: IpAddr) -> bool {
        self.forwarded_header.is_none() && self.trusts(peer)
    }

    /// The address of the connection from `peer`, before any request: the peer's, or, from a
    /// trusted proxy without PROXY protocol, the proxy's own (each request may name its client).
    pub fn of_connection(&self, peer: IpAddr) -> ClientAddress {
        match self.trusts(peer) {
            true => ClientAddress::proxy_itself(peer),
            false => ClientAddress::client(peer),
        }
    }

    /// The address a request on a connection at `connection` names, where a forwarded header is
    /// read: the rightmost untrusted address in it, when the connection is a trusted proxy's.
    pub fn of_request(&self, connection: ClientAddress, headers: &HeaderMap) -> ClientAddress {
        let Some(name) = &self.forwarded_header else { return connection };
        if !connection.is_proxy() {
            return connection;
        }
        let named = headers
            .get_all(name)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .map(str::trim)
            .collect::<Vec<_>>();
        for entry in named.iter().rev() {
            let Ok(ip) = entry.parse::<IpAddr>() else {
                tracing::debug!(entry = %entry.escape_debug(), "a forwarded address that is not an IP address");
                return connection;
            };
            if !self.trusts(ip) {
                return ClientAddress::client(ip);
            }
        }
        connection
    }

    /// Read the PROXY v2 header a trusted proxy at `peer` opens its connection with, within
    /// `within`: the client it names, or the proxy itself for `LOCAL` (its health checks) or an
    /// address family that is not IP.
    pub async fn read_proxy_header(
        &self,
        stream: &mut (impl AsyncRead + Unpin),
        peer: IpAddr,
        within: Duration,
    ) -> Result<ClientAddress, ProxyHeaderError> {
        let read = async {
            let mut header = vec![0u8; 16];
            stream.read_exact(&mut header).await?;
            let length = usize::from(u16::from_be_bytes([header[14], header[15]]));
            if 16 + length > LONGEST_PROXY_HEADER {
                return Err(ProxyHeaderError::Malformed(format!("{length} bytes of addresses")));
            }
            header.resize(16 + length, 0);
            stream.read_exact(&mut header[16..]).await?;
            let parsed = Header::try_from(header.as_slice()).map_err(|e| ProxyHeaderError::Malformed(e.to_string()))?;
            Ok(match (parsed.command, parsed.addresses) {
                (Command::Proxy, Addresses::IPv4(v4)) => ClientAddress::client(IpAddr::V4(v4.source_address)),
                (Command::Proxy, Addresses::IPv6(v6)) => ClientAddress::client(IpAddr::V6(v6.source_address)),
                _ => ClientAddress::proxy_itself(peer),
            })
        };
        tokio::time::timeout(within, read).await.map_err(|_| ProxyHeaderError::Timeout(within))?
    }
}

#[cfg(test)]
mod tests {
    use ppp::v2::{Builder, Command, Protocol, Version};

    use super::*;

    fn behind(trusted: &[&str], header: Option<&str>) -> ClientAddresses {
        ClientAddresses {
            trusted: trusted.iter().map(|net| net.parse().unwrap()).collect(),
            forwarded_header: header.map(|name| name.parse().unwrap()),
        }
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn proxy_header(command: Command, addresses: impl Into<Addresses>) -> Vec<u8> {
        Builder::with_addresses(Version::Two | command, Protocol::Stream, addresses).build().unwrap()
    }

    #[tokio::test]
    async fn a_trusted_proxy_names_the_client_and_its_health_checks_name_nobody() {
        let addresses = behind(&["10.0.0.0/24"], None);
        let proxy = ip("10.0.0.5");
        assert!(addresses.expects_proxy_header(proxy));
        assert!(!addresses.expects_proxy_header(ip("192.0.2.1")), "from anyone else, HTTP from the first byte");

        let mut named =
            proxy_header(Command::Proxy, (ip("198.51.100.7").into_socket(5000), ip("10.0.0.9").into_socket(80)));
        named.extend_from_slice(b"GET /healthz HTTP/1.1\r\n");
        let mut stream = named.as_slice();
        let client = addresses.read_proxy_header(&mut stream, proxy, Duration::from_secs(1)).await.unwrap();
        assert_eq!(client, ClientAddress::client(ip("198.51.100.7")));
        assert_eq!(stream, b"GET /healthz HTTP/1.1\r\n", "the request itself is left to be read");

        let local = proxy_header(Command::Local, Addresses::Unspecified);
        let checked = addresses.read_proxy_header(&mut local.as_slice(), proxy, Duration::from_secs(1)).await.unwrap();
        assert_eq!(checked, ClientAddress::proxy_itself(proxy));

        let plain = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
        assert!(addresses.read_proxy_header(&mut plain.as_slice(), proxy, Duration::from_secs(1)).await.is_err());
    }

    #[test]
    fn a_forwarded_header_counts_from_a_trusted_proxy_alone() {
        let addresses = behind(&["10.0.0.0/24"], Some("x-forwarded-for"));
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", "203.0.113.9, 198.51.100.7, 10.0.0.3".parse().unwrap());
        let proxy = addresses.of_connection(ip("10.0.0.5"));
        assert_eq!(
            addresses.of_request(proxy, &headers),
            ClientAddress::client(ip("198.51.100.7")),
            "the rightmost untrusted"
        );
        let stranger = addresses.of_connection(ip("192.0.2.1"));
        assert_eq!(addresses.of_request(stranger, &headers), stranger, "a client cannot name its own address");
        assert_eq!(addresses.of_request(proxy, &HeaderMap::new()), proxy, "a proxy that names nobody is itself");
        assert!(proxy.share().is_none());
    }

    trait IntoSocket {
        fn into_socket(self, port: u16) -> std::net::SocketAddr;
    }

    impl IntoSocket for IpAddr {
        fn into_socket(self, port: u16) -> std::net::SocketAddr {
            std::net::SocketAddr::new(self, port)
        }
    }
}
