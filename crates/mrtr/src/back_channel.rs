//! The old way to ask: a server-initiated `elicitation/create`, and how it fails today.
//!
//! Before 2026-07-28 a tool sent its own request to the client and waited. On a 2026-07-28
//! connection there is no channel from server to client in the middle of a call; rmcp refuses
//! the request before anything is sent. This module words that refusal as the Python SDK's
//! `NoBackChannelError` does, so a host sees the same -32600 from either SDK.

use rmcp::{
    ErrorData, RoleServer, ServiceError,
    model::{ElicitRequestParams, ElicitResult, ErrorCode},
    service::Peer,
};

/// -32600 for a server-to-client request that this transport context cannot carry.
pub fn no_back_channel(method: &str) -> ErrorData {
    ErrorData::invalid_request(
        format!("Cannot send '{method}': this transport context has no back-channel for server-initiated requests."),
        None,
    )
}

/// Send `elicitation/create` to the client and wait for the answer: the pre-2026 way.
/// On a 2026-07-28 connection this fails with [`no_back_channel`] and nobody is asked.
pub async fn elicit_and_wait(peer: &Peer<RoleServer>, params: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
    match peer.create_elicitation(params).await {
        Ok(result) => Ok(result),
        Err(ServiceError::McpError(error)) if error.code == ErrorCode::INVALID_REQUEST => {
            Err(no_back_channel("elicitation/create"))
        }
        Err(ServiceError::McpError(error)) => Err(error),
        Err(other) => Err(ErrorData::internal_error(format!("elicitation/create failed: {other}"), None)),
    }
}
