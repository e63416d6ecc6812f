//! A call as the policy sees it: what its rules' names and conditions are judged on.

/// A call as a rule sees it: which upstream it goes to, the tool, the tool's annotations as its
/// upstream lists them (`Null` for none), and the arguments.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The upstream's name, as the policy names it.
    pub upstream: &'a str,
    /// The tool's name.
    pub tool: &'a str,
    /// The tool's `annotations` object from the upstream's `tools/list`, or `Null`.
    pub annotations: &'a serde_json::Value,
    /// The call's `arguments`, as the host sent them.
    pub arguments: &'a serde_json::Value,
}

/// `tool`'s `annotations` as a rule reads them: the object its upstream lists, or `Null`.
pub fn annotations(tool: &rmcp::model::Tool) -> serde_json::Value {
    tool.annotations.as_ref().and_then(|annotations| serde_json::to_value(annotations).ok()).unwrap_or_default()
}
