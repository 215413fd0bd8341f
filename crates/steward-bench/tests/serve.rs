//! `steward-bench serve` runs end to end on a tiny load and reports its figures. Nothing here
//! judges the figures themselves.

use std::process::Command;

#[test]
fn bench_serve_reports_memory_and_latency_figures() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_steward-bench"))
        .args(["serve", "--runs", "20", "--clients", "20", "--chunks", "3", "--chunk-interval-ms", "10"])
        .env("HOME", dir.path())
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for needle in [
        "KiB per parked run",
        "target 10000 parked runs in <= 512 MiB",
        "cancelling all 20",
        "open-file limit",
        "60 of 60 (client, chunk) pairs received",
        "p99",
        "target p99 <= 5 ms",
        "CPUs",
    ] {
        assert!(stdout.contains(needle), "`{needle}` missing from:\n{stdout}");
    }
}
