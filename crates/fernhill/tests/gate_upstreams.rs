//! The gate in front of an MCP server nobody here wrote (heavy tier: Node and npm): the
//! reference filesystem server and the everything server, started by the gate over stdio as
//! the policy says, called through `fernhill-gate serve` by hosts of both eras. Writes under the path a rule holds
//! never happen until another person approves them, at their own host or on the approval page
//! signed in at a real issuer (oidc-provider); then the write happens once, and every other
//! call passes and does what the server does. And the Python reference shop (mcp 2.3.0), whose
//! questions pass through the gate, and whose held refund reaches it once approved.

mod support;

use std::path::PathBuf;

use mrtr::client::{Answer, Client, ScriptedUser, legacy, modern};
use serde_json::{Value, json};

const FILESYSTEM_SERVER: &str = "@modelcontextprotocol/server-filesystem@2026.8.31";
const EVERYTHING_SERVER: &str = "@modelcontextprotocol/server-everything@2026.8.31";

/// The reference filesystem server, installed, serving a new folder with `prices` and `notes`
/// in it, behind a policy whose rule "price lists" holds `rule` (its tools, who decides, where)
/// for writes under `prices`. The folder (kept while it lives), its path, and the policy's.
fn price_lists(rule: &str) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let node = support::npm("gate-upstreams", &[FILESYSTEM_SERVER], &[]);
    let server = node.join("node_modules/.bin/mcp-server-filesystem");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("prices")).unwrap();
    std::fs::create_dir_all(root.join("notes")).unwrap();
    let prices = root.join("prices").display().to_string();
    let policy = root.join("gate.toml");
    let upstream = format!("[[upstream]]\nname = \"files\"\ncommand = [{server:?}, {root:?}]\n");
    let rule = format!(
        "[[rule]]\nname = \"price lists\"\nupstream = \"files\"\nwhen = 'args.path.startsWith(\"{prices}\")'\n\
         deadline = \"72h\"\n{rule}"
    );
    std::fs::write(&policy, format!("{upstream}\n{rule}")).unwrap();
    (dir, root, policy)
}

/// Alice's 2026-07-28 host at the gate at `url`, with a token from `issuer` that lets her read
/// orders alone (she can answer no question).
async fn alice_over_http(issuer: &str, url: &str) -> Client<ScriptedUser> {
    let token = support::sign_in::person_token(issuer, "alice", url, "orders:read").await;
    let config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
    Client::connect_with(ScriptedUser::unable_to_ask(), transport, modern()).await.unwrap()
}

