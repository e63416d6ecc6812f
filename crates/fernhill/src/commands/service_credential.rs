//! The service credential of a service this binary runs (the shop's API, the payment
//! provider): given, or made at start and written where the operator asked.

use std::path::Path;

use anyhow::Context as _;
use web_service::credential;

/// The service credential given (`env` names it in words), or one made now; either way written
/// to `file` when one is named. With neither a credential nor a file, nobody could call the
/// service: an error that says what to give (`reader` names who reads the file).
pub fn credential_of(given: Option<String>, file: Option<&Path>, env: &str, reader: &str) -> anyhow::Result<String> {
    let given = given.filter(|token| !token.is_empty());
    let secret = match (given, file) {
        (Some(token), _) => token,
        (None, Some(_)) => credential::generate(),
        (None, None) => anyhow::bail!(
            "no service credential: set {env}, or give --token-file PATH to have one made and written there (and \
             {reader} PATH), or --insecure-no-auth if something else guards this service"
        ),
    };
    if let Some(path) = file {
        credential::write_secret(path, &secret)
            .with_context(|| format!("writing the credential to {}", path.display()))?;
        tracing::info!(path = %path.display(), "the service credential is in its file");
    }
    Ok(secret)
}
