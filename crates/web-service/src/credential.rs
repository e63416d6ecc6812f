//! A service's credentials: bearer tokens that callers must show, compared in constant time.
//!
//! A service always has one, its *service credential*: the shop's MCP server calls the shop's
//! API as itself with it, never with a token it was given (no token passthrough). When none is
//! given, [`generate`] makes one and the operator has it written where they asked
//! ([`write_secret`]); a service runs open only when told to, and says so at every start.
//! A service may also take *client credentials*, for programs that may read and act but not
//! speak for anyone else. Each request carries what it showed ([`Shown`]) in its extensions,
//! so a route can keep something to the service credential alone. `/healthz` stays open, for
//! load balancers, and so does any path a service names as open (a page a person's browser
//! opens, say).

use std::{io::Write as _, path::Path};

use axum::{
    Router,
    extract::{Request, State},
    http::{StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
};
use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::problem::Problem;

/// The credentials a service takes. Digests only: neither a comparison's time nor its length
/// says anything of a token.
#[derive(Clone, Default)]
pub struct Credentials {
    /// `None`: the service runs open (told to, and warned).
    service: Option<[u8; 32]>,
    clients: Vec<[u8; 32]>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("service", &self.service.is_some())
            .field("clients", &self.clients.len())
            .finish()
    }
}

/// What a request showed, in its extensions once through [`require`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shown {
    /// The service credential: the service's own caller, which may speak for others.
    Service,
    /// A client credential, and which.
    Client(ClientCredential),
    /// Nothing, on a service that runs open (or a path that is open).
    Nothing,
}

impl Shown {
    /// The name of whoever showed it, to keep one caller's records apart from another's (an
    /// idempotency key, say): `Service`, `Client-` and the client credential's name, or
    /// `Nothing` (the first and last as an earlier release spelled them, so a key kept then
    /// still names the same caller).
    pub fn caller_name(&self) -> String {
        match self {
            Shown::Service => "Service".to_owned(),
            Shown::Client(client) => format!("Client-{client}"),
            Shown::Nothing => "Nothing".to_owned(),
        }
    }
}

/// Which client credential a request showed: 64 bits of a digest of the credential's own
/// digest, the same at every start, saying nothing a guess at the token could be checked by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientCredential([u8; 8]);

impl ClientCredential {
    fn of(digest: &[u8; 32]) -> Self {
        let named = Sha256::new_with_prefix(b"fernhill client credential\n").chain_update(digest).finalize();
        let mut name = [0u8; 8];
        name.copy_from_slice(&named[..8]);
        Self(name)
    }
}

impl std::fmt::Display for ClientCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|byte| write!(f, "{byte:02x}"))
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.trim().as_bytes()).into()
}

impl Credentials {
    /// A service whose callers must show `service` (or a client credential added later).
    pub fn service(service: &str) -> Self {
        Self { service: Some(digest(service)), clients: Vec::new() }
    }

    /// A service that takes no credential at all: anyone who reaches it is let in.
    pub fn open() -> Self {
        Self::default()
    }

    /// Also take `client`, a credential that may not speak for others.
    pub fn with_client(mut self, client: &str) -> Self {
        self.clients.push(digest(client));
        self
    }

    /// Whether the service runs open.
    pub fn is_open(&self) -> bool {
        self.service.is_none()
    }

    fn shown(&self, token: &str) -> Option<Shown> {
        let shown = digest(token);
        let service = self.service?;
        if bool::from(shown.ct_eq(&service)) {
            return Some(Shown::Service);
        }
        // Every client credential is compared, whichever matches, so the time taken says
        // nothing of which one did.
        let mut matched = None;
        for client in &self.clients {
            if bool::from(shown.ct_eq(client)) {
                matched = Some(Shown::Client(ClientCredential::of(client)));
            }
        }
        matched
    }
}

/// A fresh credential: 32 random bytes from the operating system, in unpadded base64url.
///
/// # Panics
///
/// When the operating system has no random numbers to give, which leaves no safe way to go on.
pub fn generate() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random numbers");
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Write `secret` to `path`, readable by its owner alone (mode 0600), replacing what was there.
pub fn write_secret(path: &Path, secret: &str) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    #[cfg(unix)]
    file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    writeln!(file, "{secret}")?;
    file.sync_all()
}

/// Read a secret written by [`write_secret`] (or by hand): the file's first line, trimmed.
pub fn read_secret(path: &Path) -> std::io::Result<String> {
    let text = std::fs::read_to_string(path)?;
    let secret = text.lines().next().unwrap_or_default().trim().to_owned();
    if secret.is_empty() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "the file holds no credential"));
    }
    Ok(secret)
}

/// `router` behind `credentials`, but for `/healthz` and the paths under the prefixes `open`.
pub fn require(router: Router, credentials: Credentials, open: &'static [&'static str]) -> Router {
    router.layer(middleware::from_fn_with_state((credentials, open), check))
}

async fn check(
    State((credentials, open)): State<(Credentials, &'static [&'static str])>,
    mut request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    if credentials.is_open() || path == "/healthz" || open.iter().any(|prefix| path.starts_with(prefix)) {
        request.extensions_mut().insert(Shown::Nothing);
        return next.run(request).await;
    }
    let shown = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .and_then(|token| credentials.shown(token));
    match shown {
        Some(shown) => {
            request.extensions_mut().insert(shown);
            next.run(request).await
        }
        None => {
            let problem = Problem::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "Service credential required",
                "This service answers only callers that show its credential as a bearer token.",
            );
            let mut response = problem.into_response();
            response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_credential_is_long_random_and_written_for_its_owner_alone() {
        let (one, two) = (generate(), generate());
        assert_ne!(one, two);
        assert_eq!(one.len(), 43);
        let dir = std::env::temp_dir().join(format!("credential-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("api.token");
        write_secret(&path, &one).unwrap();
        assert_eq!(read_secret(&path).unwrap(), one);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_service_credential_and_a_client_credential_are_told_apart() {
        let credentials =
            Credentials::service("service-secret").with_client("client-secret").with_client("other-client");
        assert_eq!(credentials.shown("service-secret"), Some(Shown::Service));
        let (one, other) = (credentials.shown("client-secret").unwrap(), credentials.shown("other-client").unwrap());
        assert!(matches!(one, Shown::Client(_)) && matches!(other, Shown::Client(_)));
        assert_ne!(one.caller_name(), other.caller_name(), "two clients are two callers");
        let again = Credentials::service("another-service").with_client("client-secret");
        assert_eq!(again.shown("client-secret"), Some(one), "named the same at every start");
        assert_eq!(credentials.shown("guess"), None);
        assert!(Credentials::open().is_open());
    }
}
