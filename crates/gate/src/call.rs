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
