//! The floor: a bare axum JSON service on loopback that answers every MCP request of a
//! confirmation with the shape and size of what `fernhill-mcp serve --http` answers, and does none
//! of the work (no tools, no sealing, no records, no shop API behind it). Driven by the same
//! leads over the same client and kept-alive connections, its CPU time and latency per
//! confirmation are what any server pays at least for HTTP and JSON on this machine: the
//! server's own figures are read against it.
//!
//! It parses each request into a `serde_json::Value` (as any JSON handler would) and writes
//! its answer with `serde_json`: `server/discover` and each round of `quote_refund` and
//! `issue_refund` get their canned result, with the request's `id`.
//!
//! Given the shop's API (`--shop-api`), it is the floor of this architecture instead: each of
//! a confirmation's three requests also makes the call to the API that the real server makes
//! (`POST /quotes`, `POST /refunds`, `POST /refunds/{id}/confirm`), with the same client and
//! kept-alive connections, and answers with what the API said in the server's shape. No MCP
//! server can do a confirmation for less without leaving out a call the design needs.

use std::{
    net::SocketAddr,
    path::Path,
    process::Stdio,
    sync::atomic::{AtomicU64, Ordering},
};

use anyhow::Context as _;
use axum::{Json, Router, extract::State, http::StatusCode, response::IntoResponse, routing::post};
use serde_json::{Value, json};
use shop_api::{QuoteId, QuoteRequest, RefundId, ShopApi};
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    net::TcpListener,
    process::{Child, Command},
};

/// Serve the floor on `listener` until the process ends; with `api`, the architecture's floor.
pub async fn serve(listener: TcpListener, api: Option<ShopApi>) -> std::io::Result<()> {
    axum::serve(listener, Router::new().route("/mcp", post(answer)).with_state(api)).await
}

/// Start `program serve-echo 127.0.0.1:0` (this load tool, as a process of its own, so its
/// CPU time is its own), calling the shop's API at `shop_api` if given; the child and its MCP
/// endpoint.
pub async fn start(program: &Path, shop_api: Option<&str>, token: Option<&str>) -> anyhow::Result<(Child, String)> {
    let mut command = Command::new(program);
    command.args(["serve-echo", "127.0.0.1:0"]);
    if let Some(api) = shop_api {
        command.args(["--shop-api", api]);
    }
    if let Some(token) = token {
        command.env("SHOP_API_TOKEN", token);
    }
    let mut child = command
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

async fn answer(State(api): State<Option<ShopApi>>, Json(request): Json<Value>) -> impl IntoResponse {
    let Some(id) = request.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let params = &request["params"];
    let call = (request["method"].as_str(), params["name"].as_str());
    let result = match (&api, call) {
        (_, (Some("server/discover"), _)) => Ok(discover()),
        (None, (Some("tools/call"), Some("quote_refund"))) => Ok(quote(NEXT.fetch_add(1, Ordering::Relaxed))),
        (None, (Some("tools/call"), Some("issue_refund"))) if params.get("requestState").is_some() => Ok(released()),
        (None, (Some("tools/call"), Some("issue_refund"))) => Ok(asks(SEALED)),
        (Some(api), (Some("tools/call"), Some(tool @ ("quote_refund" | "issue_refund")))) => {
            upstream(api, tool, params).await
        }
        _ => {
            let error = json!({"code": -32601, "message": "the echo knows only a confirmation's requests"});
            return Json(json!({"jsonrpc": "2.0", "id": id, "error": error})).into_response();
        }
    };
    match result {
        Ok(result) => Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response(),
        // The shop's API refused or did not answer.
        Err(message) => {
            let error = json!({"code": -32603, "message": message});
            Json(json!({"jsonrpc": "2.0", "id": id, "error": error})).into_response()
        }
    }
}

/// One round of a confirmation as the real server does it at the API: the same call, the
/// answer in the server's shape. The refund's ID rides in the state, as long as a sealed one.
async fn upstream(api: &ShopApi, tool: &str, params: &Value) -> Result<Value, String> {
    let arguments = &params["arguments"];
    let failed = |error: shop_api::ApiError| error.to_string();
    if tool == "quote_refund" {
        let request: QuoteRequest = serde_json::from_value(arguments.clone()).map_err(|e| e.to_string())?;
        let quote = api.create_quote(&request).await.map_err(failed)?;
        return Ok(complete(serde_json::to_value(quote).map_err(|e| e.to_string())?));
    }
    if let Some(state) = params["requestState"].as_str() {
        let refund_id =
            state.rsplit('.').next().and_then(|id| RefundId::parse(id).ok()).ok_or("no refund in the state")?;
        let says_no = params["inputResponses"]["confirm"]["content"]["release"] == json!(false);
        let decided = api
            .decide(&refund_id, if says_no { "cancel" } else { "confirm" }, Some(&shop_api::Party::host_user("lead")))
            .await
            .map_err(failed)?;
        return Ok(complete(serde_json::to_value(decided).map_err(|e| e.to_string())?));
    }
    let quote_id = arguments["quote_id"].as_str().and_then(|id| QuoteId::parse(id).ok()).ok_or("no quote_id")?;
    let held = api.create_refund(&quote_id).await.map_err(failed)?;
    Ok(asks(&format!("{}.{}", &SEALED[..SEALED.len() - held.refund_id.as_str().len() - 1], held.refund_id)))
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

/// A state the server sealed, as long as the server's are.
const SEALED: &str = "v1.pT17R_30ITjqZIEKI8AdUD7K4hC_0gF2KN155iv8AQLDEWMUbXCB7kxSoiKeoXw2zolFOrRldVnS_AeIsayw2tvE7\
                      PGcj_LasukpWESUPHc4F4e_uj-qMxBTMemcAktRZxQrtqBao_PGDy3kGzJ3GmM642MGnvFhsepyoPPwHKkwP-f38HaBO\
                      pIx3AZNsglDnkGjkZ89yKEGHxboxlGzq-LL4Ncxe5-SF7FKWQZGiyYZ-xDy";

fn asks(state: &str) -> Value {
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
        "requestState": state,
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
