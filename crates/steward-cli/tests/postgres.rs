//! `steward` with its state in PostgreSQL (`STEWARD_DATABASE_URL`): a run is stored there and
//! read back by `steward runs` and `steward audit verify`; crash recovery leaves other nodes'
//! runs alone; a URL of another kind is a usage error that does not repeat the value.
//!
//! Each test gets a fresh schema of the database named by `STEWARD_TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`), dropped at the end. When PostgreSQL cannot be
//! reached the tests fail (`STEWARD_TEST_SKIP=postgres` opts out: `steward_peers::needs`).

use crate::common;

use std::str::FromStr;

use common::*;
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection};

/// A schema of its own in the test database, dropped when this is dropped.
struct Schema {
    runtime: tokio::runtime::Runtime,
    base: String,
    name: String,
}

impl Schema {
    fn create() -> Schema {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (base, name) = runtime.block_on(steward_peers::fresh_postgres_schema());
        Schema { runtime, base, name }
    }

    /// The URL `steward` gets: the test database with this schema first on the search path.
    fn url(&self) -> String {
        steward_peers::with_search_path(&self.base, &self.name)
    }

    /// Runs one statement in the schema; returns the first column of the first row, if any.
    fn query(&self, sql: &str) -> Option<String> {
        self.runtime.block_on(async {
            let connect = PgConnectOptions::from_str(&self.url()).unwrap();
            let mut conn = PgConnection::connect_with(&connect).await.unwrap();
            let row: Option<(String,)> =
                sqlx::query_as(sqlx::AssertSqlSafe(sql.to_string())).fetch_optional(&mut conn).await.unwrap();
            conn.close().await.unwrap();
            row.map(|(value,)| value)
        })
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        let sql = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name);
        let dropped = self.runtime.block_on(async {
            let connect = PgConnectOptions::from_str(&self.base).ok()?;
            let mut conn = PgConnection::connect_with(&connect).await.ok()?;
            sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut conn).await.ok()?;
            conn.close().await.ok()
        });
        if dropped.is_none() {
            eprintln!("notice: the test schema {} could not be dropped", self.name);
        }
    }
}

fn steward_pg(env: &Env, url: &str, args: &[&str]) -> std::process::Output {
    env.command(args).env("STEWARD_DATABASE_URL", url).output().unwrap()
}

