//! What the upstreams serve beside their tools, passed through as they serve it: prompts,
//! resources and resource templates (listed together, in the policy's order), a prompt got,
//! a resource read and an argument completed at the upstream that serves it. A policy holds
//! tool calls alone: a prompt or a resource changes nothing in the world, and a host shows
//! them to its person rather than acting on them.
//!
//! A host may ask for a resource's updates (a 2025 `resources/subscribe`, or a 2026-07-28
//! `subscriptions/listen` that names it) where the upstream serving it tells them: the gate
//! asks that upstream once, and relays each update to the hosts that asked.
//!
//! A name or URI two upstreams serve is served from the first, in the policy's order (as a
//! tool's is). A resource the lists do not name (one a template makes, or one a tool's result
//! linked to) is read at the first upstream with a template it fits, else at the first that
//! serves resources; an upstream that does not have it says so, and that answer passes on.

use rmcp::{
    ErrorData,
    model::{
        CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse, Prompt,
        ReadResourceRequestParams, ReadResourceResponse, Reference, Resource, ResourceTemplate, ServerCapabilities,
    },
};

use crate::{upstream::connection::Connection, upstream::watched::Watching};

/// What the gate serves beside tools: what any of its upstreams does.
pub fn capabilities(connections: &[Connection], mut capabilities: ServerCapabilities) -> ServerCapabilities {
    for served in connections.iter().map(Connection::capabilities) {
        if served.prompts.is_some() {
            let prompts = capabilities.prompts.get_or_insert_with(Default::default);
            prompts.list_changed = Some(true);
        }
        if let Some(served) = &served.resources {
            let resources = capabilities.resources.get_or_insert_with(Default::default);
            resources.list_changed = Some(true);
            if served.subscribe == Some(true) {
                resources.subscribe = Some(true);
            }
        }
        if served.completions.is_some() {
            capabilities.completions.get_or_insert_with(Default::default);
        }
    }
    capabilities
}

/// Every upstream's prompts, in the policy's order; a name served twice, from the first.
pub async fn prompts(connections: &[Connection]) -> Vec<Prompt> {
    merged(connections, Connection::prompts, |prompt| prompt.name.clone()).await
}

/// Every upstream's resources, in the policy's order; a URI served twice, from the first.
pub async fn resources(connections: &[Connection]) -> Vec<Resource> {
    merged(connections, Connection::resources, |resource| resource.uri.clone()).await
}

/// Every upstream's resource templates, in the policy's order.
pub async fn resource_templates(connections: &[Connection]) -> Vec<ResourceTemplate> {
    merged(connections, Connection::resource_templates, |template| template.uri_template.clone()).await
}

/// What each upstream lists, in the policy's order, an item whose `key` an earlier one has left
/// out.
async fn merged<T>(
    connections: &[Connection],
    list: impl AsyncFn(&Connection) -> Vec<T>,
    key: impl Fn(&T) -> String,
) -> Vec<T> {
    let mut listed: Vec<T> = Vec::new();
    for connection in connections {
        for item in list(connection).await {
            if listed.iter().all(|seen| key(seen) != key(&item)) {
                listed.push(item);
            }
        }
    }
    listed
}

/// The prompt `params` names, got at the first upstream that lists it.
pub async fn get_prompt(
    connections: &[Connection],
    params: GetPromptRequestParams,
) -> Result<GetPromptResponse, ErrorData> {
    match serving_prompt(connections, &params.name).await {
        Some(connection) => connection.get_prompt(params).await,
        None => Err(ErrorData::invalid_params(format!("no prompt named {}", params.name), None)),
    }
}

/// The resource `params` names, read where it is served ([`serving_resource`]).
pub async fn read_resource(
    connections: &[Connection],
    params: ReadResourceRequestParams,
) -> Result<ReadResourceResponse, ErrorData> {
    match serving_resource(connections, &params.uri).await {
        Some(connection) => connection.read_resource(params).await,
        None => Err(ErrorData::resource_not_found(format!("no resource {}", params.uri), None)),
    }
}

