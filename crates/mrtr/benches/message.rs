//! What reading one message costs as rmcp's derived decoding reads it, beside the same bytes
//! read as a `serde_json::Value` and as the one type they hold: a `tools/call` request
//! (`ClientJsonRpcMessage`: a stdio server's reading; over HTTP the fork's change 7 reads a plain
//! request by its method), and a tool's complete result as a client reads it
//! (`ServerJsonRpcMessage`). The difference is rmcp's untagged layers: a message's shape, then
//! its request or result tried variant by variant, each over serde's buffer of the whole.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::model::{
    CallToolResult, ClientJsonRpcMessage, ClientRequest, JsonRpcRequest, JsonRpcResponse, ServerJsonRpcMessage,
};

/// The shop's `quote_refund` call as a 2026-07-28 client sends it.
const REQUEST: &str = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"quote_refund","arguments":{"order_id":"O-100001","skus":["GG-0412"],"include_shipping":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"fernhill-load","version":"0.1.0"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}}}"#;

/// Its answer: the quote as text and as structured content.
const RESULT: &str = r#"{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","content":[{"type":"text","text":"{\"quote_id\":\"Q-1\",\"order_id\":\"O-2289\",\"skus\":[\"GG-0412\"],\"includes_shipping\":true,\"amount\":\"180.00\",\"currency\":\"EUR\",\"needs_confirmation\":true}"}],"structuredContent":{"quote_id":"Q-1","order_id":"O-2289","skus":["GG-0412"],"includes_shipping":true,"amount":"180.00","currency":"EUR","needs_confirmation":true},"isError":false}}"#;

/// Read `text` as `T` (named `as_what`) again and again.
fn read<T: serde::de::DeserializeOwned>(c: &mut Criterion, text: &'static str, what: &str, as_what: &str) {
    c.bench_function(&format!("{what} as {as_what}"), |b| {
        b.iter(|| serde_json::from_str::<T>(black_box(text)).unwrap())
    });
}

fn messages(c: &mut Criterion) {
    let request = "tools/call request";
    read::<ClientJsonRpcMessage>(c, REQUEST, request, "ClientJsonRpcMessage");
    read::<JsonRpcRequest<ClientRequest>>(c, REQUEST, request, "JsonRpcRequest<ClientRequest>");
    read::<serde_json::Value>(c, REQUEST, request, "serde_json::Value");
    let result = "tool result";
    read::<ServerJsonRpcMessage>(c, RESULT, result, "ServerJsonRpcMessage");
    read::<JsonRpcResponse<CallToolResult>>(c, RESULT, result, "JsonRpcResponse<CallToolResult>");
    read::<serde_json::Value>(c, RESULT, result, "serde_json::Value");
}

criterion_group!(benches, messages);
criterion_main!(benches);
