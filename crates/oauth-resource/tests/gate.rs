//! The gate in process, in front of a handler that echoes whom it was told is calling, against
//! an issuer on loopback that signs whatever token a test needs: keys and their rotation, scopes,
//! the challenges for a missing or bad token, the protected resource metadata, an issuer that is
//! down, opaque tokens through introspection, and every refusal counted by its reason.
//!
//! Requests go to the axum app with `oneshot`; only the gate's own calls to the issuer cross a
//! socket. Nothing sleeps to synchronise: a test reads the issuer's request counts, and the one
//! that waits on the gate's background retry pauses tokio's clock and advances it.

mod support {
    pub mod issuer;
}

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use axum::{
    Extension, Json, Router,
    body::{Body, Bytes, to_bytes},
    extract::State,
    http::{HeaderMap, Request, StatusCode, header},
    middleware::from_fn_with_state,
    routing::post,
};
use caller::ClientAddress;
use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use oauth_resource::{
    GateRefusal, Principal, ResourceServer, ScopePolicy,
    gate::{Granted, IntrospectionClient},
    keys,
};
use serde_json::{Value, json};
use tower::ServiceExt;

use support::issuer::{Claims, INTROSPECTION_CLIENT, Issuer};

/// The MCP endpoint as clients reach it: every token's audience. Never dialled: requests go to
/// the app in process.
const RESOURCE: &str = "https://shop.example/mcp";
/// Where the protected resource metadata of [`RESOURCE`] is served, and the URL naming it.
const METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";
const METADATA_URL: &str = "https://shop.example/.well-known/oauth-protected-resource/mcp";
const MAX_BODY: usize = 64 * 1024;

const ORDERS_READ: &str = "orders:read";
const REFUNDS_WRITE: &str = "refunds:write";
const AUDIT_READ: &str = "audit:read";

/// The tests' scopes: reading tools need `orders:read`, `issue_refund` needs `refunds:write`
/// (which implies reading), `export_audit` needs two scopes, anything but a tool call none.
struct TestScopes;

impl ScopePolicy for TestScopes {
    fn supported(&self) -> Vec<String> {
        [ORDERS_READ, REFUNDS_WRITE, AUDIT_READ].map(str::to_owned).to_vec()
    }

    fn needed(&self, method: &str, target: Option<&str>) -> Vec<String> {
        let needed: &[&str] = match (method, target) {
            ("tools/call", Some("issue_refund")) => &[REFUNDS_WRITE],
            ("tools/call", Some("export_audit")) => &[ORDERS_READ, AUDIT_READ],
            ("tools/call", _) => &[ORDERS_READ],
            _ => &[],
        };
        needed.iter().map(|scope| (*scope).to_owned()).collect()
    }

    fn implied(&self, held: &str) -> Vec<String> {
        match held {
            REFUNDS_WRITE => vec![REFUNDS_WRITE.to_owned(), ORDERS_READ.to_owned()],
            other => vec![other.to_owned()],
        }
    }

    fn first_ask(&self) -> Vec<String> {
        vec![ORDERS_READ.to_owned()]
    }
}

/// The gate as a server mounts it (authenticate, then authorize, then the endpoint; the
/// metadata beside), over a handler that echoes what the gate handed it and counts its calls.
struct Shop {
    issuer: Issuer,
    gate: ResourceServer,
    app: Router,
    reached: Arc<AtomicUsize>,
}

impl Shop {
    /// A gate whose tokens come from `issuer`, not started; with `introspection`, it accepts
    /// opaque tokens too.
    fn new(issuer: Issuer, introspection: bool) -> Shop {
        let gate = ResourceServer::new(&issuer.url, RESOURCE, "Test shop", Box::new(TestScopes), MAX_BODY).unwrap();
        Shop::with_gate(issuer, gate, introspection)
    }

    /// A gate started against a fresh issuer that checks at most `per_client` new tokens a
    /// second from each client and `in_all` in all.
    async fn budgeted(per_client: u32, in_all: u32) -> Shop {
        let issuer = Issuer::start().await;
        let gate = ResourceServer::new(&issuer.url, RESOURCE, "Test shop", Box::new(TestScopes), MAX_BODY)
            .unwrap()
            .with_check_budget(per_client, in_all);
        let shop = Shop::with_gate(issuer, gate, false);
        shop.gate.start().await;
        shop
    }

    fn with_gate(issuer: Issuer, mut gate: ResourceServer, introspection: bool) -> Shop {
        if introspection {
            let (client_id, client_secret) = INTROSPECTION_CLIENT;
            gate = gate.with_introspection(IntrospectionClient {
                client_id: client_id.to_owned(),
                client_secret: client_secret.to_owned(),
            });
        }
        let reached = Arc::new(AtomicUsize::new(0));
        let app = Router::new()
            .route("/mcp", post(echo).get(echo))
            .layer(from_fn_with_state(gate.clone(), ResourceServer::authorize))
            .layer(from_fn_with_state(gate.clone(), ResourceServer::authenticate))
            .with_state(Arc::clone(&reached))
            .merge(gate.metadata_routes());
        Shop { issuer, gate, app, reached }
    }

