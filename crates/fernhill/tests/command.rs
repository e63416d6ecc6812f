//! The `fernhill` command as a user runs it: `shop-api`, `serve`, `wire`, `--help`.

mod support;

use support::Within;

use fernhill::chapter;
use mrtr::client::{Client, ScriptedUser};
use serde_json::json;
use shop_api::{OrderId, ShopApi};
use tokio::process::Command;
use wire::{Direction, read_trace};

use support::{ShopApiCommand, fernhill, fernhill_mcp, start_api};

#[tokio::test]
async fn shop_api_prints_its_url_and_serves_the_seeded_shop() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shop.sqlite");
    let token_file = dir.path().join("api.token");
    let mut command = Command::new(fernhill());
    command.args(["shop-api", "--listen", "127.0.0.1:0", "--db"]).arg(&db).arg("--token-file").arg(&token_file);
    command.env_remove("SHOP_API_TOKEN");
    let (mut child, url) = support::spawn_printing_url(&mut command).await;
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    // A credential was made, and written for its owner alone.
    let token = web_service::credential::read_secret(&token_file).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777, 0o600);
    let order =
        ShopApi::new(&url).unwrap().with_token(Some(token)).order(&OrderId::parse("O-2289").unwrap()).await.unwrap();
    assert_eq!(order.total.to_string(), "180.00");
    child.kill().await.unwrap();
    assert!(db.exists());
}

/// Two `shop-api` processes on one PostgreSQL database, started at once: the schema is migrated
/// once, and either serves the same shop, a refund issued through one released through the
/// other, once.
#[tokio::test]
async fn two_shop_apis_on_one_postgres_database_serve_one_shop() {
    use std::hash::{BuildHasher as _, RandomState};
    // The heavy tier names the machine's PostgreSQL; the plain `cargo test` needs Rust alone.
    let Ok(server) = std::env::var("SHOP_TEST_POSTGRES") else {
        eprintln!("skipped: set SHOP_TEST_POSTGRES (such as postgres://postgres@127.0.0.1:5432) to test on PostgreSQL");
        return;
    };
    let name = format!("fernhill_command_{:016x}", RandomState::new().hash_one(std::process::id()));
    let psql = |sql: String| {
        let server = server.clone();
        async move {
            let done = Command::new("psql").arg(format!("{server}/postgres")).args(["-qc", &sql]).output_within().await;
            assert!(done.status.success(), "{sql}: {}", String::from_utf8_lossy(&done.stderr));
        }
    };
    psql(format!("CREATE DATABASE {name}")).await;
    let start = || {
        let mut command = Command::new(fernhill());
        command
            .args(["shop-api", "--listen", "127.0.0.1:0", "--db", &format!("{server}/{name}")])
            .env("SHOP_API_TOKEN", "service-secret-1");
        async move { support::spawn_printing_url_with_log(&mut command).await }
    };
    let ((mut one, one_url, one_log), (mut two, two_url, two_log)) = tokio::join!(start(), start());
    let migrated = [&one_log, &two_log].iter().filter(|log| log.text().contains("database schema migrated")).count();
    assert_eq!(migrated, 1, "{}\n{}", one_log.text(), two_log.text());
    let one_api = ShopApi::new(&one_url).unwrap().with_token(Some("service-secret-1".into()));
    let two_api = ShopApi::new(&two_url).unwrap().with_token(Some("service-secret-1".into()));
    let request =
        shop_api::QuoteRequest { order_id: OrderId::parse("O-2289").unwrap(), skus: None, include_shipping: None };
    let quote = one_api.create_quote(&request).await.unwrap();
    let held = two_api.create_refund(&quote.quote_id).await.unwrap();
    assert_eq!(held.status, shop_api::RefundStatus::NeedsConfirmation);
    assert_eq!(
        one_api.confirm(&held.refund_id, &shop_api::Party::host_user("lead-2")).await.unwrap().status,
        shop_api::RefundStatus::Requested
    );
    assert!(
        two_api.confirm(&held.refund_id, &shop_api::Party::host_user("lead-2")).await.unwrap_err().is_conflict(),
        "released once"
    );
    one.kill().await.unwrap();
    two.kill().await.unwrap();
    psql(format!("DROP DATABASE {name} WITH (FORCE)")).await;
}

