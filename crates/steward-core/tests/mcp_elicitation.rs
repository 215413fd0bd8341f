//! An MCP server that asks for input during a tool call (`elicitation/create`), end to end: the
//! fault server of steward-mcp's tests (`elicit` tool) behind a real run, its question put to
//! the run's owner through the run's approver — the boundary the terminal prompt and the web
//! UI implement — and answered accept (validated, defaults applied), decline, or not at all
//! (expiry: `cancel`). Every elicitation is audited without the values given.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::common::Recorder;
use async_trait::async_trait;
use serde_json::{Value, json};
use steward_config::Config;
use steward_core::{ApprovalAnswer, ApprovalKey, ApprovalScope, Approver};
use steward_core::{ElicitationPrompt, ElicitationReply};
use steward_core::{PlannerChoice, RunRequest, Runtime, run_task};
use steward_mcp::{McpManager, McpServerConfig};
use steward_policy::Redactor;
use steward_protocol::{ApprovalRequest, AuditOutcome, Event, EventKind, ToolChoice};
use steward_provider::fake::{FakeProvider, Scenario};
use steward_store::{RunStatus, SqliteStore, Store};
use steward_tools::ToolRegistry;
use tokio_util::sync::CancellationToken;

const OWNER: &str = "local:alice";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Answer {
    Accepts,
    Declines,
    NeverAnswers,
}

/// The run's owner: approves the tool call, then answers the server's question as scripted.
struct Owner {
    answer: Answer,
    asked: Mutex<Vec<ElicitationPrompt>>,
}

#[async_trait]
impl Approver for Owner {
    async fn ask(&self, request: &ApprovalRequest, token: &str) -> ApprovalAnswer {
        let call_hash = steward_core::call_hash(request);
        ApprovalAnswer::Approve { token: token.into(), decided_by: OWNER.into(), scope: ApprovalScope::Once, call_hash }
    }

    async fn elicit(&self, prompt: &ElicitationPrompt) -> ElicitationReply {
        self.asked.lock().unwrap().push(prompt.clone());
        match self.answer {
            Answer::Accepts => {
                // The pre-filled form as shown lacks the required e-mail: refused, with why.
                let mut inputs = steward_mcp::elicitation::prefilled_inputs(&prompt.fields);
                let problem = prompt.answer(&inputs).unwrap_err().to_string();
                assert!(problem.contains("email"), "{problem}");
                let typed = |inputs: &mut Vec<(String, String)>, name: &str, text: &str| {
                    inputs.iter_mut().find(|(n, _)| n == name).unwrap().1 = text.into();
                };
                typed(&mut inputs, "email", "not an address");
                assert!(prompt.answer(&inputs).unwrap_err().to_string().contains("`email`"));
                typed(&mut inputs, "email", "ada@example.org");
                typed(&mut inputs, "age", "");
                let values = prompt.answer(&inputs).unwrap();
                ElicitationReply::Accept { values, decided_by: OWNER.into() }
            }
            Answer::Declines => ElicitationReply::Decline { decided_by: OWNER.into() },
            Answer::NeverAnswers => std::future::pending().await,
        }
    }
}

fn fault_server() -> McpServerConfig {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../steward-mcp/tests/fixtures/fault_server.py");
    let mut config = McpServerConfig::stdio(["python3".to_string(), script.display().to_string(), "normal".into()]);
    config.startup_timeout_ms = 10_000;
    config
}

const CALL_ELICIT: &str = r#"
[[round]]
[[round.tool_call]]
id = "m1"
name = "srv__elicit"
arguments = {}
[[round]]
text = "Done."
"#;

/// Runs one task that calls `srv__elicit` with `answer` as the owner; returns the tool's
/// output, the events, the audit records and what the owner was shown.
async fn run(
    answer: Answer,
    approval_timeout_seconds: Option<u64>,
) -> (Value, Vec<Event>, Vec<Value>, Vec<ElicitationPrompt>) {
    run_tool(answer, approval_timeout_seconds, CALL_ELICIT).await
}

