//! End-to-end tests: the real server on a loopback port, driven through
//! `ShopApi` and through raw HTTP.

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, LOCATION};
use serde_json::{Value, json};
use shop_api::{
    ApiError, Cents, OrderId, QuoteId, QuoteRequest, RefundId, RefundStatus, RunningApi, ShopApi, Sku, Store,
    spawn_loopback,
};
use web_service::testing::send_raw;

struct Harness {
    api: RunningApi,
    shop: ShopApi,
    http: reqwest::Client,
}

impl Harness {
    async fn start() -> Harness {
        Harness::with_store(Store::open(None).unwrap()).await
    }

    async fn with_store(store: Store) -> Harness {
        Harness::with_store_arc(Arc::new(store)).await
    }

    async fn with_store_arc(store: Arc<Store>) -> Harness {
        let api = spawn_loopback(store).await.unwrap();
        let token = api.token.clone().expect("an API started here has a credential");
        let shop = ShopApi::new(&api.url).unwrap().with_token(Some(token.clone()));
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::AUTHORIZATION, format!("Bearer {token}").parse().unwrap());
        Harness { api, shop, http: reqwest::Client::builder().default_headers(headers).build().unwrap() }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.api.url)
    }

    async fn whole_order_quote(&self, order_id: &str) -> shop_api::Quote {
        self.shop
            .create_quote(&QuoteRequest { order_id: order_id.parse().unwrap(), skus: None, include_shipping: None })
            .await
            .unwrap()
    }
}

fn refund_id(s: &str) -> RefundId {
    RefundId::parse(s).unwrap()
}

/// The parties the MCP server names, as `Fernhill-On-Behalf-Of` carries them.
const AGENT: &str = "https://login.example agent-7";
const LEAD_1: &str = "host user lead-1";
const LEAD_2: &str = "https://login.example lead-2";

fn party(text: &str) -> shop_api::Party {
    shop_api::Party::parse(text).unwrap()
}

#[tokio::test]
async fn refund_above_the_limit_is_held() {
    let h = Harness::start().await;
    let quote = h.whole_order_quote("O-2289").await;
    assert_eq!(quote.quote_id.as_str(), "Q-5001");
    assert_eq!(quote.amount.to_string(), "180.00");
    assert!(quote.includes_shipping);
    assert!(quote.needs_confirmation);
    assert_eq!(quote.skus, vec![Sku::parse("GG-0412").unwrap()]);

    let refund = h.shop.create_refund(&quote.quote_id).await.unwrap();
    assert_eq!(refund.refund_id.as_str(), "R-0111");
    assert_eq!(refund.status, RefundStatus::NeedsConfirmation);
    assert_eq!(refund.amount, Cents(18000));
    assert_eq!(refund.currency, "EUR");
    assert_eq!(h.shop.refund(&refund.refund_id).await.unwrap(), refund);
    assert_eq!(h.shop.quote(&quote.quote_id).await.unwrap(), quote);
}

#[tokio::test]
async fn refund_below_the_limit_is_requested() {
    let h = Harness::start().await;
    let quote = h.whole_order_quote("O-1021").await;
    assert_eq!(quote.amount.to_string(), "39.90");
    assert!(!quote.needs_confirmation);
    let refund = h.shop.create_refund(&quote.quote_id).await.unwrap();
    assert_eq!(refund.status, RefundStatus::Requested);
}