/// The shop's API always has a credential, on loopback too: it starts only with one (given,
/// or made and written to a file), or when told in so many words that something else guards
/// it, and then it warns.
#[tokio::test]
async fn the_shop_api_needs_a_credential_unless_said_so() {
    for listen in ["127.0.0.1:0", "0.0.0.0:0"] {
        let refused = Command::new(fernhill())
            .args(["shop-api", "--listen", listen])
            .env_remove("SHOP_API_TOKEN")
            .env_remove("SHOP_API_TOKEN_FILE")
            .output_within()
            .await;
        assert!(!refused.status.success());
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(stderr.contains("no service credential: set SHOP_API_TOKEN, or give --token-file PATH"), "{stderr}");
    }

    let mut with_token = Command::new(fernhill());
    with_token.args(["shop-api", "--listen", "0.0.0.0:0"]).env("SHOP_API_TOKEN", "service-secret-1");
    let (_api, url) = support::spawn_printing_url(&mut with_token).await;
    assert!(url.starts_with("http://0.0.0.0:"), "{url}");

    let mut insecure = Command::new(fernhill());
    insecure.args(["shop-api", "--listen", "0.0.0.0:0", "--insecure-no-auth"]).env_remove("SHOP_API_TOKEN");
    let (_api, _url, log) = support::spawn_printing_url_with_log(&mut insecure).await;
    log.wait_for("serving the shop's API without a credential (--insecure-no-auth)").await;
}

/// `serve --shop-api-token-file` reads the credential `shop-api --token-file` made.
#[tokio::test]
async fn the_server_reads_the_credential_the_api_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("api.token");
    let mut api = Command::new(fernhill());
    api.args(["shop-api", "--listen", "127.0.0.1:0", "--token-file"]).arg(&token_file).env_remove("SHOP_API_TOKEN");
    let (_api, url) = support::spawn_printing_url(&mut api).await;
    let mut serve = Command::new(fernhill_mcp());
    serve.args(["serve", "--shop-api", &url, "--shop-api-token-file"]).arg(&token_file).env_remove("SHOP_API_TOKEN");
    let client = mrtr::client::Client::launch(mrtr::client::ScriptedUser::unable_to_ask(), serve).await.unwrap();
    let found = client.call_tool("lookup_order", json!({"order_id": "O-2289"})).await.unwrap();
    assert_eq!(mrtr::client::field(&found, "order_id"), Some("O-2289"), "{found:?}");
}

/// With a service credential the shop's API answers only callers that show it (`/healthz`
/// stays open), and `fernhill-mcp serve` calls it as itself with `SHOP_API_TOKEN`.
#[tokio::test]
async fn the_shop_api_answers_only_callers_with_its_credential() {
    let mut command = Command::new(fernhill());
    command.args(["shop-api", "--listen", "127.0.0.1:0"]).env("SHOP_API_TOKEN", "service-secret-1");
    let (_api, url) = support::spawn_printing_url(&mut command).await;
    let order = OrderId::parse("O-2289").unwrap();
    let refused = ShopApi::new(&url).unwrap().order(&order).await.unwrap_err();
    assert_eq!(refused.status(), Some(401), "{refused}");
    let wrong = ShopApi::new(&url).unwrap().with_token(Some("service-secret-2".into())).order(&order).await;
    assert_eq!(wrong.unwrap_err().status(), Some(401));
    let right = ShopApi::new(&url).unwrap().with_token(Some("service-secret-1".into()));
    assert_eq!(right.order(&order).await.unwrap().total.to_string(), "180.00");
    ShopApi::new(&url).unwrap().health().await.expect("/healthz needs no credential");

    for (token, works) in [(Some("service-secret-1"), true), (None, false)] {
        let mut serve = Command::new(fernhill_mcp());
        serve.arg("serve").env("SHOP_API_URL", &url).env_remove("SHOP_API_TOKEN");
        if let Some(token) = token {
            serve.env("SHOP_API_TOKEN", token);
        }
        let transport = rmcp::transport::TokioChildProcess::new(serve).unwrap();
        let client = Client::connect(ScriptedUser::unable_to_ask(), transport).await.unwrap();
        let looked_up = client.call_tool("lookup_order", json!({"order_id": "O-2289"})).await.unwrap();
        assert_eq!(looked_up.is_error != Some(true), works, "{looked_up:?}");
        if !works {
            assert!(mrtr::client::text(&looked_up).contains("credential"), "{looked_up:?}");
        }
        client.close().await.unwrap();
    }
}

