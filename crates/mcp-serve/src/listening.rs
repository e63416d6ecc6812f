//! Where a server listens: its public address (the MCP endpoint), and its admin listener when
//! it has one, bound before anything else is built so their addresses can be said first.

use std::net::SocketAddr;

use tokio::net::TcpListener;

use crate::{HttpConfig, ServeError};

/// The bound listeners.
pub struct Listening {
    pub(crate) public: TcpListener,
    pub(crate) admin: Option<TcpListener>,
}

impl Listening {
    /// Bind what `config` names: its `--http` address (loopback on a free port without one),
    /// and its admin listener (`--metrics-listen`) if any.
    pub async fn bind(config: &HttpConfig) -> Result<Self, ServeError> {
        let listen = config.listen.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
        let public = bind(listen).await?;
        let admin = match config.metrics_listen {
            Some(address) => Some(bind(address).await?),
            None => None,
        };
        Ok(Self { public, admin })
    }

    /// The public address, as bound.
    pub fn address(&self) -> SocketAddr {
        self.public.local_addr().unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    /// The MCP endpoint's URL, such as `http://127.0.0.1:8711/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.address())
    }

    /// The admin listener's URL, such as `http://127.0.0.1:9464`, if there is one.
    pub fn admin_url(&self) -> Option<String> {
        self.admin.as_ref().and_then(|admin| admin.local_addr().ok()).map(|address| format!("http://{address}"))
    }
}

async fn bind(address: SocketAddr) -> Result<TcpListener, ServeError> {
    TcpListener::bind(address).await.map_err(|source| ServeError::Listen { address: address.to_string(), source })
}
