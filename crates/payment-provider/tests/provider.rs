//! End-to-end tests: the real provider on a loopback port, driven through
//! `PaymentProvider` and through raw HTTP, as the MCP server and a browser
//! would.

use std::sync::Arc;

use payment_provider::{
    Accounts, FlowStatus, NewFlow, PaymentProvider, ProviderError, ProviderErrorExt, ProviderState, RunningProvider,
    random_flow_id, spawn_loopback,
};
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, LOCATION};
use serde_json::{Value, json};
use web_service::testing::send_raw;

const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'";

struct Harness {
    running: RunningProvider,
    provider: PaymentProvider,
    http: reqwest::Client,
}

/// A page as the browser gets it.
struct Page {
    status: StatusCode,
    html: String,
}

impl Page {
    /// The value of the form's hidden CSRF field.
    fn csrf(&self) -> String {
        let start = self.html.find("name=\"csrf\" value=\"").expect("the page has a CSRF field") + 19;
        let end = start + self.html[start..].find('"').unwrap();
        self.html[start..end].to_owned()
    }

    fn has_form(&self) -> bool {
        self.html.contains("<form method=\"post\"") && self.html.contains("name=\"password\" type=\"password\"")
    }
}

impl Harness {
    async fn start() -> Harness {
        Harness::over(spawn_loopback(Arc::new(ProviderState::default())).await.unwrap())
    }

    /// The MCP server's client of `running`, and a raw client that shows its credential too.
    fn over(running: RunningProvider) -> Harness {
        let token = running.token.clone().expect("a provider started here has a credential");
        let provider = PaymentProvider::new(&running.url).unwrap().with_token(Some(token.clone()));
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::AUTHORIZATION, format!("Bearer {token}").parse().unwrap());
        let http = reqwest::Client::builder().default_headers(headers).build().unwrap();
        Harness { running, provider, http }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.running.url)
    }

    /// Registers a flow for refund R-0111 of 180.00 started by `lead`.
    async fn register(&self, lead: &str) -> String {
        let flow_id = random_flow_id();
        let new = NewFlow {
            flow_id: flow_id.clone(),
            lead: Some(lead.into()),
            refund_id: "R-0111".into(),
            amount: "180.00".into(),
        };
        let flow = self.provider.register_flow(&new).await.unwrap();
        assert_eq!(flow.status, FlowStatus::Pending);
        flow_id
    }

    /// `GET /connect/{flow_id}`, checking the page headers.
    async fn page(&self, flow_id: &str) -> Page {
        page_of(self.http.get(self.url(&format!("/connect/{flow_id}"))).send().await.unwrap()).await
    }

    /// Posts the sign-in form of `flow_id`.
    async fn sign_in(&self, flow_id: &str, fields: &[(&str, &str)]) -> Page {
        let url = self.url(&format!("/connect/{flow_id}"));
        page_of(self.http.post(url).form(fields).send().await.unwrap()).await
    }

    /// Opens the page and signs in with its CSRF token.
    async fn sign_in_as(&self, flow_id: &str, username: &str, password: &str) -> Page {
        let csrf = self.page(flow_id).await.csrf();
        self.sign_in(flow_id, &[("username", username), ("password", password), ("csrf", &csrf)]).await
    }
}

async fn page_of(response: reqwest::Response) -> Page {
    let headers = response.headers();
    assert_eq!(headers[CONTENT_TYPE], "text/html; charset=utf-8");
    assert_eq!(headers["content-security-policy"], CSP);
    assert_eq!(headers["x-frame-options"], "DENY");
    assert_eq!(headers["cache-control"], "no-store");
    let status = response.status();
    let html = response.text().await.unwrap();
    assert!(html.contains("<title>Fernhill Pay</title>"), "{html}");
    Page { status, html }
}

