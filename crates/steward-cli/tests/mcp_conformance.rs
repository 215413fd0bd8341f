//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, on Node 22) in
//! client mode against Steward's MCP client: every client scenario runs
//! `steward mcp conformance-client URL` against the suite's test server. The scenarios Steward
//! is expected to fail are listed with their reasons in `tests/mcp-conformance/expected-failures.yml`;
//! the suite fails the run on any other failure and on a listed scenario that passes.

use std::path::Path;
use std::process::Command;

use steward_peers::required_env;

/// Scenarios that must pass (the suite's summary marks them `✓`): every client scenario but
/// the two OAuth ones listed as expected failures.
const MUST_PASS: &[&str] = &[
    "initialize",
    "tools_call",
    "sse-retry",
    "elicitation-sep1034-client-defaults",
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
];

fn baseline() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-conformance/expected-failures.yml")
}

#[test]
fn expected_failures_are_only_oauth_each_with_its_reason() {
    let text = std::fs::read_to_string(baseline()).unwrap();
    let entries: Vec<(&str, &str)> = text
        .lines()
        .filter_map(|line| {
            let (entry, comment) = line.split_once('#').unwrap_or((line, ""));
            entry.trim().strip_prefix("- ").map(|entry| (entry.trim(), comment.trim()))
        })
        .collect();
    assert!(!entries.is_empty(), "{text}");
    for (entry, reason) in &entries {
        assert!(entry.starts_with("auth/"), "unexpected baseline entry {entry}: only OAuth extensions may fail");
        assert!(reason.starts_with("OAuth:") && reason.len() > "OAuth: ".len(), "{entry} states no reason: {reason:?}");
        assert!(!MUST_PASS.contains(entry), "{entry} must pass");
    }
}

/// Runs the suite in client mode with `selection` (`--suite all`, `--scenario NAME`) and the
/// baseline: `(whether it exited 0, its stdout and stderr)`.
fn run_suite(selection: &[&str]) -> (bool, String) {
    let node = required_env("STEWARD_TEST_NODE22");
    let suite = required_env("STEWARD_TEST_MCP_CONFORMANCE");
    let steward = env!("CARGO_BIN_EXE_steward");
    // The suite splits `--command` at spaces.
    assert!(!steward.contains(' '), "the steward binary's path contains a space: {steward}");
    let dir = tempfile::tempdir().unwrap();
    let node_dir = Path::new(&node).parent().unwrap().display().to_string();
    let out = Command::new(&node)
        .arg(&suite)
        .arg("client")
        .args(selection)
        .args(["--timeout", "20000"])
        .arg("--command")
        .arg(format!("{steward} mcp conformance-client"))
        .arg("--expected-failures")
        .arg(baseline())
        .arg("--output-dir")
        .arg(dir.path().join("results"))
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", format!("{node_dir}:{}", std::env::var("PATH").unwrap_or_default()))
        .env("HOME", dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

/// The scenario whose check is a timing: the client must reconnect within 200 ms of the
/// server's `retry` delay, which a busy machine running every other scenario at once can miss.
const TIMED: &str = "sse-retry";

#[test]
fn peer_mcp_conformance_client() {
    // The timed scenario alone, with nothing else running: it must pass without a warning.
    let (ok, alone) = run_suite(&["--scenario", TIMED]);
    assert!(ok && alone.contains("0 failed, 0 warnings"), "{TIMED} alone:\n{alone}");

    let (ok, all) = run_suite(&["--suite", "all"]);
    if !ok {
        // Only a late reconnection of the timed scenario under the load of the whole suite
        // (a warning, no failed check) is let through; every other outcome fails.
        let unexpected: Vec<&str> = all
            .lines()
            .filter(|line| line.starts_with("✗ "))
            .filter(|line| !baseline_entries().iter().any(|entry| line.starts_with(&format!("✗ {entry}: "))))
            .collect();
        let late_only = unexpected.iter().all(|line| {
            line.starts_with(&format!("✗ {TIMED}: ")) && line.contains(" 0 failed, ") && line.contains("warning")
        });
        assert!(late_only, "conformance suite failed:\n{all}");
    } else {
        assert!(all.contains("Baseline check passed"), "{all}");
    }
    for scenario in MUST_PASS.iter().filter(|s| **s != TIMED) {
        assert!(all.contains(&format!("✓ {scenario}: ")), "{scenario} did not pass:\n{all}");
    }
    for entry in baseline_entries() {
        assert!(all.contains(&format!("✗ {entry}: ")), "{entry} is listed as failing but did not fail:\n{all}");
    }
}

/// The scenarios `expected-failures.yml` lists.
fn baseline_entries() -> Vec<String> {
    let text = std::fs::read_to_string(baseline()).unwrap();
    text.lines()
        .filter_map(|line| line.split('#').next()?.trim().strip_prefix("- ").map(|e| e.trim().to_string()))
        .collect()
}