#[tokio::test]
async fn a_held_write_happens_only_once_another_person_approved_it_and_then_once_and_every_other_call_passes() {
    let (_dir, root, policy) = price_lists(
        "tools = [\"write_file\", \"edit_file\", \"move_file\"]\ndecided_by = { role = \"pricing\" }\n\n\
         [people]\nlee = { roles = [\"pricing\"] }\n",
    );

    for (era, lifecycle) in [("2026-07-28", modern()), ("2025-11-25", legacy())] {
        let alice = [("USER", "alice")];
        let client = support::through_the_gate(&policy, &alice, ScriptedUser::unable_to_ask(), lifecycle).await;
        let tools = client.peer().list_all_tools().await.unwrap();
        assert!(tools.iter().any(|tool| tool.name == "write_file"), "{era}: {tools:?}");

        let note = root.join("notes").join(format!("{era}.txt"));
        let written = client
            .call_tool("write_file", json!({"path": note, "content": format!("written at {era}")}))
            .await
            .unwrap();
        assert_ne!(written.is_error, Some(true), "{era}: {written:?}");
        assert_eq!(std::fs::read_to_string(&note).unwrap(), format!("written at {era}"));
        let listed = client.call_tool("list_directory", json!({"path": root.join("notes")})).await.unwrap();
        assert!(mrtr::client::text(&listed).contains(&format!("{era}.txt")), "{era}: {listed:?}");

        let prices = root.join("prices").join(format!("{era}.csv"));
        let held = client.call_tool("write_file", json!({"path": prices, "content": "KG-1043,0.01"})).await.unwrap();
        assert_eq!(held.is_error, Some(true), "{era}: {held:?}");
        assert!(
            mrtr::client::text(&held).contains("write_file has not run: it ")
                && mrtr::client::text(&held).contains("for a person's decision (approval H-"),
            "{era}: {held:?}"
        );
        assert!(!prices.exists(), "{era}: the held write did not happen");

        // Lee approves it at their own host; alice's next call writes it, once.
        let approval = held.meta.as_ref().unwrap()[gate::HELD_META]["approval"].as_str().unwrap().to_owned();
        let lead = ScriptedUser::always(mrtr::client::Answer::accept(json!({"run": true})));
        let lee = support::through_the_gate(&policy, &[("USER", "lee")], lead.clone(), legacy()).await;
        let approved = lee.call_tool("review_approvals", json!({"approval": approval})).await.unwrap();
        assert!(mrtr::client::text(&approved).starts_with("Approved: write_file runs once"), "{era}: {approved:?}");
        lee.close().await.unwrap();
        assert!(!prices.exists(), "{era}: approving did not write it");
        let write = || client.call_tool("write_file", json!({"path": prices, "content": "KG-1043,0.01"}));
        let ran = write().await.unwrap();
        assert_ne!(ran.is_error, Some(true), "{era}: {ran:?}");
        assert_eq!(std::fs::read_to_string(&prices).unwrap(), "KG-1043,0.01", "{era}");
        // Changed since, by hand: the same call again gets the kept result and writes nothing.
        std::fs::write(&prices, "KG-1043,12.50").unwrap();
        let kept = write().await.unwrap();
        assert_eq!(kept.meta.as_ref().unwrap()[gate::HELD_META]["state"], "ran", "{era}: {kept:?}");
        assert_eq!(std::fs::read_to_string(&prices).unwrap(), "KG-1043,12.50", "{era}: not written twice");
        client.close().await.unwrap();
    }
}