    /// A gate against a fresh issuer, started: it has the issuer's keys.
    async fn start(introspection: bool) -> Shop {
        let shop = Shop::new(Issuer::start().await, introspection);
        shop.gate.start().await;
        assert!(shop.gate.has_keys().await, "the gate fetched the issuer's keys at start");
        shop
    }

    fn claims(&self, sub: &str, scope: &str) -> Claims {
        self.issuer.claims(sub, scope, RESOURCE)
    }

    /// A good token for `sub` holding `scope`.
    fn token(&self, sub: &str, scope: &str) -> String {
        self.issuer.sign(&self.claims(sub, scope))
    }

    async fn send(&self, request: Request<Body>) -> Reply {
        let response = self.app.clone().oneshot(request).await.unwrap();
        let (parts, body) = response.into_parts();
        Reply { status: parts.status, headers: parts.headers, body: to_bytes(body, usize::MAX).await.unwrap() }
    }

    /// POST `body` to the endpoint, with `token` as the bearer.
    async fn post(&self, token: Option<&str>, body: &Value) -> Reply {
        self.send(request(token, "/mcp", Body::from(body.to_string()))).await
    }

    /// As [`Shop::post`], from the client at `client` (as the transport names it).
    async fn post_from(&self, client: &str, token: Option<&str>, body: &Value) -> Reply {
        let mut request = request(token, "/mcp", Body::from(body.to_string()));
        request.extensions_mut().insert(ClientAddress::client(client.parse().unwrap()));
        self.send(request).await
    }

    /// How many requests the handler behind the gate has seen.
    fn reached(&self) -> usize {
        self.reached.load(Ordering::SeqCst)
    }

    /// "{issuer} {subject}": the principal the gate hands on for `subject`.
    fn principal(&self, subject: &str) -> String {
        format!("{} {subject}", self.issuer.url)
    }
}

/// The endpoint behind the gate: what the gate put in the request's extensions, and the body.
async fn echo(
    State(reached): State<Arc<AtomicUsize>>,
    Extension(principal): Extension<Principal>,
    Extension(Granted(scopes)): Extension<Granted>,
    body: Bytes,
) -> Json<Value> {
    reached.fetch_add(1, Ordering::SeqCst);
    Json(json!({
        "principal": principal.to_string(), "issuer": principal.issuer(), "subject": principal.subject(), "scopes": scopes,
        "body": String::from_utf8_lossy(&body),
    }))
}

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Reply {
    fn header(&self, name: header::HeaderName) -> Option<&str> {
        self.headers.get(name).map(|value| value.to_str().unwrap())
    }

    fn challenge(&self) -> Option<&str> {
        self.header(header::WWW_AUTHENTICATE)
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&self.body)))
    }
}

fn request(token: Option<&str>, uri: &str, body: Body) -> Request<Body> {
    let mut request = Request::post(uri)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream");
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    request.body(body).unwrap()
}

fn list_tools() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
}

fn call(tool: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": {}}})
}

/// The challenge for a token refused for `why`.
fn invalid_token(why: GateRefusal) -> String {
    format!(
        r#"Bearer error="invalid_token", error_description="{why}", resource_metadata="{METADATA_URL}", scope="{ORDERS_READ}""#
    )
}

/// The challenge for a valid token that lacks a scope the request `needs`.
fn insufficient_scope(needs: &str) -> String {
    format!(
        r#"Bearer error="insufficient_scope", scope="{needs}", resource_metadata="{METADATA_URL}", error_description="{}""#,
        GateRefusal::InsufficientScope
    )
}

/// Refused with 401 `invalid_token` for `why`.
#[track_caller]
fn assert_invalid_token(reply: &Reply, why: GateRefusal, case: &str) {
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{case}");
    assert_eq!(reply.challenge(), Some(invalid_token(why).as_str()), "{case}");
}

/// Every class of bad token, with why it is refused: good claims for `mallory` changed in one way each.
fn bad_tokens(shop: &Shop) -> Vec<(&'static str, String, GateRefusal)> {
    let (issuer, good) = (&shop.issuer, shop.claims("mallory", ORDERS_READ));
    vec![
        ("expired", issuer.sign(&Claims { exp: -120, nbf: -300, ..good.clone() }), GateRefusal::Expired),
        ("not yet valid", issuer.sign(&Claims { nbf: 120, ..good.clone() }), GateRefusal::Expired),
        (
            "for another resource",
            issuer.sign(&Claims { aud: "https://other.example/mcp".into(), ..good.clone() }),
            GateRefusal::WrongAudience,
        ),
        (
            "from another issuer",
            issuer.sign(&Claims { iss: "https://evil.example".into(), ..good.clone() }),
            GateRefusal::WrongIssuer,
        ),
        ("signed by a key the issuer never published", issuer.forge(&good), GateRefusal::Signature),
        ("naming a key the issuer never published", issuer.sign_naming_kid(&good, "made-up"), GateRefusal::UnknownKey),
        ("alg none", issuer.unsigned(&good), GateRefusal::Algorithm),
        ("HS256 under the public key", issuer.sign_hs256_with_public_key(&good), GateRefusal::Algorithm),
        (
            "typ JWT, not an access token",
            issuer.sign(&Claims { typ: "JWT".into(), ..good.clone() }),
            GateRefusal::NotAnAccessToken,
        ),
        ("no subject", issuer.sign(&Claims { sub: None, ..good.clone() }), GateRefusal::NoSubject),
        ("not a JWT", "not-a-token".to_owned(), GateRefusal::Malformed),
        ("three parts of garbage", "a.b.c".to_owned(), GateRefusal::Malformed),
    ]
}

