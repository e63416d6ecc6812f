//! What each request needs, as the server decides it, and scope hierarchies.

/// A server's scopes: which a request needs, and which imply others.
pub trait ScopePolicy: Send + Sync + 'static {
    /// Every scope the server knows, for the resource metadata's `scopes_supported`.
    fn supported(&self) -> Vec<String>;

    /// The scopes a request needs, from its JSON-RPC method and target (a tool's name for
    /// `tools/call`). Empty: any valid token will do.
    fn needed(&self, method: &str, target: Option<&str>) -> Vec<String>;

    /// The scopes a refusal for want of [`ScopePolicy::needed`] names for the client to ask
    /// for: by default the needed ones; a policy may name scopes that imply them, when those
    /// are what the request needs to finish the way callers expect (a lead's scope, say, for a
    /// call a lead's own answer completes).
    fn to_ask(&self, method: &str, target: Option<&str>) -> Vec<String> {
        self.needed(method, target)
    }

    /// The scopes that `held` implies, itself included (a lead's `refunds:write` implies
    /// `orders:read`, say). By default each scope implies only itself.
    fn implied(&self, held: &str) -> Vec<String> {
        vec![held.to_owned()]
    }

    /// The scope a client should ask for when it has no token at all.
    fn first_ask(&self) -> Vec<String> {
        self.supported()
    }
}

/// The scopes of `needed` that `held` does not grant, hierarchies counted.
pub fn missing(policy: &dyn ScopePolicy, held: &[String], needed: &[String]) -> Vec<String> {
    let granted: Vec<String> = held.iter().flat_map(|scope| policy.implied(scope)).collect();
    needed.iter().filter(|scope| !granted.contains(scope)).cloned().collect()
}