/// A hold on the updates of the resource `uri`, asked of the upstream that lists it, or has a
/// template it fits, until the last hold is let go ([`crate::upstream::watched`]); they go to the hosts
/// that asked for them ([`crate::upstream::relay`]). A resource neither names is
/// refused, never asked of an upstream at a guess: a made-up one would fill its watched set, or
/// have it refuse the stream that names it.
pub async fn watch(connections: &[Connection], uri: &str) -> Result<Watching, ErrorData> {
    match named_resource(connections, uri).await {
        Some(connection) => connection.watch(uri).await,
        None => Err(ErrorData::resource_not_found(format!("no resource {uri}"), None)),
    }
}

/// An argument of the prompt or resource template `params` refers to, completed where it is
/// served.
pub async fn complete(connections: &[Connection], params: CompleteRequestParams) -> Result<CompleteResult, ErrorData> {
    let serving = match &params.r#ref {
        Reference::Prompt(prompt) => serving_prompt(connections, &prompt.name).await,
        Reference::Resource(template) => serving_template(connections, &template.uri).await,
        // A kind of reference this gate does not know: nobody here serves it.
        _ => None,
    };
    match serving {
        Some(connection) if connection.capabilities().completions.is_some() => connection.complete(params).await,
        // Nothing to offer is an empty completion, as a server without any gives.
        _ => Ok(CompleteResult::default()),
    }
}

async fn serving_prompt<'c>(connections: &'c [Connection], name: &str) -> Option<&'c Connection> {
    for connection in connections {
        if connection.prompts().await.iter().any(|prompt| prompt.name == name) {
            return Some(connection);
        }
    }
    None
}

async fn serving_template<'c>(connections: &'c [Connection], uri_template: &str) -> Option<&'c Connection> {
    for connection in connections {
        if connection.resource_templates().await.iter().any(|template| template.uri_template == uri_template) {
            return Some(connection);
        }
    }
    None
}

/// Where `uri` is read: the first upstream that lists it, else the first with a template it
/// fits ([`named_resource`]), else the first that serves resources at all.
async fn serving_resource<'c>(connections: &'c [Connection], uri: &str) -> Option<&'c Connection> {
    match named_resource(connections, uri).await {
        Some(connection) => Some(connection),
        None => connections.iter().find(|connection| connection.capabilities().resources.is_some()),
    }
}

/// The first upstream that lists `uri`, else the first with a template it fits.
async fn named_resource<'c>(connections: &'c [Connection], uri: &str) -> Option<&'c Connection> {
    for connection in connections {
        if connection.resources().await.iter().any(|resource| resource.uri == uri) {
            return Some(connection);
        }
    }
    for connection in connections {
        if connection.resource_templates().await.iter().any(|template| fits(&template.uri_template, uri)) {
            return Some(connection);
        }
    }
    None
}

/// Whether `uri` could have been made by `template` (RFC 6570): its literal parts, in order,
/// with something between them where the template has an expression.
fn fits(template: &str, uri: &str) -> bool {
    // The literal parts: before the first expression, then after each one.
    let literals: Vec<&str> = template
        .split('{')
        .enumerate()
        .map(|(at, part)| if at == 0 { part } else { part.split_once('}').map_or(part, |(_, literal)| literal) })
        .collect();
    let Some((first, after_first)) = literals.split_first() else { return false };
    let Some(mut rest) = uri.strip_prefix(first) else { return false };
    let Some((last, between)) = after_first.split_last() else { return rest.is_empty() };
    for literal in between.iter().filter(|literal| !literal.is_empty()) {
        match rest.find(literal) {
            Some(at) => rest = &rest[at + literal.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::fits;

    #[test]
    fn a_uri_fits_a_template_by_its_literal_parts_in_order() {
        assert!(fits("demo://resource/dynamic/text/{index}", "demo://resource/dynamic/text/7"));
        assert!(fits("file:///{path}/notes/{name}.md", "file:///srv/a/notes/b.md"));
        assert!(!fits("demo://resource/dynamic/text/{index}", "demo://resource/dynamic/blob/7"));
        assert!(!fits("file:///{path}/notes/{name}.md", "file:///srv/a/notes/b.txt"));
        assert!(fits("demo://static", "demo://static"));
        assert!(!fits("demo://static", "demo://static/more"));
        assert!(!fits("file:///{path}.md", "file:///a.md.bak"));
        assert!(fits("file:///{path}.md", "file:///a.md.b.md"));
    }
}