#[tokio::test]
async fn quotes_for_whole_order_and_chosen_skus() {
    let h = Harness::start().await;
    let order = h.shop.order(&"O-1145".parse().unwrap()).await.unwrap();
    assert_eq!(order.customer, "Maren Holt");
    assert_eq!(order.total.to_string(), "343.49");
    assert_eq!(order.lines.len(), 2);

    let whole = h.whole_order_quote("O-1145").await;
    assert_eq!(whole.amount.to_string(), "343.49");
    assert!(whole.includes_shipping);

    let casserole = h
        .shop
        .create_quote(&QuoteRequest {
            order_id: "O-1145".parse().unwrap(),
            skus: Some(vec!["KG-1043".parse().unwrap()]),
            include_shipping: None,
        })
        .await
        .unwrap();
    assert_eq!(casserole.amount.to_string(), "249.50");
    assert!(!casserole.includes_shipping);
    assert!(casserole.needs_confirmation);
    assert_eq!(casserole.quote_id.as_str(), "Q-5002");

    let (status, body) =
        send_raw(h.http.post(h.url("/quotes")).json(&json!({"order_id": "O-1145", "skus": ["GG-0412"]}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["type"], "/problems/no_lines");
    assert_eq!(body["order_skus"], json!(["KG-1043", "GG-2210"]));
}

#[tokio::test]
async fn creating_a_refund_twice_returns_the_same_refund() {
    let h = Harness::start().await;
    let quote = h.whole_order_quote("O-2289").await;
    let body = json!({ "quote_id": quote.quote_id });

    let response = h.http.post(h.url("/refunds")).json(&body).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(response.headers()[LOCATION], "/refunds/R-0111");
    let first: Value = response.json().await.unwrap();

    let (status, second) = send_raw(h.http.post(h.url("/refunds")).json(&body)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(second, first);
    assert_eq!(second["status"], "needs_confirmation");

    let (refund, created) = h.shop.create_refund_outcome(&quote.quote_id, None).await.unwrap();
    assert!(!created);
    assert_eq!(refund.refund_id.as_str(), "R-0111");
    assert_eq!(h.shop.refunds().await.unwrap(), vec![refund]);
}

#[tokio::test]
async fn concurrent_refund_requests_create_one_refund() {
    let h = Harness::start().await;
    let quote = h.whole_order_quote("O-5150").await;
    let calls: Vec<_> = (0..16)
        .map(|_| {
            let shop = h.shop.clone();
            let quote_id = quote.quote_id.clone();
            tokio::spawn(async move { shop.create_refund_outcome(&quote_id, None).await.unwrap() })
        })
        .collect();
    let mut created = 0;
    for call in calls {
        let (refund, is_new) = call.await.unwrap();
        assert_eq!(refund.refund_id.as_str(), "R-0111");
        created += usize::from(is_new);
    }
    assert_eq!(created, 1);
    assert_eq!(h.shop.refunds().await.unwrap().len(), 1);
}

/// Sixteen callers each quote the same line and issue their quote at once: the line is
/// refunded once; every other caller is refused with a 409 naming the refund that has it.
#[tokio::test]
async fn concurrent_quotes_and_refunds_of_one_line_refund_it_once() {
    let h = Harness::start().await;
    let request = QuoteRequest {
        order_id: "O-1145".parse().unwrap(),
        skus: Some(vec![Sku::parse("GG-2210").unwrap()]),
        include_shipping: None,
    };
    let calls: Vec<_> = (0..16)
        .map(|_| {
            let (shop, request) = (h.shop.clone(), request.clone());
            tokio::spawn(async move {
                let quote = shop.create_quote(&request).await?;
                shop.create_refund(&quote.quote_id).await
            })
        })
        .collect();
    let (mut issued, mut refused) = (Vec::new(), 0);
    for call in calls {
        match call.await.unwrap() {
            Ok(refund) => issued.push(refund),
            Err(error) => {
                assert_eq!((error.status(), error.kind()), (Some(409), Some("already_refunded")), "{error}");
                refused += 1;
            }
        }
    }
    assert_eq!((issued.len(), refused), (1, 15));
    let refunds = h.shop.refunds().await.unwrap();
    assert_eq!(refunds.iter().filter(|r| r.status != RefundStatus::Cancelled).count(), 1, "{refunds:?}");
    assert_eq!(refunds[0].amount, Cents(8500));
}

#[tokio::test]
async fn a_second_refund_of_a_line_is_a_409_problem_naming_the_refund() {
    let h = Harness::start().await;
    let first = h.whole_order_quote("O-2289").await;
    let second = h.whole_order_quote("O-2289").await;
    h.shop.create_refund(&first.quote_id).await.unwrap();
    let (status, body) = send_raw(h.http.post(h.url("/refunds")).json(&json!({"quote_id": second.quote_id}))).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["type"], "/problems/already_refunded");
    assert_eq!(
        body["covered"],
        json!([{"line": "GG-0412", "refund_id": "R-0111"}, {"line": "shipping", "refund_id": "R-0111"}])
    );
    let (status, body) = send_raw(h.http.post(h.url("/quotes")).json(&json!({"order_id": "O-2289"}))).await;
    assert_eq!((status, body["type"].as_str()), (StatusCode::CONFLICT, Some("/problems/already_refunded")));
    assert_eq!(
        body["detail"],
        "Order O-2289 is already refunded or held for refund there (GG-0412 by R-0111, shipping by R-0111); only what is still refundable can be quoted or refunded."
    );
}

#[tokio::test]
async fn an_expired_quote_is_a_410_problem() {
    let h = Harness::with_store(Store::open(None).unwrap().with_quote_ttl(std::time::Duration::ZERO)).await;
    let quote = h.whole_order_quote("O-2289").await;
    let (status, body) = send_raw(h.http.post(h.url("/refunds")).json(&json!({"quote_id": quote.quote_id}))).await;
    assert_eq!((status, body["type"].as_str()), (StatusCode::GONE, Some("/problems/quote_expired")));
    assert_eq!(body["detail"], "Quote Q-5001 has expired; quote the refund again.");
}

#[tokio::test]
async fn confirm_releases_a_hold_once() {
    let h = Harness::start().await;
    let quote = h.whole_order_quote("O-2289").await;
    let refund = h.shop.create_refund(&quote.quote_id).await.unwrap();

    let confirmed = h.shop.confirm(&refund.refund_id, &party(LEAD_1)).await.unwrap();
    assert_eq!(confirmed.status, RefundStatus::Requested);

    let again = h.http.post(h.url("/refunds/R-0111/confirm")).header("fernhill-on-behalf-of", LEAD_1).json(&json!({}));
    let (status, body) = send_raw(again).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["type"], "/problems/not_held");
    assert_eq!(body["refund_status"], "requested");
    assert_eq!(body["refund_id"], "R-0111");
    assert_eq!(body["detail"], "Refund R-0111 is not held; its status is requested.");

    let err = h.shop.confirm(&refund.refund_id, &party(LEAD_1)).await.unwrap_err();
    assert!(err.is_conflict());
    assert_eq!(err.kind(), Some("not_held"));
    assert_eq!(err.to_string(), "Refund R-0111 is not held; its status is requested.");
}

/// Sixteen confirms of one held refund at once, and a decline racing them: exactly one of all
/// of them acts, every other gets 409 `not_held`. The money's last line of defence holds under
/// concurrency, not only in sequence.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_confirms_and_a_cancel_act_once() {
    let h = Harness::start().await;
    let quote = h.whole_order_quote("O-2289").await;
    let refund = h.shop.create_refund(&quote.quote_id).await.unwrap();
    let mut calls: Vec<_> = (0..16)
        .map(|_| {
            let (shop, id) = (h.shop.clone(), refund.refund_id.clone());
            tokio::spawn(async move { shop.confirm(&id, &party(LEAD_1)).await.map(|r| r.status) })
        })
        .collect();
    let (shop, id) = (h.shop.clone(), refund.refund_id.clone());
    calls.push(tokio::spawn(async move { shop.cancel(&id).await.map(|r| r.status) }));
    let mut acted = Vec::new();
    for call in calls {
        match call.await.unwrap() {
            Ok(status) => acted.push(status),
            Err(error) => assert_eq!(error.kind(), Some("not_held"), "{error}"),
        }
    }
    assert_eq!(acted.len(), 1, "one call acted: {acted:?}");
    let now = h.shop.refund(&refund.refund_id).await.unwrap().status;
    assert_eq!(now, acted[0], "the refund is as the one call that acted left it");
}