/// The five-minute start's call, over Streamable HTTP: alice's write under `prices` is held; the
/// link she is given (and the webhook announces) is the approval page's, where alice herself,
/// signed in, is refused her own call; lee signs in there at the issuer, sees the call with its
/// arguments, and lets it run; alice's next call writes it once, and the page's receipt
/// verifies offline against the keys the gate publishes.
#[tokio::test]
async fn a_held_write_another_person_lets_run_on_the_approval_page_is_written_once() {
    use support::sign_in::{decides, page_signs_in};
    const SECRET: &str = support::WEBHOOK_SECRET;
    let (_dir, root, policy) = price_lists(
        "tools = [\"write_file\"]\ndecided_by = { scope = \"refunds:write\" }\nchannels = [\"page\", \"webhook\"]\n",
    );
    let (_issuer, issuer) = support::oidc_issuer("jwt").await;
    let (hook, mut heard) = support::webhook_receiver(false).await;
    let mut command = tokio::process::Command::new(support::fernhill_gate());
    command
        .arg("serve")
        .arg(&policy)
        .args(["--http", "127.0.0.1:0", "--auth-issuer", &issuer])
        .args(["--page-client-id", "approvals", "--page-client-secret", "approvals-secret"])
        .args(["--webhook", &hook, "--webhook-secret", SECRET]);
    let (_gate, url, log) = support::spawn_printing_url_with_log(&mut command).await;
    let origin = url.trim_end_matches("/mcp").to_owned();

    // Alice asks, from her host, with a token that lets her read orders alone.
    let alice = alice_over_http(&issuer, &url).await;
    let prices = root.join("prices").join("autumn.csv");
    let write = || alice.call_tool("write_file", json!({"path": prices, "content": "KG-1043,0.01"}));
    let held = write().await.unwrap();
    let meta = &held.meta.as_ref().unwrap()[gate::HELD_META];
    let approval = meta["approval"].as_str().unwrap().to_owned();
    let link = format!("{origin}/approvals/{approval}");
    assert_eq!(meta["page"], link, "{held:?}");
    assert!(mrtr::client::text(&held).contains(&format!("on the approval page at {link}")), "{held:?}");
    let announced = support::next_announcement(&mut heard, SECRET).await;
    assert_eq!(announced["event"]["link"], link, "{announced}");
    assert!(announced["text"].as_str().unwrap().ends_with(&format!("Decide it at {link}.")), "{announced}");

    // Alice on the page: signed in, she holds the scope, and it is still not hers to decide.
    let (_, page) = page_signs_in(&link, "alice").await;
    assert!(page.contains("data-outcome=\"not_yours\"") && page.contains("needs another person"), "{page}");
    // Lee lists what waits for him, and lets it run.
    let (_, listed) = page_signs_in(&format!("{origin}/approvals"), "lee").await;
    assert!(listed.contains(&format!("href=\"/approvals/{approval}\"")), "{listed}");
    let (lee, shown) = page_signs_in(&link, "lee").await;
    assert!(shown.contains("data-arguments") && shown.contains("KG-1043,0.01"), "the arguments: {shown}");
    assert!(!prices.exists(), "looking ran nothing");
    let decided = decides(&lee, &link, &shown, "run").await;
    assert!(decided.contains("data-outcome=\"approved\""), "{decided}\n{}", log.text());
    assert!(!prices.exists(), "approving ran nothing");
    let approved = support::next_announcement(&mut heard, SECRET).await;
    assert_eq!(approved["event"]["event"], "approved", "{approved}");

    // The receipt the page gave lee, checked offline against the gate's published keys.
    let receipt = decided.split("<pre data-receipt>").nth(1).and_then(|rest| rest.split("</pre>").next()).unwrap();
    let jwks = reqwest::get(format!("{origin}/.well-known/jwks.json")).await.unwrap().text().await.unwrap();
    let verified = approvals::receipt::verify(receipt, &jwks).unwrap();
    assert_eq!(verified.decision.by.as_deref(), Some(format!("{issuer} lee").as_str()), "{verified:?}");
    assert_eq!((verified.decision.verdict.as_str(), verified.decision.channel.as_str()), ("accept", "page"));

    let ran = write().await.unwrap();
    assert_ne!(ran.is_error, Some(true), "{ran:?}");
    assert_eq!(std::fs::read_to_string(&prices).unwrap(), "KG-1043,0.01");
    std::fs::write(&prices, "KG-1043,12.50").unwrap();
    let kept = write().await.unwrap();
    assert_eq!(kept.meta.as_ref().unwrap()[gate::HELD_META]["state"], "ran", "{kept:?}");
    assert_eq!(std::fs::read_to_string(&prices).unwrap(), "KG-1043,12.50", "not written twice");
    // The page's form posted again, declining now, decides nothing more.
    let again = decides(&lee, &link, &shown, "decline").await;
    assert!(again.contains("data-outcome=\"settled\"") && again.contains("is approved"), "{again}");
    alice.close().await.unwrap();
}

