//! What each upstream offers, beside the rules that hold its tools: what `fernhill-gate check`
//! shows before anything is served.
//!
//! Each upstream is asked for its tools as a host would ask, through an MCP client of either
//! era (a 2026-07-28 `server/discover`, falling back to the 2025 `initialize` handshake), started
//! as a command or reached at its URL.

use std::{fmt::Write as _, time::Duration};

use mrtr::client::{Client, ScriptedUser, modern_or_legacy};
use rmcp::model::Tool;

use crate::{
    policy::{Policy, Reached, Upstream},
    upstream::command::{Command, Stderr},
};

/// One upstream's tools, or why they could not be listed.
#[derive(Debug)]
pub struct Listed {
    /// The upstream's name.
    pub upstream: String,
    /// Its tools, or why it did not list them.
    pub tools: Result<Vec<Tool>, String>,
}

/// What `check` prints: each upstream's tools, each with the rules that name it.
pub struct Inventory {
    shown: String,
    listed_all: bool,
}

impl Inventory {
    /// Whether every upstream listed its tools.
    pub fn listed_all(&self) -> bool {
        self.listed_all
    }
}

impl std::fmt::Display for Inventory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl Policy {
    /// What `check` prints: each upstream asked for its tools (each within `within`), each
    /// tool with the rules that name it.
    pub async fn inventory(&self, within: Duration) -> Inventory {
        let listed = list_all(self, within).await;
        Inventory { shown: render(self, &listed), listed_all: listed.iter().all(|listed| listed.tools.is_ok()) }
    }
}

/// Every upstream of `policy`, asked for its tools, each within `within`.
async fn list_all(policy: &Policy, within: Duration) -> Vec<Listed> {
    let mut listed = Vec::new();
    for upstream in &policy.upstreams {
        let tools = match tokio::time::timeout(within, list(upstream)).await {
            Ok(tools) => tools,
            Err(_) => Err(format!("no list of tools within {} s", within.as_secs_f64())),
        };
        listed.push(Listed { upstream: upstream.name.clone(), tools });
    }
    listed
}

/// `upstream`'s tools, as it lists them to a host that cannot ask its person anything.
pub async fn list(upstream: &Upstream) -> Result<Vec<Tool>, String> {
    let user = ScriptedUser::unable_to_ask();
    let (client, command) = match &upstream.reached {
        Reached::Command(argv) => {
            // The upstream's own log is its own: not mixed into what check prints.
            let mut command = Command::start(argv, Stderr::Kept)?;
            let transport = command.transport().ok_or("no transport")?;
            let connected = Client::connect_with(user, transport, modern_or_legacy()).await;
            match connected {
                Ok(client) => (client, Some(command)),
                Err(error) => {
                    return Err(match command.ended().await {
                        Some(ended) => format!("no connection: {ended}"),
                        None => format!("no connection: {}", error.in_words()),
                    });
                }
            }
        }
        Reached::Url(url) => {
            let client = Client::connect_http_either(user, url, 1)
                .await
                .map_err(|error| format!("no connection: {}", error.in_words()))?;
            (client, None)
        }
    };
    let tools = client.peer().list_all_tools().await.map_err(|error| format!("tools/list: {error}"));
    let _ = client.close().await;
    // Stopped on its own time: the wait for it to exit is not the upstream's time to list.
    if let Some(command) = command {
        tokio::spawn(command.stop());
    }
    tools
}

