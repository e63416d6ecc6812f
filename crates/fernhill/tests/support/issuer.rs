//! An authorization server on loopback for the tests: its metadata (RFC 8414) and its keys
//! (JWKS) over HTTP, and access tokens it signs (ES256, `typ` `at+jwt`) with any claims a test
//! wants, good or bad. It can rotate its key and go down.

use std::sync::{
    Arc, Mutex,
    atomic::{AtomicBool, AtomicUsize, Ordering},
};

use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use axum::{Json, Router, extract::State, http::StatusCode, response::IntoResponse, routing::get};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::{Value, json};

struct SigningKey {
    kid: String,
    encoding: EncodingKey,
    jwk: Value,
    public_point: Vec<u8>,
}

impl SigningKey {
    fn new(kid: &str) -> Self {
        let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap();
        let pkcs8 = pair.to_pkcs8v1().unwrap();
        let point = pair.public_key().as_ref().to_vec(); // 0x04 || x || y
        let jwk = json!({
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": kid,
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        });
        Self { kid: kid.to_owned(), encoding: EncodingKey::from_ec_der(pkcs8.as_ref()), jwk, public_point: point }
    }
}

#[derive(Clone)]
struct Shared {
    url: Arc<Mutex<String>>,
    keys: Arc<Mutex<Vec<SigningKey>>>,
    up: Arc<AtomicBool>,
    /// Requests it was sent: metadata, keys, introspection.
    requests: Arc<AtomicUsize>,
}

/// The issuer, serving until dropped.
pub struct Issuer {
    pub url: String,
    shared: Shared,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Issuer {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// One token's claims and header; `Issuer::claims` gives good ones to change.
#[derive(Clone, Debug)]
pub struct Claims {
    pub iss: String,
    pub sub: Option<String>,
    pub aud: String,
    pub scope: String,
    /// Seconds from now.
    pub exp: i64,
    pub nbf: i64,
    pub typ: String,
}

impl Issuer {
    pub async fn start() -> Issuer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let shared = Shared {
            url: Arc::new(Mutex::new(url.clone())),
            keys: Arc::new(Mutex::new(vec![SigningKey::new("key-1")])),
            up: Arc::new(AtomicBool::new(true)),
            requests: Arc::default(),
        };
        let app = Router::new()
            .route("/.well-known/oauth-authorization-server", get(metadata))
            .route("/jwks", get(jwks))
            .route("/introspect", axum::routing::post(introspect))
            .with_state(shared.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Issuer { url, shared, server }
    }

    /// Good claims for `sub` holding `scope`, for the resource `aud`.
    pub fn claims(&self, sub: &str, scope: &str, aud: &str) -> Claims {
        Claims {
            iss: self.url.clone(),
            sub: Some(sub.to_owned()),
            aud: aud.to_owned(),
            scope: scope.to_owned(),
            exp: 300,
            nbf: -5,
            typ: "at+jwt".to_owned(),
        }
    }

    /// A token signed with the current key.
    pub fn sign(&self, claims: &Claims) -> String {
        let keys = self.shared.keys.lock().unwrap();
        let key = keys.last().unwrap();
        encode(&header(Algorithm::ES256, claims, key), &body(claims), &key.encoding).unwrap()
    }

    /// A token signed with HS256 under the current key's public bytes as the secret: what an
    /// attacker who read the JWKS could make if a server accepted HMAC.
    pub fn sign_hs256_with_public_key(&self, claims: &Claims) -> String {
        let keys = self.shared.keys.lock().unwrap();
        let key = keys.last().unwrap();
        let secret = EncodingKey::from_secret(&key.public_point);
        encode(&header(Algorithm::HS256, claims, key), &body(claims), &secret).unwrap()
    }

    /// An unsigned token, `alg: none`.
    pub fn unsigned(&self, claims: &Claims) -> String {
        let header = URL_SAFE_NO_PAD.encode(json!({"alg": "none", "typ": claims.typ}).to_string());
        format!("{header}.{}.", URL_SAFE_NO_PAD.encode(body(claims).to_string()))
    }

    /// Sign with a new key from now on, and publish only it.
    pub fn rotate(&self, kid: &str) {
        let mut keys = self.shared.keys.lock().unwrap();
        keys.clear();
        keys.push(SigningKey::new(kid));
    }

    /// Answer (or refuse, with 503) its metadata and keys.
    pub fn set_up(&self, up: bool) {
        self.shared.up.store(up, Ordering::SeqCst);
    }

    /// How many requests it has been sent.
    pub fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::SeqCst)
    }
}

/// A token's header: `alg`, the claims' `typ`, and the current key's `kid`.
fn header(alg: Algorithm, claims: &Claims, key: &SigningKey) -> Header {
    let mut header = Header::new(alg);
    header.typ = Some(claims.typ.clone());
    header.kid = Some(key.kid.clone());
    header
}

fn body(claims: &Claims) -> Value {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let mut body = json!({
        "iss": claims.iss, "aud": claims.aud, "scope": claims.scope, "client_id": "test-client",
        "exp": now + claims.exp, "nbf": now + claims.nbf, "iat": now,
    });
    if let Some(sub) = &claims.sub {
        body["sub"] = json!(sub);
    }
    body
}

async fn metadata(State(shared): State<Shared>) -> axum::response::Response {
    shared.requests.fetch_add(1, Ordering::SeqCst);
    if !shared.up.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let url = shared.url.lock().unwrap().clone();
    Json(json!({"issuer": url, "jwks_uri": format!("{url}/jwks"), "token_endpoint": format!("{url}/token"),
        "introspection_endpoint": format!("{url}/introspect")}))
    .into_response()
}

/// RFC 7662 introspection that knows no opaque token: every one is inactive.
async fn introspect(State(shared): State<Shared>) -> axum::response::Response {
    shared.requests.fetch_add(1, Ordering::SeqCst);
    Json(json!({"active": false})).into_response()
}

async fn jwks(State(shared): State<Shared>) -> axum::response::Response {
    shared.requests.fetch_add(1, Ordering::SeqCst);
    if !shared.up.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let keys: Vec<Value> = shared.keys.lock().unwrap().iter().map(|key| key.jwk.clone()).collect();
    Json(json!({ "keys": keys })).into_response()
}
