//! A real headless Chromium, driven over WebDriver by `fantoccini` through
//! Debian's `chromedriver`, signs in on the payment provider's connect page the
//! way a support lead would, in the middle of `pay_refund`'s rounds: the MCP
//! server sends the lead to the page, the browser signs in, the retry pays.
//!
//! And a lead signs in on the approval page with the shop's issuer (oidc-provider), sees what
//! an agent asked for, and releases it.
//!
//! Needs `/usr/bin/chromium` and `/usr/bin/chromedriver` (Debian packages
//! `chromium` and `chromium-driver`). Without them these tests fail, saying
//! so; they are never skipped.

use fernhill::chapter;
use std::sync::Arc;
use std::time::Duration;

use fantoccini::{Client, Locator};
mod support;
use support::chromium::Chromedriver;

use std::collections::BTreeMap;

use mrtr::client::{Answer, ScriptedUser, params};
use payment_provider::{FlowStatus, PaymentProvider, ProviderErrorExt, ProviderState, RunningProvider, spawn_loopback};
use rmcp::model::{CallToolResponse, ElicitRequestParams, InputRequest};
use serde_json::json;
use tokio::process::Command;

/// How long the browser may take to show the page after a sign-in.
const PAGE_TIMEOUT: Duration = Duration::from_secs(30);

/// The whole chain: the shop's API, the payment provider, `fernhill-mcp serve` paying through it,
/// a released refund R-0111 of 180.00, and pay_refund's first round: the URL the lead is sent to.
struct Chain {
    _api: shop_api::RunningApi,
    running: RunningProvider,
    provider: PaymentProvider,
    client: mrtr::client::Client<ScriptedUser>,
    flow_id: String,
    state: Option<String>,
}

async fn pay_refund(client: &mrtr::client::Client<ScriptedUser>, state: Option<String>) -> CallToolResponse {
    let mut call = params("pay_refund", json!({"refund_id": "R-0111"}));
    call.input_responses =
        state.as_ref().map(|_| BTreeMap::from([("connect".to_owned(), Answer::Accept(None).to_value())]));
    call.request_state = state;
    client.call_tool_once(call).await.unwrap()
}

async fn chain() -> Chain {
    let api = support::start_api().await;
    let running = spawn_loopback(Arc::new(ProviderState::default())).await.unwrap();
    let provider = PaymentProvider::new(&running.url).unwrap().with_token(running.token.clone());
    let token = running.token.clone().unwrap_or_default();
    let env = [("PAYMENT_PROVIDER_URL", running.url.as_str()), ("PAYMENT_PROVIDER_TOKEN", token.as_str())];
    let (client, _) = support::serve_with(&api, None, &env, ScriptedUser::always(chapter::release())).await;
    let quote = client.call_tool("quote_refund", json!({"order_id": "O-2289"})).await.unwrap();
    client.call_tool("issue_refund", json!({"quote_id": quote.structured_content.unwrap()["quote_id"]})).await.unwrap();
    let CallToolResponse::InputRequired(first) = pay_refund(&client, None).await else {
        panic!("expected input_required")
    };
    let InputRequest::Elicitation(request) = &first.input_requests.as_ref().unwrap()["connect"] else { panic!() };
    let ElicitRequestParams::UrlElicitationParams { url, .. } = &request.params else { panic!("not URL mode") };
    let flow_id = url.rsplit('/').next().unwrap().to_owned();
    assert_eq!(url, &provider.connect_url(&flow_id));
    Chain { _api: api, running, provider, client, flow_id, state: first.request_state }
}

/// Opens the connect page, checks what it says, signs in as `username` by
/// typing and clicking, and returns the text of the page that follows once
/// it shows `outcome`.
async fn sign_in_in_browser(
    browser: &Client,
    provider: &PaymentProvider,
    flow_id: &str,
    username: &str,
    password: &str,
    outcome: &str,
) -> String {
    browser.goto(&provider.connect_url(flow_id)).await.unwrap();
    assert_eq!(browser.title().await.unwrap(), "Fernhill Pay");
    let text = browser.find(Locator::Css("main")).await.unwrap().text().await.unwrap();
    assert!(text.contains("R-0111") && text.contains("180.00"), "{text}");
    browser.find(Locator::Id("username")).await.unwrap().send_keys(username).await.unwrap();
    browser.find(Locator::Id("password")).await.unwrap().send_keys(password).await.unwrap();
    browser.find(Locator::Css("button[type=submit]")).await.unwrap().click().await.unwrap();
    let selector = format!("main[data-outcome=\"{outcome}\"]");
    let main = browser
        .wait()
        .at_most(PAGE_TIMEOUT)
        .for_element(Locator::Css(&selector))
        .await
        .unwrap_or_else(|e| panic!("the browser did not show {selector}: {e}"));
    main.text().await.unwrap()
}

