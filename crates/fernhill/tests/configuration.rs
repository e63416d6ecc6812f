//! One configuration file for every program, as an operator uses it: `config example` and
//! `config check`, the file under `serve` and `shop-api`, its errors with file, line and key,
//! and the old environment names still honoured with a warning.

mod support;

use std::path::Path;

use support::Within;
use tokio::process::Command;

use support::{fernhill, fernhill_mcp};

/// `fernhill-mcp ARGS` with none of the house's variables from the test's environment.
fn mcp(args: &[&str]) -> Command {
    let mut command = Command::new(fernhill_mcp());
    command.args(args);
    for (name, _) in std::env::vars() {
        if name.starts_with("SHOP_") || name.starts_with("FERNHILL_") || name.starts_with("PAYMENT_") {
            command.env_remove(name);
        }
    }
    command
}

fn written(dir: &Path, text: &str) -> String {
    let path = dir.join("fernhill.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[tokio::test]
async fn config_check_on_the_example_prints_every_value_with_its_source() {
    let example = mcp(&["config", "example"]).output_within().await;
    assert!(example.status.success());
    let dir = tempfile::tempdir().unwrap();
    let path = written(dir.path(), &String::from_utf8_lossy(&example.stdout));
    let checked = mcp(&["config", "check", "--config", &path, "--max-sessions", "7"])
        .env("FERNHILL_RATE_LIMIT", "900")
        .env("SHOP_API_TOKEN", "the-service-credential")
        .output_within()
        .await;
    let stdout = String::from_utf8_lossy(&checked.stdout);
    assert!(checked.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&checked.stderr));
    for line in [
        format!("url = \"http://127.0.0.1:8710\"  # {path}:"),
        "max_sessions = 7  # command line".to_owned(),
        "rate_limit = 900  # environment FERNHILL_RATE_LIMIT".to_owned(),
        "token = \"(redacted)\"  # environment SHOP_API_TOKEN".to_owned(),
        "ttl = 600  # default".to_owned(),
        "# issuer = # not set".to_owned(),
        "[approvals]".to_owned(),
    ] {
        assert!(stdout.contains(&line), "missing {line:?} in:\n{stdout}");
    }
    assert!(!stdout.contains("the-service-credential"), "a secret is never printed:\n{stdout}");
    // Every setting serve runs with is printed: one line each.
    let settings = stdout.lines().filter(|line| line.contains("  # ") || line.ends_with("# not set")).count();
    assert!(settings >= 60, "{settings} settings printed:\n{stdout}");
}

#[tokio::test]
async fn a_bad_file_is_an_error_naming_its_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    for (text, said) in [
        ("[store]\nurl = \"memory\"\nprefx = \"a:\"\n", ":3: unknown key `store.prefx`"),
        ("[limits]\nmax_sessions = \"many\"\n", ":2: `limits.max_sessions`: \"many\": invalid digit found in string"),
        ("[approvals]\nconfirm_on = \"chat\"\n", ":2: `approvals.confirm_on`: \"chat\" is not one of host, page"),
        ("[listen]\nhttp = 8711\n", ":2: `listen.http`: \"8711\": invalid socket address syntax"),
        ("[stores]\n", ":1: unknown section [stores]"),
    ] {
        let path = written(dir.path(), text);
        let checked = mcp(&["config", "check", "--config", &path]).output_within().await;
        assert_eq!(checked.status.code(), Some(2), "{text}");
        let stderr = String::from_utf8_lossy(&checked.stderr);
        assert!(stderr.contains(&format!("{path}{said}")), "{text}: {stderr}");
        let served = mcp(&["serve", "--config", &path]).output_within().await;
        assert_eq!(served.status.code(), Some(2), "serve refuses the same file: {text}");
    }
}

#[tokio::test]
async fn settings_that_cannot_hold_together_are_refused_saying_where_each_was_set() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(dir.path(), "[shop_api]\nurl = \"http://127.0.0.1:9\"\n\n[approvals]\nconfirm_on = \"page\"\n");
    let checked = mcp(&["config", "check", "--config", &path]).output_within().await;
    assert_eq!(checked.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&checked.stderr);
    assert!(
        stderr.contains(&format!("{path}:5 (approvals.confirm_on) with approvals.page_client_id (not set): deciding on the page needs the page")),
        "{stderr}"
    );
    let served = mcp(&["serve", "--config", &path]).output_within().await;
    assert_eq!(served.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&served.stderr).contains("deciding on the page needs the page"));
}

#[tokio::test]
async fn an_old_environment_name_still_counts_with_a_warning_naming_the_new_one() {
    let checked = mcp(&["config", "check", "--shop-api", "http://127.0.0.1:9"])
        .env("SHOP_MAX_SESSIONS", "5")
        .output_within()
        .await;
    assert!(checked.status.success());
    assert!(String::from_utf8_lossy(&checked.stdout).contains("max_sessions = 5  # environment SHOP_MAX_SESSIONS"));
    let stderr = String::from_utf8_lossy(&checked.stderr);
    assert!(stderr.contains("SHOP_MAX_SESSIONS is renamed FERNHILL_MAX_SESSIONS"), "{stderr}");
}

#[tokio::test]
async fn serve_s_help_is_what_configures_it() {
    let help = mcp(&["serve", "--help"]).output_within().await;
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--config <PATH>") && help.contains("--max-sessions"), "{help}");
    // A heading per concern, as the file has a section per concern.
    for heading in ["\nThe shop's API:\n", "\nStore:\n", "\nApprovals:\n", "\nListen and edge:\n", "\nLimits:\n"] {
        assert!(help.contains(heading), "no {heading:?} in:\n{help}");
    }
    for shown_only in ["--ask-style", "--when-busy"] {
        assert!(!help.contains(shown_only), "{shown_only} shows a behaviour, it does not configure one:\n{help}");
    }
}

/// The shop's API and the MCP server read one file: the API writes its credential where
/// `shop_api.token_file` says (beside the file), and the server reads it from there.
#[tokio::test]
async fn the_api_and_the_server_share_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(
        dir.path(),
        "[shop_api]\nlisten = \"127.0.0.1:0\"\ntoken_file = \"api.token\"\nquote_ttl = 120\n\n[approvals]\npolicy = \"another-lead\"\n",
    );
    let mut api = Command::new(fernhill());
    api.args(["shop-api", "--config", &path]).env_remove("SHOP_API_TOKEN").env_remove("SHOP_API_TOKEN_FILE");
    let (_api, url) = support::spawn_printing_url(&mut api).await;
    assert!(dir.path().join("api.token").exists(), "the credential is written beside the file");
    let policy: serde_json::Value = reqwest::Client::new()
        .get(format!("{url}/policy"))
        .bearer_auth(web_service::credential::read_secret(&dir.path().join("api.token")).unwrap())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(policy["approval"], "another-lead", "{policy}");
    let checked = mcp(&["config", "check", "--config", &path, "--shop-api", &url]).output_within().await;
    let stdout = String::from_utf8_lossy(&checked.stdout);
    let token_file = dir.path().join("api.token");
    for line in [
        format!("token_file = \"{}\"  # {path}:3", token_file.display()),
        format!("quote_ttl = 120  # {path}:4"),
        format!("policy = \"another-lead\"  # {path}:7"),
    ] {
        assert!(stdout.contains(&line), "missing {line:?} in:\n{stdout}");
    }
}
