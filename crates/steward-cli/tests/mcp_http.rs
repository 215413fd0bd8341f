//! `/mcp` of `steward serve` driven by the MCP Inspector CLI (Node 22) over streamable HTTP,
//! with bearer tokens made by `steward mcp token create`: the tools a token's scopes allow,
//! a run submitted and read back as the local owner, and revocation.

use crate::common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// Starts `steward serve` and returns it with the URL of its `/mcp`.
fn serve(env: &Env) -> (Served, String) {
    let served = env.serve(&[]);
    let url = format!("{}/mcp", served.base);
    (served, url)
}

/// Makes a token with `steward mcp token create`; answers `(id, secret)`.
fn create_token(env: &Env, args: &[&str]) -> (String, String) {
    let out = env.steward(&[&["mcp", "token", "create"], args].concat());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let secret = stdout(&out).trim().to_string();
    assert!(secret.starts_with("stw_") && secret.len() == 68, "only the token on stdout: {secret}");
    let err = stderr(&out);
    assert!(err.contains("will not be shown again"), "{err}");
    let id = err.split_whitespace().find(|w| w.starts_with("mtk_")).unwrap().trim_end_matches(';').to_string();
    (id, secret)
}

/// The Inspector CLI against `url` with `token` as bearer: whether it exited 0, and its stdout
/// (its errors are JSON on stderr).
fn inspector(env: &Env, url: &str, token: Option<&str>, args: &[&str]) -> (bool, String) {
    let (ok, out, _) = inspector_out(env, url, token, args);
    (ok, out)
}

/// [`inspector`] with its stderr.
fn inspector_out(env: &Env, url: &str, token: Option<&str>, args: &[&str]) -> (bool, String, String) {
    let node = std::env::var("STEWARD_TEST_NODE22")
        .expect("STEWARD_TEST_NODE22 is not set: run the tests through scripts/test.sh");
    let launcher = std::env::var("STEWARD_TEST_MCP_INSPECTOR")
        .expect("STEWARD_TEST_MCP_INSPECTOR is not set: run the tests through scripts/test.sh");
    let node_dir = std::path::Path::new(&node).parent().unwrap().display().to_string();
    let mut command = std::process::Command::new(&node);
    command.arg(&launcher).args(["--cli", url, "--transport", "http"]);
    if let Some(token) = token {
        command.args(["--header", &format!("Authorization: Bearer {token}")]);
    }
    let out = command
        .args(args)
        .current_dir(env.ws())
        .env_clear()
        .env("PATH", format!("{node_dir}:{}", std::env::var("PATH").unwrap_or_default()))
        .env("HOME", env.dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (out.status.success(), stdout(&out), stderr(&out))
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn tool_names(listed: &str) -> Vec<String> {
    json(listed)["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

#[test]
fn peer_mcp_inspector_http_lists_and_calls_tools_with_a_bearer_token() {
    let env = Env::new();
    env.write("alpha.txt", "a\n");
    env.git_init();
    let (_, submitter) = create_token(&env, &["--name", "inspector", "--scope", "read,submit"]);
    let (reader_id, reader) = create_token(&env, &[]);
    let listed = env.steward(&["mcp", "token", "list", "--json"]);
    let lines: Vec<Value> = stdout(&listed).lines().map(json).collect();
    assert_eq!(lines.len(), 2, "{}", stdout(&listed));
    assert_eq!((lines[1]["id"].as_str(), lines[1]["scopes"].clone()), (Some(reader_id.as_str()), json("[\"read\"]")));
    assert_eq!(lines[0]["owner_id"], "local:tester");
    assert!(!stdout(&listed).contains(&submitter) && !stdout(&listed).contains(&reader), "no secret is listed");

    let (_server, url) = serve(&env);
    let (ok, listed) = inspector(&env, &url, Some(&submitter), &["--method", "tools/list"]);
    assert!(ok, "{listed}");
    assert_eq!(
        tool_names(&listed),
        ["submit_task", "list_runs", "get_run", "list_pending_approvals", "submit_work_request"]
    );
    let (ok, listed) = inspector(&env, &url, Some(&reader), &["--method", "tools/list"]);
    assert!(ok, "{listed}");
    assert_eq!(tool_names(&listed), ["list_runs", "get_run", "list_pending_approvals"]);

    let workspace = format!("workspace={}", env.ws().display());
    let submit = ["--method", "tools/call", "--tool-name", "submit_task", "--tool-arg", &workspace, "task=list files"];
    // The read token's tools/list has no submit_task, so the Inspector does not even call it.
    let (ok, _, refused) = inspector_out(&env, &url, Some(&reader), &submit);
    assert!(!ok && refused.contains("tool_not_found"), "{refused}");
    let (ok, submitted) = inspector(&env, &url, Some(&submitter), &submit);
    assert!(ok, "{submitted}");
    let submitted = json(&submitted);
    assert_eq!(submitted["structuredContent"]["owner_id"], "local:tester", "{submitted}");
    let run_id = submitted["structuredContent"]["run_id"].as_str().unwrap().to_string();

    // The run executes in the server; read it back with the read-only token.
    let run_arg = format!("run_id={run_id}");
    let start = Instant::now();
    let run = loop {
        let (ok, run) = inspector(
            &env,
            &url,
            Some(&reader),
            &["--method", "tools/call", "--tool-name", "get_run", "--tool-arg", &run_arg],
        );
        assert!(ok, "{run}");
        let run = json(&run)["structuredContent"].clone();
        if run["status"] == "completed" {
            break run;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "run {run_id} did not complete: {run}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(run["final"].as_str().unwrap().contains("alpha.txt"), "{run}");
    let shown = env.steward(&["show", &run_id, "--json"]);
    assert_eq!(json(&stdout(&shown))["run"]["owner_id"], "local:tester");

    // Without a token, and once revoked, the endpoint refuses.
    let (ok, _, err) = inspector_out(&env, &url, None, &["--method", "tools/list"]);
    assert!(!ok && err.contains("auth_required"), "no token: {err}");
    let revoked = env.steward(&["mcp", "token", "revoke", &reader_id]);
    assert_eq!(code(&revoked), 0, "{}", stderr(&revoked));
    assert!(stdout(&revoked).contains(&format!("revoked {reader_id}")), "{}", stdout(&revoked));
    let (ok, _, err) = inspector_out(&env, &url, Some(&reader), &["--method", "tools/list"]);
    assert!(!ok && err.contains("auth_required"), "a revoked token: {err}");
    let again = env.steward(&["mcp", "token", "revoke", &reader_id]);
    assert!(stdout(&again).contains("already revoked"), "{}", stdout(&again));
    let missing = env.steward(&["mcp", "token", "revoke", "mtk_nope"]);
    assert_eq!(code(&missing), 2, "{}", stderr(&missing));
    let (ok, listed) = inspector(&env, &url, Some(&submitter), &["--method", "tools/list"]);
    assert!(ok, "the other token still works: {listed}");
}