#[tokio::test]
async fn registering_is_idempotent_and_conflicts_on_other_content() {
    let h = Harness::start().await;
    h.provider.health().await.unwrap();
    let body = json!({"flow_id": "flow_0123456789-abc", "lead": "lead-1", "refund_id": "R-0111", "amount": "180.00"});
    let response = h.http.post(h.url("/flows")).json(&body).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(response.headers()[LOCATION], "/flows/flow_0123456789-abc");
    let flow: Value = response.json().await.unwrap();
    assert_eq!(
        flow,
        json!({"flow_id": "flow_0123456789-abc", "lead": "lead-1", "refund_id": "R-0111", "amount": "180.00",
               "status": "pending", "finished_by": null, "finished_at": null})
    );
    let (status, again) = send_raw(h.http.post(h.url("/flows")).json(&body)).await;
    assert_eq!((status, &again), (StatusCode::OK, &flow));
    for changed in [("lead", "lead-2"), ("refund_id", "R-0112"), ("amount", "180.01")] {
        let mut other = body.clone();
        other[changed.0] = changed.1.into();
        let (status, problem) = send_raw(h.http.post(h.url("/flows")).json(&other)).await;
        assert_eq!(status, StatusCode::CONFLICT, "{problem}");
        assert_eq!(problem["type"], "/problems/flow_conflict");
    }
    let (status, shown) = send_raw(h.http.get(h.url("/flows/flow_0123456789-abc"))).await;
    assert_eq!((status, shown), (StatusCode::OK, flow));
    h.running.shutdown().await.unwrap();
}

#[tokio::test]
async fn connect_page_shows_the_payment_and_a_form_without_personal_data() {
    let h = Harness::start().await;
    let flow_id = h.register("lead-1").await;
    let page = h.page(&flow_id).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.html.contains("<strong>R-0111</strong>") && page.html.contains("<strong>180.00</strong>"));
    assert!(page.has_form());
    assert!(page.html.contains(&format!("action=\"{flow_id}\"")));
    assert_eq!(page.csrf().len(), 64);
    assert!(!page.html.contains("lead-1"), "the page names the lead");
    // Just opening the page signs nobody in.
    assert_eq!(h.provider.flow(&flow_id).await.unwrap().status, FlowStatus::Pending);
}

#[tokio::test]
async fn the_lead_signing_in_finishes_the_flow() {
    let h = Harness::start().await;
    let flow_id = h.register("lead-1").await;
    let csrf = h.page(&flow_id).await.csrf();
    let fields = [("username", "lead-1"), ("password", "fernhill-lead-1"), ("csrf", csrf.as_str())];
    let page = h.sign_in(&flow_id, &fields).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.html.contains("Connected. You can go back to your host and retry."), "{}", page.html);
    assert!(!page.has_form());
    let flow = h.provider.flow(&flow_id).await.unwrap();
    assert!(flow.is_finished());
    assert_eq!(flow.finished_by.as_deref(), Some("lead-1"));
    assert!(flow.finished_at.as_deref().is_some_and(|at| at.ends_with('Z') && at.len() == 20), "{flow:?}");

    // Opening the page again says so; signing in again changes nothing.
    let page = h.page(&flow_id).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.html.contains("already connected") && !page.has_form(), "{}", page.html);
    let page = h.sign_in(&flow_id, &fields).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.html.contains("Connected."));
    assert_eq!(h.provider.flow(&flow_id).await.unwrap(), flow);
}

#[tokio::test]
async fn another_person_cannot_finish_the_flow() {
    let h = Harness::start().await;
    let flow_id = h.register("lead-1").await;
    let page = h.sign_in_as(&flow_id, "lead-2", "fernhill-lead-2").await;
    assert_eq!(page.status, StatusCode::FORBIDDEN);
    assert!(
        page.html.contains("This payment was started by another person; sign in as the person who started it."),
        "{}",
        page.html
    );
    assert!(page.has_form(), "the right person can still sign in from here");
    let flow = h.provider.flow(&flow_id).await.unwrap();
    assert_eq!((flow.status, flow.finished_by), (FlowStatus::Pending, None));
    let err = h.provider.pay(&flow_id, "R-0111").await.unwrap_err();
    assert!(err.is_not_finished(), "{err:?}");

    // The lead can still finish it afterwards, with the token from the refusal page.
    let fields = [("username", "lead-1"), ("password", "fernhill-lead-1"), ("csrf", &page.csrf())];
    assert_eq!(h.sign_in(&flow_id, &fields).await.status, StatusCode::OK);
    assert_eq!(h.provider.flow(&flow_id).await.unwrap().finished_by.as_deref(), Some("lead-1"));
}

#[tokio::test]
async fn wrong_password_or_unknown_user_gets_the_form_again() {
    let h = Harness::start().await;
    let flow_id = h.register("lead-1").await;
    for (username, password) in [("lead-1", "fernhill-lead-2"), ("lead-1", ""), ("nobody", "fernhill-lead-1"), ("", "")]
    {
        let page = h.sign_in_as(&flow_id, username, password).await;
        assert_eq!(page.status, StatusCode::UNAUTHORIZED, "{username:?}/{password:?}");
        assert!(page.html.contains("The username or password is wrong"));
        assert!(page.has_form());
    }
    assert_eq!(h.provider.flow(&flow_id).await.unwrap().status, FlowStatus::Pending);
}

