//! `fernhill verify`: check offline what a server signed and wrote.
//!
//! - `verify receipt --keys JWKS [RECEIPT]`: a receipt of a decision (a JWS the server gave
//!   with the decision: the tool result's `_meta` `fernhill/receipt`, the approval page, the
//!   trail's `receipt` lines) against the server's public keys (its `/.well-known/jwks.json`,
//!   saved to a file, or fetched from a URL). Prints what the receipt says; exit 1 if it does
//!   not verify.
//! - `verify trail FILE…`: an audit trail's files, oldest first: each line must carry the
//!   digest of the line before it, so an edited, removed or added line is found. Exit 1 at the
//!   first broken link, naming its file and line.

use std::{
    io::Read as _,
    path::{Path, PathBuf},
};

use anyhow::Context as _;
use approvals::trail::{Broken, check_chain};
use clap::{Args, Subcommand};

#[derive(Args)]
pub struct VerifyOptions {
    #[command(subcommand)]
    what: What,
}

#[derive(Subcommand)]
enum What {
    /// Check a receipt against the server's public keys.
    Receipt {
        /// The server's public keys: a JWK Set file (its /.well-known/jwks.json, saved), or that
        /// URL.
        #[arg(long, value_name = "FILE|URL")]
        keys: String,
        /// The receipt (a compact JWS); read from standard input when absent or `-`.
        receipt: Option<String>,
    },
    /// Check that each line of an audit trail follows the one before it.
    Trail {
        /// The trail's files, oldest first (a rotated file before the one that followed it).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

pub async fn run(options: VerifyOptions) -> anyhow::Result<i32> {
    match options.what {
        What::Receipt { keys, receipt } => receipt_verifies(&keys, receipt.as_deref()).await,
        What::Trail { files } => trail_links(&files),
    }
}

async fn receipt_verifies(keys: &str, receipt: Option<&str>) -> anyhow::Result<i32> {
    let jwks = if keys.starts_with("https://") || keys.starts_with("http://") {
        reqwest::get(keys).await?.error_for_status()?.text().await.with_context(|| format!("the keys at {keys}"))?
    } else {
        std::fs::read_to_string(keys).with_context(|| format!("the keys in {keys}"))?
    };
    let receipt = match receipt {
        Some(receipt) if receipt != "-" => receipt.to_owned(),
        _ => {
            let mut read = String::new();
            std::io::stdin().read_to_string(&mut read).context("the receipt on standard input")?;
            read
        }
    };
    match approvals::receipt::verify(&receipt, &jwks) {
        Ok(receipt) => {
            println!("{}", serde_json::to_string_pretty(&receipt)?);
            eprintln!("fernhill verify: the receipt verifies: signed by one of the keys given, unchanged since");
            Ok(0)
        }
        Err(error) => {
            eprintln!("fernhill verify: the receipt does not verify: {error}");
            Ok(1)
        }
    }
}

fn trail_links(files: &[PathBuf]) -> anyhow::Result<i32> {
    let mut contents = Vec::with_capacity(files.len());
    for file in files {
        contents.push(std::fs::read(file).with_context(|| format!("the trail {}", file.display()))?);
    }
    // Which file, and which line of it, each line of the whole trail is.
    let mut whereabouts: Vec<(&Path, usize)> = Vec::new();
    let mut lines: Vec<&[u8]> = Vec::new();
    for (file, content) in files.iter().zip(&contents) {
        for (number, line) in content.split_inclusive(|&byte| byte == b'\n').enumerate() {
            whereabouts.push((file, number + 1));
            lines.push(line);
        }
    }
    let at = |line: usize| {
        let (file, number) = whereabouts[line - 1];
        format!("{}, line {number}", file.display())
    };
    match check_chain(lines) {
        Ok(linked) => {
            let start = match linked.continues {
                None => "it starts the trail".to_owned(),
                Some(before) => format!("its first line follows one not given (digest {before})"),
            };
            println!("{} lines, each following the one before; {start}", linked.lines);
            Ok(0)
        }
        Err(Broken::Link { line }) => {
            eprintln!(
                "fernhill verify: {}: does not follow the line before it: a line was edited, removed or added there",
                at(line)
            );
            Ok(1)
        }
        Err(Broken::Unreadable { line, why }) => {
            eprintln!("fernhill verify: {}: not a line of a linked trail: {why}", at(line));
            Ok(1)
        }
    }
}
