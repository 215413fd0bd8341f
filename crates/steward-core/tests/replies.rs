//! The agent loop with the scripted fake provider, fed the replies a small local model writes:
//! an echo of the call just made before the answer, a reply cut off by the output limit, a
//! no-argument tool given another tool's arguments, and the order tools are offered in.

use std::sync::Arc;

use steward_config::Config;
use steward_core::ApprovalKey;
use steward_core::NoObserver;
use steward_core::{PlannerChoice, RunRequest, Runtime, run_task};
use steward_policy::Redactor;
use steward_protocol::{AuditOutcome, AuditRecord, ErrorClass, Role, StopReason, ToolChoice};
use steward_provider::fake::{FakeProvider, Scenario};
use steward_store::{RunRecord, RunStatus, SqliteStore, Store};
use steward_tools::ToolRegistry;
use tokio_util::sync::CancellationToken;

/// Runs `scenario` in a workspace holding `note.txt` = `old\n`; returns the run, the provider
/// (for the requests the model saw) and the run's audit records.
async fn run(scenario: &str) -> (RunRecord, Arc<FakeProvider>, Vec<AuditRecord>) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("note.txt"), "old\n").unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let runtime = Runtime::new(dir.path(), store.clone(), Redactor::new(Vec::new()), ApprovalKey::generate());
    let provider = Arc::new(FakeProvider::new(Scenario::from_toml(scenario).unwrap()));
    let request = RunRequest {
        task: "what does the note say?".into(),
        owner_id: "local:alice".into(),
        workspace: ws.clone(),
        planner: PlannerChoice {
            kind: "model".into(),
            provider: provider.clone(),
            model: "fake".into(),
            tool_choice: ToolChoice::Auto,
            max_tokens: None,
        },
        config: Config::default(),
        tools: ToolRegistry::builtin(),
        approver: Arc::new(crate::common::Yes),
        observer: Arc::new(NoObserver),
        cancel: CancellationToken::new(),
        run_id: None,
        history: Vec::new(),
        attachments: Vec::new(),
        roles: None,
    };
    let record = run_task(&runtime, request).await.unwrap();
    let audit = store.audit_records(Some(&record.id)).await.unwrap();
    (record, provider, audit)
}

const READ: &str =
    "[[round]]\n[[round.tool_call]]\nname = \"read\"\narguments = { path = \"note.txt\" }\nid = \"call_1\"\n";

#[tokio::test]
async fn an_echo_of_the_call_just_made_is_left_out_and_the_restated_result_is_the_answer() {
    let scenario = format!(
        "{READ}[[round]]\ntext = '''{{\"name\": \"read\", \"arguments\": {{\"path\": \"note.txt\"}}}}\n\
         {{\"response\": \"The note says old.\"}}'''\n"
    );
    let (run, provider, audit) = run(&scenario).await;
    assert_eq!(run.stop_reason, Some(StopReason::Answered), "{:?}", run.error);
    assert_eq!(run.final_text.as_deref(), Some("The note says old."));
    assert_eq!(provider.requests().len(), 2, "the echo was not run again");
    let echo = audit.iter().find(|r| r.entry.policy == "text_recovery").expect("the echo is audited");
    assert_eq!((echo.entry.call_id.as_str(), echo.entry.outcome), ("call_1", AuditOutcome::Repaired));
    assert!(echo.entry.detail.contains("repeat of the call just made"), "{}", echo.entry.detail);
}

#[tokio::test]
async fn a_call_after_a_tool_result_that_is_not_the_echo_is_never_the_answer() {
    let scenario = format!(
        "{READ}[[round]]\ntext = '''{{\"name\": \"git_status\", \"arguments\": {{}}}}\nAll clean.'''\n\
         [[round]]\ntext = \"The note says old.\"\n"
    );
    let (run, provider, _) = run(&scenario).await;
    assert_eq!(run.final_text.as_deref(), Some("The note says old."));
    let feedback = provider.requests()[2].messages.last().unwrap().clone();
    assert_eq!(feedback.role, Role::User);
    assert!(feedback.content.contains("`git_status`"), "{}", feedback.content);
}

