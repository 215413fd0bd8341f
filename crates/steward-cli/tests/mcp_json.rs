//! A project's `.mcp.json`: in a trusted workspace its servers are configured servers (listed
//! with their source, their tools called through the gate, literal secrets never printed); in
//! an untrusted one it is ignored with a warning; a malformed one is named and left out.
//! `steward mcp call` also takes the `SERVER__TOOL` name and names the rule that hides a tool.

use crate::common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Env, Killed, code, stderr, stdout};

const SECRET: &str = "sk-ant-api03-abcdefghijklmnopqrstuvwx";

fn fault_server() -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../steward-mcp/tests/fixtures/fault_server.py")
        .display()
        .to_string()
}

/// A `.mcp.json` with the test server `proj`: one literal secret, one `${VAR}` reference.
fn mcp_json() -> String {
    serde_json::json!({
        "mcpServers": {
            "proj": {
                "command": "python3",
                "args": [fault_server(), "normal"],
                "env": { "API_KEY": SECRET, "OTHER_TOKEN": "${PROJ_TOKEN}" }
            }
        }
    })
    .to_string()
}

/// `steward ARGS` with the variable the `${PROJ_TOKEN}` reference reads.
fn steward(env: &Env, args: &[&str]) -> std::process::Output {
    env.command(args).env("PROJ_TOKEN", "token-from-the-environment").output().unwrap()
}

