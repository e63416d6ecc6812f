//! The TypeScript SDK's 2026-07-28 client (`@modelcontextprotocol/client` 2.4.0, pinned to
//! 2026-07-28) drives `fernhill serve` over stdio and over Streamable HTTP: one refund released,
//! one declined. Over stdio that client starts the server twice (the first only answers
//! `server/discover`, then gets SIGTERM); the server takes it calmly. The SDK is installed with
//! npm into the target dir on first use, and the test fails loudly if npm cannot reach it.

mod support;

use std::{path::PathBuf, process::Command as StdCommand, sync::OnceLock};

use tokio::process::Command;

use support::{fernhill, start_api};

const SDK: &str = "@modelcontextprotocol/client@2.4.0";

/// A folder with the SDK installed and the script beside it (ES modules resolve from there).
fn npm_folder() -> PathBuf {
    static FOLDER: OnceLock<PathBuf> = OnceLock::new();
    FOLDER
        .get_or_init(|| {
            let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ts-sdk");
            let ready = folder.join("node_modules/@modelcontextprotocol/client/package.json");
            if !ready.exists() {
                std::fs::create_dir_all(&folder).unwrap();
                std::fs::write(folder.join("package.json"), "{\"private\": true, \"type\": \"module\"}\n").unwrap();
                let installed = StdCommand::new("npm")
                    .args(["install", "--no-audit", "--no-fund", "--silent", SDK])
                    .current_dir(&folder)
                    .status()
                    .expect("npm runs");
                assert!(installed.success(), "npm install {SDK} failed: is the npm registry reachable?");
            }
            let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/node/confirm.mjs");
            std::fs::copy(script, folder.join("confirm.mjs")).unwrap();
            folder
        })
        .clone()
}

async fn node(args: &[&str]) -> String {
    let folder = npm_folder();
    let output =
        Command::new("node").arg(folder.join("confirm.mjs")).args(args).current_dir(&folder).output().await.unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

const EXPECTED: &str = "asked and released: R-0111 requested\nasked and declined: R-0112 cancelled\nquestions: 2\n\
first question: Refund 180.00 on order O-2289? It is above the policy limit, so a lead must confirm it.\n";

#[tokio::test]
async fn the_typescript_client_confirms_and_declines_over_stdio() {
    let api = start_api().await;
    let binary = fernhill().display().to_string();
    assert_eq!(node(&["stdio", &binary, &api.url]).await, EXPECTED);
}

#[tokio::test]
async fn the_typescript_client_confirms_and_declines_over_http() {
    let api = start_api().await;
    let mut serve = Command::new(fernhill());
    serve.args(["serve", "--http", "127.0.0.1:0", "--shop-api", &api.url]);
    let (_server, url) = support::spawn_printing_url(&mut serve).await;
    assert_eq!(node(&["http", &url]).await, EXPECTED);
}