// Keys.

#[tokio::test]
async fn a_valid_token_passes_and_names_its_principal() {
    let shop = Shop::start(false).await;
    let body = list_tools();
    let reply = shop.post(Some(&shop.token("alice", "orders:read audit:read")), &body).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(
        reply.json(),
        json!({"principal": shop.principal("alice"), "issuer": shop.issuer.url, "subject": "alice",
            "scopes": [ORDERS_READ, AUDIT_READ], "body": body.to_string()})
    );
    assert_eq!(shop.reached(), 1);
}

#[tokio::test]
async fn a_token_not_signed_by_a_published_key_is_refused() {
    let shop = Shop::start(false).await;
    let claims = shop.claims("mallory", ORDERS_READ);
    let forged = shop.post(Some(&shop.issuer.forge(&claims)), &list_tools()).await;
    assert_invalid_token(&forged, GateRefusal::Signature, "the published kid, another key's signature");
    let unknown = shop.post(Some(&shop.issuer.sign_naming_kid(&claims, "made-up")), &list_tools()).await;
    assert_invalid_token(&unknown, GateRefusal::UnknownKey, "a kid the issuer never published");
    assert_eq!(shop.reached(), 0);
    // The same claims signed with the published key pass: the key was the only fault.
    assert_eq!(shop.post(Some(&shop.issuer.sign(&claims)), &list_tools()).await.status, StatusCode::OK);
}

// Rotation.

#[tokio::test]
async fn a_rotated_key_is_fetched_once_and_then_served_from_the_cache() {
    let shop = Shop::start(false).await;
    assert_eq!((shop.issuer.metadata_fetches(), shop.issuer.jwks_fetches()), (1, 1), "fetched at start");
    let before_rotation = shop.token("alice", ORDERS_READ);
    // Signed by the same key, not shown before the rotation (a token shown then is kept as
    // checked for up to a minute).
    let also_before_rotation = shop.token("bob", ORDERS_READ);
    assert_eq!(shop.post(Some(&before_rotation), &list_tools()).await.status, StatusCode::OK);
    assert_eq!(shop.issuer.jwks_fetches(), 1, "a known kid is served from the cache");

    shop.issuer.rotate("key-2");
    let rotated = shop.token("alice", ORDERS_READ);
    for n in 0..20 {
        let reply = shop.post(Some(&rotated), &list_tools()).await;
        assert_eq!(reply.status, StatusCode::OK, "request {n} with the new kid");
        assert_eq!(reply.json()["principal"], shop.principal("alice"));
    }
    assert_eq!(shop.issuer.jwks_fetches(), 2, "the new kid fetched the set once");
    assert_eq!(shop.issuer.metadata_fetches(), 1, "the jwks_uri is remembered");

    // The issuer no longer publishes key-1: its tokens are refused, without another fetch.
    let retired = shop.post(Some(&also_before_rotation), &list_tools()).await;
    assert_invalid_token(&retired, GateRefusal::UnknownKey, "a key the issuer retired");
    assert_eq!(shop.issuer.jwks_fetches(), 2);
}

#[tokio::test]
async fn cached_keys_serve_while_the_issuer_is_down_even_after_a_failed_fetch() {
    let shop = Shop::start(false).await;
    let token = shop.token("alice", ORDERS_READ);
    shop.issuer.set_up(false);
    let asked = shop.issuer.requests();
    for n in 0..10 {
        assert_eq!(shop.post(Some(&token), &list_tools()).await.status, StatusCode::OK, "request {n}");
    }
    assert_eq!(shop.issuer.requests(), asked, "served from the cache, without asking the issuer");

    // An unknown kid makes the gate try the issuer, which answers 503: the last good set stays.
    let unknown = shop.issuer.sign_naming_kid(&shop.claims("alice", ORDERS_READ), "key-2");
    assert_invalid_token(&shop.post(Some(&unknown), &list_tools()).await, GateRefusal::UnknownKey, "an unknown kid");
    assert_eq!(shop.issuer.jwks_fetches(), 2, "one failed fetch for the unknown kid");
    let reply = shop.post(Some(&token), &list_tools()).await;
    assert_eq!(reply.status, StatusCode::OK, "the last good set still serves");
    assert_eq!(reply.json()["principal"], shop.principal("alice"));
}

