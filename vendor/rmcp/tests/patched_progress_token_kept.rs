#![cfg(not(feature = "local"))]
//! PATCHED (fernhill, change 8 in PATCHED.md): a progress token the caller put in a request's
//! `_meta` is the one sent; a request that carries none gets one made for it, as before.
use rmcp::{
    model::{CallToolRequestParams, NumberOrString, ProgressToken, RequestMetaObject},
    service::serve_directly,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::test]
async fn a_progress_token_the_caller_put_is_sent_and_one_is_made_where_none_was() {
    let (ours, theirs) = tokio::io::duplex(4096);
    let client = serve_directly((), ours, None);
    let (read, mut write) = tokio::io::split(theirs);
    let mut lines = BufReader::new(read).lines();
    let mut own = CallToolRequestParams::new("slow");
    let mut meta = RequestMetaObject::new();
    meta.set_progress_token(ProgressToken(NumberOrString::String("host-7".into())));
    own.meta = Some(meta);
    let mut sent = Vec::new();
    for params in [own, CallToolRequestParams::new("slow")] {
        let peer = client.peer().clone();
        let call = tokio::spawn(async move { peer.call_tool(params).await });
        let line = lines.next_line().await.unwrap().unwrap();
        let request: Value = serde_json::from_str(&line).unwrap();
        let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"content": []}});
        write.write_all(format!("{answer}\n").as_bytes()).await.unwrap();
        call.await.unwrap().unwrap();
        sent.push(request["params"]["_meta"]["progressToken"].clone());
    }
    assert_eq!(sent[0], "host-7", "the caller's token was replaced");
    assert!(sent[1].is_number(), "a request without a token gets one made: {}", sent[1]);
    client.cancel().await.unwrap();
}
