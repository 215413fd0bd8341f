//! `steward mcp serve` (SPEC M2) driven by Steward's own MCP client (`steward_mcp::McpManager`)
//! over stdio: the five tools, a classic-planner run submitted and polled to its answer, a
//! call needing approval denied with `no_approver`, ownership and redaction.

use crate::common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use steward_mcp::{McpManager, McpServerConfig};
use tokio_util::sync::CancellationToken;

/// A client whose `[mcp_servers.steward]` is this test's `steward mcp serve`, sharing the
/// environment's state directory and user configuration.
fn client(env: &Env) -> McpManager {
    let text = format!(
        "[mcp_servers.steward]\ncommand = [{bin:?}, \"mcp\", \"serve\"]\ncwd = {ws:?}\n\
         env = {{ STEWARD_HOME = {home:?}, XDG_CONFIG_HOME = {xdg:?}, HOME = {dir:?}, USER = \"tester\" }}\n\
         startup_timeout_ms = 30000\ncall_timeout_ms = 60000\n",
        bin = env!("CARGO_BIN_EXE_steward"),
        ws = env.ws().display().to_string(),
        home = env.home().display().to_string(),
        xdg = env.dir.path().join("xdg").display().to_string(),
        dir = env.dir.path().display().to_string(),
    );
    let table: toml::Table = toml::from_str(&text).unwrap();
    let servers: BTreeMap<String, McpServerConfig> = table["mcp_servers"].clone().try_into().unwrap();
    McpManager::new(&servers).unwrap()
}

