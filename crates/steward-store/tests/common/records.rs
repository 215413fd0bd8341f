//! Records the storage tests write: runs, audit entries and events with fixed contents, and
//! helpers for audit chains.

use std::path::Path;

use chrono::Utc;
use serde_json::json;
use steward_protocol::{AuditEntry, AuditOutcome, Event, EventKind, Timestamp};
use steward_store::{AuditVerification, RunRecord, RunStatus, SqliteStore, Store, StoreOptions};

/// A SQLite store at `path` with default options.
pub async fn open(path: &Path) -> SqliteStore {
    SqliteStore::open(path, StoreOptions::default()).await.unwrap()
}

/// A running run `id` of `local:alice`, created at `created_at`.
pub fn run(id: &str, created_at: Timestamp) -> RunRecord {
    RunRecord {
        id: id.into(),
        owner_id: "local:alice".into(),
        task: "fix the tests".into(),
        planner: "model".into(),
        provider: "openai".into(),
        model: "gpt-x".into(),
        workspace: "/work/ws".into(),
        status: RunStatus::Running,
        stop_reason: None,
        final_text: None,
        error_class: None,
        error: None,
        created_at,
        finished_at: None,
        rounds: 0,
        tool_calls: 0,
        input_tokens: 0,
        output_tokens: 0,
        pid: 4242,
    }
}

/// Audit entry number `n` of run `run_id` (an edit, completed).
pub fn entry(run_id: &str, n: u64) -> AuditEntry {
    AuditEntry {
        agent: "steward".into(),
        run_id: run_id.into(),
        call_id: format!("call_{n}"),
        action: "edit".into(),
        input: json!({"path": "src/main.rs", "n": n, "nested": {"b": 1, "a": [true, null, 1.5]}}),
        policy: "default:medium".into(),
        risk: 0.5,
        outcome: AuditOutcome::Completed,
        latency_ms: n,
        sandbox: "workspace-write".into(),
        approval_id: String::new(),
        rollback_token: format!("rb_{n}"),
        detail: "ok".into(),
    }
}

/// Event `seq` of run `run_id`, of one of three kinds by `seq`.
pub fn event(run_id: &str, seq: u64) -> Event {
    let kind = match seq % 3 {
        0 => EventKind::StageChunk { stage: "planner".into(), text: format!("chunk {seq} é漢") },
        1 => EventKind::ToolRequested {
            call_id: format!("call_{seq}"),
            tool: "read".into(),
            arguments: json!({"path": "a.txt"}),
        },
        _ => EventKind::StageStarted { stage: "planner".into(), round: seq as u32 },
    };
    Event { run_id: run_id.into(), seq, at: Utc::now(), kind }
}

/// Appends `n` entries of run `run_a` to the audit chain.
pub async fn chain_of(store: &dyn Store, n: u64) {
    for i in 1..=n {
        store.append_audit(entry("run_a", i)).await.unwrap();
    }
}

/// Where and why a chain is broken; panics on a valid one.
pub fn broken(v: AuditVerification) -> (u64, String, String) {
    match v {
        AuditVerification::Broken { seq, id, problem } => (seq, id, problem),
        AuditVerification::Valid { records } => panic!("expected a broken chain, got {records} valid records"),
    }
}