#[test]
fn a_run_is_stored_in_postgres_and_read_back_by_runs_and_audit_verify() {
    let schema = Schema::create();
    let url = schema.url();
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    env.write("b.txt", "beta\n");

    let out = steward_pg(&env, &url, &["run", "--json", "list files"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let run_id = evs[0]["run_id"].as_str().unwrap().to_string();
    assert!(find(&evs, "run_completed")["final"].as_str().unwrap().contains("a.txt"));
    assert!(!db(&env).exists(), "nothing is written to steward.db");

    let runs = steward_pg(&env, &url, &["runs"]);
    assert_eq!(code(&runs), 0, "{}", stderr(&runs));
    assert!(stdout(&runs).contains(&run_id), "{}", stdout(&runs));
    assert!(stdout(&runs).contains("completed"), "{}", stdout(&runs));

    let verify = steward_pg(&env, &url, &["audit", "verify"]);
    assert_eq!(code(&verify), 0, "{}{}", stdout(&verify), stderr(&verify));
    let records = schema.query("SELECT COUNT(*)::TEXT FROM audit").unwrap();
    assert_ne!(records, "0");
    assert!(stdout(&verify).contains(&format!("valid: {records} records")), "{}", stdout(&verify));

    // The rows are in this schema, stamped with this machine's node.
    assert_eq!(schema.query(&format!("SELECT node FROM runs WHERE id = '{run_id}'")), Some(steward_store::host_node()));
    let shown = schema.query(&format!("SELECT COUNT(*)::TEXT FROM events WHERE run_id = '{run_id}'")).unwrap();
    assert_eq!(shown, evs.len().to_string(), "every event was stored");

    // Without the variable the SQLite file is used, and it knows nothing of the run.
    let local = env.steward(&["runs"]);
    assert_eq!(code(&local), 0, "{}", stderr(&local));
    assert!(!stdout(&local).contains(&run_id));
}

#[test]
fn recovery_leaves_other_nodes_runs_alone_on_postgres() {
    let schema = Schema::create();
    let url = schema.url();
    let env = Env::new();
    // Opening once creates the schema.
    assert_eq!(code(&steward_pg(&env, &url, &["runs"])), 0);
    // A process id no machine uses: the run's process is gone wherever it was.
    let dead_pid = i32::MAX - 7;
    let here = steward_store::host_node();
    for (id, node) in [("run_here", here.as_str()), ("run_elsewhere", "another-node")] {
        schema.query(&format!(
            "INSERT INTO runs (id, owner_id, task, planner, provider, model, workspace, status, created_at, \
             rounds, tool_calls, input_tokens, output_tokens, pid, node) VALUES ('{id}', 'local:tester', 'list files', \
             'classic', '', '', '/ws', 'running', '2026-01-02T03:04:05.000000000Z', 0, 0, 0, 0, {dead_pid}, '{node}')"
        ));
    }
    let out = steward_pg(&env, &url, &["runs"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("run run_here was interrupted"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("run_elsewhere"), "{}", stderr(&out));
    let status = |id: &str| schema.query(&format!("SELECT status FROM runs WHERE id = '{id}'"));
    assert_eq!(status("run_here").as_deref(), Some("interrupted"));
    assert_eq!(status("run_elsewhere").as_deref(), Some("running"), "another node's run is not judged here");
}

#[test]
fn a_database_url_of_another_kind_is_a_usage_error_that_hides_the_value() {
    let env = Env::new();
    for url in ["mysql://steward:hunter2@db.example/steward", "hunter2", "sqlite:///tmp/x.db"] {
        let out = env.command(&["runs"]).env("STEWARD_DATABASE_URL", url).output().unwrap();
        assert_eq!(code(&out), 2, "{}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("STEWARD_DATABASE_URL") && err.contains("postgres://"), "{err}");
        assert!(!err.contains("hunter2") && !err.contains("/tmp/x.db"), "{err}");
    }
    // An unreachable server: the message names the variable and the database, not the password.
    let out = env
        .command(&["runs"])
        .env("STEWARD_DATABASE_URL", "postgres://steward:hunter2@127.0.0.1:1/ledger")
        .output()
        .unwrap();
    assert_ne!(code(&out), 0);
    let err = stderr(&out);
    assert!(err.contains("STEWARD_DATABASE_URL") && err.contains("postgres://steward@127.0.0.1:1/ledger"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
    assert!(!db(&env).exists(), "no SQLite file is made instead");
}

/// The anchor of a PostgreSQL database (`$STEWARD_HOME/audit-<hash>.anchor`) works as
/// SQLite's: removed, `audit verify` fails with "anchor missing" until the recorded reset.
#[test]
fn a_removed_postgres_audit_anchor_fails_verification_until_a_recorded_reset() {
    let schema = Schema::create();
    let url = schema.url();
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    assert_eq!(code(&steward_pg(&env, &url, &["run", "read a.txt"])), 0);
    assert_eq!(code(&steward_pg(&env, &url, &["audit", "verify"])), 0);
    let anchors: Vec<_> = std::fs::read_dir(env.home())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("audit-"))
        .collect();
    assert_eq!(anchors.len(), 1, "one anchor for the database: {anchors:?}");
    std::fs::remove_file(&anchors[0]).unwrap();
    let bad = steward_pg(&env, &url, &["audit", "verify"]);
    assert_eq!(code(&bad), 1, "{}", stdout(&bad));
    assert!(stdout(&bad).contains("anchor missing"), "{}", stdout(&bad));
    let reset = steward_pg(&env, &url, &["audit", "anchor", "--reset"]);
    assert_eq!(code(&reset), 0, "{}{}", stdout(&reset), stderr(&reset));
    assert_eq!(code(&steward_pg(&env, &url, &["audit", "verify"])), 0);
    let action = schema.query("SELECT action FROM audit ORDER BY seq DESC LIMIT 1");
    assert_eq!(action.as_deref(), Some("audit_anchor_reset"));
}
