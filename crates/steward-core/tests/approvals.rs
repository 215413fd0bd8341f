//! The agent loop with the scripted fake provider: approval outcomes as a scenario table,
//! owner binding, forged tokens, expiry, limits, and calls that must never run.

use std::sync::Arc;

use crate::common::Recorder;
use async_trait::async_trait;
use steward_config::Config;
use steward_core::ManualClock;
use steward_core::{ApprovalAnswer, ApprovalKey, ApprovalScope, Approver};
use steward_core::{PlannerChoice, RunRequest, Runtime, run_task};
use steward_policy::Redactor;
use steward_protocol::{ApprovalRequest, AuditOutcome, Event, EventKind, StopReason, ToolChoice};
use steward_provider::fake::{FakeProvider, Scenario};
use steward_store::{RunStatus, SqliteStore, Store};
use steward_tools::ToolRegistry;
use tokio_util::sync::CancellationToken;

/// What the scripted owner does when asked.
#[derive(Clone, Copy, Debug)]
enum Owner {
    Approves,
    ApprovesForTheRun,
    ApprovesForTheWorkspace,
    Rejects,
    ApprovesAsSomeoneElse,
    ForgesToken,
    NeverAnswers,
}

#[async_trait]
impl Approver for Owner {
    async fn ask(&self, request: &ApprovalRequest, token: &str) -> ApprovalAnswer {
        let me = "local:alice".to_string();
        let call_hash = steward_core::call_hash(request);
        let approve =
            |token: String, decided_by: String, scope| ApprovalAnswer::Approve { token, decided_by, scope, call_hash };
        match self {
            Owner::Approves => approve(token.into(), me, ApprovalScope::Once),
            Owner::ApprovesForTheRun => approve(token.into(), me, ApprovalScope::Run),
            Owner::ApprovesForTheWorkspace => approve(token.into(), me, ApprovalScope::Workspace),
            Owner::Rejects => ApprovalAnswer::Reject { reason: "not today".into(), decided_by: me },
            Owner::ApprovesAsSomeoneElse => approve(token.into(), "local:mallory".into(), ApprovalScope::Once),
            Owner::ForgesToken => approve("00".repeat(32), me, ApprovalScope::Once),
            Owner::NeverAnswers => std::future::pending().await,
        }
    }
}

impl Recorder {
    fn names(&self) -> Vec<&'static str> {
        self.0.lock().unwrap().iter().map(|e| e.kind.name()).collect()
    }
}

struct Harness {
    _dir: tempfile::TempDir,
    ws: std::path::PathBuf,
    runtime: Runtime,
}

async fn harness() -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("note.txt"), "old\n").unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let runtime = Runtime::new(dir.path(), store, Redactor::new(Vec::new()), ApprovalKey::generate());
    Harness { _dir: dir, ws, runtime }
}

fn fake(toml: &str) -> (PlannerChoice, Arc<FakeProvider>) {
    let provider = Arc::new(FakeProvider::new(Scenario::from_toml(toml).unwrap()));
    let choice = PlannerChoice {
        kind: "model".into(),
        provider: provider.clone(),
        model: "fake".into(),
        tool_choice: ToolChoice::Auto,
        max_tokens: None,
    };
    (choice, provider)
}

const EDIT_THEN_ANSWER: &str = r#"
[[round]]
text = "Editing."
[[round.tool_call]]
name = "edit"
arguments = { path = "note.txt", old = "old", new = "new" }
[[round]]
text = "Finished."
"#;

async fn run(
    h: &Harness,
    planner: PlannerChoice,
    owner: Owner,
    config: Config,
) -> (steward_store::RunRecord, Arc<Recorder>) {
    let recorder = Arc::new(Recorder::default());
    let request = RunRequest {
        task: "change the note".into(),
        owner_id: "local:alice".into(),
        workspace: h.ws.clone(),
        planner,
        config,
        tools: ToolRegistry::builtin(),
        approver: Arc::new(owner),
        observer: recorder.clone(),
        cancel: CancellationToken::new(),
        run_id: None,
        history: Vec::new(),
        attachments: Vec::new(),
        roles: None,
    };
    (run_task(&h.runtime, request).await.unwrap(), recorder)
}