#[tokio::test]
async fn made_up_key_ids_do_not_hammer_the_issuer() {
    let shop = Shop::start(false).await;
    let claims = shop.claims("mallory", ORDERS_READ);
    let asked = (shop.issuer.metadata_fetches(), shop.issuer.jwks_fetches());
    for n in 0..50 {
        let token = shop.issuer.sign_naming_kid(&claims, &format!("made-up-{n}"));
        assert_invalid_token(
            &shop.post(Some(&token), &list_tools()).await,
            GateRefusal::UnknownKey,
            &format!("kid {n}"),
        );
    }
    // The first unknown kid fetches at once (it could have been a rotation); the other 49 fall
    // within the cooldown.
    assert_eq!((shop.issuer.metadata_fetches(), shop.issuer.jwks_fetches()), (asked.0, asked.1 + 1));
    assert_eq!(shop.reached(), 0);
}

// Scopes.

#[tokio::test]
async fn a_token_without_the_tools_scope_gets_403_insufficient_scope() {
    let shop = Shop::start(false).await;
    let reader = shop.token("carol", ORDERS_READ);
    let refused = shop.post(Some(&reader), &call("issue_refund")).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert_eq!(refused.challenge(), Some(insufficient_scope(REFUNDS_WRITE).as_str()));
    assert_eq!(shop.reached(), 0, "the refused call never reached the tool");

    // The same token reaches a reading tool; a lead's refunds:write reaches both, reading implied.
    assert_eq!(shop.post(Some(&reader), &call("lookup_order")).await.status, StatusCode::OK);
    let lead = shop.token("alice", REFUNDS_WRITE);
    assert_eq!(shop.post(Some(&lead), &call("issue_refund")).await.status, StatusCode::OK);
    assert_eq!(shop.post(Some(&lead), &call("lookup_order")).await.status, StatusCode::OK);
    assert_eq!(shop.reached(), 3);
}

#[tokio::test]
async fn an_insufficient_scope_challenge_names_every_scope_the_call_needs() {
    let shop = Shop::start(false).await;
    // carol holds one of the two scopes export_audit needs; the challenge asks for both.
    let refused = shop.post(Some(&shop.token("carol", ORDERS_READ)), &call("export_audit")).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert_eq!(refused.challenge(), Some(insufficient_scope("orders:read audit:read").as_str()));
    let both = shop.token("dave", "orders:read audit:read");
    assert_eq!(shop.post(Some(&both), &call("export_audit")).await.status, StatusCode::OK);
}

/// The tool is read from the body, strictly: a header naming another tool does not count, and a
/// body whose tool cannot be read is refused (400), never passed on to be read another way.
#[tokio::test]
async fn the_tool_is_read_from_the_body_and_an_unreadable_one_is_refused() {
    let shop = Shop::start(false).await;
    let reader = shop.token("carol", ORDERS_READ);
    let mut hinted = request(Some(&reader), "/mcp", Body::from(call("issue_refund").to_string()));
    hinted.headers_mut().insert("mcp-name", "lookup_order".parse().unwrap());
    let refused = shop.send(hinted).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "the Mcp-Name header is a hint, not proof");
    assert_eq!(refused.challenge(), Some(insufficient_scope(REFUNDS_WRITE).as_str()));

    let lead = shop.token("alice", REFUNDS_WRITE);
    let unreadable = [
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"lookup_order","name":"issue_refund"}}"#,
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/list","method":"tools/call","params":{"name":"issue_refund"}}"#,
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"arguments":{}}}"#,
        "{not json",
    ];
    for token in [&reader, &lead] {
        for body in unreadable {
            let reply = shop.send(request(Some(token), "/mcp", Body::from(body))).await;
            assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body}");
            assert_eq!(reply.challenge(), None, "{body}: not the token's fault");
        }
    }
    assert_eq!(shop.reached(), 0);
}

// Challenges.