/// A host's console sees nothing from a server that has nothing to warn about: a host that
/// only probes (closes stdin at once) ends it quietly, and a whole session says nothing by
/// default; `-v` says what it does.
#[tokio::test]
async fn a_stdio_server_is_quiet_in_the_hosts_console_unless_asked() {
    let api = start_api().await;
    let probe = Command::new(fernhill_mcp())
        .args(["serve"])
        .shop_api(&api)
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .output_within()
        .await;
    assert!(probe.status.success(), "{}", String::from_utf8_lossy(&probe.stderr));
    assert_eq!((probe.stdout.len(), String::from_utf8_lossy(&probe.stderr).as_ref()), (0, ""));

    let session = |verbose: bool| {
        let mut command = Command::new(fernhill_mcp());
        command.args(["serve"]).shop_api(&api).env_remove("RUST_LOG");
        if verbose {
            command.arg("-v");
        }
        let (transport, stderr) =
            rmcp::transport::TokioChildProcess::builder(command).stderr(std::process::Stdio::piped()).spawn().unwrap();
        (transport, stderr.unwrap())
    };
    for verbose in [false, true] {
        let (transport, mut stderr) = session(verbose);
        let client = Client::connect(ScriptedUser::unable_to_ask(), transport).await.unwrap();
        client.call_tool("lookup_order", json!({"order_id": "O-2289"})).await.unwrap();
        client.close().await.unwrap();
        let mut said = String::new();
        let read = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut said);
        tokio::time::timeout(std::time::Duration::from_secs(20), read).await.expect("the server exited").unwrap();
        if verbose {
            assert!(said.contains("INFO") && said.contains("sealing requestState"), "{said}");
        } else {
            assert_eq!(said, "", "a quiet stdio server said something");
        }
    }
}

#[tokio::test]
async fn serve_without_an_api_says_what_is_missing() {
    let output = Command::new(fernhill_mcp()).arg("serve").env_remove("SHOP_API_URL").output_within().await;
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--shop-api"), "{stderr}");
    assert!(output.stdout.is_empty(), "a stdio server must not print anything but MCP to stdout");

    let output = Command::new(fernhill_mcp()).args(["serve", "--shop-api", "not a url"]).output_within().await;
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("not a url"));
}

#[tokio::test]
async fn wire_records_every_line_with_its_direction() {
    let api = start_api().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("trace.jsonl");
    let mut command = Command::new(fernhill());
    command.arg("wire").arg("--log").arg(&log).arg("--").arg(fernhill_mcp()).arg("serve").shop_api(&api);
    let client = Client::launch(ScriptedUser::always(chapter::release()), command).await.unwrap();
    client.call_tool("quote_refund", json!({"order_id": "O-2289"})).await.unwrap();
    client.close().await.unwrap();
    // The relay exits when its server does; its log then holds the whole exchange.
    let trace = read_trace(&log).unwrap();
    let (direction, first) = &trace[0];
    assert_eq!(
        (*direction, first["method"].as_str(), first["id"].as_i64()),
        (Direction::Out, Some("server/discover"), Some(1))
    );
    let quote = trace.iter().find(|(_, m)| m["params"]["name"] == "quote_refund").expect("the call");
    let answer = trace.iter().find(|(d, m)| *d == Direction::In && m["id"] == quote.1["id"]).expect("its answer");
    assert_eq!(answer.1["result"]["structuredContent"]["amount"], "180.00");
}

