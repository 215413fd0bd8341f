//! Recovery of the runs of a node that stopped renewing its leases (SPEC H3), on PostgreSQL:
//! another node marks them `interrupted`, expires their pending approvals and records an
//! approved call without outcome as `unknown`; two nodes recovering at once never recover the
//! same run twice; a node that lost its lease (paused or cut off past the TTL) executes no
//! further tool call of the run and does not overwrite the recovery's `interrupted`.
//!
//! The database is a fresh schema of `STEWARD_TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`), dropped at the end; without a reachable
//! PostgreSQL the tests fail (`STEWARD_TEST_SKIP=postgres` opts out: `steward_peers::needs`).

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use steward_store::ApprovalStore;
use steward_store::AuditStore;
use steward_store::RunStore;

use chrono::Utc;
use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{ConnectOptions, Connection};
use steward_config::Config;
use steward_core::ApprovalKey;
use steward_core::EventObserver;
use steward_core::{ExecutingRuns, recover_expired_leases};
use steward_core::{PlannerChoice, RunRequest, Runtime, run_task};
use steward_policy::Redactor;
use steward_protocol::{ApprovalRequest, ApprovalStatus, AuditEntry, AuditOutcome, Event, ToolChoice};
use steward_provider::fake::{FakeProvider, Scenario};
use steward_store::{PgStore, RunRecord, RunStatus, StoreOptions, new_id};
use steward_tools::ToolRegistry;

/// A schema of its own, dropped when this is dropped.
struct Schema {
    connect: PgConnectOptions,
    name: String,
}

impl Schema {
    async fn create() -> Schema {
        let (url, name) = steward_peers::fresh_postgres_schema().await;
        let connect = PgConnectOptions::from_str(&url).unwrap().disable_statement_logging();
        Schema { connect, name }
    }

    async fn node(&self, name: &str) -> PgStore {
        let connect = self.connect.clone().options([("search_path", self.name.as_str())]);
        PgStore::open_with(connect, StoreOptions::default(), name).await.unwrap()
    }

    async fn execute(&self, sql: &str) {
        let connect = self.connect.clone().options([("search_path", self.name.as_str())]);
        let mut conn = PgConnection::connect_with(&connect).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(sql.to_string())).execute(&mut conn).await.unwrap();
        conn.close().await.unwrap();
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        let (connect, name) = (self.connect.clone(), self.name.clone());
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
            runtime.block_on(async {
                let mut conn = PgConnection::connect_with(&connect).await.ok()?;
                sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA IF EXISTS {name} CASCADE")))
                    .execute(&mut conn)
                    .await
                    .ok()?;
                conn.close().await.ok()
            })
        })
        .join();
        if !matches!(dropped, Ok(Some(()))) {
            eprintln!("notice: the test schema could not be dropped");
        }
    }
}

fn running(id: &str) -> RunRecord {
    RunRecord {
        id: id.into(),
        owner_id: "local:alice".into(),
        task: "change the note".into(),
        planner: "model".into(),
        provider: "fake".into(),
        model: "fake".into(),
        workspace: "/work/ws".into(),
        status: RunStatus::Running,
        stop_reason: None,
        final_text: None,
        error_class: None,
        error: None,
        created_at: Utc::now(),
        finished_at: None,
        rounds: 1,
        tool_calls: 1,
        input_tokens: 0,
        output_tokens: 0,
        pid: 4242,
    }
}

fn approved(run_id: &str, call_id: &str) -> AuditEntry {
    AuditEntry {
        agent: "steward".into(),
        run_id: run_id.into(),
        call_id: call_id.into(),
        action: "edit".into(),
        input: serde_json::json!({"path": "note.txt"}),
        policy: "default:write".into(),
        risk: 0.5,
        outcome: AuditOutcome::Approved,
        latency_ms: 3,
        sandbox: String::new(),
        approval_id: String::new(),
        rollback_token: String::new(),
        detail: String::new(),
    }
}

fn pending(run_id: &str) -> ApprovalRequest {
    let now = Utc::now();
    ApprovalRequest {
        id: new_id("apr_"),
        run_id: run_id.into(),
        owner_id: "local:alice".into(),
        call_id: "call_2".into(),
        tool: "edit".into(),
        arguments: serde_json::json!({"path": "note.txt"}),
        reason: "writes".into(),
        rule: "default".into(),
        risk: 0.5,
        preview: String::new(),
        created_at: now,
        expires_at: now + chrono::Duration::minutes(5),
        status: ApprovalStatus::Pending,
    }
}