/// Deciders named by what their sign-in's token says, with no `[people]` in the policy: a price
/// list's write waits for the role `pricing`, a move for the group `pricing-team`. On the
/// approval page pat (whose token says the role) sees and lets run the write alone, sam (the
/// group) the move alone, and someone whose token says neither sees nothing to decide; each
/// call then runs once.
#[tokio::test]
async fn the_page_lets_a_person_decide_by_the_role_or_group_their_token_says_and_no_one_else() {
    use support::sign_in::{decides, page_signs_in};
    let (_dir, root, policy) = price_lists(
        "tools = [\"write_file\"]\ndecided_by = { role = \"pricing\" }\nchannels = [\"page\"]\n\n\
         [[rule]]\nname = \"moves\"\nupstream = \"files\"\ntools = [\"move_file\"]\n\
         decided_by = { group = \"pricing-team\" }\nchannels = [\"page\"]\ndeadline = \"1h\"\n",
    );
    let people = r#"{"pat": {"roles": ["pricing"]}, "sam": {"groups": ["pricing-team"]}}"#;
    let (_issuer, issuer) = support::oidc_issuer_where(people).await;
    let mut command = tokio::process::Command::new(support::fernhill_gate());
    command.arg("serve").arg(&policy).args(["--http", "127.0.0.1:0", "--auth-issuer", &issuer]).args([
        "--page-client-id",
        "approvals",
        "--page-client-secret",
        "approvals-secret",
    ]);
    let (_gate, url, log) = support::spawn_printing_url_with_log(&mut command).await;
    let origin = url.trim_end_matches("/mcp").to_owned();
    let alice = alice_over_http(&issuer, &url).await;
    let prices = root.join("prices").join("winter.csv");
    std::fs::write(root.join("notes").join("draft.csv"), "KG-1043,9.00").unwrap();
    let moved = root.join("notes").join("moved.csv");
    let write = || alice.call_tool("write_file", json!({"path": prices, "content": "KG-1043,9.50"}));
    let source = root.join("notes").join("draft.csv");
    let mv = || alice.call_tool("move_file", json!({"source": source, "destination": moved}));
    let approval = |held: &rmcp::model::CallToolResult| {
        held.meta.as_ref().unwrap()[gate::HELD_META]["approval"].as_str().unwrap().to_owned()
    };
    let (write_held, move_held) = (approval(&write().await.unwrap()), approval(&mv().await.unwrap()));

    let listed = async |login: &str| page_signs_in(&format!("{origin}/approvals"), login).await.1;
    let (by_role, by_group, by_neither) = (listed("pat").await, listed("sam").await, listed("nobody").await);
    assert!(by_role.contains(&write_held) && !by_role.contains(&move_held), "pat: {by_role}");
    assert!(by_group.contains(&move_held) && !by_group.contains(&write_held), "sam: {by_group}");
    assert!(by_neither.contains("data-outcome=\"none\""), "nobody: {by_neither}\n{}", log.text());
    let (_, not_sams) = page_signs_in(&format!("{origin}/approvals/{write_held}"), "sam").await;
    assert!(not_sams.contains("data-outcome=\"not_yours\""), "{not_sams}");

    for (login, held) in [("pat", &write_held), ("sam", &move_held)] {
        let link = format!("{origin}/approvals/{held}");
        let (person, shown) = page_signs_in(&link, login).await;
        let decided = decides(&person, &link, &shown, "run").await;
        assert!(decided.contains("data-outcome=\"approved\""), "{login}: {decided}");
    }
    assert_ne!(write().await.unwrap().is_error, Some(true));
    assert_ne!(mv().await.unwrap().is_error, Some(true));
    assert_eq!(std::fs::read_to_string(&prices).unwrap(), "KG-1043,9.50");
    assert_eq!(std::fs::read_to_string(&moved).unwrap(), "KG-1043,9.00");
    alice.close().await.unwrap();
}

