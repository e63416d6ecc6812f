//! `fernhill-gate check`, run as an operator runs it: a policy file in front of a real upstream
//! started as a process (the shop's own `fernhill-mcp serve`, over stdio), its tools listed and
//! each shown with the rule that holds it; a policy with a mistake refused by file, line and
//! key before any upstream is started.

mod support;

use std::process::Output;

use support::{fernhill_mcp, start_api};

fn fernhill_gate() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_fernhill-gate"))
}

async fn check(policy: &std::path::Path, token: &str) -> Output {
    tokio::process::Command::new(fernhill_gate())
        .arg("check")
        .arg(policy)
        .env("SHOP_API_TOKEN", token)
        .output()
        .await
        .unwrap()
}

#[tokio::test]
async fn check_lists_an_upstreams_tools_beside_the_rule_that_holds_each() {
    let api = start_api().await;
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("gate.toml");
    let server = fernhill_mcp();
    std::fs::write(
        &policy,
        format!(
            r#"
[[upstream]]
name = "shop"
command = [{server:?}, "serve", "--shop-api", "{url}"]

[[rule]]
name = "large refunds"
upstream = "shop"
tools = ["issue_refund", "pay_*"]
when = "args.amount > 150.0"
decided_by = {{ scope = "refunds:write" }}
deadline = "72h"

[[rule]]
name = "never listed"
tools = ["delete_*"]
decided_by = {{ group = "operators" }}
deadline = "1h"
"#,
            url = api.url
        ),
    )
    .unwrap();
    let checked = check(&policy, api.token.as_deref().unwrap_or_default()).await;
    let shown = String::from_utf8(checked.stdout).unwrap();
    assert!(checked.status.success(), "{shown}\n{}", String::from_utf8_lossy(&checked.stderr));
    let lines: Vec<&str> = shown.lines().map(str::trim_end).collect();
    assert!(lines[2].starts_with("upstream shop (") && lines[2].ends_with("): 7 tools"), "{shown}");
    for expected in [
        "issue_refund    held by \"large refunds\" when args.amount > 150.0",
        "pay_refund      held by \"large refunds\" when args.amount > 150.0",
        "lookup_order    passes",
        "quote_refund    passes",
    ] {
        assert!(lines.iter().any(|line| line.trim() == expected), "no `{expected}` in\n{shown}");
    }
    assert!(shown.ends_with("warning: rule \"never listed\" (line 14) names no tool any upstream listed\n"), "{shown}");
}

#[tokio::test]
async fn a_policy_with_a_mistake_is_refused_by_file_line_and_key_and_an_upstream_that_does_not_start_fails() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("gate.toml");
    std::fs::write(&policy, "[[rule]]\ntools = [\"write_file\"]\nwhen = \"args.path ==\"\ndecided_by = { scope = \"s\" }\ndeadline = \"1h\"\n").unwrap();
    let refused = check(&policy, "").await;
    let said = String::from_utf8(refused.stderr).unwrap();
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(
        said.starts_with(&format!("fernhill-gate: {}:3: rule.when: `args.path ==` is not CEL", policy.display())),
        "{said}"
    );
    assert!(refused.stdout.is_empty());

    std::fs::write(&policy, "[[upstream]]\nname = \"gone\"\ncommand = [\"/nonexistent/mcp-server\"]\n").unwrap();
    let failed = check(&policy, "").await;
    let shown = String::from_utf8(failed.stdout).unwrap();
    assert_eq!(failed.status.code(), Some(1), "{shown}");
    assert!(shown.contains("upstream gone: not listed: `/nonexistent/mcp-server` did not start"), "{shown}");
}
