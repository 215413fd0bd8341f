//! `steward-bench` without a mode runs end to end with tiny sizes and prints every figure it
//! promises. Nothing here judges the figures themselves.

use std::process::Command;

#[test]
fn the_step_policy_and_audit_measurements_run_with_tiny_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_steward-bench"))
        .args(["--steps", "2", "--runs", "2", "--concurrency", "2", "--audit-records", "300", "--sandbox-steps", "0"])
        .args(["--policy-iterations", "20"])
        .env("HOME", dir.path())
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for needle in [
        "opened as `steward run` opens them",
        "audit not forced to disk",
        "durable audit (synchronous=FULL), one run at a time",
        "concurrent runs share commits",
        "policy decision",
        "audit append, durable, one record per commit",
        "audit append, durable, batches of 100 (group commit)",
        "audit verify (read, decode and re-hash 500 records)",
    ] {
        assert!(stdout.contains(needle), "`{needle}` missing from:\n{stdout}");
    }
}

/// `steward-bench --help` and an unknown mode behave like any command-line tool.
#[test]
fn help_lists_the_modes_and_a_bad_option_is_a_usage_error() {
    let help = Command::new(env!("CARGO_BIN_EXE_steward-bench")).arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(help.status.success(), "{text}");
    for mode in ["serve", "nodes", "ledger", "sandbox", "generated", "injection"] {
        assert!(text.contains(mode), "`{mode}` missing from --help:\n{text}");
    }
    let bad = Command::new(env!("CARGO_BIN_EXE_steward-bench")).arg("--no-such-option").output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

/// docs/reference/bench.md is what the code generates now (`scripts/reference.sh` rewrites it).
#[test]
fn the_reference_page_is_current() {
    let out = Command::new(env!("CARGO_BIN_EXE_steward-bench")).arg("reference").output().unwrap();
    assert!(out.status.success());
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reference/bench.md");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == String::from_utf8_lossy(&out.stdout),
        "docs/reference/bench.md is stale: run scripts/reference.sh and commit the result"
    );
}
