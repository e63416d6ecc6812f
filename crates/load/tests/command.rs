//! `fernhill-load` as a person runs it: its subcommands and their help, a small fleet it starts
//! itself whose every refund it checks in the shop's API and whose CPU time it reports, the echo
//! floor, questions left unanswered, a stdio server's cold start, and what it refuses to run.

use std::{path::PathBuf, time::Duration};

use tokio::process::Command;

fn load() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_fernhill-load"))
}

/// The `fernhill-mcp` binary the fleet runs: built beside this one by `cargo test --workspace`.
fn fernhill_mcp() -> PathBuf {
    let path = load().with_file_name("fernhill-mcp");
    assert!(path.exists(), "{} was not built: run the tests with cargo test --workspace", path.display());
    path
}

async fn help(args: &[&str]) -> String {
    let output = Command::new(load()).args(args).arg("--help").output().await.unwrap();
    assert!(output.status.success(), "{args:?} --help failed");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn help_says_what_each_subcommand_does() {
    let top = help(&[]).await;
    for subcommand in ["confirm", "fleet", "echo", "cold-start", "faults", "overload"] {
        assert!(top.contains(subcommand), "--help does not list {subcommand}:\n{top}");
    }
    // The floor's own process is started by `echo`, not by a person.
    assert!(!top.contains("serve-echo"), "{top}");
    let expected: [(&str, &[&str]); 6] = [
        (
            "confirm",
            &[
                "--url",
                "--shop-api",
                "--order",
                "--leads",
                "--confirmations",
                "--pid",
                "--leave-unanswered",
                "--rate",
                "--client-id",
                "--token-command",
            ],
        ),
        (
            "fleet",
            &["--replicas", "--store", "--fernhill-mcp", "--replica-log", "--leads", "--leave-unanswered", "--rate"],
        ),
        ("echo", &["--leads", "--confirmations", "--pid"]),
        ("cold-start", &["<RUNS>", "<COMMAND>", "server/discover"]),
        ("faults", &["--all", "kill-replica", "fail-over-redis", "api-slow", "--confirmations", "--fernhill-mcp"]),
        ("overload", &["--duration", "--patience", "--fernhill-mcp"]),
    ];
    for (subcommand, flags) in expected {
        let text = help(&[subcommand]).await;
        for flag in flags {
            assert!(text.contains(flag), "{subcommand} --help does not mention {flag}:\n{text}");
        }
    }
}

#[tokio::test]
async fn a_fleet_it_starts_releases_every_refund_once() {
    let run = Command::new(load())
        .args(["fleet", "--replicas", "2", "--store", "redis://127.0.0.1:6379", "--leads", "2", "--confirmations", "6"])
        .arg("--fernhill-mcp")
        .arg(fernhill_mcp())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), run).await.expect("the run ended").unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("started 2 replicas on http://127.0.0.1:"), "{stdout}");
    assert!(stdout.contains("released exactly once: 6 of 6"), "{stdout}");
    // The replicas it started are watched: their CPU time per confirmation and their memory.
    let cpu = stdout.lines().find(|line| line.starts_with("server CPU: ")).unwrap_or_else(|| panic!("{stdout}"));
    assert_eq!(cpu.matches("pid ").count(), 2, "{cpu}");
    assert!(stdout.contains("server memory at the end: pid "), "{stdout}");
}

async fn run(args: &[&str]) -> (bool, String, String) {
    run_with(args, &[]).await
}

async fn run_with(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let run = Command::new(load()).args(args).envs(env.iter().copied()).kill_on_drop(true).output();
    let output = tokio::time::timeout(Duration::from_secs(120), run).await.expect("the run ended").unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.success(), stdout.into_owned(), stderr.into_owned())
}

#[tokio::test]
async fn the_echo_floor_answers_confirmations_and_its_cpu_is_reported() {
    let (ok, stdout, stderr) = run(&["echo", "--leads", "2", "--confirmations", "20"]).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("started the echo floor on http://127.0.0.1:"), "{stdout}");
    assert!(stdout.contains("confirmations: 20 in "), "{stdout}");
    assert!(stdout.contains("server CPU: "), "{stdout}");
    // It has no shop behind it: no books to check.
    assert!(!stdout.contains("released exactly once"), "{stdout}");
}