#[tokio::test]
async fn a_reply_cut_off_by_the_output_limit_goes_back_only_as_its_start_and_then_fails_the_run() {
    let runaway = format!(
        "{{\"name\": \"edit\", \"arguments\": {{\"path\": \"note.txt\", \"old\": \"old\", \"new\": \"{}",
        (0..600).map(|i| format!("word{i} ")).collect::<String>()
    );
    let round = format!("[[round]]\ntext = '''{runaway}'''\nfinish_reason = \"length\"\n");
    let (run, provider, _) = run(&round.repeat(2)).await;
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(run.error_class, Some(ErrorClass::RunawayReply));
    assert!(run.error.as_deref().is_some_and(|e| e.contains("output limit")), "{:?}", run.error);
    let requests = provider.requests();
    assert_eq!(requests.len(), 2, "told once, then the run ends");
    let kept = requests[1].messages.iter().find(|m| m.role == Role::Assistant).unwrap();
    assert!(kept.content.len() < 400, "only a marked start goes back: {} bytes", kept.content.len());
    assert!(kept.content.contains("is left out here]"), "{}", kept.content);
    assert!(requests[1].messages.last().unwrap().content.contains("ran away"));
}

#[tokio::test]
async fn a_no_argument_tool_given_list_arguments_runs_with_them_ignored() {
    let scenario = "[[round]]\n[[round.tool_call]]\nname = \"git_status\"\n\
                    arguments = { path = \".\", recursive = true }\nid = \"call_1\"\n\
                    [[round]]\ntext = \"Done.\"\n";
    let (run, provider, audit) = run(scenario).await;
    assert_eq!(run.final_text.as_deref(), Some("Done."));
    let ignored = audit.iter().find(|r| r.entry.policy == "ignored_arguments").expect("the repair is audited");
    assert_eq!(ignored.entry.outcome, AuditOutcome::Repaired);
    assert!(ignored.entry.detail.contains("`path`, `recursive` ignored"), "{}", ignored.entry.detail);
    // The call ran (it was not refused for its arguments) and the model sees it without them.
    let second = &provider.requests()[1];
    let asked = second.messages.iter().find(|m| m.role == Role::Assistant).unwrap();
    assert_eq!(asked.tool_calls[0].arguments, serde_json::json!({}));
    assert!(!audit.iter().any(|r| r.entry.outcome == AuditOutcome::Blocked), "nothing was refused");
}

#[tokio::test]
async fn simple_tools_are_offered_first_and_patches_last() {
    let (_, provider, _) = run("[[round]]\ntext = \"Nothing to do.\"\n").await;
    let names: Vec<String> = provider.requests()[0].tools.iter().map(|t| t.name.clone()).collect();
    assert_eq!(names[..3], ["read", "list", "search"], "{names:?}");
    assert_eq!(names[names.len() - 2..], ["propose_patch", "apply_patch"], "{names:?}");
    let list = provider.requests()[0].tools.iter().find(|t| t.name == "list").unwrap().clone();
    let path = list.input_schema["properties"]["path"]["description"].as_str().unwrap().to_string();
    assert!(path.contains("`.` is the workspace root"), "{path}");
}

#[tokio::test]
async fn a_reply_repeating_the_same_call_line_inside_a_patch_is_stopped_and_classed_a_runaway() {
    let runaway = format!(
        "{{\"name\": \"apply_patch\", \"arguments\": {{\"patch\": \"--- a/note.txt\\n+++ b/note.txt\\n{}",
        "+print('hello world')\\n".repeat(80)
    );
    let round = format!("[[round]]\ntext = '''{runaway}'''\n");
    let (run, provider, _) = run(&round.repeat(2)).await;
    assert_eq!(run.error_class, Some(ErrorClass::RunawayReply));
    assert!(run.error.as_deref().is_some_and(|e| e.contains("repeated the same text")), "{:?}", run.error);
    let kept = provider.requests()[1].messages.iter().find(|m| m.role == Role::Assistant).unwrap().clone();
    assert_eq!(kept.content.matches("+print('hello world')").count(), 1, "{}", kept.content);
}