/// The everything server behind the gate, for hosts of both eras: its prompts, resources,
/// resource templates and completions pass through as it serves them, a resource's update
/// reaches a 2026-07-28 host whose stream names it, its question on the back-channel reaches a
/// 2025 host, and the one tool the policy holds (`get-env`, which shows the server's
/// environment) waits.
#[tokio::test]
async fn the_everything_server_s_prompts_resources_and_completions_pass_and_a_held_tool_waits() {
    use rmcp::model::{CompleteRequestParams, GetPromptRequestParams, ReadResourceRequestParams, Reference};
    let node = support::npm("gate-everything", &[EVERYTHING_SERVER], &[]);
    let server = node.join("node_modules/.bin/mcp-server-everything");
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("gate.toml");
    std::fs::write(
        &policy,
        format!(
            "[[upstream]]\nname = \"everything\"\ncommand = [{server:?}, \"stdio\"]\n\n[[rule]]\nname = \"environment\"\n\
             tools = [\"get-env\"]\ndecided_by = {{ role = \"ops\" }}\ndeadline = \"1h\"\n"
        ),
    )
    .unwrap();
    for (era, lifecycle) in [("2026-07-28", modern()), ("2025-11-25", legacy())] {
        let user = ScriptedUser::always(mrtr::client::Answer::accept(json!({"name": "Ada"})));
        let client = support::through_the_gate(&policy, &[("USER", "alice")], user.clone(), lifecycle).await;
        let peer = client.peer();
        let echoed = client.call_tool("echo", json!({"message": "through the gate"})).await.unwrap();
        assert_eq!(mrtr::client::text(&echoed), "Echo: through the gate", "{era}");
        let held = client.call_tool("get-env", json!({})).await.unwrap();
        assert_eq!(held.is_error, Some(true), "{era}: {held:?}");
        assert_eq!(held.meta.as_ref().unwrap()[gate::HELD_META]["state"], "waiting", "{era}");

        let prompts = peer.list_all_prompts().await.unwrap();
        assert!(prompts.iter().any(|prompt| prompt.name == "args-prompt"), "{era}: {prompts:?}");
        let prompt = GetPromptRequestParams::new("args-prompt")
            .with_arguments(serde_json::from_value(json!({"city": "Lisbon"})).unwrap());
        let got = peer.get_prompt(prompt).await.unwrap();
        assert!(serde_json::to_string(&got.messages).unwrap().contains("Lisbon"), "{era}: {got:?}");

        let resources = peer.list_all_resources().await.unwrap();
        let document = resources
            .iter()
            .find(|resource| resource.uri.starts_with("demo://resource/static/document/"))
            .unwrap_or_else(|| panic!("{era}: {resources:?}"));
        let read = peer.read_resource(ReadResourceRequestParams::new(document.uri.clone())).await.unwrap();
        assert!(!read.contents.is_empty(), "{era}: {read:?}");
        let templates = peer.list_all_resource_templates().await.unwrap();
        assert!(templates.iter().any(|t| t.uri_template.starts_with("demo://resource/dynamic/text/")), "{era}");
        // A resource no list names, which a template makes: read where the template is served.
        let made = peer.read_resource(ReadResourceRequestParams::new("demo://resource/dynamic/text/3")).await.unwrap();
        assert!(!made.contents.is_empty(), "{era}: {made:?}");

        let department = CompleteRequestParams::new(
            Reference::for_prompt("completable-prompt"),
            rmcp::model::ArgumentInfo::new("department", "Eng"),
        );
        let completed = peer.complete(department).await.unwrap();
        assert_eq!(completed.completion.values, ["Engineering"], "{era}");

        // A resource's updates, asked for on a 2026-07-28 host's stream: the gate subscribes to
        // it at the server (a 2025 upstream, `resources/subscribe`), which tells its update at
        // once when its updates are switched on, and the gate tells the host's stream.
        if era == "2026-07-28" {
            let watched =
                rmcp::model::SubscriptionFilter::builder().resource_subscription(document.uri.clone()).build();
            let mut stream = peer.listen(watched).await.unwrap();
            let switched = client.call_tool("toggle-subscriber-updates", json!({})).await.unwrap();
            assert_ne!(switched.is_error, Some(true), "{era}: {switched:?}");
            let told = tokio::time::timeout(std::time::Duration::from_secs(10), stream.next()).await;
            assert!(
                matches!(&told, Ok(Ok(Some(rmcp::model::ServerNotification::ResourceUpdatedNotification(update))))
                    if update.params.uri == document.uri),
                "{era}: {told:?}"
            );
        }

        // The server's own question on its (2025) back-channel: relayed to a 2025 host, which has
        // one; a 2026-07-28 host has none, and is not asked.
        let asked = client.call_tool("trigger-elicitation-request", json!({})).await;
        if era == "2025-11-25" {
            let asked = asked.unwrap();
            assert!(mrtr::client::text(&asked).contains("Ada"), "{era}: {asked:?}");
            assert_eq!(user.asked().len(), 1, "{era}");
        } else {
            assert!(user.asked().is_empty(), "{era}: {asked:?}");
        }

        client.close().await.unwrap();
    }
}