/// [`run`] with another scenario (`srv__…` tool calls).
async fn run_tool(
    answer: Answer,
    approval_timeout_seconds: Option<u64>,
    scenario: &str,
) -> (Value, Vec<Event>, Vec<Value>, Vec<ElicitationPrompt>) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let runtime = Runtime::new(dir.path(), store, Redactor::new(Vec::new()), ApprovalKey::generate());
    let manager = McpManager::new(&[("srv".to_string(), fault_server())].into_iter().collect()).unwrap();
    let (tools, failures) = ToolRegistry::builtin().with_mcp(Arc::new(manager)).await;
    assert!(failures.is_empty(), "{failures:?}");
    let provider = Arc::new(FakeProvider::new(Scenario::from_toml(scenario).unwrap()));
    let planner = PlannerChoice {
        kind: "model".into(),
        provider,
        model: "fake".into(),
        tool_choice: ToolChoice::Auto,
        max_tokens: None,
    };
    let mut config = Config::default();
    config.policy.approval_timeout_seconds = approval_timeout_seconds;
    let owner = Arc::new(Owner { answer, asked: Mutex::new(Vec::new()) });
    let recorder = Arc::new(Recorder::default());
    let request = RunRequest {
        task: "ask me".into(),
        owner_id: OWNER.into(),
        workspace: ws,
        planner,
        config,
        tools,
        approver: owner.clone(),
        observer: recorder.clone(),
        cancel: CancellationToken::new(),
        run_id: None,
        history: Vec::new(),
        attachments: Vec::new(),
        roles: None,
    };
    let record = run_task(&runtime, request).await.unwrap();
    assert_eq!(record.status, RunStatus::Completed, "{answer:?}");
    let events = recorder.0.lock().unwrap().clone();
    let output = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolCompleted { output, .. } => Some(serde_json::from_str(output).unwrap()),
            EventKind::ToolFailed { error, .. } => panic!("{answer:?}: the call failed: {error}"),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{answer:?}: no tool result"));
    let audit = runtime
        .store
        .audit_records(Some(&record.id))
        .await
        .unwrap()
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect();
    let asked = owner.asked.lock().unwrap().clone();
    (output, events, audit, asked)
}

fn answered(events: &[Event]) -> (String, String, String) {
    events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::McpElicitationAnswered { action, decided_by, reason, .. } => {
                Some((action.clone(), decided_by.clone(), reason.clone()))
            }
            _ => None,
        })
        .expect("an mcp_elicitation_answered event")
}

fn elicitation_audit(audit: &[Value]) -> Vec<(String, String)> {
    audit
        .iter()
        .filter(|r| r["action"] == "mcp_elicitation")
        .map(|r| (r["outcome"].as_str().unwrap().to_string(), r["agent"].as_str().unwrap().to_string()))
        .collect()
}

#[tokio::test]
async fn the_owner_accepts_and_the_validated_values_with_defaults_reach_the_server() {
    let (output, events, audit, asked) = run(Answer::Accepts, None).await;
    assert_eq!(
        output,
        json!({"action": "accept", "content": {
            "name": "Ada", "email": "ada@example.org", "age": 36, "score": 9.5, "color": "green", "agree": true
        }}),
        "the emptied `age` took its default"
    );
    // The owner saw the server's words as text, the form in the server's order, pre-filled.
    let prompt = &asked[0];
    assert_eq!(prompt.server, "srv");
    assert_eq!(prompt.tool, "srv__elicit");
    assert_eq!(prompt.owner_id, OWNER);
    assert!(prompt.message.contains("<b>who</b>"), "shown as text: {:?}", prompt.message);
    assert!(prompt.message.contains("\\u{1b}[2J") && !prompt.message.contains('\u{1b}'), "{:?}", prompt.message);
    let form: Vec<(&str, &str)> = prompt.fields.iter().map(|f| (f.name.as_str(), f.prefill.as_str())).collect();
    assert_eq!(
        form,
        [("name", "Ada"), ("email", ""), ("age", "36"), ("score", "9.5"), ("color", "green"), ("agree", "true")]
    );
    let requested = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::McpElicitationRequested { server, fields, elicitation_id, .. } => {
                Some((server.clone(), fields.clone(), elicitation_id.clone()))
            }
            _ => None,
        })
        .expect("an mcp_elicitation_requested event");
    assert_eq!(requested.0, "srv");
    assert_eq!(requested.1, ["name", "email", "age", "score", "color", "agree"]);
    assert_eq!(requested.2, prompt.id);
    assert_eq!(answered(&events), ("accept".into(), OWNER.into(), String::new()));
    assert_eq!(
        elicitation_audit(&audit),
        [("escalated".into(), "steward".into()), ("approved".into(), OWNER.to_string())]
    );
    let record = audit.iter().rfind(|r| r["action"] == "mcp_elicitation").unwrap();
    assert_eq!(record["approval_id"], prompt.id.as_str());
    assert_eq!(record["input"]["server"], "srv");
    assert!(record["detail"].as_str().unwrap().contains("email"), "{record}");
    let all = serde_json::to_string(&audit).unwrap();
    assert!(!all.contains("ada@example.org"), "the values given are not in the audit log: {all}");
}

