//! Checks of what a client declared it can do, made before a question is asked.
//!
//! At 2026-07-28 every request carries the client's capabilities. A server "MUST NOT send an
//! inputRequests that the client has not declared support for"; when it cannot ask, it answers
//! -32021 with `data.requiredCapabilities` naming what is missing. `elicitation: {}` declares
//! form mode only; URL mode needs `url`.

use rmcp::{
    ErrorData,
    model::{ClientCapabilities, ElicitationCapability, FormElicitationCapability, UrlElicitationCapability},
};

/// The two ways to put a question to a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElicitationMode {
    /// A form: the client shows a flat form, and an accepted answer carries its values.
    Form,
    /// A page: the client sends the person to a URL, outside the MCP client; an accepted
    /// answer says only that the person agreed to open it.
    Url,
}

impl ElicitationMode {
    /// The mode's name as the `elicitation` capability spells it: `form` or `url`.
    pub fn as_str(self) -> &'static str {
        match self {
            ElicitationMode::Form => "form",
            ElicitationMode::Url => "url",
        }
    }
}

/// Whether `capabilities` let a server ask in `mode`.
pub fn can_elicit(capabilities: Option<&ClientCapabilities>, mode: ElicitationMode) -> bool {
    let Some(elicitation) = capabilities.and_then(|c| c.elicitation.as_ref()) else {
        return false;
    };
    match mode {
        // A bare `elicitation: {}` means form; a URL-only declaration does not.
        ElicitationMode::Form => elicitation.form.is_some() || elicitation.url.is_none(),
        ElicitationMode::Url => elicitation.url.is_some(),
    }
}

/// -32021 unless `capabilities` let a server ask in `mode`.
pub fn require_elicitation(capabilities: Option<&ClientCapabilities>, mode: ElicitationMode) -> Result<(), ErrorData> {
    if can_elicit(capabilities, mode) {
        return Ok(());
    }
    let wanted = match mode {
        ElicitationMode::Form => ElicitationCapability::new().with_form(FormElicitationCapability::new()),
        ElicitationMode::Url => ElicitationCapability::new().with_url(UrlElicitationCapability::new()),
    };
    let mut required = ClientCapabilities::default();
    required.elicitation = Some(wanted);
    let mut error = ErrorData::missing_required_client_capability(required);
    error.message =
        format!("Client did not declare the {} elicitation capability this tool needs", mode.as_str()).into();
    Err(error)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn caps(value: serde_json::Value) -> ClientCapabilities {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn reads_the_modes_as_the_spec_does() {
        use ElicitationMode::*;
        assert!(can_elicit(Some(&caps(json!({"elicitation": {}}))), Form));
        assert!(!can_elicit(Some(&caps(json!({"elicitation": {}}))), Url));
        assert!(can_elicit(Some(&caps(json!({"elicitation": {"form": {}, "url": {}}}))), Url));
        assert!(!can_elicit(Some(&caps(json!({"elicitation": {"url": {}}}))), Form));
        assert!(!can_elicit(Some(&caps(json!({}))), Form));
        assert!(!can_elicit(None, Form));
    }

    #[test]
    fn names_the_missing_mode() {
        let error = require_elicitation(Some(&caps(json!({}))), ElicitationMode::Form).unwrap_err();
        assert_eq!(error.code.0, -32021);
        assert_eq!(error.data.unwrap(), json!({"requiredCapabilities": {"elicitation": {"form": {}}}}));
    }
}