/// What `check` prints: each upstream's tools, each with the rules that name it (first the one
/// that holds its calls, with its condition), and each rule that names no tool listed.
fn render(policy: &Policy, listed: &[Listed]) -> String {
    let mut out = String::new();
    let plural = |count: usize, one: &str| if count == 1 { format!("1 {one}") } else { format!("{count} {one}s") };
    let _ = writeln!(
        out,
        "{}: {}, {}",
        policy.path.display(),
        plural(policy.upstreams.len(), "upstream"),
        plural(policy.rules.len(), "rule")
    );
    let mut named_somewhere = vec![false; policy.rules.len()];
    // Each tool's name is served by one upstream, as the gate claims them at start
    // (`Policy::claimant`).
    let listing = |name: &str| -> Vec<&str> {
        listed
            .iter()
            .filter(|listed| listed.tools.iter().flatten().any(|tool| tool.name == name))
            .map(|listed| listed.upstream.as_str())
            .collect()
    };
    for listed in listed {
        let Some(upstream) = policy.upstream(&listed.upstream) else { continue };
        let trusted = if upstream.trust_annotations { ", annotations trusted" } else { "" };
        let tools = match &listed.tools {
            Ok(tools) => tools,
            Err(why) => {
                let _ = writeln!(out, "\nupstream {}: not listed: {why}", upstream.name);
                continue;
            }
        };
        let _ = writeln!(
            out,
            "\nupstream {} ({}{trusted}): {}",
            upstream.name,
            reached(upstream),
            plural(tools.len(), "tool")
        );
        let width = tools.iter().map(|tool| tool.name.len()).max().unwrap_or(0);
        for tool in tools {
            let claimant = policy.claimant(&tool.name, listing(&tool.name).into_iter());
            if let Some(other) = claimant.filter(|other| *other != upstream.name) {
                let _ = writeln!(
                    out,
                    "  {:width$}  not served: upstream {other} serves a tool of this name (a tool's name is one \
                     upstream's)",
                    tool.name
                );
                continue;
            }
            let annotations = crate::policy::call::annotations(tool);
            let rules = policy.naming(&upstream.name, &tool.name, &annotations);
            let held = match rules.as_slice() {
                [] => "passes".to_owned(),
                rules => rules
                    .iter()
                    .map(|rule| {
                        if let Some(index) = policy.rules.iter().position(|each| std::ptr::eq(each, *rule)) {
                            named_somewhere[index] = true;
                        }
                        match &rule.when {
                            Some(when) => format!("held by \"{}\" when {when}", rule.name),
                            None => format!("held by \"{}\"", rule.name),
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("; else "),
            };
            let _ = writeln!(out, "  {:width$}  {held}", tool.name);
        }
    }
    // A rule that names no tool is a mistake worth a word, where every upstream was listed.
    let all_listed = listed.iter().all(|listed| listed.tools.is_ok());
    for (rule, named) in policy.rules.iter().zip(named_somewhere) {
        if all_listed && !named {
            let _ = writeln!(
                out,
                "\nwarning: rule \"{}\" (line {}) names no tool any upstream listed",
                rule.name, rule.line
            );
        }
    }
    out
}

fn reached(upstream: &Upstream) -> String {
    match &upstream.reached {
        Reached::Command(argv) => argv.join(" "),
        Reached::Url(url) => url.clone(),
    }
}

#[cfg(test)]
mod tests {
    use std::{path::Path, sync::Arc};

    use rmcp::model::ToolAnnotations;

    use super::*;

    fn tool(name: &str, annotations: Option<ToolAnnotations>) -> Tool {
        let mut tool = Tool::new(name.to_owned(), "a tool", Arc::new(serde_json::Map::new()));
        tool.annotations = annotations;
        tool
    }

    #[test]
    fn each_tool_is_shown_with_the_rules_that_hold_it_and_an_idle_rule_is_named() {
        let policy = Policy::parse(
            Path::new("gate.toml"),
            r#"
[[upstream]]
name = "files"
command = ["fs", "/srv"]
trust_annotations = true

[[upstream]]
name = "other"
url = "http://127.0.0.1:9/mcp"

[[rule]]
name = "prices"
tools = ["write_*"]
when = 'args.path.startsWith("/srv/prices")'
decided_by = { scope = "s" }
deadline = "1h"

[[rule]]
name = "destructive"
upstream = "files"
tools = ["*"]
annotations = ["destructiveHint"]
decided_by = { scope = "s" }
deadline = "1h"

[[rule]]
name = "never"
tools = ["drop_*"]
decided_by = { scope = "s" }
deadline = "1h"
"#,
        )
        .unwrap();
        let read_only = ToolAnnotations::new().read_only(true);
        let listed = [
            Listed {
                upstream: "files".into(),
                tools: Ok(vec![tool("read_file", Some(read_only)), tool("write_file", None), tool("move_file", None)]),
            },
            Listed { upstream: "other".into(), tools: Ok(vec![]) },
        ];
        let shown = render(&policy, &listed);
        let expected = "gate.toml: 2 upstreams, 3 rules\n\
                        \nupstream files (fs /srv, annotations trusted): 3 tools\n\
                        \x20 read_file   passes\n\
                        \x20 write_file  held by \"prices\" when args.path.startsWith(\"/srv/prices\"); else held by \"destructive\"\n\
                        \x20 move_file   held by \"destructive\"\n\
                        \nupstream other (http://127.0.0.1:9/mcp): 0 tools\n\
                        \nwarning: rule \"never\" (line 26) names no tool any upstream listed\n";
        assert_eq!(shown, expected);
        // An upstream that did not list its tools is said so, and no rule is called idle for it.
        let failed = [Listed { upstream: "files".into(), tools: Err("no connection".into()) }];
        let shown = render(&policy, &failed);
        assert!(shown.contains("upstream files: not listed: no connection") && !shown.contains("warning"), "{shown}");
    }
}
