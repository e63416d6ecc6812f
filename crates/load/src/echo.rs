//! The floor: a bare axum JSON service on loopback that answers every MCP request of a
//! confirmation with the shape and size of what `fernhill serve --http` answers, and does none
//! of the work (no tools, no sealing, no records, no shop API behind it). Driven by the same
//! leads over the same client and kept-alive connections, its CPU time and latency per
//! confirmation are what any server pays at least for HTTP and JSON on this machine: the
//! server's own figures are read against it.
//!
//! It parses each request into a `serde_json::Value` (as any JSON handler would) and writes
//! its answer with `serde_json`: `server/discover` and each round of `quote_refund` and
//! `issue_refund` get their canned result, with the request's `id`.

use std::{
    net::SocketAddr,
    path::Path,
    process::Stdio,
    sync::atomic::{AtomicU64, Ordering},
};

use anyhow::Context as _;
use axum::{Json, Router, http::StatusCode, response::IntoResponse, routing::post};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    net::TcpListener,
    process::{Child, Command},
};

/// Serve the floor on `listener` until the process ends.
pub async fn serve(listener: TcpListener) -> std::io::Result<()> {
    axum::serve(listener, Router::new().route("/mcp", post(answer))).await
}

/// Start `program serve-echo 127.0.0.1:0` (this load tool, as a process of its own, so its
/// CPU time is its own); the child and its MCP endpoint.
pub async fn start(program: &Path) -> anyhow::Result<(Child, String)> {
    let mut child = Command::new(program)
        .args(["serve-echo", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", program.display()))?;
    let stdout = child.stdout.take().context("the echo's stdout")?;
    let url = BufReader::new(stdout).lines().next_line().await?.context("the echo printed no URL")?;
    Ok((child, url))
}

/// Bind `address` and say the endpoint on stdout, for [`start`].
pub async fn bind(address: SocketAddr) -> anyhow::Result<TcpListener> {
    let listener = TcpListener::bind(address).await.with_context(|| format!("binding {address}"))?;
    println!("http://{}/mcp", listener.local_addr()?);
    Ok(listener)
}

static NEXT: AtomicU64 = AtomicU64::new(5001);

async fn answer(Json(request): Json<Value>) -> impl IntoResponse {
    let Some(id) = request.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let params = &request["params"];
    let result = match (request["method"].as_str(), params["name"].as_str()) {
        (Some("server/discover"), _) => discover(),
        (Some("tools/call"), Some("quote_refund")) => quote(NEXT.fetch_add(1, Ordering::Relaxed)),
        (Some("tools/call"), Some("issue_refund")) if params.get("requestState").is_some() => released(),
        (Some("tools/call"), Some("issue_refund")) => asks(),
        _ => {
            let error = json!({"code": -32601, "message": "the echo knows only a confirmation's requests"});
            return Json(json!({"jsonrpc": "2.0", "id": id, "error": error})).into_response();
        }
    };
    Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

fn discover() -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"],
        "capabilities": {"tools": {}},
        "instructions": "Support tools for the Fernhill shop. Quote a refund with quote_refund before issuing it \
                         with issue_refund. A refund above the policy limit needs a support lead's confirmation: \
                         issue_refund asks the person at the host, and a decline stands.",
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": {"io.modelcontextprotocol/serverInfo": {
            "name": "shop",
            "title": "Fernhill shop",
            "version": "0.1.0",
            "description": "Orders, refund quotes and refunds of the Fernhill kitchen and garden shop."
        }},
    })
}

/// A tool's complete result: the value as text and as structured content, as the server sends it.
fn complete(value: Value) -> Value {
    json!({
        "resultType": "complete",
        "content": [{"type": "text", "text": value.to_string()}],
        "structuredContent": value,
        "isError": false,
    })
}

fn quote(number: u64) -> Value {
    complete(json!({
        "quote_id": format!("Q-{number}"),
        "order_id": "O-2289",
        "skus": ["GG-0412"],
        "includes_shipping": true,
        "amount": "180.00",
        "currency": "EUR",
        "needs_confirmation": true,
    }))
}

fn asks() -> Value {
    json!({
        "resultType": "input_required",
        "inputRequests": {"confirm": {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Refund 180.00 on order O-2289? It is above the policy limit, so a lead must confirm it.",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"release": {
                        "type": "boolean",
                        "title": "Release this refund",
                        "description": "Yes releases the refund the shop's API holds; no leaves it held."
                    }},
                    "required": ["release"]
                }
            }
        }},
        // A state the server sealed, as long as the server's are.
        "requestState": "v1.pT17R_30ITjqZIEKI8AdUD7K4hC_0gF2KN155iv8AQLDEWMUbXCB7kxSoiKeoXw2zolFOrRldVnS_AeIsayw2tvE7\
                         PGcj_LasukpWESUPHc4F4e_uj-qMxBTMemcAktRZxQrtqBao_PGDy3kGzJ3GmM642MGnvFhsepyoPPwHKkwP-f38HaBO\
                         pIx3AZNsglDnkGjkZ89yKEGHxboxlGzq-LL4Ncxe5-SF7FKWQZGiyYZ-xDy",
    })
}

fn released() -> Value {
    complete(json!({
        "refund_id": "R-0111",
        "order_id": "O-2289",
        "quote_id": "Q-5001",
        "amount": "180.00",
        "currency": "EUR",
        "status": "requested",
    }))
}