#[tokio::test]
async fn a_stopped_nodes_run_is_interrupted_its_approval_expired_and_its_approved_call_unknown_on_postgres() {
    let schema = Schema::create().await;
    let dead = schema.node("node-b").await;
    let id = new_id("run_");
    dead.insert_run(&running(&id)).await.unwrap();
    dead.append_audit(approved(&id, "call_1")).await.unwrap();
    dead.upsert_approval(&pending(&id)).await.unwrap();
    let live = schema.node("node-a").await;
    assert!(recover_expired_leases(&live, Duration::from_secs(30)).await.unwrap().runs.is_empty(), "lease valid");
    schema.execute("UPDATE run_leases SET expires_at = now() - interval '1 second'").await;

    let recovered = recover_expired_leases(&live, Duration::from_secs(30)).await.unwrap();
    assert_eq!(recovered.runs, vec![id.clone()]);
    assert_eq!(recovered.unknown_calls, vec![(id.clone(), "call_1".to_string())]);
    let run = live.get_run(&id).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Interrupted);
    assert!(run.error.unwrap_or_default().contains("lease"));
    assert!(live.approvals(&id).await.unwrap().iter().all(|a| a.status == ApprovalStatus::Expired));
    let audit = live.audit_records(Some(&id)).await.unwrap();
    assert_eq!(audit.last().map(|r| r.entry.outcome), Some(AuditOutcome::Unknown));
    assert!(matches!(live.verify_audit().await.unwrap(), steward_store::AuditVerification::Valid { .. }));
    // Once recovered it is no longer running: nobody takes it again.
    schema.execute("UPDATE run_leases SET expires_at = now() - interval '1 second'").await;
    assert!(recover_expired_leases(&dead, Duration::from_secs(30)).await.unwrap().runs.is_empty());
}

#[tokio::test]
async fn two_nodes_recovering_at_once_recover_each_run_once_on_postgres() {
    let schema = Schema::create().await;
    let dead = schema.node("node-dead").await;
    let mut ids = Vec::new();
    for _ in 0..12 {
        let id = new_id("run_");
        dead.insert_run(&running(&id)).await.unwrap();
        dead.append_audit(approved(&id, "call_1")).await.unwrap();
        ids.push(id);
    }
    schema.execute("UPDATE run_leases SET expires_at = now() - interval '1 second'").await;
    let a = schema.node("node-a").await;
    let b = schema.node("node-b").await;
    let ttl = Duration::from_secs(30);
    let (by_a, by_b) = tokio::join!(recover_expired_leases(&a, ttl), recover_expired_leases(&b, ttl));
    let (by_a, by_b) = (by_a.unwrap(), by_b.unwrap());
    let mut all: Vec<String> = by_a.runs.iter().chain(&by_b.runs).cloned().collect();
    all.sort();
    ids.sort();
    assert_eq!(all, ids, "every run recovered exactly once");
    for id in &ids {
        let unknown = a
            .audit_records(Some(id))
            .await
            .unwrap()
            .iter()
            .filter(|r| r.entry.outcome == AuditOutcome::Unknown)
            .count();
        assert_eq!(unknown, 1, "run {id}: one unknown outcome");
    }
}

struct Quiet;

impl EventObserver for Quiet {
    fn on_event(&self, _event: &Event) {}
}