#[tokio::test]
async fn approval_outcomes_scenario_table() {
    // (owner behaviour, file afterwards, event that must occur, audit outcomes in order)
    let table: &[(Owner, &str, &str, &[AuditOutcome])] = &[
        (
            Owner::Approves,
            "new\n",
            "tool_approved",
            &[AuditOutcome::Escalated, AuditOutcome::Approved, AuditOutcome::Completed],
        ),
        (Owner::Rejects, "old\n", "tool_rejected", &[AuditOutcome::Escalated, AuditOutcome::Blocked]),
        (Owner::ApprovesAsSomeoneElse, "old\n", "tool_rejected", &[AuditOutcome::Escalated, AuditOutcome::Blocked]),
        (Owner::ForgesToken, "old\n", "tool_rejected", &[AuditOutcome::Escalated, AuditOutcome::Blocked]),
    ];
    for (owner, after, event, outcomes) in table {
        let h = harness().await;
        let (planner, provider) = fake(EDIT_THEN_ANSWER);
        let (run, events) = run(&h, planner, *owner, Config::default()).await;
        assert_eq!(run.status, RunStatus::Completed, "{owner:?}");
        assert_eq!(run.final_text.as_deref(), Some("Finished."), "{owner:?}");
        assert_eq!(std::fs::read_to_string(h.ws.join("note.txt")).unwrap(), *after, "{owner:?}");
        let names = events.names();
        assert!(names.contains(event), "{owner:?}: {names:?}");
        assert!(names.contains(&"patch_proposed"), "{owner:?}: {names:?}");
        assert_eq!(names.contains(&"patch_applied"), *after == "new\n", "{owner:?}");
        let audit: Vec<AuditOutcome> =
            h.runtime.store.audit_records(Some(&run.id)).await.unwrap().iter().map(|r| r.entry.outcome).collect();
        assert_eq!(&audit, outcomes, "{owner:?}");
        // The model saw exactly one result for its call, in the next request.
        let requests = provider.requests();
        assert_eq!(requests.len(), 2);
        let results: Vec<_> = requests[1].messages.iter().filter(|m| m.tool_call_id.is_some()).collect();
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].is_error, *after != "new\n", "{owner:?}: {}", results[0].content);
        if matches!(owner, Owner::ApprovesAsSomeoneElse) {
            assert!(results[0].content.contains("not_owner"), "{}", results[0].content);
        }
        // Approvals are persisted with their final status.
        let approvals = h.runtime.store.approvals(&run.id).await.unwrap();
        assert_eq!(approvals.len(), 1);
        assert_eq!(approvals[0].owner_id, "local:alice");
    }
}

#[tokio::test]
async fn an_unanswered_approval_expires_and_nothing_runs() {
    let h = harness().await;
    let (planner, _) = fake(EDIT_THEN_ANSWER);
    let mut config = Config::default();
    config.policy.approval_timeout_seconds = Some(1);
    let (run, events) = run(&h, planner, Owner::NeverAnswers, config).await;
    assert_eq!(run.status, RunStatus::Completed);
    assert!(events.names().contains(&"tool_approval_expired"));
    assert!(!events.names().contains(&"tool_started"));
    assert_eq!(std::fs::read_to_string(h.ws.join("note.txt")).unwrap(), "old\n");
    let approvals = h.runtime.store.approvals(&run.id).await.unwrap();
    assert_eq!(approvals[0].status, steward_protocol::ApprovalStatus::Expired);
}