#[tokio::test]
async fn a_request_without_a_token_is_told_where_to_get_one() {
    let shop = Shop::start(false).await;
    let refused = shop.post(None, &call("lookup_order")).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        refused.challenge(),
        Some(format!(r#"Bearer resource_metadata="{METADATA_URL}", scope="{ORDERS_READ}""#).as_str())
    );
    assert_eq!(shop.reached(), 0);
}

#[tokio::test]
async fn every_bad_token_gets_401_invalid_token_saying_why() {
    let shop = Shop::start(false).await;
    for (case, token, why) in bad_tokens(&shop) {
        assert_invalid_token(&shop.post(Some(&token), &list_tools()).await, why, case);
    }
    // Not a bearer token at all.
    let mut basic = request(None, "/mcp", Body::from(list_tools().to_string()));
    basic.headers_mut().insert(header::AUTHORIZATION, "Basic YWxpY2U6c2VjcmV0".parse().unwrap());
    assert_invalid_token(&shop.send(basic).await, GateRefusal::Malformed, "the Basic scheme");
    assert_eq!(shop.reached(), 0);
}

#[tokio::test]
async fn a_token_in_the_query_string_is_refused_even_beside_a_good_header() {
    let shop = Shop::start(false).await;
    let good = shop.token("alice", ORDERS_READ);
    let in_query = format!("/mcp?access_token={good}");
    let beside = shop.send(request(Some(&good), &in_query, Body::from(list_tools().to_string()))).await;
    assert_invalid_token(&beside, GateRefusal::InQuery, "in the query and the header");
    let alone = shop.send(request(None, &in_query, Body::from(list_tools().to_string()))).await;
    assert_invalid_token(&alone, GateRefusal::InQuery, "in the query alone");
    assert_eq!(shop.reached(), 0);
    assert_eq!(shop.post(Some(&good), &list_tools()).await.status, StatusCode::OK, "the header alone");
}

/// A caller without a good token costs the server a header's worth of work: the body is not
/// touched. The same body behind a good token is read (by the scope step), which shows the
/// probe sees a read.
#[tokio::test]
async fn the_token_is_checked_before_the_body_is_read() {
    let shop = Shop::start(false).await;
    let watched = || {
        let read = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&read);
        let body = Body::from_stream(futures::stream::once(async move {
            flag.store(true, Ordering::SeqCst);
            Err::<Bytes, _>(std::io::Error::other("the body was read"))
        }));
        (body, read)
    };
    let expired = shop.issuer.sign(&Claims { exp: -120, nbf: -300, ..shop.claims("mallory", ORDERS_READ) });
    for (case, token) in [("no token", None), ("not a token", Some("not-a-token")), ("expired", Some(expired.as_str()))]
    {
        let (body, read) = watched();
        assert_eq!(shop.send(request(token, "/mcp", body)).await.status, StatusCode::UNAUTHORIZED, "{case}");
        assert!(!read.load(Ordering::SeqCst), "{case}: the body was read");
    }
    let (body, read) = watched();
    let good = shop.token("alice", ORDERS_READ);
    assert_eq!(shop.send(request(Some(&good), "/mcp", body)).await.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(read.load(Ordering::SeqCst), "behind a good token the body is read");
}

// Metadata.

#[tokio::test]
async fn the_protected_resource_metadata_names_the_resource_and_its_authorization_server() {
    let shop = Shop::start(false).await;
    // Found where the challenge says, without a token.
    let challenge = shop.post(None, &list_tools()).await.challenge().unwrap().to_owned();
    let named = challenge.split(r#"resource_metadata=""#).nth(1).and_then(|rest| rest.split('"').next()).unwrap();
    assert_eq!(named, METADATA_URL);
    let path = named.strip_prefix("https://shop.example").unwrap();
    assert_eq!(path, METADATA_PATH);
    let reply = shop.send(Request::get(path).body(Body::empty()).unwrap()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(
        reply.json(),
        json!({
            "resource": RESOURCE,
            "authorization_servers": [shop.issuer.url],
            "scopes_supported": [ORDERS_READ, REFUNDS_WRITE, AUDIT_READ],
            "bearer_methods_supported": ["header"],
            "resource_name": "Test shop",
        })
    );
    // The document at the root would describe a resource at the root, which this is not.
    let root = shop.send(Request::get("/.well-known/oauth-protected-resource").body(Body::empty()).unwrap()).await;
    assert_eq!(root.status, StatusCode::NOT_FOUND);
}

// An issuer down at start.

/// Every token gets 503 with `Retry-After` (not a challenge: the token is not at fault) while
/// the issuer's keys were never had; requests do not ask the issuer themselves, however many;
/// the gate's own task fetches the keys once the issuer is back. The clock is paused while
/// the requests come, so the task's retry cannot slip in among them, then advanced past its pause.
#[tokio::test]
async fn an_issuer_down_at_start_gets_503_with_retry_after_until_it_is_back() {
    let issuer = Issuer::start().await;
    issuer.set_up(false);
    let shop = Shop::new(issuer, false);
    shop.gate.start().await;
    assert!(!shop.gate.has_keys().await);
    let asked_at_start = shop.issuer.requests();
    assert!(asked_at_start > 0, "the gate tried the issuer at start");
    // Let the retry task start its pause, then hold the clock.
    tokio::task::yield_now().await;
    tokio::time::pause();

    let token = shop.token("alice", ORDERS_READ);
    let assert_waits = |reply: Reply, case: &str| {
        assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE, "{case}");
        let retry_after = reply.header(header::RETRY_AFTER).unwrap_or_else(|| panic!("{case}: no Retry-After"));
        assert!(retry_after.parse::<u64>().is_ok_and(|seconds| seconds > 0), "{case}: Retry-After {retry_after}");
        assert_eq!(reply.challenge(), None, "{case}");
    };
    for n in 0..50 {
        assert_waits(shop.post(Some(&token), &list_tools()).await, &format!("request {n}"));
    }
    assert_eq!(shop.issuer.requests(), asked_at_start, "no request asked the issuer");
    shop.issuer.set_up(true);
    assert_waits(shop.post(Some(&token), &list_tools()).await, "the issuer is back, the retry not due");
    assert_eq!(shop.issuer.requests(), asked_at_start, "a request does not fetch the keys itself");
    assert_eq!(shop.reached(), 0);

    // A timer's deadline is rounded up to the next millisecond: one more makes sure it is due.
    tokio::time::advance(keys::RETRY_FIRST + Duration::from_millis(1)).await;
    // The clock stays put while the retry's requests cross the socket; bounded in real time.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !shop.gate.has_keys().await {
        assert!(Instant::now() < deadline, "the keys were not fetched after the retry's pause");
        tokio::task::yield_now().await;
    }
    assert_eq!(shop.issuer.jwks_fetches(), 1);
    let reply = shop.post(Some(&token), &list_tools()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["principal"], shop.principal("alice"));
}

// Opaque tokens, through introspection.

#[tokio::test]
async fn an_opaque_token_is_introspected_once_and_names_its_principal() {
    let shop = Shop::start(true).await;
    let token = shop.issuer.opaque(&shop.claims("erin", REFUNDS_WRITE));
    for n in 0..10 {
        let reply = shop.post(Some(&token), &call("issue_refund")).await;
        assert_eq!(reply.status, StatusCode::OK, "request {n}");
        assert_eq!(reply.json()["principal"], shop.principal("erin"));
        assert_eq!(reply.json()["scopes"], json!([REFUNDS_WRITE]));
    }
    assert_eq!(shop.issuer.introspections(), 1, "the answer is kept");
    // A JWT is still checked against the keys, not asked about.
    assert_eq!(shop.post(Some(&shop.token("alice", ORDERS_READ)), &list_tools()).await.status, StatusCode::OK);
    assert_eq!(shop.issuer.introspections(), 1);
}

/// A program's token (introspection names no `sub`) names its client, as a program acting
/// as itself, never as a person: its principal reads `client ISSUER CLIENT_ID`, which no
/// person's can be.
#[tokio::test]
async fn an_opaque_token_without_a_subject_names_a_program_not_a_person() {
    let shop = Shop::start(true).await;
    let token = shop.issuer.opaque(&Claims { sub: None, ..shop.claims("unused", REFUNDS_WRITE) });
    let reply = shop.post(Some(&token), &call("issue_refund")).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["principal"], format!("client {} test-client", shop.issuer.url));
    assert_eq!(reply.json()["subject"], "test-client");
    // The same ID as a person's `sub` is another caller.
    let person = shop.issuer.opaque(&shop.claims("test-client", REFUNDS_WRITE));
    assert_eq!(
        shop.post(Some(&person), &call("issue_refund")).await.json()["principal"],
        shop.principal("test-client")
    );
}