/// Calls `steward__TOOL`; Ok is the answer's JSON, Err the text of an `isError` result.
async fn call(mcp: &McpManager, tool: &str, args: Value) -> Result<Value, String> {
    let out = mcp.call(&format!("steward__{tool}"), args, CancellationToken::new()).await.unwrap();
    if out.is_error {
        return Err(out.text);
    }
    Ok(serde_json::from_str(&out.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", out.text)))
}

async fn submit(mcp: &McpManager, env: &Env, task: &str) -> String {
    let answer =
        call(mcp, "submit_task", json!({"workspace": env.ws().display().to_string(), "task": task})).await.unwrap();
    assert_eq!(answer["status"], "running", "{answer}");
    assert_eq!(answer["owner_id"], "local:tester", "{answer}");
    answer["run_id"].as_str().unwrap().to_string()
}

/// Polls `get_run` until the run is no longer `running` (at most 60 s).
async fn finished(mcp: &McpManager, run_id: &str) -> Value {
    let start = Instant::now();
    loop {
        let run = call(mcp, "get_run", json!({"run_id": run_id})).await.unwrap();
        if run["status"] != "running" {
            return run;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "run {run_id} still running: {run}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn mcp_serve_offers_exactly_five_tools_none_of_which_approves() {
    let env = Env::new();
    let mcp = client(&env);
    let listing = mcp.tools().await;
    assert!(listing.failures.is_empty(), "{:?}", listing.failures);
    let names: Vec<&str> = listing.tools.iter().map(|t| t.tool.as_str()).collect();
    assert_eq!(names, ["get_run", "list_pending_approvals", "list_runs", "submit_task", "submit_work_request"]);
    let submit = listing.tools.iter().find(|t| t.tool == "submit_task").unwrap();
    assert_eq!(submit.spec.name, "steward__submit_task");
    assert_eq!(submit.spec.input_schema["required"], json!(["workspace", "task"]), "{:?}", submit.spec.input_schema);
    // Asking for a tool that is not offered is refused, not routed somewhere.
    let approve = mcp.call("steward__approve", json!({"approval_id": "apr_x"}), CancellationToken::new()).await;
    assert!(approve.is_err(), "{approve:?}");
}

#[tokio::test]
async fn mcp_serve_runs_a_submitted_classic_task_to_its_answer() {
    let env = Env::new();
    env.write("alpha.txt", "a\n");
    env.write("src/beta.rs", "fn main() {}\n");
    env.git_init();
    let mcp = client(&env);
    let run_id = submit(&mcp, &env, "list files").await;
    assert!(run_id.starts_with("run_"), "{run_id}");
    let run = finished(&mcp, &run_id).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["stop_reason"], "answered", "{run}");
    assert_eq!(run["planner"], "classic", "{run}");
    let answer = run["final"].as_str().unwrap();
    assert!(answer.contains("alpha.txt") && answer.contains("src/"), "{answer}");
    assert!(run["rounds"].as_u64().unwrap() >= 1, "{run}");
    let calls = run["calls"].as_array().unwrap();
    assert!(!calls.is_empty() && calls.iter().all(|c| c["outcome"] == "completed"), "{run}");

    let runs = call(&mcp, "list_runs", json!({"limit": 5})).await.unwrap();
    let listed = &runs["runs"][0];
    assert_eq!(listed["run_id"], run_id.as_str(), "{runs}");
    assert_eq!(listed["task"], "list files");
    assert_eq!(listed["stop_reason"], "answered");
    assert!(chrono::DateTime::parse_from_rfc3339(listed["created_at"].as_str().unwrap()).is_ok());
    // The run is an ordinary one: the CLI shows it too.
    let show = env.steward(&["show", &run_id]);
    assert_eq!(code(&show), 0, "{}", stderr(&show));
}

#[tokio::test]
async fn mcp_serve_call_needing_approval_is_denied_as_no_approver() {
    let env = Env::new();
    env.write("note.txt", "old text\n");
    env.git_init();
    let mcp = client(&env);
    let run_id = submit(&mcp, &env, "replace 'old' with 'new' in note.txt").await;
    let run = finished(&mcp, &run_id).await;
    let calls = run["calls"].as_array().unwrap();
    let edit = calls.iter().find(|c| c["tool"] == "edit").unwrap_or_else(|| panic!("no edit call: {run}"));
    assert_eq!(edit["outcome"], "rejected", "{run}");
    assert_eq!(edit["reason"], "no_approver", "{run}");
    assert!(!calls.iter().any(|c| c["outcome"] == "approved" || c["outcome"] == "completed" && c["tool"] == "edit"));
    assert_eq!(env.read("note.txt"), "old text\n");
    // Nothing waits for an approval afterwards, and the listing is read only.
    let pending = call(&mcp, "list_pending_approvals", json!({"run_id": run_id})).await.unwrap();
    assert_eq!(pending["approvals"], json!([]), "{pending}");
    assert!(pending["note"].as_str().unwrap().contains("not an MCP tool"));
    let outcomes: Vec<_> = audit(&env, &run_id).iter().map(|r| (r["outcome"].clone(), r["policy"].clone())).collect();
    assert!(outcomes.iter().any(|(o, p)| o == "blocked" && p == "no_approver"), "{outcomes:?}");
}

#[tokio::test]
async fn mcp_serve_refuses_bad_arguments_and_hides_other_owners_runs() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    env.git_init();
    // A run of another local user in the same state directory.
    let other = env.command(&["run", "--json", "read a.txt"]).env("USER", "someone").output().unwrap();
    assert_eq!(code(&other), 0, "{}", stderr(&other));
    let other_id = events(&other)[0]["run_id"].as_str().unwrap().to_string();

    let mcp = client(&env);
    let hidden = call(&mcp, "get_run", json!({"run_id": other_id})).await.unwrap_err();
    assert!(hidden.contains("no run"), "{hidden}");
    let runs = call(&mcp, "list_runs", json!({})).await.unwrap();
    assert_eq!(runs["runs"], json!([]), "{runs}");

    let missing = env.dir.path().join("nope").display().to_string();
    let err = call(&mcp, "submit_task", json!({"workspace": missing, "task": "list files"})).await.unwrap_err();
    assert!(err.contains("nope"), "{err}");
    let file = env.ws().join("a.txt").display().to_string();
    let err = call(&mcp, "submit_task", json!({"workspace": file, "task": "list files"})).await.unwrap_err();
    assert!(err.contains("not a directory"), "{err}");
    let ws = env.ws().display().to_string();
    let err = call(&mcp, "submit_task", json!({"workspace": ws, "task": "  "})).await.unwrap_err();
    assert!(err.contains("empty"), "{err}");
    // Unknown fields are refused rather than ignored: nothing rides along as a grant.
    let err =
        call(&mcp, "submit_task", json!({"workspace": ws, "task": "list files", "approve": true})).await.unwrap_err();
    assert!(err.contains("unknown field"), "{err}");
    let err = call(&mcp, "list_runs", json!({"limit": 0})).await.unwrap_err();
    assert!(err.contains("at least 1"), "{err}");
}

#[tokio::test]
async fn mcp_serve_task_text_is_redacted_in_the_store_and_answers() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    env.git_init();
    let secret = "sk-proj-TESTSECRETVALUE1234567890abcdef";
    let mcp = client(&env);
    let run_id = submit(&mcp, &env, &format!("list files; my key is {secret}")).await;
    let run = finished(&mcp, &run_id).await;
    assert!(!run.to_string().contains(secret), "{run}");
    let runs = call(&mcp, "list_runs", json!({})).await.unwrap();
    assert!(!runs.to_string().contains(secret), "{runs}");
    assert!(runs["runs"][0]["task"].as_str().unwrap().starts_with("list files"), "{runs}");
    assert!(!contains_bytes(&db(&env), secret), "secret stored in the database");
}

/// One JSON-RPC message per line to the child, and the next line back as JSON.
fn rpc(stdin: &mut impl std::io::Write, stdout: &mut impl std::io::BufRead, message: Value) -> Option<Value> {
    writeln!(stdin, "{message}").unwrap();
    stdin.flush().unwrap();
    message.get("id")?;
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
}

#[test]
fn mcp_serve_cancels_unfinished_runs_when_the_client_closes_the_session() {
    let env = Env::new();
    env.git_init();
    let slow = env.dir.path().join("slow.toml");
    std::fs::write(&slow, "[[round]]\ntext = \"too late\"\ndelay_ms = 60000\n").unwrap();
    env.user_config(&format!("[providers.slow]\nkind = \"fake\"\nscenario = {:?}\n[run]\nprovider = \"slow\"\n", slow));
    let mut child = env
        .command(&["mcp", "serve"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}});
    let answer = rpc(&mut stdin, &mut reader, init).unwrap();
    assert_eq!(answer["result"]["serverInfo"]["name"], "steward", "{answer}");
    rpc(&mut stdin, &mut reader, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let submit = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "submit_task",
        "arguments": {"workspace": env.ws().display().to_string(), "task": "take your time"}}});
    let answer = rpc(&mut stdin, &mut reader, submit).unwrap();
    let run_id = answer["result"]["structuredContent"]["run_id"].as_str().unwrap_or_else(|| panic!("{answer}"));
    drop(stdin);
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < Duration::from_secs(30), "the server did not exit after stdin closed");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let shown = env.steward(&["show", run_id, "--json"]);
    let record: Value = serde_json::from_str(&stdout(&shown)).unwrap();
    assert_eq!(record["run"]["status"], "cancelled", "{}", record["run"]);
}

