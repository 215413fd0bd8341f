//! `steward-bench nodes` runs end to end on a few events against the test database
//! (`STEWARD_TEST_DATABASE_URL`, default `postgres://postgres@127.0.0.1:5432/test`) and reports
//! its figures; its temporary schema is gone afterwards. Nothing here judges the figures. When
//! PostgreSQL cannot be reached the test fails (`STEWARD_TEST_SKIP=postgres` opts out).

use std::process::Command;

#[test]
fn bench_nodes_reports_cross_node_latency_on_postgres_and_drops_its_schema() {
    steward_peers::needs::require(steward_peers::Need::Postgres);
    let url = steward_peers::test_database_url();
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_steward-bench"))
        .args(["nodes", "--events", "20", "--database-url", &url])
        .env_clear()
        .env("HOME", dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() && stderr.contains("cannot connect") {
        steward_peers::needs::unavailable(steward_peers::Need::Postgres, stderr.trim());
    }
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for needle in [
        "cross-node event latency",
        "20 events one at a time",
        "node 1 commit alone",
        "notice received on node 2: p50",
        "notice + event read back on node 2: p50",
        "p99",
    ] {
        assert!(stdout.contains(needle), "`{needle}` missing from:\n{stdout}");
    }
    assert!(!stderr.contains("could not be dropped"), "{stderr}");
}