#[tokio::test]
async fn the_owner_declines() {
    let (output, events, audit, asked) = run(Answer::Declines, None).await;
    assert_eq!(output, json!({"action": "decline"}));
    assert_eq!(asked.len(), 1);
    assert_eq!(answered(&events), ("decline".into(), OWNER.into(), String::new()));
    assert_eq!(
        elicitation_audit(&audit),
        [("escalated".into(), "steward".into()), ("blocked".into(), OWNER.to_string())]
    );
}

#[tokio::test]
async fn an_unanswered_request_expires_like_an_approval_and_the_server_gets_cancel() {
    let started = std::time::Instant::now();
    let (output, events, audit, asked) = run(Answer::NeverAnswers, Some(1)).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "{:?}", started.elapsed());
    assert_eq!(output, json!({"action": "cancel"}));
    assert_eq!(asked.len(), 1);
    let (action, decided_by, reason) = answered(&events);
    assert_eq!((action.as_str(), decided_by.as_str()), ("cancel", "steward"));
    assert!(reason.contains("expired"), "{reason}");
    let record = audit.iter().rfind(|r| r["action"] == "mcp_elicitation").unwrap();
    assert_eq!(record["outcome"], "blocked");
    assert!(record["detail"].as_str().unwrap().contains("expired"), "{record}");
}

/// A schema beyond the MCP spec's (a bare list, a nested object) is declined without asking
/// the owner: audited, announced with its reason, never an unknown-method error.
#[tokio::test]
async fn a_form_beyond_the_spec_is_declined_with_its_reason() {
    let scenario = CALL_ELICIT.replace("srv__elicit", "srv__elicit_unsupported");
    let (output, events, audit, asked) = run_tool(Answer::Accepts, None, &scenario).await;
    assert_eq!(output, json!({"action": "decline"}));
    assert!(asked.is_empty(), "the owner is not asked: {asked:?}");
    let (action, decided_by, reason) = answered(&events);
    assert_eq!((action.as_str(), decided_by.as_str()), ("decline", "steward"));
    assert!(reason.starts_with("unsupported_schema:") && reason.contains("`address`"), "{reason}");
    assert_eq!(elicitation_audit(&audit), [("blocked".into(), "steward".into())]);
    let record = audit.iter().rfind(|r| r["action"] == "mcp_elicitation").unwrap();
    assert_eq!(record["input"]["server"], "srv");
    assert_eq!(record["input"]["tool"], "srv__elicit_unsupported");
    assert!(record["detail"].as_str().unwrap().contains("unsupported_schema"), "{record}");
}

/// The default approver (nobody to ask, e.g. `NoApprover`) declines, and says why.
#[tokio::test]
async fn nobody_to_ask_declines() {
    struct ApprovesOnly;
    #[async_trait]
    impl Approver for ApprovesOnly {
        async fn ask(&self, request: &ApprovalRequest, token: &str) -> ApprovalAnswer {
            let call_hash = steward_core::call_hash(request);
            ApprovalAnswer::Approve {
                token: token.into(),
                decided_by: OWNER.into(),
                scope: ApprovalScope::Once,
                call_hash,
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let runtime = Runtime::new(dir.path(), store, Redactor::new(Vec::new()), ApprovalKey::generate());
    let manager = McpManager::new(&[("srv".to_string(), fault_server())].into_iter().collect()).unwrap();
    let (tools, _) = ToolRegistry::builtin().with_mcp(Arc::new(manager)).await;
    let recorder = Arc::new(Recorder::default());
    let request = RunRequest {
        task: "ask me".into(),
        owner_id: OWNER.into(),
        workspace: dir.path().to_path_buf(),
        planner: PlannerChoice {
            kind: "model".into(),
            provider: Arc::new(FakeProvider::new(Scenario::from_toml(CALL_ELICIT).unwrap())),
            model: "fake".into(),
            tool_choice: ToolChoice::Auto,
            max_tokens: None,
        },
        config: Config::default(),
        tools,
        approver: Arc::new(ApprovesOnly),
        observer: recorder.clone(),
        cancel: CancellationToken::new(),
        run_id: None,
        history: Vec::new(),
        attachments: Vec::new(),
        roles: None,
    };
    run_task(&runtime, request).await.unwrap();
    let events = recorder.0.lock().unwrap().clone();
    let (action, decided_by, reason) = answered(&events);
    assert_eq!((action.as_str(), decided_by.as_str()), ("decline", "steward"));
    assert!(reason.contains("no_approver"), "{reason}");
    let audit = runtime.store.audit_records(None).await.unwrap();
    assert!(audit.iter().any(|r| r.entry.action == "mcp_elicitation" && r.entry.outcome == AuditOutcome::Blocked));
}