/// A run on node `store` whose planner waits `delay_ms`, then creates `side-effect.txt`, then
/// answers; started in the background. Returns the workspace's directory, the run's id (once
/// stored), the task, and the registry of the runs its runtime executes.
async fn start_slow_run(
    store: PgStore,
    delay_ms: u64,
) -> (tempfile::TempDir, String, tokio::task::JoinHandle<RunRecord>, Arc<ExecutingRuns>) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let scenario = format!(
        r#"
[[round]]
delay_ms = {delay_ms}
text = "Creating."
[[round.tool_call]]
name = "create"
id = "call_w"
arguments = {{ path = "side-effect.txt", content = "written" }}
[[round]]
text = "Done."
"#
    );
    let provider = Arc::new(FakeProvider::new(Scenario::from_toml(&scenario).unwrap()));
    let store: Arc<dyn steward_store::Store> = Arc::new(store);
    let runtime = Runtime::new(dir.path(), store.clone(), Redactor::new(Vec::new()), ApprovalKey::generate());
    let executing = runtime.executing.clone();
    let run_id = new_id("run_");
    let request = RunRequest {
        task: "create the file".into(),
        owner_id: "local:alice".into(),
        workspace: ws,
        planner: PlannerChoice {
            kind: "model".into(),
            provider,
            model: "fake".into(),
            tool_choice: ToolChoice::Auto,
            max_tokens: None,
        },
        config: Config::default(),
        tools: ToolRegistry::builtin(),
        approver: Arc::new(crate::common::Yes),
        observer: Arc::new(Quiet),
        cancel: tokio_util::sync::CancellationToken::new(),
        history: Vec::new(),
        attachments: Vec::new(),
        run_id: Some(run_id.clone()),
        roles: None,
    };
    let task = tokio::spawn(async move { run_task(&runtime, request).await.unwrap() });
    // Wait until the run is stored (and so holds its lease).
    for _ in 0..100 {
        if store.get_run(&run_id).await.unwrap().is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (dir, run_id, task, executing)
}

/// The run ended on `store` as the recovering node left it, without the side effect.
async fn assert_recovered_without_side_effect(store: &PgStore, dir: &tempfile::TempDir, id: &str, ended: &RunRecord) {
    assert!(!dir.path().join("ws/side-effect.txt").exists(), "the call ran after the run was taken over");
    assert_eq!(ended.status, RunStatus::Interrupted, "{ended:?}");
    let stored = store.get_run(id).await.unwrap().unwrap();
    assert_eq!(stored.status, RunStatus::Interrupted);
    assert!(stored.error.unwrap_or_default().contains("recovered by another node"), "the recovery's record stays");
    let audit = store.audit_records(Some(id)).await.unwrap();
    assert!(
        audit.iter().all(|r| !matches!(r.entry.outcome, AuditOutcome::Approved | AuditOutcome::Completed)),
        "{:?}",
        audit.iter().map(|r| r.entry.outcome).collect::<Vec<_>>()
    );
    assert!(matches!(store.verify_audit().await.unwrap(), steward_store::AuditVerification::Valid { .. }));
}

#[tokio::test]
async fn a_run_taken_over_by_another_node_runs_no_further_call_and_keeps_its_recovery_on_postgres() {
    let schema = Schema::create().await;
    let paused = schema.node("node-b").await;
    let (dir, id, task, _executing) = start_slow_run(paused.clone(), 1500).await;
    // While node b's planner waits, its lease expires and node a recovers the run.
    schema.execute("UPDATE run_leases SET expires_at = now() - interval '1 second'").await;
    let live = schema.node("node-a").await;
    let recovered = recover_expired_leases(&live, Duration::from_secs(30)).await.unwrap();
    assert_eq!(recovered.runs, vec![id.clone()]);
    // Node b resumes: its next call must not run, and its end must not overwrite `interrupted`.
    let ended = tokio::time::timeout(Duration::from_secs(20), task).await.unwrap().unwrap();
    assert_recovered_without_side_effect(&live, &dir, &id, &ended).await;
    let audit = live.audit_records(Some(&id)).await.unwrap();
    assert!(
        audit.iter().any(|r| r.entry.outcome == AuditOutcome::Blocked && r.entry.detail.contains("not executed")),
        "the refused call is on record"
    );
}

#[tokio::test]
async fn the_lease_keeper_cancels_a_run_another_node_took_over_on_postgres() {
    let schema = Schema::create().await;
    let paused = schema.node("node-b").await;
    let (dir, id, task, executing) = start_slow_run(paused.clone(), 60_000).await;
    assert!(executing.cancel_lost(&paused).await.unwrap().is_empty(), "still its own");
    schema.execute("UPDATE run_leases SET expires_at = now() - interval '1 second'").await;
    let live = schema.node("node-a").await;
    assert_eq!(recover_expired_leases(&live, Duration::from_secs(30)).await.unwrap().runs, vec![id.clone()]);
    // The planner would wait a minute; the lease check stops the run at once.
    assert_eq!(executing.cancel_lost(&paused).await.unwrap(), vec![id.clone()]);
    let ended = tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap();
    assert!(executing.ids().is_empty(), "an ended run leaves its runtime's registry");
    assert_recovered_without_side_effect(&live, &dir, &id, &ended).await;
}