/// With a person claim named, a token's person is that claim's value, whatever `sub` the
/// issuer wrote for the client holding it (pairwise subjects): two tokens with other `sub`s
/// and one `staff_id` name one person, JWT or opaque; a person's token without the claim is
/// refused.
#[tokio::test]
async fn a_named_person_claim_names_the_person_whatever_their_subject() {
    let issuer = Issuer::start().await;
    let gate = ResourceServer::new(&issuer.url, RESOURCE, "Test shop", Box::new(TestScopes), MAX_BODY)
        .unwrap()
        .with_person_claim(Some("staff_id".into()));
    let shop = Shop::with_gate(issuer, gate, true);
    shop.gate.start().await;
    let as_staff = |sub: &str| {
        let mut claims = shop.claims(sub, ORDERS_READ);
        claims.extra.insert("staff_id".into(), json!("e-1001"));
        claims
    };
    let host = shop.issuer.sign(&as_staff("pairwise-for-the-host"));
    let page = shop.issuer.opaque(&as_staff("pairwise-for-the-page"));
    for token in [&host, &page] {
        let reply = shop.post(Some(token), &list_tools()).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.json()["principal"], shop.principal("e-1001"));
    }
    let unnamed = shop.issuer.sign(&shop.claims("alice", ORDERS_READ));
    assert_invalid_token(&shop.post(Some(&unnamed), &list_tools()).await, GateRefusal::NoPerson, "no staff_id");
    let mut not_text = shop.claims("alice", ORDERS_READ);
    not_text.extra.insert("staff_id".into(), json!(1001));
    let not_text = shop.issuer.sign(&not_text);
    assert_invalid_token(&shop.post(Some(&not_text), &list_tools()).await, GateRefusal::NoPerson, "a number");
}

