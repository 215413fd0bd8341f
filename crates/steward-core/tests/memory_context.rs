//! Remembered facts reach the model of the owner's runs, and only of the owner's (SPEC A3, A5).

use std::sync::Arc;

use steward_config::Config;
use steward_core::NoObserver;
use steward_core::{ApprovalKey, NoApprover};
use steward_core::{PlannerChoice, RunRequest, Runtime, memory, run_task};
use steward_policy::Redactor;
use steward_protocol::ToolChoice;
use steward_provider::fake::{FakeProvider, Scenario};
use steward_store::{SqliteStore, Store};
use steward_tools::ToolRegistry;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn the_owners_facts_are_in_the_system_message_and_nobody_elses() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let redactor = Redactor::new(Vec::new());
    memory::remember(
        store.as_ref(),
        &steward_core::SystemClock,
        &redactor,
        "local:alice",
        "the tests run with cargo nextest",
    )
    .await
    .unwrap();
    memory::remember(store.as_ref(), &steward_core::SystemClock, &redactor, "web:bob", "bob likes tabs").await.unwrap();
    let runtime = Runtime::new(dir.path(), store, redactor, ApprovalKey::generate());
    let provider = Arc::new(FakeProvider::new(Scenario::from_toml("[[round]]\ntext = \"ok\"\n").unwrap()));
    let request = RunRequest {
        task: "how are tests run?".into(),
        owner_id: "local:alice".into(),
        workspace: dir.path().to_path_buf(),
        planner: PlannerChoice {
            kind: "model".into(),
            provider: provider.clone(),
            model: "fake".into(),
            tool_choice: ToolChoice::Auto,
            max_tokens: None,
        },
        config: Config::default(),
        tools: ToolRegistry::builtin(),
        approver: Arc::new(NoApprover),
        observer: Arc::new(NoObserver),
        cancel: CancellationToken::new(),
        run_id: None,
        history: Vec::new(),
        attachments: Vec::new(),
        roles: None,
    };
    run_task(&runtime, request).await.unwrap();
    let system = &provider.requests()[0].messages[0].content;
    assert!(system.contains("Remembered facts:\n1. the tests run with cargo nextest"), "{system}");
    assert!(!system.contains("bob likes tabs"));
}