/// docs/gate.md's "Five minutes", run as written there: its shell blocks, by `sh`, in a home of
/// the test's own (`$HOME`, `$USER` alice), where only the ports differ (the issuer's and the
/// page's are ephemeral here) and `npx` is the filesystem server installed for the tests. The
/// policy is written and checked; one gate serves the approval page; the terminal host launches
/// another over stdio and calls `write_file` as a task, which stays `working` and writes
/// nothing; alice, signed in on the page, is told it needs another person; lee lets it run; the
/// host's task completes with the server's own answer, the file is written once, and the
/// decision's receipt verifies offline with `fernhill verify`.
#[tokio::test(flavor = "multi_thread")]
async fn docs_gate_md_five_minutes_run_as_written_a_write_waits_for_another_person_on_the_page_then_runs_once() {
    use std::process::Stdio;

    use expectrl::Regex;
    use support::{
        sign_in::{decides, page_signs_in},
        terminal::Terminal,
    };
    use tokio::io::{AsyncBufReadExt, BufReader};
    let doc = include_str!("../../../docs/gate.md");
    let five = doc.split("## Five minutes").nth(1).and_then(|rest| rest.split("\n## ").next()).unwrap();
    let blocks: Vec<&str> = five.split("```sh\n").skip(1).map(|block| block.split("\n```").next().unwrap()).collect();
    let [_build, issuer_block, setup, host, verify] = blocks[..] else { panic!("five shell blocks: {blocks:#?}") };
    assert!(
        issuer_block.contains("cd deploy/dev-issuer && npm install && PORT=8700 node issuer.mjs"),
        "{issuer_block}"
    );
    let (_issuer, issuer) = support::oidc_issuer("jwt").await;

    // A home of the test's own, and on its PATH the programs as `cargo install` puts them and an
    // `npx` that starts the filesystem server the tests installed.
    let home = tempfile::tempdir().unwrap();
    let home_path = home.path().canonicalize().unwrap();
    let node = support::npm("gate-upstreams", &[FILESYSTEM_SERVER], &[]);
    let bin = home_path.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let npx = bin.join("npx");
    let server = node.join("node_modules/.bin/mcp-server-filesystem");
    std::fs::write(
        &npx,
        format!(
            "#!/bin/sh\n[ \"$1\" = -y ] && shift\n[ \"$1\" = {FILESYSTEM_SERVER} ] || exit 64\n\
             shift\nexec {server:?} \"$@\"\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&npx, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let programs = support::fernhill_gate().parent().unwrap().to_owned();
    assert!(programs.join("fernhill").exists(), "fernhill beside fernhill-gate");
    let path = format!("{}:{}:{}", bin.display(), programs.display(), std::env::var("PATH").unwrap());
    // What each block's terminal has: its shell, the home, the user, the PATH; nothing else.
    let sh = |script: &str| {
        let mut command = std::process::Command::new("sh");
        command
            .args(["-e", "-c", script])
            .env_clear()
            .env("HOME", &home_path)
            .env("USER", "alice")
            .env("PATH", &path)
            .env("TERM", "xterm-256color")
            .env("NO_COLOR", "1")
            .current_dir(&home_path);
        command
    };
    let as_here = |text: &str| text.replace("http://127.0.0.1:8700", &issuer).replace("127.0.0.1:8720", "127.0.0.1:0");

    // 3. The folder, the keys, the policy (checked), and the gate serving the page, in one
    // terminal: the check's table, then the gate's URL.
    // (The gate in place of the shell, as the test stops the terminal by stopping its child.)
    let setup = as_here(setup).replace("\nfernhill-gate serve", "\nexec fernhill-gate serve");
    let mut page_gate = tokio::process::Command::from(sh(&setup));
    page_gate.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let mut page_gate = page_gate.spawn().unwrap();
    let page_log = support::Log::default();
    page_log.follow(page_gate.stderr.take().unwrap());
    let mut lines = BufReader::new(page_gate.stdout.take().unwrap()).lines();
    let mut checked = String::new();
    let url = loop {
        let line = tokio::time::timeout(support::CHILD_DEADLINE, lines.next_line()).await.unwrap().unwrap();
        let line = line.unwrap_or_else(|| panic!("no URL after:\n{checked}\n{}", page_log.text()));
        if line.starts_with("http://127.0.0.1:") && line.ends_with("/mcp") {
            break line;
        }
        checked.push_str(&line);
        checked.push('\n');
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    assert!(checked.contains("write_file") && checked.contains("held by \"shop files\""), "{checked}");
    assert!(checked.contains("read_file") && checked.contains("passes"), "{checked}");
    let policy = std::fs::read_to_string(home_path.join("fernhill-try/gate.toml")).unwrap();
    assert!(policy.contains(&format!("\"alice\" = {{ signs_in_as = \"{issuer} alice\" }}")), "{policy}");
    let origin = url.trim_end_matches("/mcp").to_owned();

    // 4. The host, at a terminal (a pseudo-terminal here), launching the gate over stdio with
    // the keys step 3 made: the call is a task that waits.
    let terminal = sh(&host.replace("http://127.0.0.1:8720", &origin));
    let (terminal, says) = tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::open(terminal, support::CHILD_DEADLINE);
        let says = terminal.shows(Regex(r"is working: (Waiting for a decision[^\r\n]*)"), "the task waiting").pop();
        (terminal, says.unwrap())
    })
    .await
    .unwrap();
    assert!(
        says.starts_with(
            "Waiting for a decision by a person whose token carries the scope approvals:decide: write_file"
        ),
        "{says}"
    );
    let approval = says.split("(approval ").nth(1).unwrap().get(..18).unwrap().to_owned();
    let prices = home_path.join("fernhill-try/shop/prices/autumn.csv");
    assert!(!prices.exists(), "nothing written while it waits");

    // The page: alice, who asked, is told someone else decides; lee lets it run.
    let link = format!("{origin}/approvals/{approval}");
    let (_, hers) = page_signs_in(&link, "alice").await;
    assert!(hers.contains("data-outcome=\"not_yours\"") && hers.contains("needs another person"), "{hers}");
    let (_, listed) = page_signs_in(&format!("{origin}/approvals"), "lee").await;
    assert!(listed.contains(&format!("href=\"/approvals/{approval}\"")), "{listed}");
    let (lee, shown) = page_signs_in(&link, "lee").await;
    let decided = decides(&lee, &link, &shown, "run").await;
    assert!(decided.contains("data-outcome=\"approved\""), "{decided}\n{}", page_log.text());
    let receipt = decided.split("<pre data-receipt>").nth(1).and_then(|rest| rest.split("</pre>").next()).unwrap();

    // The host's task completes with the filesystem server's own answer; the file is written once.
    let screen = tokio::task::spawn_blocking(move || {
        let mut terminal = terminal;
        terminal.shows("is completed", "the task completed");
        terminal.shows("✔ write_file returned:", "the call's result");
        terminal.shows("Successfully wrote to", "the server's own answer");
        terminal.shows("Call another tool?", "the loop's question");
        terminal.types("n\r");
        terminal.quits()
    })
    .await
    .unwrap();
    assert_eq!(std::fs::read_to_string(&prices).unwrap(), "KG-1043,12.50");

    // 5. The receipt, checked offline against the keys the page's gate serves.
    let verify = verify.replace("http://127.0.0.1:8720", &origin).replace("'eyJ...'", &format!("'{receipt}'"));
    let verified = tokio::process::Command::from(sh(&verify)).output().await.unwrap();
    let said = String::from_utf8_lossy(&verified.stdout);
    assert!(verified.status.success(), "{said}\n{}", String::from_utf8_lossy(&verified.stderr));
    assert!(said.contains(&format!("{issuer} lee")) && said.contains("\"page\""), "{said}");
    println!("{screen}\n{said}");
}

/// The Python reference shop (mcp 2.3.0, `../shared/peers/python-shop/shop.py stdio`) started by
/// the gate over stdio, with its own API beside it. Under a policy that holds none of the
/// chapter's calls, its refund above the limit asks its lead through the gate as if the gate
/// were not there: to a 2026-07-28 host the round passes back unchanged (the reference's own
/// sealed state) and the retry goes on to it; for a 2025 host the gate runs the round and asks
/// on the back-channel. Under a policy that holds `issue_refund` for a lead, alice's refund
/// does not reach the reference until lee approves it, then reaches it once.
#[tokio::test]
async fn the_python_reference_shop_behind_the_gate_asks_through_it_in_either_era_and_a_held_refund_runs_once() {
    let peer = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/peers/python-shop");
    let Ok(peer) = peer.canonicalize() else {
        eprintln!("skipped: the Python reference is not beside the project (../shared/peers/python-shop)");
        return;
    };
    let python = support::python();
    let mut api = tokio::process::Command::new(&python);
    api.arg("-u")
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/reference_api.py"))
        .current_dir(&peer)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let (_api, api_url) = support::spawn_printing_url(&mut api).await;
    let reference = |path: &str| {
        let url = format!("{api_url}{path}");
        async move { reqwest::get(url).await.unwrap() }
    };
    let dir = tempfile::tempdir().unwrap();
    let upstream = format!(
        "[[upstream]]\nname = \"shop\"\ncommand = [{python:?}, \"-u\", {:?}, \"stdio\"]\n",
        peer.join("shop.py")
    );
    let policy = |name: &str, rule: &str| {
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!("{upstream}\n[people]\nlee = {{ roles = [\"lead\"] }}\n\n[[rule]]\nname = \"{name}\"\n{rule}"),
        )
        .unwrap();
        path
    };
    let env =
        |user: &'static str| [("USER", user), ("SHOP_API_URL", api_url.as_str()), ("PYTHONDONTWRITEBYTECODE", "1")];

    // Nothing the chapter calls is held: the reference's question reaches the person at either host.
    let passing = policy("passing", "tools = [\"pay_refund\"]\ndecided_by = { role = \"lead\" }\ndeadline = \"1h\"\n");
    for (order, lifecycle, amount) in [("O-2289", modern(), "180.00"), ("O-1145", legacy(), "343.49")] {
        let lead = ScriptedUser::always(support::release());
        let alice = support::through_the_gate(&passing, &env("alice"), lead.clone(), lifecycle).await;
        let quote_id = support::quote(&alice, order).await;
        let released = alice.call_tool("issue_refund", json!({"quote_id": quote_id})).await.unwrap();
        assert_ne!(released.is_error, Some(true), "{released:?}");
        let question = mrtr::client::scripted::message_of(&lead.asked()[0]).to_owned();
        assert!(question.starts_with(&format!("Refund {amount} on order {order}?")), "{question}");
        assert_eq!(lead.asked().len(), 1, "asked once");
        let refund = released.structured_content.as_ref().unwrap()["refund_id"].as_str().unwrap().to_owned();
        let kept: Value = reference(&format!("/refunds/{refund}")).await.json().await.unwrap();
        assert_eq!(kept["status"], "requested", "released as the lead said: {kept}");
        alice.close().await.unwrap();
    }

    // issue_refund held for a lead: nothing reaches the reference until lee approves; then once.
    let held = policy("held", "tools = [\"issue_refund\"]\ndecided_by = { role = \"lead\" }\ndeadline = \"1h\"\n");
    let alice = support::through_the_gate(&held, &env("alice"), ScriptedUser::unable_to_ask(), legacy()).await;
    let quote_id = support::quote(&alice, "O-1021").await;
    let issue = || alice.call_tool("issue_refund", json!({"quote_id": quote_id}));
    let waiting = issue().await.unwrap();
    assert_eq!(waiting.is_error, Some(true), "{waiting:?}");
    let approval = waiting.meta.as_ref().unwrap()[gate::HELD_META]["approval"].as_str().unwrap().to_owned();
    assert_eq!(reference("/refunds/R-0113").await.status(), 404, "nothing reached the reference");
    let lee = support::through_the_gate(
        &held,
        &env("lee"),
        ScriptedUser::always(Answer::accept(json!({"run": true}))),
        modern(),
    )
    .await;
    let decided = lee.call_tool("review_approvals", json!({"approval": approval})).await.unwrap();
    assert_ne!(decided.is_error, Some(true), "{decided:?}");
    assert_eq!(reference("/refunds/R-0113").await.status(), 404, "approving ran nothing");
    let ran = issue().await.unwrap();
    assert_ne!(ran.is_error, Some(true), "{ran:?}");
    assert_eq!(ran.structured_content.as_ref().unwrap()["refund_id"], "R-0113", "{ran:?}");
    let again = issue().await.unwrap();
    assert_eq!(again.meta.as_ref().unwrap()[gate::HELD_META]["state"], "ran", "{again:?}");
    assert_eq!(reference("/refunds/R-0114").await.status(), 404, "it reached the reference once");
    alice.close().await.unwrap();
    lee.close().await.unwrap();
}