/// The payment provider as a process of its own: a served MCP server pays through it in URL
/// mode, showing its credential; without the credential the provider refuses the server, and
/// on an open port without one it does not start.
#[tokio::test]
async fn a_served_fleet_pays_through_the_payment_provider_command() {
    let api = start_api().await;
    let mut provider = Command::new(fernhill());
    provider.args(["payment-provider", "--listen", "127.0.0.1:0"]).env("PAYMENT_PROVIDER_TOKEN", "pay-secret-1");
    let (_provider, provider_url) = support::spawn_printing_url(&mut provider).await;
    for (token, pays) in [(Some("pay-secret-1"), true), (None, false)] {
        let mut serve = Command::new(fernhill_mcp());
        serve
            .args(["serve", "--http", "127.0.0.1:0", "--payments", &provider_url])
            .shop_api(&api)
            .env_remove("PAYMENT_PROVIDER_TOKEN");
        if let Some(token) = token {
            serve.env("PAYMENT_PROVIDER_TOKEN", token);
        }
        let (_server, url) = support::spawn_printing_url(&mut serve).await;
        let lead = Client::connect_http(ScriptedUser::always(chapter::release()), &url, 4).await.unwrap();
        let order = if pays { "O-2289" } else { "O-1145" };
        let quote_id = support::quote(&lead, order).await;
        let released = lead.call_tool("issue_refund", json!({"quote_id": quote_id})).await.unwrap();
        let refund_id = mrtr::client::field(&released, "refund_id").unwrap().to_owned();
        let pay = mrtr::client::params("pay_refund", json!({"refund_id": refund_id}));
        let asked = lead.call_tool_once(pay.clone()).await.unwrap();
        let rmcp::model::CallToolResponse::InputRequired(asked) = asked else {
            let rmcp::model::CallToolResponse::Complete(refused) = asked else { panic!("an answer") };
            assert!(!pays, "{refused:?}");
            assert!(mrtr::client::text(&refused).contains("credential"), "{refused:?}");
            continue;
        };
        let question = serde_json::to_value(&asked.input_requests.as_ref().unwrap()["connect"]).unwrap();
        let page = question["params"]["url"].as_str().unwrap();
        assert!(page.starts_with(&format!("{provider_url}/connect/")), "{page}");
        let flow = page.rsplit('/').next().unwrap();
        chapter::sign_in_on_provider_page(&provider_url, flow, "lead-1", "fernhill-lead-1").await.unwrap();
        let consent = mrtr::client::Answer::Accept(None);
        let paid = lead.call_tool_once(mrtr::client::retry(pay, asked.request_state, [("connect", &consent)])).await;
        let rmcp::model::CallToolResponse::Complete(paid) = paid.unwrap() else { panic!("paid") };
        assert_eq!(mrtr::client::text(&paid), format!("Paid {refund_id} through the payment provider"));
    }
    let refused = Command::new(fernhill())
        .args(["payment-provider", "--listen", "127.0.0.1:0"])
        .env_remove("PAYMENT_PROVIDER_TOKEN")
        .output_within()
        .await;
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("no service credential: set PAYMENT_PROVIDER_TOKEN"), "{said}");
}

#[tokio::test]
async fn help_names_every_command() {
    let output = Command::new(fernhill()).arg("--help").output_within().await;
    let help = String::from_utf8_lossy(&output.stdout);
    for command in ["shop-api", "payment-provider", "demo", "host", "wire"] {
        assert!(help.contains(command), "{help}");
    }
    let output = Command::new(support::fernhill_mcp()).arg("--help").output_within().await;
    let help = String::from_utf8_lossy(&output.stdout);
    for command in ["serve", "probe"] {
        assert!(help.contains(command), "fernhill-mcp: {help}");
    }
}

#[tokio::test]
async fn demo_runs_the_chapter_on_embedded_defaults() {
    let output = Command::new(fernhill()).arg("demo").env_remove("SHOP_API_URL").output_within().await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    for line in [
        "protocol revision 2026-07-28",
        "refund R-0111 requested",
        "the lead is asked: Refund 180.00 on order O-2289? It is above the policy limit, so a lead must confirm it.",
        "refund R-0112 requested",
        "refund R-0113 cancelled",
        "refund R-0114 needs_confirmation",
        "Recorded: damaged in transit, restock False.",
        "the lead signed in as lead-1 on the provider's page",
        "Paid R-0112 through the payment provider",
        "the lead was asked 5 questions",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
}

#[tokio::test]
async fn demo_takes_the_leads_answers_from_the_command_line_or_a_file() {
    let output = Command::new(fernhill()).args(["demo", "--answers", "decline; release"]).output_within().await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("refund R-0112 cancelled") && stdout.contains("refund R-0113 requested"), "{stdout}");

    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("lead.txt");
    std::fs::write(&script, "release  # the first\nrelease\nmaybe\n").unwrap();
    let output = Command::new(fernhill()).arg("demo").arg("--answers-file").arg(&script).output_within().await;
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("answer \"maybe\" on line 3"), "{stderr}");
}
