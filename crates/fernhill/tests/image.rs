//! The container image (`deploy/Containerfile`, built by `deploy/build-image` with Debian's
//! podman, from scratch) is complete: its root, mounted, holds everything `fernhill-mcp` needs.
//! Containers cannot be started here (crun: cgroups in hybrid mode), so the test runs the
//! image's entrypoint from its mounted root with chroot, as its non-root user, against a shop
//! API on loopback: the health check's probe answers, and a lead confirms a refund.

mod support;

use std::path::PathBuf;

use mrtr::client::{Client, ScriptedUser};
use serde_json::json;
use tokio::process::Command;

use support::{ShopApiCommand, Within, fernhill_mcp, quote, start_api};

/// Debian's chroot, by its path: the image's process gets no environment, so no PATH either.
const CHROOT: &str = "/usr/sbin/chroot";

async fn run(program: &str, args: &[&str]) -> String {
    let output = Command::new(program).args(args).output_within().await;
    let said = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    assert!(output.status.success(), "{program} {args:?}: {said} {}", String::from_utf8_lossy(&output.stderr));
    said
}

/// The test's image, unmounted and removed however the test ends.
struct Built(String);

impl Drop for Built {
    fn drop(&mut self) {
        let _ = std::process::Command::new("podman").args(["image", "unmount", &self.0]).output();
        let _ = std::process::Command::new("podman").args(["image", "rm", "--force", &self.0]).output();
    }
}

#[tokio::test]
async fn the_image_runs_from_its_own_root_and_confirms_a_refund() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/build-image");
    let tag = format!("localhost/fernhill-test:{}", rand::random::<u32>());
    run(script.to_str().unwrap(), &[fernhill_mcp().to_str().unwrap(), &tag]).await;
    let _built = Built(tag.clone());
    let root = run("podman", &["image", "mount", &tag]).await;
    let inspected = run("podman", &["image", "inspect", &tag]).await;
    let inspected: serde_json::Value = serde_json::from_str(&inspected).unwrap();
    let (config, health) = (&inspected[0]["Config"], &inspected[0]["Healthcheck"]);
    assert_eq!(config["User"], "10001:10001");
    assert_eq!(config["Entrypoint"], json!(["/usr/local/bin/fernhill-mcp"]));
    assert_eq!(health["Test"], json!(["CMD", "/usr/local/bin/fernhill-mcp", "probe", "http://127.0.0.1:8711/readyz"]));
    for absent in ["bin/sh", "usr/bin/apt", "bin/bash"] {
        assert!(!PathBuf::from(&root).join(absent).exists(), "{absent} is in the image");
    }

    let api = start_api().await;
    let mut serve = Command::new(CHROOT);
    serve
        .args(["--userspec=10001:10001", &root, "/usr/local/bin/fernhill-mcp"])
        .args(["serve", "--http", "127.0.0.1:0"])
        .env_clear()
        .shop_api(&api);
    let (_server, url) = support::spawn_printing_url(&mut serve).await;
    let ready = url.replace("/mcp", "/readyz");
    let probed = Command::new(CHROOT)
        .args(["--userspec=10001:10001", &root, "/usr/local/bin/fernhill-mcp", "probe", &ready])
        .env_clear()
        .output_within()
        .await;
    assert!(probed.status.success(), "{}", String::from_utf8_lossy(&probed.stderr));

    let lead = Client::connect_http(ScriptedUser::always(fernhill::chapter::release()), &url, 4).await.unwrap();
    let done = lead.call_tool("issue_refund", json!({"quote_id": quote(&lead, "O-2289").await})).await.unwrap();
    assert_eq!(mrtr::client::field(&done, "status"), Some("requested"));
}
