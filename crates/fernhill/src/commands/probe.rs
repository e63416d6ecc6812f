//! `fernhill probe URL`: a health check for an image with no shell and no curl. Exit 0 when
//! the URL answers 2xx within a few seconds, 1 otherwise (with the reason on stderr).

use std::time::Duration;

/// How long the probe waits for an answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

pub async fn run(url: &str) -> anyhow::Result<i32> {
    let http = reqwest::Client::builder().timeout(PROBE_TIMEOUT).build()?;
    match http.get(url).send().await {
        Ok(answer) if answer.status().is_success() => Ok(0),
        Ok(answer) => {
            let status = answer.status();
            let said = answer.text().await.unwrap_or_default();
            eprintln!("fernhill probe: {url} answered {status}: {}", said.trim());
            Ok(1)
        }
        Err(error) => {
            eprintln!("fernhill probe: {url} did not answer: {error}");
            Ok(1)
        }
    }
}
