//! An authorization server on loopback for the tests: its metadata (RFC 8414), its keys (JWKS)
//! and an introspection endpoint (RFC 7662) over HTTP, and access tokens it issues with any
//! claims a test wants, good or bad: JWTs it signs (ES256, `typ` `at+jwt`), and opaque tokens
//! it answers for at introspection. It can rotate its key, go down, and say how often it was
//! asked for what.
//!
//! A superset of `crates/fernhill/tests/support/issuer.rs`, which could use this file instead.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
};

use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use axum::{
    Form, Json, Router,
    extract::State,
    http::{HeaderMap, StatusCode, header::AUTHORIZATION},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use base64::{
    Engine,
    engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD},
};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::{Value, json};

/// The client the introspection endpoint answers (`client_secret_basic`); anyone else gets 401.
pub const INTROSPECTION_CLIENT: (&str, &str) = ("shop-mcp", "shop-mcp-secret");

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

/// How often each endpoint was asked.
#[derive(Default)]
struct Counts {
    metadata: AtomicUsize,
    jwks: AtomicUsize,
    introspection: AtomicUsize,
    /// Anything else (another discovery path, say): answered 404.
    other: AtomicUsize,
}

#[derive(Clone)]
struct Shared {
    url: Arc<Mutex<String>>,
    keys: Arc<Mutex<Vec<SigningKey>>>,
    /// The opaque tokens it issued, and what introspection says of each.
    opaque: Arc<Mutex<HashMap<String, Claims>>>,
    up: Arc<AtomicBool>,
    counts: Arc<Counts>,
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
    /// Any other claims.
    pub extra: serde_json::Map<String, Value>,
}

impl Issuer {
    pub async fn start() -> Issuer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let shared = Shared {
            url: Arc::new(Mutex::new(url.clone())),
            keys: Arc::new(Mutex::new(vec![SigningKey::new("key-1")])),
            opaque: Arc::default(),
            up: Arc::new(AtomicBool::new(true)),
            counts: Arc::default(),
        };
        let app = Router::new()
            .route("/.well-known/oauth-authorization-server", get(metadata))
            .route("/jwks", get(jwks))
            .route("/introspect", post(introspect))
            .fallback(other)
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
            extra: serde_json::Map::new(),
        }
    }

    /// A token signed with the current key.
    pub fn sign(&self, claims: &Claims) -> String {
        let keys = self.shared.keys.lock().unwrap();
        let key = keys.last().unwrap();
        encode(&header(Algorithm::ES256, claims, &key.kid), &body(claims), &key.encoding).unwrap()
    }

    /// A token signed with the current key but naming the key `kid`, which it never published.
    pub fn sign_naming_kid(&self, claims: &Claims, kid: &str) -> String {
        let keys = self.shared.keys.lock().unwrap();
        let key = keys.last().unwrap();
        encode(&header(Algorithm::ES256, claims, kid), &body(claims), &key.encoding).unwrap()
    }

    /// A token naming the current key's `kid` but signed by another key, never published: what
    /// someone without the issuer's private key could make.
    pub fn forge(&self, claims: &Claims) -> String {
        let kid = self.shared.keys.lock().unwrap().last().unwrap().kid.clone();
        let stranger = SigningKey::new(&kid);
        encode(&header(Algorithm::ES256, claims, &kid), &body(claims), &stranger.encoding).unwrap()
    }

    /// A token signed with HS256 under the current key's public bytes as the secret: what an
    /// attacker who read the JWKS could make if a server accepted HMAC.
    pub fn sign_hs256_with_public_key(&self, claims: &Claims) -> String {
        let keys = self.shared.keys.lock().unwrap();
        let key = keys.last().unwrap();
        let secret = EncodingKey::from_secret(&key.public_point);
        encode(&header(Algorithm::HS256, claims, &key.kid), &body(claims), &secret).unwrap()
    }

    /// An unsigned token, `alg: none`.
    pub fn unsigned(&self, claims: &Claims) -> String {
        let header = URL_SAFE_NO_PAD.encode(json!({"alg": "none", "typ": claims.typ}).to_string());
        format!("{header}.{}.", URL_SAFE_NO_PAD.encode(body(claims).to_string()))
    }

    /// An opaque token (32 random bytes, base64url) that introspection answers with `claims`.
    pub fn opaque(&self, claims: &Claims) -> String {
        let mut bytes = [0u8; 32];
        aws_lc_rs::rand::fill(&mut bytes).unwrap();
        let token = URL_SAFE_NO_PAD.encode(bytes);
        self.shared.opaque.lock().unwrap().insert(token.clone(), claims.clone());
        token
    }

    /// Sign with a new key from now on, and publish only it.
    pub fn rotate(&self, kid: &str) {
        let mut keys = self.shared.keys.lock().unwrap();
        keys.clear();
        keys.push(SigningKey::new(kid));
    }

    /// Answer (or refuse, with 503) its metadata, its keys and introspection.
    pub fn set_up(&self, up: bool) {
        self.shared.up.store(up, Ordering::SeqCst);
    }

    /// How many requests it has been sent, to any path.
    pub fn requests(&self) -> usize {
        let counts = &self.shared.counts;
        [&counts.metadata, &counts.jwks, &counts.introspection, &counts.other]
            .iter()
            .map(|count| count.load(Ordering::SeqCst))
            .sum()
    }

    /// How many times its metadata was asked for.
    pub fn metadata_fetches(&self) -> usize {
        self.shared.counts.metadata.load(Ordering::SeqCst)
    }

    /// How many times its key set was asked for.
    pub fn jwks_fetches(&self) -> usize {
        self.shared.counts.jwks.load(Ordering::SeqCst)
    }

    /// How many tokens it was asked about.
    pub fn introspections(&self) -> usize {
        self.shared.counts.introspection.load(Ordering::SeqCst)
    }
}

