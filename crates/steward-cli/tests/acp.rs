//! `steward acp` driven by a real editor-side peer: the official ACP TypeScript SDK's client
//! (`STEWARD_TEST_ACP_SDK`, on `STEWARD_TEST_NODE22`) runs `tests/acp/client.mjs`, which starts
//! the real binary with scripted models and reports what it saw as JSON. Named `peer_*`.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use steward_peers::required_env;

use crate::common::*;

/// Reads the note, reads `.env` (denied by the gate: never a question), then edits the note.
const EDIT: &str = r#"
[[round]]
text = "I'll read the note."
[[round.tool_call]]
name = "read"
arguments = { path = "note.txt" }
[[round.tool_call]]
name = "read"
arguments = { path = ".env" }
[[round]]
[[round.tool_call]]
name = "edit"
arguments = { path = "note.txt", old = "old", new = "new" }
[[round]]
text = "Edited note.txt."
"#;

/// An edit whose next round only answers when the model was told the owner rejected it.
const REJECT: &str = r#"
[[round]]
[[round.tool_call]]
name = "edit"
arguments = { path = "note.txt", old = "new", new = "newer" }
[[round]]
text = "Understood, I left it."
expect = ["the owner rejected `edit`: rejected by the owner in the editor"]
"#;

/// Answers only when the request holds the earlier turn of the loaded session.
const RECALL: &str = r#"
[[round]]
text = "Before, you asked: replace old with new in note.txt."
expect = ["replace old with new in note.txt", "Edited note.txt."]
"#;

/// The model cannot be reached.
const FAIL: &str = r#"
[[round]]
[round.error]
class = "missing_api_key"
message = "OPENAI_API_KEY is not set"
status = 401
"#;

/// Calls the editor's MCP server's `echo`.
const MCP: &str = r#"
[[round]]
[[round.tool_call]]
name = "editor-everything__echo"
arguments = { message = "hello from the editor's server" }
[[round]]
text = "echoed"
"#;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// The final state of the tool call whose title starts with `title`.
fn call<'a>(calls: &'a Value, title: &str) -> &'a Value {
    calls
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["title"].as_str().unwrap_or("").starts_with(title))
        .unwrap_or_else(|| panic!("no call `{title}` in {calls:#}"))
}

