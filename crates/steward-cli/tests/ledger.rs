//! `steward ledger request|list|approve|revoke` with the real binary on its own state
//! directory: the local owner files, approves (pinned) and revokes; bad input is a usage error;
//! every change is in the audit chain.

use crate::common;

use common::{Env, stderr, stdout};
use serde_json::Value;

const HEAD: &str = "0123456789abcdef0123456789abcdef01234567";

fn listed(env: &Env) -> Vec<Value> {
    let out = env.steward(&["ledger", "list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn the_local_owner_requests_approves_and_revokes() {
    let env = Env::new();
    let out = env.steward(&["ledger", "list"]);
    assert!(stdout(&out).contains("no work requests"), "{}", stdout(&out));
    let out = env.steward(&["ledger", "request", "--repo", "demo", "--pr", "7", "--text", "what changed?", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let request: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(request["requester"], "local:tester");
    assert_eq!((request["status"].as_str(), request["pr_number"].as_u64()), (Some("open"), Some(7)));
    let id = request["id"].as_str().unwrap();

    for (args, why) in [
        (vec!["ledger", "approve", id, "--head", "abc"], "40 hex"),
        (vec!["ledger", "approve", id, "--head", HEAD, "--expires-in", "2d"], "1 to 86400 seconds"),
        (vec!["ledger", "approve", id, "--head", HEAD, "--expires-in", "soon"], "--expires-in"),
        (
            vec!["ledger", "approve", id, "--head", HEAD, "--revision", "2"],
            "there is no revision 2; the request is at revision 1",
        ),
        (vec!["ledger", "approve", "wrq_missing", "--head", HEAD], "no work request"),
        (vec!["ledger", "request", "--repo", "../x", "--pr", "1"], "repository"),
    ] {
        let out = env.steward(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(why), "{args:?}: {}", stderr(&out));
    }

    let out = env.steward(&["ledger", "approve", id, "--head", HEAD, "--expires-in", "30m"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains(HEAD), "{}", stdout(&out));
    let rows = listed(&env);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["request"]["status"], "approved");
    let approval = &rows[0]["approvals"][0];
    assert_eq!((approval["head_sha"].as_str(), approval["revision"].as_u64()), (Some(HEAD), Some(1)));
    assert_eq!((approval["scope"].as_str(), approval["approved_by"].as_str()), (Some("read"), Some("local:tester")));

    let out = env.steward(&["ledger", "revoke", id]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(listed(&env)[0]["request"]["epoch"], 2);
    let out = env.steward(&["ledger", "revoke", id]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("already revoked"), "{}", stderr(&out));

    let out = env.steward(&["audit", "list"]);
    let actions: Vec<String> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["run_id"] == id)
        .map(|r| r["action"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(actions, ["ledger_request", "ledger_approve", "ledger_approve", "ledger_revoke", "ledger_revoke"]);
    let out = env.steward(&["audit", "verify"]);
    assert!(out.status.success(), "{}", stdout(&out));
}

#[test]
fn hub_tokens_are_made_with_the_hub_scope() {
    let env = Env::new();
    let out = env.steward(&["mcp", "token", "create", "--name", "hub", "--scope", "hub"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).trim().starts_with("stw_"));
    let out = env.steward(&["mcp", "token", "list", "--json"]);
    let token: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(token["scopes"], serde_json::json!(["hub"]));
    let out = env.steward(&["mcp", "token", "create", "--scope", "approve"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("read, submit, hub"), "{}", stderr(&out));
}