/// A token's header: `alg`, the claims' `typ`, and `kid`.
fn header(alg: Algorithm, claims: &Claims, kid: &str) -> Header {
    let mut header = Header::new(alg);
    header.typ = Some(claims.typ.clone());
    header.kid = Some(kid.to_owned());
    header
}

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

fn body(claims: &Claims) -> Value {
    let now = now();
    let mut body = json!({
        "iss": claims.iss, "aud": claims.aud, "scope": claims.scope, "client_id": "test-client",
        "exp": now + claims.exp, "nbf": now + claims.nbf, "iat": now,
    });
    if let Some(sub) = &claims.sub {
        body["sub"] = json!(sub);
    }
    if let Value::Object(body) = &mut body {
        body.extend(claims.extra.clone());
    }
    body
}

fn down(shared: &Shared) -> Option<Response> {
    (!shared.up.load(Ordering::SeqCst)).then(|| StatusCode::SERVICE_UNAVAILABLE.into_response())
}

async fn metadata(State(shared): State<Shared>) -> Response {
    shared.counts.metadata.fetch_add(1, Ordering::SeqCst);
    if let Some(down) = down(&shared) {
        return down;
    }
    let url = shared.url.lock().unwrap().clone();
    Json(json!({"issuer": url, "jwks_uri": format!("{url}/jwks"), "token_endpoint": format!("{url}/token"),
        "introspection_endpoint": format!("{url}/introspect")}))
    .into_response()
}

async fn jwks(State(shared): State<Shared>) -> Response {
    shared.counts.jwks.fetch_add(1, Ordering::SeqCst);
    if let Some(down) = down(&shared) {
        return down;
    }
    let keys: Vec<Value> = shared.keys.lock().unwrap().iter().map(|key| key.jwk.clone()).collect();
    Json(json!({ "keys": keys })).into_response()
}

/// RFC 7662 introspection, for [`INTROSPECTION_CLIENT`] only: the opaque tokens it issued are
/// active (with their claims), every other token is inactive.
async fn introspect(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    shared.counts.introspection.fetch_add(1, Ordering::SeqCst);
    if let Some(down) = down(&shared) {
        return down;
    }
    let (id, secret) = INTROSPECTION_CLIENT;
    let expected = format!("Basic {}", STANDARD.encode(format!("{id}:{secret}")));
    if headers.get(AUTHORIZATION).and_then(|value| value.to_str().ok()) != Some(expected.as_str()) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let issued = form.get("token").and_then(|token| shared.opaque.lock().unwrap().get(token).cloned());
    let Some(claims) = issued else { return Json(json!({"active": false})).into_response() };
    let mut answer = body(&claims);
    answer["active"] = json!(true);
    answer["token_type"] = json!("Bearer");
    Json(answer).into_response()
}

async fn other(State(shared): State<Shared>) -> Response {
    shared.counts.other.fetch_add(1, Ordering::SeqCst);
    StatusCode::NOT_FOUND.into_response()
}