#[tokio::test]
async fn cancel_withdraws_only_a_held_refund() {
    let h = Harness::start().await;
    let held = h.whole_order_quote("O-2289").await;
    let held = h.shop.create_refund(&held.quote_id).await.unwrap();
    let cancelled = h.shop.cancel(&held.refund_id).await.unwrap();
    assert_eq!(cancelled.status, RefundStatus::Cancelled);
    assert!(h.shop.confirm(&held.refund_id, &party(LEAD_1)).await.unwrap_err().is_conflict());

    let small = h.whole_order_quote("O-1021").await;
    let requested = h.shop.create_refund(&small.quote_id).await.unwrap();
    assert_eq!(requested.refund_id.as_str(), "R-0112");
    let (status, body) = send_raw(h.http.post(h.url("/refunds/R-0112/cancel")).json(&json!({}))).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["refund_status"], "requested");
    assert_eq!(h.shop.refund(&requested.refund_id).await.unwrap().status, RefundStatus::Requested);
}

#[tokio::test]
async fn unknown_ids_are_404_problems() {
    let h = Harness::start().await;
    let (status, body) = send_raw(h.http.get(h.url("/orders/O-9999"))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["type"], "/problems/no_such_order");
    assert_eq!(body["detail"], "There is no order O-9999.");

    let err = h.shop.order(&OrderId::parse("O-9999").unwrap()).await.unwrap_err();
    assert!(err.is_not_found());
    assert_eq!(err.to_string(), "There is no order O-9999.");
    let err = h.shop.quote(&QuoteId::parse("Q-9999").unwrap()).await.unwrap_err();
    assert_eq!(err.kind(), Some("no_such_quote"));
    let err = h.shop.create_refund(&QuoteId::parse("Q-9999").unwrap()).await.unwrap_err();
    assert_eq!(err.to_string(), "There is no quote Q-9999.");
    assert!(h.shop.cancel(&refund_id("R-9999")).await.unwrap_err().is_not_found());
}