fn texts(call: &Value) -> String {
    call["texts"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect::<Vec<_>>().join("\n")
}

#[test]
fn peer_acp_editor_approves_rejects_cancels_loads_and_passes_mcp_servers() {
    let node = required_env("STEWARD_TEST_NODE22");
    let sdk = required_env("STEWARD_TEST_ACP_SDK");
    let everything = required_env("STEWARD_TEST_MCP_EVERYTHING");
    let env = Env::new();
    env.write("note.txt", "old text\n");
    env.write(".env", "API_TOKEN=not-for-the-model\n");
    let dir = env.dir.path();
    let workspace = std::fs::canonicalize(env.ws()).unwrap();
    let config = json!({
        "sdk": sdk,
        "steward": env!("CARGO_BIN_EXE_steward"),
        "workspace": workspace,
        "everything": everything,
        "scenarios": {
            "edit": write(dir, "edit.toml", EDIT),
            "reject": write(dir, "reject.toml", REJECT),
            "recall": write(dir, "recall.toml", RECALL),
            "fail": write(dir, "fail.toml", FAIL),
            "mcp": write(dir, "mcp.toml", MCP),
        },
    });
    let config_path = write(dir, "client.json", &config.to_string());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp/client.mjs");
    let node_dir = Path::new(&node).parent().unwrap().display().to_string();
    let mut cmd = Command::new(&node);
    env.clean_env(&mut cmd);
    let out = cmd
        .env("PATH", format!("{node_dir}:{}", std::env::var("PATH").unwrap_or_default()))
        .arg(&script)
        .arg(&config_path)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let (out_text, err_text) = (stdout(&out), stderr(&out));
    assert!(out.status.success(), "client failed ({}):\n{out_text}\n{err_text}", out.status);
    let seen: Value = serde_json::from_str(out_text.trim()).unwrap_or_else(|e| panic!("{e}: {out_text}\n{err_text}"));

    // Approved: the read ran, `.env` was denied without a question, the edit asked once and ran.
    let approved = &seen["approved"];
    assert_eq!(approved["agentCapabilities"]["loadSession"], true, "{approved:#}");
    assert_eq!(approved["agentCapabilities"]["promptCapabilities"]["image"], false);
    assert_eq!(approved["stopReason"], "end_turn", "{approved:#}");
    assert!(approved["sessionId"].as_str().unwrap().starts_with("cnv_"));
    let read = call(&approved["calls"], "read note.txt");
    assert_eq!((read["kind"].as_str(), read["status"].as_str()), (Some("read"), Some("completed")), "{read:#}");
    assert!(texts(read).contains("allowed by `"), "{read:#}");
    let secret = call(&approved["calls"], "read .env");
    assert_eq!(secret["status"], "failed", "{secret:#}");
    assert!(texts(secret).contains("denied by `"), "{secret:#}");
    assert!(!texts(secret).contains("not-for-the-model"));
    let edit = call(&approved["calls"], "edit note.txt");
    assert_eq!(edit["status"], "completed", "{edit:#}");
    assert_eq!(edit["diffs"][0]["oldText"], "old text\n", "{edit:#}");
    assert_eq!(edit["diffs"][0]["newText"], "new text\n", "{edit:#}");
    assert_eq!(
        approved["permissions"],
        json!([{"title": "edit note.txt", "options": ["allow_once", "allow_always", "reject_once"]}]),
        "only the edit's ask became a question"
    );
    assert!(approved["message"].as_str().unwrap().contains("Edited note.txt."), "{approved:#}");
    assert_eq!(approved["note"], "new text\n");
    assert!(approved["msToFirstUpdate"].as_f64().is_some());
    eprintln!("initialize → first session/update: {:.0} ms", approved["msToFirstUpdate"].as_f64().unwrap());

    // Rejected: unchanged, and the model's next round (which expects the reason) answered.
    let rejected = &seen["rejected"];
    assert_eq!(rejected["stopReason"], "end_turn", "{rejected:#}");
    let edit = call(&rejected["calls"], "edit note.txt");
    assert_eq!(edit["status"], "failed", "{edit:#}");
    assert!(texts(edit).contains("rejected: rejected by the owner in the editor"), "{edit:#}");
    assert!(rejected["message"].as_str().unwrap().contains("Understood"), "{rejected:#}");
    assert_eq!(rejected["note"], "new text\n");

    // Cancelled while asking: the prompt ends `cancelled`, nothing applied.
    let cancelled = &seen["cancelled"];
    assert_eq!(cancelled["stopReason"], "cancelled", "{cancelled:#}");
    assert_eq!(cancelled["permissions"], 1);
    assert_eq!(cancelled["note"], "new text\n");

    // Loaded in another process: the turn replayed, and the next prompt continues it.
    let loaded = &seen["loaded"];
    assert_eq!(loaded["replayedUser"], json!(["replace old with new in note.txt"]), "{loaded:#}");
    assert_eq!(loaded["replayedCalls"], 3, "{loaded:#}");
    assert!(loaded["replayed"].as_array().unwrap().contains(&json!("agent_message_chunk")));
    assert_eq!(loaded["stopReason"], "end_turn", "{loaded:#}");
    assert!(loaded["message"].as_str().unwrap().contains("Before, you asked"), "{loaded:#}");
    assert!(loaded["unknown"].as_str().is_some(), "loading an unknown session is an error: {loaded:#}");

    assert!(seen["missing"]["error"].as_str().unwrap_or("").contains("no-such-dir"), "{:#}", seen["missing"]);

    // A failed run is an error of the prompt, naming its class; the editor was told as well.
    let failed = &seen["failed"];
    assert!(failed["error"].as_str().unwrap_or("").contains("missing_api_key"), "{failed:#}");
    assert!(failed["message"].as_str().unwrap_or("").contains("The run failed"), "{failed:#}");

    // The editor's MCP server: its tool asked, was allowed once, and ran.
    let mcp = &seen["mcp"];
    assert_eq!(mcp["stopReason"], "end_turn", "{mcp:#}");
    assert_eq!(mcp["permissions"], json!(["editor-everything__echo {\"message\":\"hello from the editor's server\"}"]));
    let echo = call(&mcp["calls"], "editor-everything__echo");
    assert_eq!(echo["status"], "completed", "{echo:#}");
    assert!(texts(echo).contains("hello from the editor's server"), "{echo:#}");

    // Every prompt was a run of the local owner, in the store like `steward run`'s.
    let runs = env.steward(&["runs", "--json"]);
    assert_eq!(code(&runs), 0, "{}", stderr(&runs));
    assert_eq!(stdout(&runs).lines().count(), 6, "{}", stdout(&runs));
}
