//! An MCP server that reads files is handed no secret file: a call whose string arguments (at
//! any depth) name a secret path, or a hard link to a secret file, is refused by the
//! `secret_path` rule before the server is called (steward-mcp's fault server logs every call
//! it receives, so the test sees that none arrived). Other values reach the server.

use std::path::PathBuf;
use std::sync::Arc;

use crate::common::Recorder;
use steward_config::Config;
use steward_core::ApprovalKey;
use steward_core::{PlannerChoice, RunRequest, Runtime, run_task};
use steward_mcp::{McpManager, McpServerConfig, ValueSource};
use steward_policy::Redactor;
use steward_protocol::{AuditOutcome, EventKind, ToolChoice};
use steward_provider::fake::{FakeProvider, Scenario};
use steward_store::{SqliteStore, Store};
use steward_tools::ToolRegistry;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn mcp_arguments_naming_secret_files_are_refused_before_the_server_is_called() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("docs")).unwrap();
    std::fs::write(ws.join(".env"), "TOKEN=mcp-secret-value-1234\n").unwrap();
    std::fs::write(ws.join("docs/a.txt"), "public\n").unwrap();
    std::fs::hard_link(ws.join(".env"), ws.join("docs/notes.txt")).unwrap();
    let log = dir.path().join("calls.log");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../steward-mcp/tests/fixtures/fault_server.py");
    let mut server = McpServerConfig::stdio(["python3".to_string(), script.display().to_string(), "normal".into()]);
    server.startup_timeout_ms = 10_000;
    server.env.insert("FAULT_LOG".into(), ValueSource::Literal(log.display().to_string()));
    let manager = McpManager::new(&[("srv".to_string(), server)].into_iter().collect()).unwrap();
    let (tools, failures) = ToolRegistry::builtin().with_mcp(Arc::new(manager)).await;
    assert!(failures.is_empty(), "{failures:?}");
    let scenario = r#"
[[round]]
[[round.tool_call]]
id = "m1"
name = "srv__echo"
arguments = { path = ".env" }
[[round.tool_call]]
id = "m2"
name = "srv__echo"
arguments = { request = { files = ["docs/a.txt", "docs/notes.txt"] } }
[[round.tool_call]]
id = "m3"
name = "srv__echo"
arguments = { path = "/home/someone/.ssh/id_ed25519" }
[[round.tool_call]]
id = "m4"
name = "srv__echo"
arguments = { path = "docs/a.txt" }
[[round]]
text = "Done."
"#;
    let provider = Arc::new(FakeProvider::new(Scenario::from_toml(scenario).unwrap()));
    let planner = PlannerChoice {
        kind: "model".into(),
        provider,
        model: "fake".into(),
        tool_choice: ToolChoice::Auto,
        max_tokens: None,
    };
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let runtime = Runtime::new(dir.path(), store, Redactor::new(Vec::new()), ApprovalKey::generate());
    let recorder = Arc::new(Recorder::default());
    let request = RunRequest {
        task: "read".into(),
        owner_id: "local:alice".into(),
        workspace: ws,
        planner,
        config: Config::default(),
        tools,
        approver: Arc::new(crate::common::Yes),
        observer: recorder.clone(),
        cancel: CancellationToken::new(),
        run_id: None,
        history: Vec::new(),
        attachments: Vec::new(),
        roles: None,
    };
    let record = run_task(&runtime, request).await.unwrap();
    let events = recorder.0.lock().unwrap().clone();
    // Refused by the decision (as `steward policy check` shows it), not failed while running.
    let denied: Vec<(String, String, String)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolDenied { call_id, rule, reason, .. } => {
                Some((call_id.clone(), rule.clone(), reason.clone()))
            }
            _ => None,
        })
        .collect();
    let ids: Vec<&str> = denied.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(ids, ["m1", "m2", "m3"], "{denied:?}");
    assert!(denied.iter().all(|(_, rule, _)| rule == "secret_path"), "{denied:?}");
    assert!(denied[1].2.contains("hard link"), "{denied:?}");
    assert!(!events.iter().any(|e| matches!(&e.kind, EventKind::ToolFailed { .. })), "nothing failed while running");
    let audit = runtime.store.audit_records(Some(&record.id)).await.unwrap();
    for id in ["m1", "m2", "m3"] {
        let refused = audit.iter().find(|r| r.entry.call_id == id && r.entry.outcome == AuditOutcome::Blocked).unwrap();
        assert_eq!(refused.entry.policy, "secret_path", "{refused:?}");
    }
    let completed =
        events.iter().any(|e| matches!(&e.kind, EventKind::ToolCompleted { call_id, .. } if call_id == "m4"));
    assert!(completed, "an ordinary value reaches the server");
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(calls.lines().count(), 1, "only m4 reached the server: {calls}");
}