#[tokio::test]
async fn sign_in_without_the_flows_csrf_token_is_refused() {
    let h = Harness::start().await;
    let flow_id = h.register("lead-1").await;
    let other_flow = h.register("lead-1").await;
    let others_token = h.page(&other_flow).await.csrf();
    for fields in [
        vec![("username", "lead-1"), ("password", "fernhill-lead-1")],
        vec![("username", "lead-1"), ("password", "fernhill-lead-1"), ("csrf", "")],
        vec![("username", "lead-1"), ("password", "fernhill-lead-1"), ("csrf", others_token.as_str())],
    ] {
        let page = h.sign_in(&flow_id, &fields).await;
        assert_eq!(page.status, StatusCode::FORBIDDEN, "{fields:?}");
        assert!(!page.has_form());
    }
    // A form a browser marks as posted from another site is refused even
    // with the right token.
    let csrf = h.page(&flow_id).await.csrf();
    let response = h
        .http
        .post(h.url(&format!("/connect/{flow_id}")))
        .header("sec-fetch-site", "cross-site")
        .form(&[("username", "lead-1"), ("password", "fernhill-lead-1"), ("csrf", &csrf)])
        .send()
        .await
        .unwrap();
    assert_eq!(page_of(response).await.status, StatusCode::FORBIDDEN);
    assert_eq!(h.provider.flow(&flow_id).await.unwrap().status, FlowStatus::Pending);
}

#[tokio::test]
async fn pays_only_a_finished_flow_once_per_refund() {
    let h = Harness::start().await;
    let flow_id = h.register("lead-1").await;
    let (status, problem) =
        send_raw(h.http.post(h.url("/payments")).json(&json!({"flow_id": flow_id, "refund_id": "R-0111"}))).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(problem["type"], "/problems/not_finished");
    assert!(problem["detail"].as_str().unwrap().contains(&format!("{flow_id} is not finished")), "{problem}");

    h.sign_in_as(&flow_id, "lead-1", "fernhill-lead-1").await;
    let (payment, created) = h.provider.pay_outcome(&flow_id, "R-0111").await.unwrap();
    assert!(created);
    assert_eq!(
        serde_json::to_value(&payment).unwrap(),
        json!({"payment_id": "P-0001", "refund_id": "R-0111", "amount": "180.00", "paid_by": "lead-1"})
    );
    let (status, again) =
        send_raw(h.http.post(h.url("/payments")).json(&json!({"flow_id": flow_id, "refund_id": "R-0111"}))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again, serde_json::to_value(&payment).unwrap());
    assert_eq!(h.provider.pay(&flow_id, "R-0111").await.unwrap(), payment);

    // A finished flow pays only its own refund.
    let err = h.provider.pay(&flow_id, "R-0112").await.unwrap_err();
    assert_eq!((err.status(), err.kind()), (Some(409), Some("wrong_refund")));

    // Another refund gets the next payment number.
    let second = random_flow_id();
    let new = NewFlow {
        flow_id: second.clone(),
        lead: Some("lead-2".into()),
        refund_id: "R-0112".into(),
        amount: "19.90".into(),
    };
    h.provider.register_flow(&new).await.unwrap();
    h.sign_in_as(&second, "lead-2", "fernhill-lead-2").await;
    let payment = h.provider.pay(&second, "R-0112").await.unwrap();
    assert_eq!(
        (payment.payment_id.as_str(), payment.amount.as_str(), payment.paid_by.as_str()),
        ("P-0002", "19.90", "lead-2")
    );
}

