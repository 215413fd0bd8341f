//! The agent loop with the scripted fake provider: what the model and the owner see when the
//! model repeats a call, and when its reply is tool-call markup that cannot be used.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use async_trait::async_trait;
use steward_config::Config;
use steward_core::NoObserver;
use steward_core::{ApprovalAnswer, ApprovalKey, Approver};
use steward_core::{PlannerChoice, RunRequest, Runtime, run_task};
use steward_policy::Redactor;
use steward_protocol::{ApprovalRequest, ErrorClass, Role, StopReason, ToolChoice};
use steward_provider::fake::{FakeProvider, Scenario};
use steward_store::{RunRecord, RunStatus, SqliteStore, Store};
use steward_tools::ToolRegistry;
use tokio_util::sync::CancellationToken;

/// An owner who rejects every request, or never answers; counts how often it was asked.
struct Owner {
    asked: AtomicU32,
    answers: bool,
}

#[async_trait]
impl Approver for Owner {
    async fn ask(&self, _request: &ApprovalRequest, _token: &str) -> ApprovalAnswer {
        self.asked.fetch_add(1, Ordering::SeqCst);
        if !self.answers {
            std::future::pending::<()>().await;
        }
        ApprovalAnswer::Reject { reason: "not today".into(), decided_by: "local:alice".into() }
    }
}

/// Runs `scenario` in a workspace holding `note.txt` = `old\n`; returns the run, the provider
/// (for the requests the model saw), how often the owner was asked, and the note afterwards.
async fn run(scenario: &str, owner_answers: bool, config: Config) -> (RunRecord, Arc<FakeProvider>, u32, String) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("note.txt"), "old\n").unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let runtime = Runtime::new(dir.path(), store, Redactor::new(Vec::new()), ApprovalKey::generate());
    let provider = Arc::new(FakeProvider::new(Scenario::from_toml(scenario).unwrap()));
    let owner = Arc::new(Owner { asked: AtomicU32::new(0), answers: owner_answers });
    let request = RunRequest {
        task: "change the note".into(),
        owner_id: "local:alice".into(),
        workspace: ws.clone(),
        planner: PlannerChoice {
            kind: "model".into(),
            provider: provider.clone(),
            model: "fake".into(),
            tool_choice: ToolChoice::Auto,
            max_tokens: None,
        },
        config,
        tools: ToolRegistry::builtin(),
        approver: owner.clone(),
        observer: Arc::new(NoObserver),
        cancel: CancellationToken::new(),
        run_id: None,
        history: Vec::new(),
        attachments: Vec::new(),
        roles: None,
    };
    let record = run_task(&runtime, request).await.unwrap();
    let note = std::fs::read_to_string(ws.join("note.txt")).unwrap();
    (record, provider, owner.asked.load(Ordering::SeqCst), note)
}

const EDIT: &str = "[[round]]\n[[round.tool_call]]\nname = \"edit\"\narguments = { path = \"note.txt\", old = \"old\", new = \"new\" }\n";

/// The tool results the model saw in request `n` (0-based).
fn results(provider: &FakeProvider, n: usize) -> Vec<String> {
    provider.requests()[n].messages.iter().filter(|m| m.role == Role::Tool).map(|m| m.content.clone()).collect()
}

#[tokio::test]
async fn a_call_the_owner_rejected_is_not_asked_again_and_the_model_is_told_why() {
    let (run, provider, asked, note) = run(&EDIT.repeat(4), true, Config::default()).await;
    assert_eq!(asked, 1, "the owner answered this exact call once");
    assert_eq!(note, "old\n");
    assert_eq!(run.stop_reason, Some(StopReason::Stuck));
    assert_eq!(run.status, RunStatus::Completed);
    let seen = results(&provider, 2);
    let told = seen.last().unwrap();
    assert!(told.contains("rejected by the owner: not today") && told.contains("not asked again"), "{told}");
}

#[tokio::test]
async fn a_call_whose_approval_expired_is_not_asked_again() {
    let mut config = Config::default();
    config.policy.approval_timeout_seconds = Some(1);
    let scenario = format!("{}[[round]]\ntext = \"Nobody approved it.\"\n", EDIT.repeat(2));
    let (run, provider, asked, note) = run(&scenario, false, config).await;
    assert_eq!(asked, 1);
    assert_eq!(note, "old\n");
    assert_eq!(run.stop_reason, Some(StopReason::Answered));
    let told = results(&provider, 2).pop().unwrap();
    assert!(told.contains("until the request expired") && told.contains("new run"), "{told}");
}

#[tokio::test]
async fn unusable_markup_is_explained_to_the_model_once_then_fails_the_run() {
    let markup = r#"I'll fix it. {"name": "edit", "arguments": {"path": "note.txt", "old": "old", "new": "new"}}"#;
    let round = format!("[[round]]\ntext = '''{markup}'''\n");
    let (run, provider, asked, note) = run(&round.repeat(3), true, Config::default()).await;
    assert_eq!((asked, note.as_str()), (0, "old\n"), "nothing in the markup ran");
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(run.error_class, Some(ErrorClass::UnparsedToolCall));
    assert!(run.final_text.is_none(), "the markup is not reported as an answer");
    let requests = provider.requests();
    assert_eq!(requests.len(), 2, "told once, then the run ends");
    let feedback = requests[1].messages.last().unwrap();
    assert_eq!(feedback.role, Role::User);
    assert!(
        feedback.content.contains("not accepted as an answer") && feedback.content.contains("follows other text"),
        "{}",
        feedback.content
    );
}

#[tokio::test]
async fn unusable_markup_with_no_round_left_fails_instead_of_stopping_with_it() {
    let round = "[[round]]\ntext = '{\"name\": \"rm\", \"arguments\": {}}'\n";
    let mut config = Config::default();
    config.limits.max_rounds = 1;
    let (run, provider, _, _) = run(round, true, config).await;
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(run.error_class, Some(ErrorClass::UnparsedToolCall));
    assert!(run.error.as_deref().is_some_and(|e| e.contains("no round is left")), "{:?}", run.error);
    assert!(run.final_text.is_none());
    assert_eq!(provider.requests().len(), 1);
}