#[tokio::test]
async fn malformed_ids_are_400_problems() {
    let h = Harness::start().await;
    let (status, body) = send_raw(h.http.get(h.url("/orders/bad"))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["type"], "/problems/bad_id");
    assert_eq!(body["detail"], r#""bad" is not an order ID: expected O- followed by 4 to 9 digits, such as O-1145"#);
    let (status, body) = send_raw(h.http.get(h.url("/refunds/R-%C3%B6"))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["detail"].as_str().unwrap().starts_with(r#""R-ö" is not a refund ID"#));
    let (status, _) = send_raw(h.http.get(h.url("/quotes/%FF"))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let (status, body) = send_raw(h.http.post(h.url("/refunds")).json(&json!({"quote_id": "Q-12"}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains(r#""Q-12" is not a quote ID: expected Q- followed by 4 to 9 digits"#), "{detail}");
}

#[tokio::test]
async fn unreadable_bodies_are_problems() {
    let h = Harness::start().await;
    let post_json =
        |body: &'static str| h.http.post(h.url("/quotes")).header(CONTENT_TYPE, "application/json").body(body);
    let (status, body) = send_raw(post_json(r#"{"order_id": "O-1145""#)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["type"], "/problems/bad_json");
    assert!(body["detail"].as_str().unwrap().starts_with("The request body is not valid JSON"));

    let (status, body) = send_raw(post_json(r#"{"skus": []}"#)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["detail"].as_str().unwrap().contains("order_id"), "{body}");

    let (status, body) = send_raw(h.http.post(h.url("/quotes")).body(r#"{"order_id":"O-1145"}"#)).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(body["type"], "/problems/not_json");

    let huge = format!(r#"{{"order_id":"O-1145","pad":"{}"}}"#, "x".repeat(100_000));
    let (status, body) =
        send_raw(h.http.post(h.url("/quotes")).header(CONTENT_TYPE, "application/json").body(huge)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(body["type"], "/problems/body_too_large");
}

#[tokio::test]
async fn unknown_routes_and_methods_are_problems() {
    let h = Harness::start().await;
    let (status, body) = send_raw(h.http.get(h.url("/nowhere"))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["type"], "/problems/no_such_route");
    let (status, body) = send_raw(h.http.delete(h.url("/refunds/R-0111"))).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(body["type"], "/problems/method_not_allowed");
}

#[tokio::test]
async fn policy_and_health() {
    let h = Harness::start().await;
    h.shop.health().await.unwrap();
    let policy = h.shop.policy().await.unwrap();
    assert_eq!(policy.confirmation_limit.to_string(), "150.00");
    assert_eq!(policy.currency, "EUR");
    let (_, body) = send_raw(h.http.get(h.url("/policy"))).await;
    assert_eq!(body, json!({"confirmation_limit": "150.00", "currency": "EUR", "approval": "self"}));
}

/// Under `another-lead`, the API itself keeps the requester from releasing their own refund:
/// whoever the MCP server says asked for it may not release it, nor may nobody named, nor may
/// anyone a refund nobody is named as asking for; another lead may, and both are recorded.
/// A requester may still withdraw (cancel) their own request.
#[tokio::test]
async fn under_another_lead_the_requester_cannot_release_their_own_refund() {
    let h = Harness::with_store(Store::open(None).unwrap().with_approval(shop_api::Approval::AnotherLead)).await;
    let (_, policy) = send_raw(h.http.get(h.url("/policy"))).await;
    assert_eq!(policy["approval"], "another-lead");
    let quote = h.whole_order_quote("O-2289").await;
    let (held, _) = h.shop.create_refund_outcome(&quote.quote_id, Some(&party(AGENT))).await.unwrap();
    assert_eq!((held.status, held.requested_by.as_deref()), (RefundStatus::NeedsConfirmation, Some(AGENT)));
    let program = "client https://login.example agent-7";
    for (decider, kind) in [
        (Some(AGENT), "self_approval"),
        (None, "decider_unknown"),
        (Some("unauthenticated 10.0.0.7"), "decider_unknown"),
        (Some(program), "not_a_person"),
    ] {
        let refused = h.shop.decide(&held.refund_id, "confirm", decider.map(party).as_ref()).await.unwrap_err();
        assert_eq!((refused.status(), refused.kind()), (Some(403), Some(kind)), "{refused}");
    }
    // A decision about what the lead did not see (another digest) is refused; with what they
    // saw, it goes through.
    let refused = h
        .shop
        .decide_as_seen(&held.refund_id, "confirm", Some(&party(LEAD_2)), Some("not-it"), None)
        .await
        .unwrap_err();
    assert_eq!((refused.status(), refused.kind()), (Some(409), Some("changed")), "{refused}");
    let seen = held.digest();
    let released =
        h.shop.decide_as_seen(&held.refund_id, "confirm", Some(&party(LEAD_2)), Some(&seen), None).await.unwrap();
    assert_eq!(released.status, RefundStatus::Requested);
    assert_eq!((released.requested_by.as_deref(), released.decided_by.as_deref()), (Some(AGENT), Some(LEAD_2)));

    let quote = h.whole_order_quote("O-5150").await;
    let (nameless, _) = h.shop.create_refund_outcome(&quote.quote_id, None).await.unwrap();
    let refused = h.shop.decide(&nameless.refund_id, "confirm", Some(&party(LEAD_2))).await.unwrap_err();
    assert_eq!(refused.kind(), Some("requester_unknown"), "{refused}");
    let quote = h.whole_order_quote("O-1145").await;
    let (withdrawn, _) = h.shop.create_refund_outcome(&quote.quote_id, Some(&party(AGENT))).await.unwrap();
    let withdrawn = h.shop.decide(&withdrawn.refund_id, "cancel", Some(&party(AGENT))).await.unwrap();
    assert_eq!(withdrawn.status, RefundStatus::Cancelled);
}

/// A refund keeps who asked for it, as the service credential's caller said.
#[tokio::test]
async fn a_refund_keeps_who_asked_for_it() {
    let h = Harness::start().await;
    let quote = h.whole_order_quote("O-2289").await;
    let (refund, _) = h.shop.create_refund_outcome(&quote.quote_id, Some(&party(AGENT))).await.unwrap();
    assert_eq!(refund.requested_by.as_deref(), Some(AGENT));
    assert_eq!(h.shop.refund(&refund.refund_id).await.unwrap().requested_by.as_deref(), Some(AGENT));
}

#[tokio::test]
async fn file_backed_store_keeps_refunds_and_counting() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shop.sqlite3");

    let h = Harness::with_store(Store::open(Some(&path)).unwrap()).await;
    let quote = h.whole_order_quote("O-2289").await;
    let refund = h.shop.create_refund(&quote.quote_id).await.unwrap();
    assert_eq!(refund.refund_id.as_str(), "R-0111");
    h.api.shutdown().await.unwrap();

    let h = Harness::with_store(Store::open(Some(&path)).unwrap()).await;
    assert_eq!(h.shop.refund(&refund.refund_id).await.unwrap(), refund);
    assert_eq!(h.shop.quote(&quote.quote_id).await.unwrap(), quote);
    let next = h.whole_order_quote("O-1021").await;
    assert_eq!(next.quote_id.as_str(), "Q-5002");
    let next = h.shop.create_refund(&next.quote_id).await.unwrap();
    assert_eq!(next.refund_id.as_str(), "R-0112");
    // Seeding happened once: the orders are not duplicated.
    assert_eq!(h.shop.order(&"O-1145".parse().unwrap()).await.unwrap().lines.len(), 2);
    h.api.shutdown().await.unwrap();
}

#[tokio::test]
async fn unreachable_api_is_reported_as_such() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let shop = ShopApi::new(&url).unwrap();
    let err = shop.policy().await.unwrap_err();
    assert!(matches!(err, ApiError::Unreachable(_)), "{err:?}");
    assert!(err.to_string().starts_with(&format!("the shop's API at {url} did not answer: ")), "{err}");
}

#[tokio::test]
async fn a_return_is_recorded_once_and_the_reason_decides_shipping() {
    use shop_api::{ReturnReason, ReturnRequest, Sku};
    let harness = Harness::start().await;
    let client = &harness.shop;
    let request = |sku: &str, reason| ReturnRequest {
        order_id: OrderId::parse("O-1145").unwrap(),
        sku: Sku::parse(sku).unwrap(),
        reason,
        restock: false,
        note: Some("Lid cracked".into()),
    };
    let first = client.record_return(&request("KG-1043", ReturnReason::DamagedInTransit)).await.unwrap();
    assert_eq!((first.return_id.as_str(), first.refund_shipping), ("RT-0001", true));
    let again = client.record_return(&request("KG-1043", ReturnReason::ChangedMind)).await.unwrap();
    assert_eq!(again, first, "one inspection per order line");
    let late = client.record_return(&request("GG-2210", ReturnReason::ChangedMind)).await.unwrap();
    assert!(!late.refund_shipping);
    let error = client.record_return(&request("GG-0412", ReturnReason::MissingPart)).await.unwrap_err();
    assert_eq!(error.status(), Some(422));
    let mut long = request("GG-2210", ReturnReason::MissingPart);
    long.note = Some("x".repeat(201));
    assert_eq!(client.record_return(&long).await.unwrap_err().status(), Some(400));
}

/// A web page a lead visits cannot release a held refund through the API on their machine:
/// the form a page can post unasked (`text/plain`, no credential) and a fetch from its origin
/// are refused, and a page whose own name was rebound to the API's address reads nothing. The
/// refund stays held.
#[tokio::test]
async fn a_web_page_cannot_release_a_held_refund_or_read_the_api() {
    let h = Harness::start().await;
    let quote = h.whole_order_quote("O-2289").await;
    h.shop.create_refund(&quote.quote_id).await.unwrap();
    let page = reqwest::Client::new();
    // What a <form method=post enctype=text/plain> sends: no credential, a simple body.
    let form = page
        .post(h.url("/refunds/R-0111/confirm"))
        .header(CONTENT_TYPE, "text/plain")
        .header("origin", "https://evil.example")
        .header("sec-fetch-site", "cross-site")
        .body("x=1");
    assert_eq!(send_raw(form).await.0, StatusCode::FORBIDDEN);
    // Even a page that somehow held the credential: its origin is refused.
    let fetched = h.http.post(h.url("/refunds/R-0111/confirm")).header("origin", "null").json(&json!({}));
    assert_eq!(send_raw(fetched).await.0, StatusCode::FORBIDDEN);
    // And without a browser's headers, the credential still decides, and a body that is not
    // JSON does nothing.
    let unasked = h.http.post(h.url("/refunds/R-0111/confirm")).header(CONTENT_TYPE, "text/plain").body("{}");
    assert_eq!(send_raw(unasked).await.0, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let bare = page.post(h.url("/refunds/R-0111/confirm")).json(&json!({}));
    assert_eq!(send_raw(bare).await.0, StatusCode::UNAUTHORIZED);
    // DNS rebinding: the page's own name, now pointing here.
    let rebound = h.http.get(h.url("/orders/O-2289")).header("host", "evil.example");
    assert_eq!(send_raw(rebound).await.0, StatusCode::MISDIRECTED_REQUEST);
    assert_eq!(h.shop.refund(&refund_id("R-0111")).await.unwrap().status, RefundStatus::NeedsConfirmation);
}

/// Only the service credential says for whom a decision is made, and a release names its
/// decider: a client credential may quote, issue and cancel, never release (its
/// `Fernhill-On-Behalf-Of` is not counted); the service credential releases for the party it
/// names, and for nobody named it releases nothing. A header that names nobody is refused.
#[tokio::test]
async fn only_the_service_credential_names_who_decided_and_a_release_names_its_decider() {
    let store = Arc::new(Store::open(None).unwrap());
    let credentials = web_service::credential::Credentials::service("service-secret").with_client("client-secret");
    let app = shop_api::app(store, credentials, &["localhost".to_owned()]);
    let api = web_service::spawn_loopback(app, Some("service-secret".into())).await.unwrap();
    let service = ShopApi::new(&api.url).unwrap().with_token(Some("service-secret".into()));
    let client = ShopApi::new(&api.url).unwrap().with_token(Some("client-secret".into()));
    let held = |who: &ShopApi, order: &'static str| {
        let who = who.clone();
        async move {
            let request = QuoteRequest { order_id: order.parse().unwrap(), skus: None, include_shipping: None };
            let quote = who.create_quote(&request).await.unwrap();
            who.create_refund(&quote.quote_id).await.unwrap()
        }
    };
    let refund = held(&client, "O-2289").await;
    for named in [Some(LEAD_2), None] {
        let refused = client.decide(&refund.refund_id, "confirm", named.map(party).as_ref()).await.unwrap_err();
        assert_eq!((refused.status(), refused.kind()), (Some(403), Some("decider_unknown")), "{refused}");
    }
    let cancelled = client.decide(&refund.refund_id, "cancel", Some(&party(LEAD_2))).await.unwrap();
    assert_eq!((cancelled.status, cancelled.decided_by), (RefundStatus::Cancelled, None));

    let refund = held(&service, "O-1145").await;
    let refused = service.decide(&refund.refund_id, "confirm", None).await.unwrap_err();
    assert_eq!((refused.status(), refused.kind()), (Some(403), Some("decider_unknown")), "{refused}");
    for nobody in ["lead-2", "login.example lead-2", "host user "] {
        let sent = reqwest::Client::new()
            .post(format!("{}/refunds/{}/confirm", api.url, refund.refund_id))
            .bearer_auth("service-secret")
            .header("fernhill-on-behalf-of", nobody)
            .json(&json!({}));
        let (status, body) = send_raw(sent).await;
        assert_eq!((status.as_u16(), body["type"].as_str()), (400, Some("/problems/bad_on_behalf_of")), "{nobody}");
    }
    let decided = service.decide(&refund.refund_id, "confirm", Some(&party(LEAD_2))).await.unwrap();
    assert_eq!((decided.status, decided.decided_by.as_deref()), (RefundStatus::Requested, Some(LEAD_2)));
}

/// Two principals are one person only when issuer and subject are each the same, exactly:
/// under `another-lead`, a subject that differs in case, or the same subject at another
/// issuer, is another person; the same text is the requester, refused.
#[tokio::test]
async fn people_are_compared_by_issuer_and_subject_each_exact() {
    let h = Harness::with_store(Store::open(None).unwrap().with_approval(shop_api::Approval::AnotherLead)).await;
    let asked = "https://login.example alice";
    let mut held = std::collections::HashMap::new();
    for (order, decider, outcome) in [
        ("O-2289", asked, Err("self_approval")),
        ("O-2289", "https://login.example Alice", Ok(())),
        ("O-1145", "https://other.example alice", Ok(())),
        ("O-5150", "host user https://login.example alice", Ok(())),
    ] {
        if !held.contains_key(order) {
            let quote = h.whole_order_quote(order).await;
            let (refund, _) = h.shop.create_refund_outcome(&quote.quote_id, Some(&party(asked))).await.unwrap();
            held.insert(order, refund.refund_id);
        }
        let decided = h.shop.decide(&held[order], "confirm", Some(&party(decider))).await;
        match outcome {
            Ok(()) => assert_eq!(decided.unwrap().decided_by.as_deref(), Some(decider)),
            Err(kind) => assert_eq!(decided.unwrap_err().kind(), Some(kind), "{decider}"),
        }
    }
}

/// The API run open beside another implementation's server (which cannot show a credential)
/// takes that server's decisions, which carry an empty body.
#[tokio::test]
async fn an_open_api_takes_a_decision_with_an_empty_body() {
    let api = shop_api::spawn_loopback_open(Arc::new(Store::open(None).unwrap())).await.unwrap();
    let shop = ShopApi::new(&api.url).unwrap();
    let quote = shop
        .create_quote(&QuoteRequest { order_id: "O-2289".parse().unwrap(), skus: None, include_shipping: None })
        .await
        .unwrap();
    shop.create_refund(&quote.quote_id).await.unwrap();
    let http = reqwest::Client::new();
    let empty = http.post(format!("{}/refunds/R-0111/confirm", api.url)).header(CONTENT_TYPE, "application/json");
    let (status, body) = send_raw(empty).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "requested");
}

/// Approvals always end. 10,000 refunds held for a lead, on a clock the test controls: a
/// tenth released and a tenth declined before the deadline; at the deadline the API cancels
/// every other one as expired, and nothing is released after it, through the store or the
/// API (a release is refused, a read shows it cancelled and why).
#[tokio::test]
async fn every_held_refund_ends_decided_or_expired_and_none_is_released_after_its_deadline() {
    const HELD: u32 = 10_000;
    let (clock, now) = shop_api::Clock::manual(std::time::UNIX_EPOCH + Duration::from_secs(1_800_000_000));
    let store = Store::open(None)
        .unwrap()
        .with_clock(clock)
        .with_approval_deadline(Some(std::time::Duration::from_secs(72 * 3600)));
    store.add_load_orders(shop_api::seed::FIRST_LOAD_ORDER, HELD).unwrap();
    let store = Arc::new(store);
    let mut held = Vec::new();
    for n in 0..HELD {
        let order_id = shop_api::OrderId::parse(&format!("O-{}", shop_api::seed::FIRST_LOAD_ORDER + n)).unwrap();
        let quote =
            store.create_quote(&shop_api::QuoteRequest { order_id, skus: None, include_shipping: None }).unwrap();
        let (refund, _) = store.create_refund(&quote.quote_id, Some("agent-7")).unwrap();
        assert_eq!(refund.status, RefundStatus::NeedsConfirmation);
        held.push(refund.refund_id);
    }
    let decided: Vec<(usize, &'static str)> = (0..held.len())
        .filter_map(|n| match n % 10 {
            0 => Some((n, "confirm")),
            1 => Some((n, "cancel")),
            _ => None,
        })
        .collect();
    now.advance(Duration::from_secs(71 * 3600));
    for (n, decision) in &decided {
        match *decision {
            "confirm" => store.confirm(&held[*n], Some(LEAD_2)).unwrap(),
            _ => store.cancel(&held[*n], Some("lead-2")).unwrap(),
        };
    }
    assert!(store.expire_overdue().unwrap().is_empty(), "nothing expires before its deadline");
    now.advance(Duration::from_secs(3600));
    let expired = store.expire_overdue().unwrap();
    assert_eq!(expired.len(), (HELD as usize) - decided.len());
    for refund_id in &held {
        assert!(matches!(store.confirm(refund_id, Some("lead-3")), Err(shop_api::StoreError::NotHeld { .. })));
    }
    let all = store.list_refunds().unwrap();
    let count = |status: RefundStatus, reason: Option<&str>| {
        all.iter().filter(|r| r.status == status && r.reason.as_deref() == reason).count()
    };
    assert_eq!(count(RefundStatus::Requested, None), (HELD / 10) as usize);
    assert_eq!(count(RefundStatus::Cancelled, None), (HELD / 10) as usize);
    assert_eq!(count(RefundStatus::Cancelled, Some(shop_api::EXPIRED)), (HELD as usize) * 8 / 10);
    assert!(all.iter().all(|r| r.status != RefundStatus::NeedsConfirmation));

    // Over HTTP: one more held refund, past its deadline, never swept: read as expired, and
    // its release refused.
    let h = Harness::with_store_arc(store.clone()).await;
    let order_id = shop_api::OrderId::parse("O-2289").unwrap();
    let quote = store.create_quote(&shop_api::QuoteRequest { order_id, skus: None, include_shipping: None }).unwrap();
    let (late, _) = store.create_refund(&quote.quote_id, Some("agent-7")).unwrap();
    now.advance(Duration::from_secs(72 * 3600));
    let refused = h.shop.decide(&late.refund_id, "confirm", Some(&party(LEAD_2))).await.unwrap_err();
    assert_eq!(refused.kind(), Some("not_held"), "{refused}");
    let read = h.shop.refund(&late.refund_id).await.unwrap();
    assert_eq!((read.status, read.reason.as_deref()), (RefundStatus::Cancelled, Some(shop_api::EXPIRED)));
}

/// A held refund past its deadline covers nothing: the order's next quote covers its lines
/// again at once, with no sweep run in between.
#[tokio::test]
async fn an_expired_refund_frees_its_lines_for_the_next_quote() {
    let (clock, now) = shop_api::Clock::manual(std::time::UNIX_EPOCH + Duration::from_secs(1_800_000_000));
    let store = Store::open(None).unwrap().with_clock(clock);
    let whole = |order: &str| shop_api::QuoteRequest {
        order_id: shop_api::OrderId::parse(order).unwrap(),
        skus: None,
        include_shipping: None,
    };
    let quote = store.create_quote(&whole("O-2289")).unwrap();
    let (held, _) = store.create_refund(&quote.quote_id, Some("agent-7")).unwrap();
    assert_eq!(held.status, RefundStatus::NeedsConfirmation);
    let covered = store.create_quote(&whole("O-2289"));
    assert!(matches!(covered, Err(shop_api::StoreError::AlreadyRefunded { .. })), "covered: {covered:?}");
    now.advance(Duration::from_secs(72 * 3600));
    let again = store.create_quote(&whole("O-2289")).unwrap();
    assert_eq!(again.amount.to_string(), "180.00");
    let (next, created) = store.create_refund(&again.quote_id, Some("agent-7")).unwrap();
    assert!(created && next.refund_id != held.refund_id);
}

/// A write sent again with its Idempotency-Key gets its first answer, and one effect: a lead's
/// release whose answer was lost, sent again, is told it released the refund (not 409). The
/// same key with another request is refused; a key whose first request is still in flight
/// answers 409 with Retry-After; a bad key is refused.
#[tokio::test]
async fn a_write_sent_again_with_its_idempotency_key_gets_its_first_answer() {
    let h = Harness::start().await;
    let quote = h.whole_order_quote("O-2289").await;
    let held = h.shop.create_refund(&quote.quote_id).await.unwrap();
    let key = Some("confirm-R-0111-answer-1");
    let first = h.shop.decide_as_seen(&held.refund_id, "confirm", Some(&party(LEAD_1)), None, key).await.unwrap();
    let again = h.shop.decide_as_seen(&held.refund_id, "confirm", Some(&party(LEAD_1)), None, key).await.unwrap();
    assert_eq!(first, again, "the first answer, not a 409");
    assert_eq!(first.status, RefundStatus::Requested);
    // The same key sent for another person is another request, not the first one's answer.
    let for_another =
        h.shop.decide_as_seen(&held.refund_id, "confirm", Some(&party(LEAD_2)), None, key).await.unwrap_err();
    assert_eq!((for_another.status(), for_another.kind()), (Some(422), Some("idempotency_key_reused")));
    let without = h.shop.decide(&held.refund_id, "confirm", Some(&party(LEAD_1))).await.unwrap_err();
    assert_eq!(without.kind(), Some("not_held"), "without the key, a second release is refused");
    let replayed = h
        .http
        .post(h.url("/refunds/R-0111/confirm"))
        .header("idempotency-key", "confirm-R-0111-answer-1")
        .header("fernhill-on-behalf-of", LEAD_1)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(replayed.headers()["idempotent-replayed"], "true");
    let other = h.shop.decide_as_seen(&held.refund_id, "cancel", Some(&party(LEAD_1)), None, key).await.unwrap_err();
    assert_eq!((other.status(), other.kind()), (Some(422), Some("idempotency_key_reused")), "{other}");
    let (status, body) = send_raw(
        h.http.post(h.url("/refunds/R-0111/confirm")).header("idempotency-key", "not ascii \u{e9}").json(&json!({})),
    )
    .await;
    assert_eq!((status.as_u16(), body["type"].as_str()), (400, Some("/problems/bad_idempotency_key")), "{body}");
}

/// Idempotency keys are each caller's own, and for writes alone. Before, every client
/// credential shared one space of keys, and reads were kept under them too: client B, sending
/// a key client A had used, was handed A's quote, and a read sent again with its key was handed
/// the refund's status as it was a day before.
#[tokio::test]
async fn two_client_credentials_never_share_a_key_and_reads_are_never_kept() {
    let service = web_service::credential::generate();
    let credentials = web_service::credential::Credentials::service(&service)
        .with_client("client-a-credential")
        .with_client("client-b-credential");
    let app = shop_api::app(Store::open(None).unwrap(), credentials, &["localhost".to_owned()]);
    let api = web_service::spawn_loopback(app, Some(service.clone())).await.unwrap();
    let as_caller = |token: &str| {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::AUTHORIZATION, format!("Bearer {token}").parse().unwrap());
        reqwest::Client::builder().default_headers(headers).build().unwrap()
    };
    let (a, b) = (as_caller("client-a-credential"), as_caller("client-b-credential"));
    let quote = |caller: &reqwest::Client| {
        caller
            .post(format!("{}/quotes", api.url))
            .header("idempotency-key", "shared-key-1")
            .json(&json!({"order_id": "O-2289"}))
            .send()
    };
    let of_a = quote(&a).await.unwrap();
    assert_eq!(of_a.status(), StatusCode::CREATED);
    let of_a: Value = of_a.json().await.unwrap();
    let of_b = quote(&b).await.unwrap();
    assert!(of_b.headers().get("idempotent-replayed").is_none(), "B's write is B's own");
    let of_b: Value = of_b.json().await.unwrap();
    assert_ne!(of_a["quote_id"], of_b["quote_id"], "B was not handed A's quote");
    let again = quote(&a).await.unwrap();
    assert_eq!(again.headers()["idempotent-replayed"], "true", "A's own key still answers A");

    // A read with a key is answered as it stands now.
    let shop = ShopApi::new(&api.url).unwrap().with_token(Some(service.clone()));
    let held = shop.create_refund(&QuoteId::parse(of_a["quote_id"].as_str().unwrap()).unwrap()).await.unwrap();
    let read = |caller: &reqwest::Client| {
        caller.get(format!("{}/refunds/{}", api.url, held.refund_id)).header("idempotency-key", "read-key").send()
    };
    let before: Value = read(&a).await.unwrap().json().await.unwrap();
    assert_eq!(before["status"], "needs_confirmation");
    shop.decide(&held.refund_id, "confirm", Some(&party(LEAD_1))).await.unwrap();
    let after = read(&a).await.unwrap();
    assert!(after.headers().get("idempotent-replayed").is_none());
    let after: Value = after.json().await.unwrap();
    assert_eq!(after["status"], "requested", "not the status kept from before");
}
