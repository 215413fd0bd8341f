//! `steward-bench generated` runs end to end with tiny sizes (the program as its own tool
//! worker, a tool generated and reused) and prints every figure it promises. Nothing here
//! judges the figures themselves.

use std::process::Command;

#[test]
fn the_generated_tool_measurements_run_with_tiny_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_steward-bench"))
        .args(["generated", "--calls", "2", "--runs", "1"])
        .env("HOME", dir.path())
        .env("TMPDIR", dir.path())
        .env_remove("STEWARD_TOOL_WORKER")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for needle in [
        "worker sandbox profile: ",
        "interpreter in this process (no worker, no sandbox), one call: p50 ",
        "sandboxed worker process started + one call (what each call of a generated tool costs): p50 ",
        "worker start-up and sandbox alone (p50 difference): ",
        "planner names the unknown tool -> generated tool's first call completed: p50 ",
        "of which that first call (requested -> completed: policy, approval, worker, audit): p50 ",
        "later run: planner names the registered tool -> call completed: p50 ",
    ] {
        assert!(stdout.contains(needle), "`{needle}` missing from:\n{stdout}");
    }
}