/// With the shop's API behind it, the floor makes the server's calls: every refund is released
/// once, as the books say, and the floor's CPU is named apart from the API's.
#[tokio::test]
async fn the_architectures_floor_calls_the_shops_api_and_its_books_hold() {
    let store = shop_api::Store::open(None).unwrap();
    store.add_load_orders(shop_api::seed::FIRST_LOAD_ORDER, 16).unwrap();
    let api = shop_api::spawn_loopback(std::sync::Arc::new(store)).await.unwrap();
    let token = api.token.clone().unwrap();
    let args = ["echo", "--shop-api", &api.url, "--leads", "2", "--confirmations", "10"];
    let (ok, stdout, stderr) = run_with(&args, &[("SHOP_API_TOKEN", &token)]).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("started the architecture's floor (echo and the shop's API) on http://"), "{stdout}");
    assert!(stdout.contains("released exactly once: 10 of 10"), "{stdout}");
    let refunds = shop_api::ShopApi::new(&api.url).unwrap().with_token(Some(token)).refunds().await.unwrap();
    assert_eq!(refunds.iter().filter(|r| r.status == shop_api::RefundStatus::Requested).count(), 10);
}

#[tokio::test]
async fn questions_left_unanswered_leave_their_refunds_held() {
    let fernhill_mcp = fernhill_mcp().display().to_string();
    let args = ["fleet", "--leave-unanswered", "--leads", "2", "--confirmations", "8", "--fernhill-mcp", &fernhill_mcp];
    let (ok, stdout, stderr) = run(&args).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("confirmations: 8 in "), "{stdout}");
    assert!(!stdout.contains("released exactly once"), "{stdout}");
}

#[tokio::test]
async fn a_stdio_servers_cold_start_is_timed_and_an_answer_of_the_wrong_kind_is_refused() {
    let fernhill_mcp = fernhill_mcp().display().to_string();
    // The shop's API is not asked before the first tool call: none needs to run.
    let args = ["cold-start", "2", "--", &fernhill_mcp, "serve", "--shop-api", "http://127.0.0.1:9"];
    let (ok, stdout, stderr) = run(&args).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("cold start to the server/discover answer, 2 runs: p50 "), "{stdout}");
    assert!(stdout.contains("start to exit after the answer: p50 "), "{stdout}");
    assert!(stdout.contains("peak memory: ") && stdout.contains("of which its own (heap and stacks): "), "{stdout}");
    // A program that serves nobody, to set beside: start to exit, and its peak memory.
    let (ok, stdout, stderr) = run(&["cold-start", "--plain", "3", "--", "true"]).await;
    assert!(ok, "{stderr}");
    assert!(stdout.starts_with("start to exit: p50 ") && stdout.contains("(3 runs)\npeak memory: "), "{stdout}");
    // `cat` sends the request back: not an answer.
    let (ok, _, stderr) = run(&["cold-start", "1", "--", "cat"]).await;
    assert!(!ok);
    assert!(stderr.contains("cat answered something else: {\"jsonrpc\""), "{stderr}");
}

#[tokio::test]
async fn a_fleet_without_a_shared_store_is_refused_before_it_starts() {
    let output = Command::new(load())
        .args(["fleet", "--replicas", "2", "--fernhill-mcp"])
        .arg(fernhill_mcp())
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("2 replicas need a store they share, such as --store redis://"), "{stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).is_empty());
}

/// Runs `fernhill-load` refuses before it starts anything: exit code 2, and why on stderr.
#[tokio::test]
async fn a_command_line_that_does_not_say_what_to_run_is_a_usage_error() {
    let refused: [(&[&str], &str); 8] = [
        // No subcommand: the list of them.
        (&[], "confirm"),
        (&["confirm", "--url", "http://127.0.0.1:9/mcp"], "--shop-api"),
        (&["confirm", "--shop-api", "http://127.0.0.1:9"], "--url"),
        (&["confirm", "--url", "u", "--shop-api", "a", "--rate", "5", "--leave-unanswered"], "cannot be used with"),
        (&["faults"], "<FAULT>"),
        (&["faults", "--all", "api-down"], "cannot be used with"),
        (&["overload", "--duration", "0"], "not a positive number of seconds"),
        // The flags of before subcommands are gone.
        (&["--replicas", "2"], "unexpected argument '--replicas'"),
    ];
    for (args, says) in refused {
        let output = Command::new(load()).args(args).output().await.unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?} does not say {says:?}: {stderr}");
    }
}
