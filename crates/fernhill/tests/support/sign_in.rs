//! A person at a browser against oidc-provider's development sign-in pages (heavy tier): signing
//! in for a host's token, or on an approval page and deciding there.

/// A browser that keeps cookies and follows no redirect by itself.
pub fn browser() -> reqwest::Client {
    reqwest::Client::builder().cookie_store(true).redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

/// A person's browser on oidc-provider's development sign-in pages, from `start`: follows each
/// redirect and posts each sign-in or consent form (signed in as `login`) until, past `start`,
/// it is sent where `arrived` says. Where it was sent (not yet opened).
pub async fn signs_in_until(
    browser: &reqwest::Client,
    start: &str,
    login: &str,
    arrived: impl Fn(&reqwest::Url) -> bool,
) -> reqwest::Url {
    let mut next = reqwest::Url::parse(start).unwrap();
    for hop in 0..16 {
        if hop > 0 && arrived(&next) {
            return next;
        }
        let page = browser.get(next.clone()).send().await.unwrap();
        let response = match page.headers().get("location") {
            Some(_) => page,
            None => {
                // A sign-in or consent form: post what it asks for.
                let html = page.text().await.unwrap();
                let action = html.split("action=\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap().to_owned();
                let prompt = html.split("name=\"prompt\" value=\"").nth(1).and_then(|r| r.split('"').next()).unwrap();
                let form: Vec<(&str, &str)> = match prompt {
                    "login" => vec![("prompt", "login"), ("login", login), ("password", "any")],
                    other => vec![("prompt", other)],
                };
                browser.post(next.join(&action).unwrap()).form(&form).send().await.unwrap()
            }
        };
        let location = response.headers().get("location").expect("a redirect").to_str().unwrap().to_owned();
        next = next.join(&location).unwrap();
    }
    panic!("the sign-in did not come back from {start}");
}

/// An access token for `resource` that the `host` client gets for the person `login` by the
/// authorization code flow with PKCE: the person signs in on oidc-provider's development pages,
/// and the redirect to the host's loopback address is read, not followed.
pub async fn person_token(issuer: &str, login: &str, resource: &str, scope: &str) -> String {
    use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
    let http = browser();
    let metadata: serde_json::Value =
        http.get(format!("{issuer}/.well-known/openid-configuration")).send().await.unwrap().json().await.unwrap();
    let verifier = URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>());
    let challenge =
        URL_SAFE_NO_PAD.encode(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, verifier.as_bytes()).as_ref());
    let redirect = "http://127.0.0.1/callback";
    let authorize = reqwest::Url::parse_with_params(
        metadata["authorization_endpoint"].as_str().unwrap(),
        [
            ("client_id", "host"),
            ("response_type", "code"),
            ("redirect_uri", redirect),
            ("scope", &format!("openid {scope}")),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("state", "signing-in"),
            ("resource", resource),
        ],
    )
    .unwrap();
    let back = signs_in_until(&http, authorize.as_str(), login, |next| next.as_str().starts_with(redirect)).await;
    let code = back.query_pairs().find(|(name, _)| name == "code").map(|(_, code)| code.into_owned());
    let code = code.unwrap_or_else(|| panic!("no code: {back}"));
    let form = [
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("redirect_uri", redirect),
        ("client_id", "host"),
        ("code_verifier", &verifier),
        ("resource", resource),
    ];
    let answer: serde_json::Value =
        http.post(metadata["token_endpoint"].as_str().unwrap()).form(&form).send().await.unwrap().json().await.unwrap();
    answer["access_token"].as_str().unwrap_or_else(|| panic!("no token: {answer}")).to_owned()
}

/// A person's browser on the approval page at `link`: sent to oidc-provider's sign-in, signs in
/// as `login`, consents, and comes back. The browser, and the page it reads.
pub async fn page_signs_in(link: &str, login: &str) -> (reqwest::Client, String) {
    let browser = browser();
    let back = signs_in_until(&browser, link, login, |next| next.as_str() == link).await;
    let page = browser.get(back).send().await.unwrap().text().await.unwrap();
    (browser, page)
}

/// A person signs in on the approval page at `link` as `login` ([`page_signs_in`]), reads the
/// page and posts its form with `decision` (the shop's `release`, the gate's `run`). The last
/// page.
pub async fn page_signs_in_and_decides(link: &str, login: &str, decision: &str) -> String {
    let (browser, page) = page_signs_in(link, login).await;
    decides(&browser, link, &page, decision).await
}

/// The person at `browser` posts the form of `page`, read at `link`, with `decision`, from the
/// page's origin. The page that answers.
pub async fn decides(browser: &reqwest::Client, link: &str, page: &str, decision: &str) -> String {
    let value = |name: &str| {
        let marker = format!("name=\"{name}\" value=\"");
        page.split(&marker)
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_else(|| panic!("{page}"))
            .to_owned()
    };
    let link = reqwest::Url::parse(link).unwrap();
    let origin = link.origin().ascii_serialization();
    let form = [("form_token", value("form_token")), ("seen", value("seen")), ("decision", decision.to_owned())];
    browser.post(link).header("origin", origin).form(&form).send().await.unwrap().text().await.unwrap()
}
