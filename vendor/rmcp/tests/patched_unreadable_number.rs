//! PATCHED (fernhill), change 10: a well-formed request holding a value serde_json cannot read
//! (a number out of `f64`'s range, `1e400`; a lone surrogate, `"\ud800"`) is answered -32602
//! under its id, and the stream goes on; input that is no JSON-RPC request stays unanswered,
//! as before (#938).

use rmcp::{
    RoleServer,
    transport::{Transport, async_rw::AsyncRwTransport},
};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::test]
async fn a_request_with_a_value_serde_cannot_read_is_answered_invalid_params_under_its_id() {
    let (mut client_writes, server_reads) = tokio::io::duplex(64 * 1024);
    let (server_writes, client_reads) = tokio::io::duplex(64 * 1024);
    let mut transport = AsyncRwTransport::<RoleServer, _, _>::new(server_reads, server_writes);
    // serde_json with `arbitrary_precision` (as rmcp's own tests build it) holds `1e400` as its
    // text; without it (as most of rmcp's users build it) it cannot.
    let out_of_range = serde_json::from_str::<serde_json::Value>("1e400").is_err();
    let lines = [
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pay","arguments":{"memo":"\ud800"}}}"#,
        r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"pay","arguments":{"amount":1e400}}}"#,
        // Unparsable, and a notification holding one: no id to answer, left unanswered.
        r#"{"jsonrpc":"2.0","id":8,"method":"#,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"\ud800","progress":1}}"#,
        r#"{"jsonrpc":"2.0","id":"s-9","method":"ping"}"#,
    ];
    for line in lines {
        client_writes
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }
    let mut next =
        serde_json::to_value(transport.receive().await.expect("the stream goes on")).unwrap();
    if !out_of_range {
        assert_eq!(next["id"], 10, "{next}");
        next =
            serde_json::to_value(transport.receive().await.expect("the stream goes on")).unwrap();
    }
    assert_eq!(
        (next["id"].as_str(), next["method"].as_str()),
        (Some("s-9"), Some("ping"))
    );
    drop(transport);
    let mut answers = BufReader::new(client_reads).lines();
    let mut answered = Vec::new();
    while let Some(line) = answers.next_line().await.unwrap() {
        let answer: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("the request's params cannot be read"),
            "{answer}"
        );
        answered.push(answer["id"].clone());
    }
    let expected: Vec<serde_json::Value> = if out_of_range {
        vec![7.into(), 10.into()]
    } else {
        vec![7.into()]
    };
    assert_eq!(answered, expected, "nothing else is answered");
}