#[tokio::test]
async fn lead_connects_in_a_browser_and_pay_refund_pays() {
    let Chain { _api, running, provider, client, flow_id, state } = chain().await;
    let driver = Chromedriver::start().await;
    let profile = tempfile::tempdir().unwrap();
    let browser = driver.browser(&profile).await;

    let text = sign_in_in_browser(&browser, &provider, &flow_id, "lead-1", "fernhill-lead-1", "connected").await;
    assert!(text.contains("Connected. You can go back to your host and retry."), "{text}");
    assert!(!browser.current_url().await.unwrap().as_str().contains("lead-1"), "personal data in the URL");

    let flow = provider.flow(&flow_id).await.unwrap();
    assert_eq!((flow.status, flow.finished_by.as_deref()), (FlowStatus::Finished, Some("lead-1")));
    // The host retries; the server asks the provider, finds the flow finished, and pays.
    let CallToolResponse::Complete(paid) = pay_refund(&client, state).await else { panic!("expected complete") };
    assert_eq!(paid.content[0].as_text().unwrap().text, "Paid R-0111 through the payment provider");
    let (payment, created) = provider.pay_outcome(&flow_id, "R-0111").await.unwrap();
    assert!(!created, "pay_refund made the payment");
    assert_eq!(
        (payment.payment_id.as_str(), payment.amount.as_str(), payment.paid_by.as_str()),
        ("P-0001", "180.00", "lead-1")
    );

    browser.close().await.unwrap();
    driver.stop().await;
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn another_lead_is_refused_in_a_browser_and_nothing_is_paid() {
    let Chain { _api, running, provider, client, flow_id, state } = chain().await;
    let driver = Chromedriver::start().await;
    let profile = tempfile::tempdir().unwrap();
    let browser = driver.browser(&profile).await;

    let text = sign_in_in_browser(&browser, &provider, &flow_id, "lead-2", "fernhill-lead-2", "wrong_person").await;
    assert!(
        text.contains("This payment was started by another person; sign in as the person who started it."),
        "{text}"
    );
    let flow = provider.flow(&flow_id).await.unwrap();
    assert_eq!((flow.status, flow.finished_by), (FlowStatus::Pending, None));
    assert!(provider.pay(&flow_id, "R-0111").await.unwrap_err().is_not_finished());
    // The host retries: the flow is not finished, so the lead is sent to the page again.
    assert!(matches!(pay_refund(&client, state).await, CallToolResponse::InputRequired(_)));

    browser.close().await.unwrap();
    driver.stop().await;
    running.shutdown().await.unwrap();
}

/// Another lead decides on the approval page. An agent (client credentials, `refunds:request`)
/// asks for a refund under `--approval another-lead` and is told the page's link; a lead opens
/// it in Chromium, signs in at the issuer (authorization code with PKCE), sees the order, its
/// lines, the amount and who asked, and releases it: the shop's API records both. The page is
/// sent with a strict CSP and no personal data in its URL; a post from another origin, or
/// without the session's form token, decides nothing.
#[tokio::test]
async fn a_lead_signs_in_on_the_approval_page_and_releases_what_an_agent_asked_for() {
    use load::authorization::{self, Credentials};
    use shop_api::{Approval, RefundId, RefundStatus, Store};
    use support::ShopApiCommand;

    let (_issuer, issuer_url) = support::oidc_issuer("jwt").await;
    let store = Store::open(None).unwrap().with_approval(Approval::AnotherLead);
    let api = shop_api::spawn_loopback(Arc::new(store)).await.unwrap();
    let audit = tempfile::NamedTempFile::new().unwrap();
    let mut command = Command::new(support::fernhill_mcp());
    command
        .args(["serve", "--http", "127.0.0.1:0", "--auth-issuer", &issuer_url, "--approval", "another-lead"])
        .args(["--approvals-client-id", "approvals", "--approvals-client-secret", "approvals-secret"])
        .arg("--audit-log")
        .arg(audit.path())
        .shop_api(&api);
    let (_server, url) = support::spawn_printing_url(&mut command).await;
    let agent = Credentials::ClientSecret {
        client_id: "agent".into(),
        client_secret: "agent-secret".into(),
        scopes: vec!["orders:read".into(), "refunds:request".into()],
    };
    let agent = authorization::connect(ScriptedUser::always(chapter::release()), &url, &agent, 1).await.unwrap();
    let quote = agent.call_tool("quote_refund", json!({"order_id": "O-2289"})).await.unwrap();
    let quote_id = quote.structured_content.unwrap()["quote_id"].clone();
    let held = agent.call_tool("issue_refund", json!({"quote_id": quote_id})).await.unwrap();
    let said = mrtr::client::text(&held);
    let origin = url.trim_end_matches("/mcp").to_owned();
    let link = format!("{origin}/approvals/R-0111");
    assert!(said.contains(&format!("A lead decides it at {link}.")), "{said}");

    // What anyone else's browser could send decides nothing.
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let forged = [("form_token", "guess"), ("decision", "release"), ("seen", "x")];
    let cross_site = http.post(&link).header("origin", "http://evil.example").form(&forged).send().await.unwrap();
    assert_eq!(cross_site.status(), 403);
    let no_session = http.post(&link).header("origin", &origin).form(&forged).send().await.unwrap();
    assert_eq!(no_session.status(), 403);
    let first = http.get(&link).send().await.unwrap();
    assert_eq!(first.status(), 303, "sent to sign in first");
    let csp = first.headers()["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"), "{csp}");
    let cookie = first.headers()["set-cookie"].to_str().unwrap();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"), "{cookie}");
    assert!(first.headers()["location"].to_str().unwrap().contains("code_challenge_method=S256"));

    // The lead, in a browser.
    let driver = Chromedriver::start().await;
    let profile = tempfile::tempdir().unwrap();
    let browser = driver.browser(&profile).await;
    browser.goto(&link).await.unwrap();
    let login = browser.wait().at_most(PAGE_TIMEOUT).for_element(Locator::Css("input[name=login]")).await.unwrap();
    login.send_keys("lead-2").await.unwrap();
    browser.find(Locator::Css("input[name=password]")).await.unwrap().send_keys("any").await.unwrap();
    browser.find(Locator::Css("button[type=submit]")).await.unwrap().click().await.unwrap();
    // oidc-provider's consent page, then back to the approval page.
    let review = "main[data-outcome=\"review\"]";
    for _ in 0..3 {
        if browser.find(Locator::Css(review)).await.is_ok() {
            break;
        }
        if let Ok(button) = browser.find(Locator::Css("button[type=submit]")).await {
            let _ = button.click().await;
        }
        let _ = browser.wait().at_most(Duration::from_secs(5)).for_element(Locator::Css(review)).await;
    }
    let main = browser.wait().at_most(PAGE_TIMEOUT).for_element(Locator::Css(review)).await.unwrap();
    let text = main.text().await.unwrap();
    for shown in ["R-0111", "180.00", "O-2289", "Raised cedar planter", &format!("{issuer_url} agent")] {
        assert!(text.contains(shown), "{shown} not shown: {text}");
    }
    assert_eq!(browser.current_url().await.unwrap().as_str(), link, "nothing but the refund in the URL");
    // The lead's own session, without the form's token (a forged form): nothing decided.
    let session = browser.get_named_cookie("fernhill-approvals").await.unwrap();
    let forged = http
        .post(&link)
        .header("origin", &origin)
        .header("cookie", format!("fernhill-approvals={}", session.value()))
        .form(&[("form_token", "guess"), ("decision", "release"), ("seen", "x")])
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403);
    assert!(forged.text().await.unwrap().contains("data-outcome=\"bad_form\""));
    // The lead's own session and form, for a refund other than the one shown (another
    // digest): refused, and nothing used up (the real click below still counts).
    let token = browser.find(Locator::Css("input[name=form_token]")).await.unwrap().attr("value").await.unwrap();
    let shown = browser.find(Locator::Css("input[name=seen]")).await.unwrap().attr("value").await.unwrap();
    let other = http
        .post(&link)
        .header("origin", &origin)
        .header("cookie", format!("fernhill-approvals={}", session.value()))
        .form(&[("form_token", token.unwrap().as_str()), ("decision", "release"), ("seen", "another-refund")])
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 409);
    assert!(other.text().await.unwrap().contains("changed since it was shown"));
    assert!(shown.is_some_and(|seen| !seen.is_empty()));
    browser.find(Locator::Css("button[value=release]")).await.unwrap().click().await.unwrap();
    let released = browser.wait().at_most(PAGE_TIMEOUT).for_element(Locator::Css("main[data-outcome=\"released\"]"));
    let Ok(done) = released.await else { panic!("not released: {}", browser.source().await.unwrap()) };
    assert!(done.text().await.unwrap().contains("Refund R-0111 is released."));
    browser.close().await.unwrap();
    driver.stop().await;

    let refund = support::shop(&api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap();
    assert_eq!(refund.status, RefundStatus::Requested);
    assert_eq!(refund.requested_by, Some(format!("{issuer_url} agent")));
    assert_eq!(refund.decided_by, Some(format!("{issuer_url} lead-2")));
    let trail = std::fs::read_to_string(audit.path()).unwrap();
    let released: serde_json::Value =
        serde_json::from_str(trail.lines().find(|line| line.contains("\"event\":\"released\"")).unwrap()).unwrap();
    assert_eq!(released["channel"], "page");
    assert_eq!(released["seen"], refund.digest());
    assert!(released["auth_time"].is_i64(), "{released}");
    assert_eq!(released["requested_by"], format!("{issuer_url} agent"));
    assert_eq!(released["decided_by"], format!("{issuer_url} lead-2"));
}