/// The MCP Inspector CLI (Node 22) with `steward mcp serve` as its stdio server: whether it
/// exited 0 (it exits 1 for an `isError` result) and its JSON answer.
fn inspector(env: &Env, args: &[&str]) -> (bool, Value) {
    let node = std::env::var("STEWARD_TEST_NODE22")
        .expect("STEWARD_TEST_NODE22 is not set: run the tests through scripts/test.sh");
    let launcher = std::env::var("STEWARD_TEST_MCP_INSPECTOR")
        .expect("STEWARD_TEST_MCP_INSPECTOR is not set: run the tests through scripts/test.sh");
    let node_dir = std::path::Path::new(&node).parent().unwrap().display().to_string();
    let home = format!("STEWARD_HOME={}", env.home().display());
    let xdg = format!("XDG_CONFIG_HOME={}", env.dir.path().join("xdg").display());
    let out = std::process::Command::new(&node)
        .arg(&launcher)
        .args(["--cli", "-e", &home, "-e", &xdg, "-e", "USER=tester", env!("CARGO_BIN_EXE_steward"), "mcp", "serve"])
        .args(args)
        .current_dir(env.ws())
        .env_clear()
        .env("PATH", format!("{node_dir}:{}", std::env::var("PATH").unwrap_or_default()))
        .env("HOME", env.dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let answer = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("inspector {args:?}: not JSON ({e}): {}\n{}", stdout(&out), stderr(&out)));
    (out.status.success(), answer)
}