#[tokio::test]
async fn cancelling_while_waiting_expires_the_approval_and_cancels_the_run() {
    let h = harness().await;
    let (planner, _) = fake(EDIT_THEN_ANSWER);
    let recorder = Arc::new(Recorder::default());
    let cancel = CancellationToken::new();
    let request = RunRequest {
        task: "change the note".into(),
        owner_id: "local:alice".into(),
        workspace: h.ws.clone(),
        planner,
        config: Config::default(),
        tools: ToolRegistry::builtin(),
        approver: Arc::new(Owner::NeverAnswers),
        observer: recorder.clone(),
        cancel: cancel.clone(),
        run_id: None,
        history: Vec::new(),
        attachments: Vec::new(),
        roles: None,
    };
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let run = run_task(&h.runtime, request).await.unwrap();
    canceller.await.unwrap();
    assert_eq!(run.status, RunStatus::Cancelled);
    let names = recorder.names();
    assert!(names.contains(&"tool_approval_expired"), "{names:?}");
    assert_eq!(names.last(), Some(&"run_cancelled"));
    let approvals = h.runtime.store.approvals(&run.id).await.unwrap();
    assert_eq!(approvals[0].status, steward_protocol::ApprovalStatus::Expired);
}

#[tokio::test]
async fn a_truncated_call_is_never_run_and_gets_an_error_result() {
    let h = harness().await;
    let (planner, provider) = fake(
        r##"
[[round]]
finish_reason = "length"
[[round.tool_call]]
name = "create"
id = "call_w"
arguments_raw = "{\"path\":\"notes.md\",\"content\":\"# Title\\nline one"
[[round]]
text = "Sorry."
"##,
    );
    let (run, events) = run(&h, planner, Owner::Approves, Config::default()).await;
    assert_eq!(run.final_text.as_deref(), Some("Sorry."));
    assert!(!h.ws.join("notes.md").exists());
    let denied: Vec<Event> =
        events.0.lock().unwrap().iter().filter(|e| e.kind.name() == "tool_denied").cloned().collect();
    assert_eq!(denied.len(), 1);
    match &denied[0].kind {
        EventKind::ToolDenied { rule, reason, call_id, .. } => {
            assert_eq!(rule, "invalid_tool_call");
            assert_eq!(call_id, "call_w");
            assert!(reason.contains("call_w") && reason.contains("create"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let second = &provider.requests()[1];
    let result = second.messages.iter().find(|m| m.tool_call_id.as_deref() == Some("call_w")).unwrap();
    assert!(result.is_error);
}

#[tokio::test]
async fn unknown_tools_are_denied_and_the_tool_call_limit_stops_the_run() {
    let h = harness().await;
    let (planner, _) = fake(
        r#"
[[round]]
[[round.tool_call]]
name = "phase9_unknown_tool"
arguments = {}
[[round.tool_call]]
name = "list"
arguments = {}
[[round.tool_call]]
name = "list"
arguments = {}
[[round]]
text = "never reached"
"#,
    );
    let mut config = Config::default();
    config.limits.max_tool_calls_per_run = 2;
    let (run, events) = run(&h, planner, Owner::Approves, config).await;
    assert_eq!(run.stop_reason, Some(StopReason::MaxToolCalls));
    let names = events.names();
    assert_eq!(names.iter().filter(|n| **n == "tool_denied").count(), 1);
    assert_eq!(names.iter().filter(|n| **n == "tool_completed").count(), 1);
    let audit = h.runtime.store.audit_records(Some(&run.id)).await.unwrap();
    assert_eq!(audit[0].entry.policy, "unknown_tool");
    assert_eq!(audit[0].entry.outcome, AuditOutcome::Blocked);
}

#[tokio::test]
async fn tool_output_is_capped_on_char_boundaries_and_saved_in_full() {
    let h = harness().await;
    let big: String = (0..4000).map(|i| format!("LINE {i:05} é漢\n")).collect();
    std::fs::write(h.ws.join("big.txt"), &big).unwrap();
    let (planner, provider) = fake(
        r#"
[[round]]
[[round.tool_call]]
name = "read"
arguments = { path = "big.txt" }
[[round]]
text = "ok"
"#,
    );
    let (run, _) = run(&h, planner, Owner::Approves, Config::default()).await;
    let result = provider.requests()[1].messages.iter().find(|m| m.tool_call_id.is_some()).unwrap().content.clone();
    assert!(result.chars().count() <= 8_000 + 200, "{}", result.chars().count());
    assert!(result.contains("LINE 00000") && result.contains("LINE 03999"));
    assert!(result.contains("cut") && result.contains("saved to"), "marker missing");
    let saved = std::fs::read_dir(h.runtime.outputs_dir.join(&run.id)).unwrap().next().unwrap().unwrap().path();
    assert!(std::fs::read_to_string(saved).unwrap().contains("LINE 02000"));
}

#[tokio::test]
async fn secrets_in_model_text_and_tool_output_are_redacted_everywhere() {
    let h = harness().await;
    let secret = "sk-phase9dummysecret123456789";
    std::fs::write(h.ws.join("config.txt"), format!("token: {secret}\n")).unwrap();
    let (planner, provider) = fake(&format!(
        r#"
[[round]]
[[round.tool_call]]
name = "read"
arguments = {{ path = "config.txt" }}
[[round]]
text = "OPENAI_API_KEY={secret}"
"#
    ));
    let (run, events) = run(&h, planner, Owner::Approves, Config::default()).await;
    assert!(run.final_text.as_deref().unwrap().contains("[REDACTED]"));
    let all = serde_json::to_string(&*events.0.lock().unwrap()).unwrap();
    assert!(!all.contains(secret), "secret in events");
    let audit = serde_json::to_string(&h.runtime.store.audit_records(None).await.unwrap()).unwrap();
    assert!(!audit.contains(secret), "secret in audit");
    let stored = serde_json::to_string(&h.runtime.store.events(&run.id, 0).await.unwrap()).unwrap();
    assert!(!stored.contains(secret), "secret in stored events");
    let context = serde_json::to_string(&provider.requests()).unwrap();
    assert!(!context.contains(secret), "secret reached the model");
}

#[tokio::test]
async fn a_run_grant_allows_later_calls_of_the_tool_in_that_run_only_until_revoked() {
    let h = harness().await;
    let two_edits = r#"
[[round]]
[[round.tool_call]]
name = "edit"
arguments = { path = "note.txt", old = "old", new = "mid" }
[[round]]
[[round.tool_call]]
name = "edit"
arguments = { path = "note.txt", old = "mid", new = "new" }
[[round]]
text = "Finished."
"#;
    let (planner, _) = fake(two_edits);
    let (run1, events) = run(&h, planner, Owner::ApprovesForTheRun, Config::default()).await;
    assert_eq!(std::fs::read_to_string(h.ws.join("note.txt")).unwrap(), "new\n");
    let names = events.names();
    assert_eq!(names.iter().filter(|n| **n == "tool_approval_required").count(), 1, "{names:?}");
    assert_eq!(names.iter().filter(|n| **n == "patch_applied").count(), 2);
    let grants = h.runtime.store.grants("local:alice").await.unwrap();
    assert_eq!(grants.len(), 1);
    assert_eq!(grants[0].tool, "edit");
    let audit = h.runtime.store.audit_records(Some(&run1.id)).await.unwrap();
    assert!(audit.iter().any(|r| r.entry.detail.contains("remembered grant")), "grant use is audited");

    // Another run of the same owner asks again: the grant was for that run only.
    std::fs::write(h.ws.join("note.txt"), "old\n").unwrap();
    let (planner, _) = fake(EDIT_THEN_ANSWER);
    let (_, events) = run(&h, planner, Owner::Rejects, Config::default()).await;
    assert!(events.names().contains(&"tool_approval_required"));
    assert_eq!(std::fs::read_to_string(h.ws.join("note.txt")).unwrap(), "old\n");
}

#[tokio::test]
async fn rollback_records_undo_the_runs_changes() {
    let h = harness().await;
    let (planner, _) = fake(EDIT_THEN_ANSWER);
    let (run, _) = run(&h, planner, Owner::Approves, Config::default()).await;
    assert_eq!(std::fs::read_to_string(h.ws.join("note.txt")).unwrap(), "new\n");
    let records = h.runtime.store.rollbacks(&run.id).await.unwrap();
    assert_eq!(records.len(), 1);
    let audit = h.runtime.store.audit_records(Some(&run.id)).await.unwrap();
    let completed = audit.iter().find(|r| r.entry.outcome == AuditOutcome::Completed).unwrap();
    assert_eq!(completed.entry.rollback_token, records[0].token);
    let compensation: steward_tools::rollback::Compensation =
        serde_json::from_value(records[0].compensation.clone()).unwrap();
    let ws = steward_policy::Workspace::open(&h.ws, &[]).unwrap();
    steward_tools::rollback::undo(&compensation, &ws).unwrap();
    assert_eq!(std::fs::read_to_string(h.ws.join("note.txt")).unwrap(), "old\n");
}

#[tokio::test]
async fn a_workspace_grant_covers_later_runs_until_it_is_revoked() {
    let h = harness().await;
    let (planner, _) = fake(EDIT_THEN_ANSWER);
    let (_, events) = run(&h, planner, Owner::ApprovesForTheWorkspace, Config::default()).await;
    assert!(events.names().contains(&"tool_approval_required"));
    assert_eq!(std::fs::read_to_string(h.ws.join("note.txt")).unwrap(), "new\n");

    // A later run in the same workspace: allowed by the grant, nobody is asked.
    std::fs::write(h.ws.join("note.txt"), "old\n").unwrap();
    let (planner, _) = fake(EDIT_THEN_ANSWER);
    let (_, events) = run(&h, planner, Owner::Rejects, Config::default()).await;
    assert!(!events.names().contains(&"tool_approval_required"), "{:?}", events.names());
    assert_eq!(std::fs::read_to_string(h.ws.join("note.txt")).unwrap(), "new\n");
    // The run names the grant as `steward approvals list` shows it, so it can be revoked.
    let grant_id = h.runtime.store.grants("local:alice").await.unwrap().remove(0).id;
    let allowed_by = events
        .0
        .lock()
        .unwrap()
        .iter()
        .find_map(|e| match &e.kind {
            steward_protocol::EventKind::ToolStarted { allowed_by, .. } => Some(allowed_by.clone()),
            _ => None,
        })
        .unwrap();
    assert!(allowed_by.starts_with(&format!("grant {grant_id} (approval apr_")), "{allowed_by}");

    // Revoked: the next run asks again (and this owner says no).
    let mut grant = h.runtime.store.grants("local:alice").await.unwrap().remove(0);
    grant.revoked_at = Some(chrono::Utc::now());
    h.runtime.store.upsert_grant(&grant).await.unwrap();
    std::fs::write(h.ws.join("note.txt"), "old\n").unwrap();
    let (planner, _) = fake(EDIT_THEN_ANSWER);
    let (_, events) = run(&h, planner, Owner::Rejects, Config::default()).await;
    assert!(events.names().contains(&"tool_approval_required"));
    assert_eq!(std::fs::read_to_string(h.ws.join("note.txt")).unwrap(), "old\n");
}

#[tokio::test]
async fn a_run_its_events_and_its_rollback_records_are_stamped_by_the_runtime_clock() {
    let mut h = harness().await;
    let start = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z").unwrap().to_utc();
    h.runtime = h.runtime.clone().with_clock(Arc::new(ManualClock::new(start)));
    let (planner, _) = fake(EDIT_THEN_ANSWER);
    let (run, recorder) = run(&h, planner, Owner::Approves, Config::default()).await;
    assert_eq!((run.created_at, run.finished_at), (start, Some(start)));
    let events = recorder.0.lock().unwrap().clone();
    assert!(events.len() > 3 && events.iter().all(|e| e.at == start), "{events:?}");
    let rollbacks = h.runtime.store.rollbacks(&run.id).await.unwrap();
    assert_eq!(rollbacks.iter().map(|r| r.created_at).collect::<Vec<_>>(), [start]);
}

#[tokio::test]
async fn an_expired_grant_no_longer_counts() {
    // The runtime's clock decides when a grant expires: moved on by hand, no waiting.
    let mut h = harness().await;
    let start = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z").unwrap().to_utc();
    let clock = Arc::new(ManualClock::new(start));
    h.runtime = h.runtime.clone().with_clock(clock.clone());
    let mut config = Config::default();
    config.policy.token_ttl_seconds = Some(3600);
    let (planner, _) = fake(EDIT_THEN_ANSWER);
    run(&h, planner, Owner::ApprovesForTheWorkspace, config.clone()).await;
    let grant = h.runtime.store.grants("local:alice").await.unwrap().remove(0);
    assert_eq!(grant.expires_at, start + chrono::Duration::seconds(3600), "made at the runtime clock's time");

    // A second before it expires, the grant still holds: nobody is asked.
    clock.advance(chrono::Duration::seconds(3599));
    std::fs::write(h.ws.join("note.txt"), "old\n").unwrap();
    let (planner, _) = fake(EDIT_THEN_ANSWER);
    let (_, events) = run(&h, planner, Owner::Rejects, config.clone()).await;
    assert!(!events.names().contains(&"tool_approval_required"), "{:?}", events.names());

    // At its expiry it no longer counts.
    clock.advance(chrono::Duration::seconds(1));
    std::fs::write(h.ws.join("note.txt"), "old\n").unwrap();
    let (planner, _) = fake(EDIT_THEN_ANSWER);
    let (_, events) = run(&h, planner, Owner::Rejects, config).await;
    assert!(events.names().contains(&"tool_approval_required"));
    assert_eq!(std::fs::read_to_string(h.ws.join("note.txt")).unwrap(), "old\n");
}

/// Approves, but only once its clock has passed the request's expiry.
struct ApprovesTooLate(Arc<ManualClock>);

#[async_trait]
impl Approver for ApprovesTooLate {
    async fn ask(&self, request: &ApprovalRequest, token: &str) -> ApprovalAnswer {
        self.0.set(request.expires_at);
        ApprovalAnswer::Approve {
            token: token.into(),
            decided_by: "local:alice".into(),
            scope: ApprovalScope::Once,
            call_hash: steward_core::call_hash(request),
        }
    }
}

#[tokio::test]
async fn an_answer_arriving_after_the_runtime_clocks_expiry_counts_for_nothing() {
    let mut h = harness().await;
    let start = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z").unwrap().to_utc();
    let clock = Arc::new(ManualClock::new(start));
    h.runtime = h.runtime.clone().with_clock(clock.clone());
    let (planner, _) = fake(EDIT_THEN_ANSWER);
    let recorder = Arc::new(Recorder::default());
    let request = RunRequest {
        task: "change the note".into(),
        owner_id: "local:alice".into(),
        workspace: h.ws.clone(),
        planner,
        config: Config::default(),
        tools: ToolRegistry::builtin(),
        approver: Arc::new(ApprovesTooLate(clock.clone())),
        observer: recorder.clone(),
        cancel: CancellationToken::new(),
        run_id: None,
        history: Vec::new(),
        attachments: Vec::new(),
        roles: None,
    };
    let run = run_task(&h.runtime, request).await.unwrap();
    assert!(!recorder.names().contains(&"tool_started"), "{:?}", recorder.names());
    assert_eq!(std::fs::read_to_string(h.ws.join("note.txt")).unwrap(), "old\n");
    let approvals = h.runtime.store.approvals(&run.id).await.unwrap();
    assert_eq!(approvals[0].created_at, start, "made at the runtime clock's time");
    assert_eq!(approvals[0].expires_at, start + chrono::Duration::minutes(30));
}
