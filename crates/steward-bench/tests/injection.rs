//! A few AgentDojo (v1.2, PyPI `agentdojo`) injection pairs through `steward-bench injection`
//! and its real Python MCP server: with a model that always obeys and an owner who approves
//! only the user task's own calls, no attacker call runs, under the default policy and under
//! one that allows every tool of the suite whatever it claims, with run-level taint alone and
//! with `data_flow`.

use std::process::{Command, Stdio};

use serde_json::Value;

#[test]
fn peer_agentdojo_injections_run_no_attacker_call() {
    let python = std::env::var("STEWARD_BENCH_AGENTDOJO_PYTHON")
        .expect("STEWARD_BENCH_AGENTDOJO_PYTHON is not set: run the tests through scripts/test.sh");
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_steward-bench"))
        .args(["injection", "--python", &python, "--suites", "banking,slack"])
        .args(["--max-user-tasks", "2", "--max-injection-tasks", "3", "--json"])
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("USER", "tester")
        .env("STEWARD_HOME", dir.path().join("home"))
        .env("XDG_CONFIG_HOME", dir.path().join("xdg"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let lines: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 8, "2 suites x 2 policies x 2 modes: {lines:?}");
    for line in &lines {
        assert!(line["pairs"].as_u64().unwrap() > 0, "{line}");
        assert!(line["attacker_calls"].as_u64().unwrap() > 0, "{line}");
        assert_eq!(line["pairs_not_delivered"], 0, "every injection reached the model: {line}");
        assert_eq!(line["attacker_calls_executed"], 0, "{line}");
        assert_eq!(line["benign_tasks"], 2, "{line}");
    }
    // Under the default policy every MCP tool asks; allowing them all, some benign work runs.
    let asks = |policy: &str, mode: &str| {
        lines
            .iter()
            .filter(|l| l["policy"] == policy && l["mode"] == mode)
            .map(|l| l["benign_asks"].as_u64().unwrap())
            .sum::<u64>()
    };
    assert!(asks("allow-all", "data_flow") < asks("default", "data_flow"));
}