#[tokio::test]
async fn opaque_tokens_the_issuer_does_not_vouch_for_are_refused() {
    let shop = Shop::start(true).await;
    let never_issued = "Vd3v3rKqA2e2cX5VjYwY1QfN7t8ZbP0uLx9mH4sG1kE";
    assert_invalid_token(&shop.post(Some(never_issued), &list_tools()).await, GateRefusal::Expired, "inactive");
    let good = shop.claims("mallory", ORDERS_READ);
    let elsewhere = shop.issuer.opaque(&Claims { aud: "https://other.example/mcp".into(), ..good.clone() });
    assert_invalid_token(
        &shop.post(Some(&elsewhere), &list_tools()).await,
        GateRefusal::WrongAudience,
        "another resource",
    );
    let foreign = shop.issuer.opaque(&Claims { iss: "https://evil.example".into(), ..good.clone() });
    assert_invalid_token(&shop.post(Some(&foreign), &list_tools()).await, GateRefusal::WrongIssuer, "another issuer");
    let expired = shop.issuer.opaque(&Claims { exp: -120, ..good });
    assert_invalid_token(&shop.post(Some(&expired), &list_tools()).await, GateRefusal::Expired, "expired");
    assert_eq!(shop.issuer.introspections(), 4);
    assert_eq!(shop.reached(), 0);
}

/// 200 values that cannot be tokens ask the issuer nothing; 200 requests with one well-formed
/// but inactive token ask it once (the refusal is kept a while).
#[tokio::test]
async fn junk_tokens_are_not_sent_to_the_issuer() {
    let shop = Shop::start(true).await;
    let asked = shop.issuer.requests();
    for n in 0..200 {
        let junk = format!("junk{n}");
        assert_invalid_token(&shop.post(Some(&junk), &list_tools()).await, GateRefusal::Malformed, &junk);
    }
    assert_eq!(shop.issuer.requests(), asked, "a value that cannot be a token is not asked about");
    let inactive = "Vd3v3rKqA2e2cX5VjYwY1QfN7t8ZbP0uLx9mH4sG1kE";
    for _ in 0..200 {
        assert_invalid_token(&shop.post(Some(inactive), &list_tools()).await, GateRefusal::Expired, "inactive");
    }
    assert_eq!(shop.issuer.requests(), asked + 1, "one introspection; the refusal is kept");
    assert_eq!(shop.issuer.introspections(), 1);
}