#[tokio::test]
async fn unknown_flows_are_404() {
    let h = Harness::start().await;
    let unknown = random_flow_id();
    let (status, problem) = send_raw(h.http.get(h.url(&format!("/flows/{unknown}")))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(problem["type"], "/problems/no_such_flow");
    assert_eq!(problem["flow_id"], unknown.as_str());
    assert!(h.provider.flow(&unknown).await.unwrap_err().is_not_found());
    assert!(h.provider.pay(&unknown, "R-0111").await.unwrap_err().is_not_found());

    let page = h.page(&unknown).await;
    assert_eq!(page.status, StatusCode::NOT_FOUND);
    assert!(!page.has_form());
    let page = h.sign_in(&unknown, &[("username", "lead-1"), ("password", "fernhill-lead-1"), ("csrf", "x")]).await;
    assert_eq!(page.status, StatusCode::NOT_FOUND);
    assert_eq!(h.page("not-a-flow").await.status, StatusCode::NOT_FOUND);

    let (status, problem) = send_raw(h.http.get(h.url("/nowhere"))).await;
    assert_eq!((status, problem["type"].as_str()), (StatusCode::NOT_FOUND, Some("/problems/no_such_route")));
    let (status, _) = send_raw(h.http.delete(h.url("/flows"))).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn malformed_values_are_400() {
    let h = Harness::start().await;
    for bad in ["short", "has%20space-0123456789", &"a".repeat(65), "bad=char0123456789"] {
        let (status, problem) = send_raw(h.http.get(h.url(&format!("/flows/{bad}")))).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {problem}");
        assert_eq!(problem["type"], "/problems/bad_id");
    }
    let err = h.provider.flow("../../healthz").await.unwrap_err();
    assert_eq!(err.status(), Some(400), "{err:?}");
    assert!(err.to_string().contains("is not a flow ID"), "{err}");

    let good = json!({"flow_id": random_flow_id(), "lead": "lead-1", "refund_id": "R-0111", "amount": "180.00"});
    for (field, value) in [("flow_id", "short"), ("lead", "lead one"), ("refund_id", "R-11"), ("amount", "180")] {
        let mut body = good.clone();
        body[field] = value.into();
        let (status, problem) = send_raw(h.http.post(h.url("/flows")).json(&body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{field}: {problem}");
        assert!(problem["detail"].as_str().unwrap().starts_with(&format!("\"{value}\" is not")), "{problem}");
    }
    let (status, problem) =
        send_raw(h.http.post(h.url("/payments")).json(&json!({"flow_id": "x", "refund_id": "R-0111"}))).await;
    assert_eq!((status, problem["type"].as_str()), (StatusCode::BAD_REQUEST, Some("/problems/bad_id")));

    // Bodies: missing fields, not JSON, too large.
    let (status, problem) = send_raw(h.http.post(h.url("/flows")).json(&json!({"flow_id": random_flow_id()}))).await;
    assert_eq!((status, problem["type"].as_str()), (StatusCode::BAD_REQUEST, Some("/problems/bad_body")));
    let (status, _) = send_raw(h.http.post(h.url("/flows")).body("{}")).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let huge = json!({"flow_id": "x".repeat(100_000), "lead": "", "refund_id": "", "amount": ""});
    let (status, _) = send_raw(h.http.post(h.url("/flows")).json(&huge)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn accounts_are_configurable() {
    let accounts = Accounts::empty().with("ada", "analytical-engine").unwrap();
    let h = Harness::over(spawn_loopback(Arc::new(ProviderState::new(accounts))).await.unwrap());
    let flow_id = h.register("ada").await;
    assert_eq!(h.sign_in_as(&flow_id, "lead-1", "fernhill-lead-1").await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(h.sign_in_as(&flow_id, "ada", "analytical-engine").await.status, StatusCode::OK);
    assert!(h.provider.flow(&flow_id).await.unwrap().is_finished());
    h.running.shutdown().await.unwrap();
}

#[tokio::test]
async fn client_reports_an_unreachable_provider() {
    let running = spawn_loopback(Arc::new(ProviderState::default())).await.unwrap();
    let provider = PaymentProvider::new(&running.url).unwrap();
    running.shutdown().await.unwrap();
    let err = provider.health().await.unwrap_err();
    assert!(matches!(err, ProviderError::Unreachable(_)), "{err:?}");
    assert!(err.to_string().contains("did not answer"), "{err}");
}

/// Whoever registers a flow without the service credential is refused, and so is a browser
/// page even with it; a flow for more than one payment may be is refused from anyone.
#[tokio::test]
async fn flows_are_the_servers_alone_and_within_the_payment_limit() {
    let h = Harness::start().await;
    let flow =
        |amount: &str| json!({"flow_id": random_flow_id(), "lead": "lead-1", "refund_id": "R-0111", "amount": amount});
    let (status, _) = send_raw(reqwest::Client::new().post(h.url("/flows")).json(&flow("180.00"))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "no credential");
    let (status, _) =
        send_raw(h.http.post(h.url("/flows")).header("origin", "https://evil.example").json(&flow("180.00"))).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a browser page");
    let (status, problem) = send_raw(h.http.post(h.url("/flows")).json(&flow("99999.00"))).await;
    assert_eq!((status, problem["type"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("/problems/over_limit")));
    let (status, _) = send_raw(h.http.post(h.url("/flows")).json(&flow("180.00"))).await;
    assert_eq!(status, StatusCode::CREATED);
}
