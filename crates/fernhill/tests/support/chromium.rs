//! A headless Chromium driven over WebDriver by `fantoccini`, through Debian's `chromedriver`:
//! the browser tests' and the Inspector's web UI's. Without `/usr/bin/chromium` and
//! `/usr/bin/chromedriver` (Debian packages `chromium` and `chromium-driver`) a test that starts
//! one fails, saying so; it is never skipped.

use std::{path::Path, process::Stdio, time::Duration};

use fantoccini::{Client, ClientBuilder};
use serde_json::json;
use tempfile::TempDir;
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
pub const INSTALL_HINT: &str = "install them with `apt-get update && apt-get install -y chromium chromium-driver`";

/// How long a fresh chromedriver may take to say it listens.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);

/// A chromedriver process on a loopback port, killed when dropped.
pub struct Chromedriver {
    url: String,
    process: Child,
}

impl Chromedriver {
    pub async fn start() -> Chromedriver {
        for (binary, package) in [(CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")] {
            assert!(
                Path::new(binary).exists(),
                "{binary} is missing (Debian package {package}); the browser tests need Chromium and \
                 chromedriver: {INSTALL_HINT}"
            );
        }
        // Port 0: the driver binds a free port itself and says which, so none is picked here
        // and raced for. A driver that ends before it says (seen once in CI, with three tests
        // starting theirs at once) is started again, twice at most, and what it said is shown.
        let mut said = Vec::new();
        for _ in 0..3 {
            let mut process = Command::new(CHROMEDRIVER)
                .arg("--port=0")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .unwrap_or_else(|e| panic!("could not start {CHROMEDRIVER}: {e}; {INSTALL_HINT}"));
            let mut lines = BufReader::new(process.stdout.take().unwrap()).lines();
            let started = async {
                while let Ok(Some(line)) = lines.next_line().await {
                    // "ChromeDriver was started successfully on port 43715."
                    if let Some(port) = line.split("started successfully on port ").nth(1) {
                        return Some(port.trim_end_matches('.').to_owned());
                    }
                    said.push(line);
                }
                None
            };
            match tokio::time::timeout(STARTUP_TIMEOUT, started).await {
                Ok(Some(port)) => {
                    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
                    if let Some(stderr) = process.stderr.take() {
                        let mut errors = BufReader::new(stderr).lines();
                        tokio::spawn(async move { while let Ok(Some(_)) = errors.next_line().await {} });
                    }
                    return Chromedriver { url: format!("http://127.0.0.1:{port}"), process };
                }
                Ok(None) => {
                    let mut stderr = String::new();
                    if let Some(mut errors) = process.stderr.take() {
                        use tokio::io::AsyncReadExt as _;
                        let _ = errors.read_to_string(&mut stderr).await;
                    }
                    said.push(format!("(exited without saying its port) {stderr}"));
                }
                Err(_) => panic!("{CHROMEDRIVER} did not say its port within {STARTUP_TIMEOUT:?}"),
            }
        }
        panic!("{CHROMEDRIVER} --port=0 exited three times without saying its port: {said:?}; {INSTALL_HINT}")
    }

    /// A headless Chromium session with a fresh profile in `profile`.
    pub async fn browser(&self, profile: &TempDir) -> Client {
        let args = [
            "--headless".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-sync".to_owned(),
            "--no-first-run".to_owned(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": { "binary": CHROMIUM, "args": args },
        });
        let serde_json::Value::Object(capabilities) = capabilities else { unreachable!() };
        ClientBuilder::rustls()
            .expect("TLS roots for the WebDriver client")
            .capabilities(capabilities)
            .connect(&self.url)
            .await
            .unwrap_or_else(|e| panic!("chromedriver at {} could not start {CHROMIUM}: {e}", self.url))
    }

    pub async fn stop(mut self) {
        let _ = self.process.kill().await;
    }
}
