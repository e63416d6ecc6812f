//! `fernhill host` as a person uses it: the real binary in a pseudo-terminal, launching the
//! real `fernhill-mcp serve` against the shop's API, with the test typing what the lead would type.
//! The API then says what became of the refund.

mod support;

use std::{process::Command, time::Duration};

use expectrl::Regex;
use shop_api::{RefundId, RefundStatus};

use support::{fernhill, fernhill_mcp, shop, start_api, terminal::Terminal};

const DOWN: &str = "\x1b[B";
const ENTER: &str = "\r";
/// How long one step may take before the test fails (a deadline, not a pace).
const STEP: Duration = Duration::from_secs(30);

/// `fernhill host --call TOOL --args JSON -- fernhill-mcp serve` at a terminal, an xterm of
/// 200×50. Against the shop's API at `api`, its URL and its credential.
fn host(api: (&str, &str), tool: &str, arguments: &str) -> Terminal {
    let mut command = Command::new(fernhill());
    command
        .args(["host", "--call", tool, "--args", arguments, "--"])
        .arg(fernhill_mcp())
        .arg("serve")
        .env("SHOP_API_URL", api.0)
        .env("SHOP_API_TOKEN", api.1)
        .env("TERM", "xterm-256color")
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .env_remove("SHOP_REQUEST_STATE_KEY");
    Terminal::open(command, STEP)
}

/// Quote the order with `--call`, then call issue_refund from the loop with the printed
/// quote_id, up to the lead's question.
fn quote_then_issue(terminal: &mut Terminal, order: &str) {
    terminal.shows("Connected to Fernhill shop", "the server's name");
    terminal.shows("issue_refund · Issue a refund", "the tool list");
    terminal.shows("✔ quote_refund returned:", "the quote");
    let quote_id = terminal.shows(Regex(r#""quote_id": "(Q-\d+)""#), "the quote_id").pop().unwrap();
    terminal.shows("Call another tool?", "the loop's question");
    terminal.types(&format!("y{ENTER}"));
    terminal.shows("Which tool do you want to call?", "the tool menu");
    terminal.types(&format!("issue_refund{ENTER}"));
    terminal.shows("Arguments for issue_refund", "the argument prompts");
    terminal.shows("quote_id", "the quote_id prompt");
    terminal.types(&format!("{quote_id}{ENTER}"));
    // The host declares the Tasks extension; its person may decide, so the question comes in
    // the answer to the call, not in a task to poll.
    terminal.shows("Question from Fernhill shop", "which server asks");
    terminal.shows("during the call to issue_refund", "which tool is being called");
    let amount = if order == "O-2289" { "180.00" } else { "343.49" };
    let question =
        format!("Refund {amount} on order {order}? It is above the policy limit, so a lead must confirm it.");
    terminal.shows(question.as_str(), "the lead's question");
    terminal.shows("Release this refund", "the form's field");
    terminal.shows("How do you want to respond?", "the choice of Answer, Decline or Cancel");
}

/// The person at the terminal quotes `order`, issues its refund, answers the question as
/// `answer` does, and sees the refund end `status`; the shop's API must agree.
async fn at_terminal(order: &'static str, answer: fn(&mut Terminal), status: RefundStatus) {
    let api = start_api().await;
    let (url, token) = (api.url.clone(), api.token.clone().unwrap_or_default());
    let transcript = tokio::task::spawn_blocking(move || {
        let mut terminal = host((&url, &token), "quote_refund", &format!(r#"{{"order_id":"{order}"}}"#));
        quote_then_issue(&mut terminal, order);
        answer(&mut terminal);
        terminal.shows("✔ issue_refund returned:", "the refund");
        terminal.shows(r#""refund_id": "R-0111""#, "the refund's ID");
        terminal.shows(format!(r#""status": "{status}""#), "the refund's status");
        terminal.shows("Call another tool?", "the loop's question");
        terminal.types(&format!("n{ENTER}"));
        let transcript = terminal.seen.clone();
        terminal.quits();
        transcript
    })
    .await
    .unwrap();
    let refund = shop(&api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap();
    assert_eq!(refund.status, status, "{transcript}");
    api.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_lead_releases_a_refund_at_the_terminal() {
    let release = |terminal: &mut Terminal| {
        terminal.shows("Answer", "the Answer option");
        terminal.types(ENTER);
        terminal.shows("Release this refund", "the yes/no prompt");
        terminal.types(&format!("y{ENTER}"));
        terminal.shows("Review your answers before they are sent", "the review");
        terminal.shows("Release this refund: yes", "the answer under review");
        terminal.shows("Send these answers", "the send option");
        terminal.types(ENTER);
        terminal.shows("You chose accept", "the answer going out");
    };
    at_terminal("O-2289", release, RefundStatus::Requested).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_lead_declines_and_the_refund_is_cancelled() {
    let decline = |terminal: &mut Terminal| {
        terminal.shows("Decline", "the Decline option");
        terminal.types(&format!("{DOWN}{ENTER}"));
        terminal.shows("You chose decline", "the decline going out");
    };
    at_terminal("O-1145", decline, RefundStatus::Cancelled).await;
}