#[test]
fn peer_mcp_inspector_lists_and_calls_steward_tools() {
    let env = Env::new();
    env.write("alpha.txt", "a\n");
    env.git_init();
    let (ok, listed) = inspector(&env, &["--method", "tools/list"]);
    assert!(ok, "{listed}");
    let names: Vec<&str> = listed["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["submit_task", "list_runs", "get_run", "list_pending_approvals", "submit_work_request"],
        "{listed}"
    );

    let workspace = format!("workspace={}", env.ws().display());
    let (ok, submitted) = inspector(
        &env,
        &["--method", "tools/call", "--tool-name", "submit_task", "--tool-arg", &workspace, "task=list files"],
    );
    assert!(ok && submitted["isError"] == false, "{submitted}");
    let run_id = submitted["structuredContent"]["run_id"].as_str().unwrap_or_else(|| panic!("{submitted}"));
    // The session ended with the call; the quick run was let finish before the server exited.
    let run_arg = format!("run_id={run_id}");
    let (ok, run) = inspector(&env, &["--method", "tools/call", "--tool-name", "get_run", "--tool-arg", &run_arg]);
    assert!(ok, "{run}");
    let run = &run["structuredContent"];
    assert_eq!(run["status"], "completed", "{run}");
    assert!(run["final"].as_str().unwrap().contains("alpha.txt"), "{run}");
    let (ok, err) =
        inspector(&env, &["--method", "tools/call", "--tool-name", "get_run", "--tool-arg", "run_id=run_nope"]);
    assert!(!ok && err["isError"] == true, "{err}");
    assert_eq!(err["content"][0]["text"], "no run `run_nope`", "{err}");
}

#[tokio::test]
async fn mcp_serve_files_a_work_request_that_only_the_owner_approves() {
    let env = Env::new();
    let mcp = client(&env);
    let filed = call(&mcp, "submit_work_request", json!({"repository": "demo", "pr_number": 9, "text": "approve it"}))
        .await
        .unwrap();
    assert_eq!(filed["status"], "open", "{filed}");
    assert!(filed["note"].as_str().unwrap().contains("not an MCP tool"), "{filed}");
    let id = filed["request_id"].as_str().unwrap();
    // The request is the local owner's, open, and shows in `steward ledger list`.
    let listed = env.steward(&["ledger", "list", "--json"]);
    let row: Value = serde_json::from_str(stdout(&listed).trim()).unwrap();
    assert_eq!((row["request"]["id"].as_str(), row["request"]["status"].as_str()), (Some(id), Some("open")));
    assert_eq!(row["request"]["requester"], "local:tester");
    assert_eq!(row["approvals"], json!([]));
    let refused = call(&mcp, "submit_work_request", json!({"repository": "../etc", "pr_number": 1})).await;
    assert!(refused.unwrap_err().contains("repository"));
}