/// One client sending 2,000 token-shaped values, each new: the issuer is asked about no more of
/// them than the client's share before the client is answered 429 (its values not looked at),
/// while a token checked before passes from that client and another client's new token is
/// still looked at.
#[tokio::test]
async fn a_client_sending_new_tokens_past_its_share_is_turned_away() {
    let shop = Shop::start(true).await;
    let good = shop.issuer.opaque(&shop.claims("erin", ORDERS_READ));
    assert_eq!(shop.post_from("10.0.0.1", Some(&good), &list_tools()).await.status, StatusCode::OK);
    let asked = shop.issuer.introspections();
    let started = Instant::now();
    let mut turned_away = None;
    let mut statuses = BTreeMap::new();
    for n in 0..2000 {
        let value = format!("Vd3v3rKqA2e2cX5VjYwY1QfN7t8Z{n:08}");
        let reply = shop.post_from("10.0.0.1", Some(&value), &list_tools()).await;
        *statuses.entry(reply.status.as_u16()).or_insert(0) += 1;
        if reply.status == StatusCode::TOO_MANY_REQUESTS {
            turned_away.get_or_insert(reply);
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let asked = shop.issuer.introspections() - asked;
    let share = oauth_resource::budget::DEFAULT_PER_CLIENT as f64;
    assert!(
        asked as f64 <= share * 5.0 + share * elapsed + 1.0,
        "{asked} introspections in {elapsed:.2} s: {statuses:?}"
    );
    assert!(statuses.get(&429).copied().unwrap_or(0) >= 1500, "{statuses:?}");
    let turned_away = turned_away.expect("a 429");
    assert!(turned_away.header(header::RETRY_AFTER).is_some());
    assert_eq!(turned_away.challenge(), None, "not a challenge to sign in again");
    assert_eq!(
        shop.post_from("10.0.0.1", Some(&good), &list_tools()).await.status,
        StatusCode::OK,
        "a token checked before costs nothing and passes"
    );
    let other = shop.issuer.opaque(&shop.claims("frank", ORDERS_READ));
    assert_eq!(shop.post_from("10.0.0.2", Some(&other), &list_tools()).await.status, StatusCode::OK);
}

#[tokio::test]
async fn an_introspection_the_issuer_cannot_answer_is_503_and_not_remembered() {
    let shop = Shop::start(true).await;
    let token = shop.issuer.opaque(&shop.claims("erin", ORDERS_READ));
    shop.issuer.set_up(false);
    let waiting = shop.post(Some(&token), &list_tools()).await;
    assert_eq!(waiting.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(waiting.header(header::RETRY_AFTER).is_some());
    assert_eq!(waiting.challenge(), None);
    shop.issuer.set_up(true);
    let reply = shop.post(Some(&token), &list_tools()).await;
    assert_eq!(reply.status, StatusCode::OK, "asked again once the issuer is back");
    assert_eq!(reply.json()["principal"], shop.principal("erin"));
    assert_eq!(shop.issuer.introspections(), 2);
}

// Metrics.

/// `mcp_auth_failures_total{reason}` as a recorder on this test's thread sees it.
#[derive(Default)]
struct RefusalCounts(Mutex<BTreeMap<String, Arc<AtomicU64>>>);

impl RefusalCounts {
    fn snapshot(&self) -> BTreeMap<String, u64> {
        let counts = self.0.lock().unwrap();
        counts.iter().map(|(reason, count)| (reason.clone(), count.load(Ordering::SeqCst))).collect()
    }
}

impl Recorder for RefusalCounts {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        if key.name() != "mcp_auth_failures_total" {
            return Counter::noop();
        }
        let reason = key.labels().find(|label| label.key() == "reason").map(|label| label.value().to_owned());
        let mut counts = self.0.lock().unwrap();
        Counter::from_arc(Arc::clone(counts.entry(reason.unwrap_or_default()).or_default()))
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

/// Every reason's series exists at zero from the start, and each refusal moves its own reason's
/// count by one and no other; between them the cases cover every reason there is.
#[test]
fn every_refusal_is_counted_under_its_own_reason() {
    let counts = RefusalCounts::default();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    metrics::with_local_recorder(&counts, || {
        runtime.block_on(async {
            let shop = Shop::start(false).await;
            let zero: BTreeMap<String, u64> = GateRefusal::ALL.iter().map(|why| (why.label().to_owned(), 0)).collect();
            assert_eq!(counts.snapshot(), zero);
            let down = Shop::new(Issuer::start().await, false);
            down.issuer.set_up(false);
            down.gate.start().await;

            // A client that has spent its share of new tokens, and a server that has spent its own.
            let from = |client: &str, token: &str| {
                let mut sent = request(Some(token), "/mcp", Body::from(list_tools().to_string()));
                sent.extensions_mut().insert(ClientAddress::client(client.parse().unwrap()));
                sent
            };
            let spent_client = Shop::budgeted(1, 1000).await;
            for n in 0..5 {
                spent_client.send(from("10.9.9.9", &format!("a.b.{n}"))).await;
            }
            let spent_server = Shop::budgeted(1000, 1).await;
            for n in 0..2 {
                spent_server.send(from(&format!("10.9.9.{n}"), &format!("a.b.{n}"))).await;
            }

            let reader = shop.token("carol", ORDERS_READ);
            let in_query = format!("/mcp?access_token={reader}");
            let issuer = Issuer::start().await;
            let gate = ResourceServer::new(&issuer.url, RESOURCE, "Test shop", Box::new(TestScopes), MAX_BODY)
                .unwrap()
                .with_person_claim(Some("staff_id".into()));
            let naming_people = Shop::with_gate(issuer, gate, false);
            naming_people.gate.start().await;
            let unnamed = naming_people.token("carol", ORDERS_READ);
            let mut cases: Vec<(String, &Shop, Request<Body>, GateRefusal)> = vec![
                (
                    "no token".into(),
                    &shop,
                    request(None, "/mcp", Body::from(list_tools().to_string())),
                    GateRefusal::Missing,
                ),
                (
                    "in the query".into(),
                    &shop,
                    request(None, &in_query, Body::from(list_tools().to_string())),
                    GateRefusal::InQuery,
                ),
                (
                    "insufficient scope".into(),
                    &shop,
                    request(Some(&reader), "/mcp", Body::from(call("issue_refund").to_string())),
                    GateRefusal::InsufficientScope,
                ),
                (
                    "unreadable".into(),
                    &shop,
                    request(Some(&reader), "/mcp", Body::from("{not json")),
                    GateRefusal::Unreadable,
                ),
                (
                    "a client past its share of new tokens".into(),
                    &spent_client,
                    from("10.9.9.9", "a.b.x"),
                    GateRefusal::Throttled,
                ),
                ("the server past its share".into(), &spent_server, from("10.9.9.3", "a.b.x"), GateRefusal::Overloaded),
                (
                    "no person claim".into(),
                    &naming_people,
                    request(Some(&unnamed), "/mcp", Body::from(list_tools().to_string())),
                    GateRefusal::NoPerson,
                ),
                (
                    "issuer unreachable".into(),
                    &down,
                    request(Some(&reader), "/mcp", Body::from(list_tools().to_string())),
                    GateRefusal::IssuerUnreachable,
                ),
            ];
            for (case, token, why) in bad_tokens(&shop) {
                cases.push((
                    case.into(),
                    &shop,
                    request(Some(&token), "/mcp", Body::from(list_tools().to_string())),
                    why,
                ));
            }
            let covered: BTreeMap<&str, u64> = cases.iter().map(|(_, _, _, why)| (why.label(), 0)).collect();
            assert_eq!(covered.len(), GateRefusal::ALL.len(), "every reason has a case");

            for (case, target, sent, why) in cases {
                let mut expected = counts.snapshot();
                *expected.get_mut(why.label()).unwrap() += 1;
                assert_ne!(target.send(sent).await.status, StatusCode::OK, "{case}");
                assert_eq!(counts.snapshot(), expected, "{case}: counted as {}", why.label());
            }
        })
    });
}