fn trust(env: &Env) {
    let out = env.steward(&["trust"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn a_trusted_workspace_s_mcp_json_servers_are_listed_with_their_source_and_called_through_the_gate() {
    let env = Env::new();
    env.write(".mcp.json", &mcp_json());
    // Nobody at a terminal: the call waits for a decision from another process.
    env.user_config("[run]\napprovals = \"wait\"\n");
    trust(&env);

    let out = steward(&env, &["mcp", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed = stdout(&out);
    assert!(listed.contains("proj: running") && listed.contains("· from .mcp.json"), "{listed}");
    let out = steward(&env, &["mcp", "list", "--json"]);
    let line: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!((line["source"].as_str(), line["sandboxed"].as_bool()), (Some(".mcp.json"), Some(true)), "{line}");

    let shown = env.steward(&["config", "show"]);
    assert_eq!(code(&shown), 0, "{}", stderr(&shown));
    let text = format!("{}{}{}", stdout(&shown), listed, stderr(&shown));
    assert!(text.contains("# mcp_servers.proj from ") && text.contains(".mcp.json"), "{text}");
    assert!(text.contains("OTHER_TOKEN") && text.contains("PROJ_TOKEN"), "the reference is shown: {text}");
    assert!(!text.contains(SECRET), "the literal secret is printed: {text}");
    let json = env.steward(&["config", "show", "--json"]);
    assert!(!stdout(&json).contains(SECRET), "{}", stdout(&json));

    // The qualified name `steward mcp tools` prints; the call asks and waits for approval.
    let mut child = env
        .command(&["mcp", "call", "proj__echo", "--args", r#"{"note": "from the project"}"#])
        .env("PROJ_TOKEN", "token-from-the-environment")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (out, err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let read = |mut from: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut all = String::new();
            let _ = from.read_to_string(&mut all);
            all
        })
    };
    let (out, err) = (read(Box::new(out)), read(Box::new(err)));
    let mut child = Killed(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    let approval = loop {
        let pending = env.steward(&["approvals", "pending", "--json"]);
        if let Some(line) = stdout(&pending).lines().next() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["tool"], "proj__echo", "{v}");
            break v["approval_id"].as_str().unwrap().to_string();
        }
        assert!(Instant::now() < deadline, "no approval became pending");
        std::thread::sleep(Duration::from_millis(200));
    };
    let approved = env.steward(&["approve", &approval]);
    assert_eq!(code(&approved), 0, "{}", stderr(&approved));
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the call did not end");
        std::thread::sleep(Duration::from_millis(100));
    };
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    assert!(status.success(), "{out}\n{err}");
    assert!(out.contains(r#""note": "from the project""#), "the result is printed: {out}\n{err}");
    assert!(err.contains("MCP server proj · tool echo"), "the header names the call: {err}");
    assert!(!err.contains("fake"), "{err}");
}

#[test]
fn steward_s_own_definition_of_a_server_wins_over_the_mcp_json_one() {
    let env = Env::new();
    env.write(".mcp.json", &mcp_json());
    env.user_config(&format!(
        "[mcp_servers.proj]\ncommand = [\"python3\", {:?}, \"normal\"]\ntool_deny = [\"echo\"]\n",
        fault_server()
    ));
    trust(&env);
    let out = env.steward(&["mcp", "list"]);
    let listed = stdout(&out);
    assert!(listed.contains("proj: ") && listed.contains("xdg/steward/config.toml"), "{listed}");
    assert!(!listed.contains("from .mcp.json"), "{listed}");

    // Its `tool_deny` hides `echo`: the call names the entry that denies it.
    let out = env.steward(&["mcp", "call", "proj", "echo"]);
    assert_eq!(code(&out), 2, "{}\n{}", stdout(&out), stderr(&out));
    let said = stderr(&out);
    assert!(said.contains("denied by its `tool_deny` entry \"echo\""), "{said}");
    assert!(said.contains("config.toml"), "{said}");
    let out = env.steward(&["mcp", "call", "proj__echo"]);
    assert!(stderr(&out).contains("denied by its `tool_deny` entry"), "{}", stderr(&out));
}

#[test]
fn an_untrusted_workspace_s_mcp_json_is_ignored_with_a_warning() {
    let env = Env::new();
    env.write(".mcp.json", &mcp_json());
    let out = env.steward(&["mcp", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("no MCP servers are configured"), "{}", stdout(&out));
    let warned = stderr(&out);
    assert_eq!(warned.matches(".mcp.json: MCP servers ignored: the workspace is not trusted").count(), 1, "{warned}");
    assert!(warned.contains("steward trust"), "{warned}");
    let shown = env.steward(&["config", "show"]);
    assert!(!stdout(&shown).contains("proj"), "{}", stdout(&shown));
}

#[test]
fn a_malformed_mcp_json_is_named_with_its_line_and_column_and_left_out() {
    let env = Env::new();
    env.write(".mcp.json", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"true\"}\n    \"b\": {}\n  }\n}\n");
    env.user_config("[limits]\nmax_rounds = 3\n");
    trust(&env);
    let out = env.steward(&["mcp", "list"]);
    assert_eq!(code(&out), 0, "an unrelated command still runs: {}", stderr(&out));
    let warned = stderr(&out);
    assert!(warned.contains(".mcp.json: not valid JSON") && warned.contains("line 4 column 5"), "{warned}");
    assert!(warned.contains("not loaded"), "{warned}");
    assert!(stdout(&out).contains("no MCP servers are configured"), "{}", stdout(&out));

    env.write(".mcp.json", r#"{"mcpServers": {"old": {"type": "sse", "url": "https://example.test/sse"}}}"#);
    let out = env.steward(&["mcp", "list"]);
    assert!(stderr(&out).contains("mcpServers.old: `sse` servers are not supported"), "{}", stderr(&out));
}

/// A credential in a server's address (`?api_key=…`, a password) never shows, even in the
/// HTTP client's own error text, which quotes the address it failed to reach.
#[test]
fn a_credential_in_a_server_address_is_never_printed() {
    let env = Env::new();
    let secret = "qk7Zp2LmW9xRt4Vb8NcYe3";
    env.write(
        ".mcp.json",
        &format!(
            r#"{{"mcpServers": {{"closed": {{"type": "http", "url": "http://user:pw-{secret}@127.0.0.1:1/mcp?api_key={secret}&page=2"}}}}}}"#
        ),
    );
    trust(&env);
    for args in [&["mcp", "list"][..], &["mcp", "list", "--json"], &["mcp", "tools"], &["config", "show"]] {
        let out = steward(&env, args);
        let text = format!("{}{}", stdout(&out), stderr(&out));
        assert!(!text.contains(secret), "{args:?} printed the credential:\n{text}");
        if args[0] == "mcp" && args.len() == 2 {
            assert!(text.contains("unavailable"), "{args:?}: {text}");
        }
    }
}
