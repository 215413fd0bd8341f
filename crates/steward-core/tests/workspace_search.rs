//! The workspace search index in a run (SPEC K, A3): the chunks matching the task reach the
//! model planner with their paths and lines, the trace records them, `search_index` answers
//! the model's own queries, and an index that cannot be used never fails the run.

use std::sync::{Arc, Mutex};

use steward_config::Config;
use steward_core::EventObserver;
use steward_core::{ApprovalKey, NoApprover};
use steward_core::{PlannerChoice, RunRequest, Runtime, run_task};
use steward_policy::{Redactor, Workspace};
use steward_protocol::{Event, EventKind, ToolChoice};
use steward_provider::fake::{FakeProvider, Scenario};
use steward_store::{RunStatus, SqliteStore, Store};
use steward_tools::ToolRegistry;
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct Events(Mutex<Vec<Event>>);

impl EventObserver for Events {
    fn on_event(&self, event: &Event) {
        self.0.lock().unwrap().push(event.clone());
    }
}

struct Setup {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    runtime: Runtime,
    workspace: std::path::PathBuf,
}

async fn setup() -> Setup {
    let ws = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let path = ws.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "src/retry.rs",
        "/// Waits longer after each failed attempt: exponential backoff.\npub fn backoff_delay(attempt: u32) -> u64 {\n    100 << attempt\n}\n",
    );
    write("src/render.rs", "pub fn render_table(rows: &[String]) -> String { rows.join(\"\\n\") }\n");
    write(".env", "API_TOKEN=backoff-secret-value-123\n");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let runtime = Runtime::new(home.path(), store, Redactor::new(Vec::new()), ApprovalKey::generate());
    let workspace = std::fs::canonicalize(ws.path()).unwrap();
    Setup { _dirs: (ws, home), runtime, workspace }
}

async fn run(setup: &Setup, scenario: &str, config: Config) -> (Arc<FakeProvider>, Vec<Event>, RunStatus) {
    let provider = Arc::new(FakeProvider::new(Scenario::from_toml(scenario).unwrap()));
    let events = Arc::new(Events::default());
    let ws = Workspace::open(&setup.workspace, &[]).unwrap();
    let request = RunRequest {
        task: "How long is the backoff delay after a failed attempt?".into(),
        owner_id: "local:alice".into(),
        workspace: setup.workspace.clone(),
        planner: PlannerChoice {
            kind: "model".into(),
            provider: provider.clone(),
            model: "fake".into(),
            tool_choice: ToolChoice::Auto,
            max_tokens: None,
        },
        tools: ToolRegistry::for_config(&config, &ws).unwrap(),
        config,
        approver: Arc::new(NoApprover),
        observer: events.clone(),
        cancel: CancellationToken::new(),
        run_id: None,
        history: Vec::new(),
        attachments: Vec::new(),
        roles: None,
    };
    let record = run_task(&setup.runtime, request).await.unwrap();
    let events = events.0.lock().unwrap().clone();
    (provider, events, record.status)
}

#[tokio::test]
async fn the_matching_chunks_reach_the_planner_with_paths_and_lines() {
    let setup = setup().await;
    let (provider, events, status) = run(&setup, "[[round]]\ntext = \"100 ms doubled\"\n", Config::default()).await;
    assert_eq!(status, RunStatus::Completed);
    let system = &provider.requests()[0].messages[0].content;
    assert!(system.contains(steward_core::SEARCH_CONTEXT_HEADING), "{system}");
    assert!(system.contains("src/retry.rs:1-4"), "{system}");
    assert!(system.contains("pub fn backoff_delay"), "{system}");
    assert!(!system.contains("backoff-secret-value"), "a secret file is never indexed");
    let retrieved = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ContextRetrieved { chunks, files, .. } => Some((chunks.clone(), *files)),
            _ => None,
        })
        .expect("context_retrieved");
    assert_eq!(retrieved.1, 2);
    assert_eq!(retrieved.0[0].path, "src/retry.rs");
    assert_eq!((retrieved.0[0].start_line, retrieved.0[0].end_line), (1, 4));
    // Off: no lookup, no tool.
    let off: Config =
        Config { search: steward_config::SearchConfig { enabled: false, ..Default::default() }, ..Config::default() };
    let (provider, events, _) = run(&setup, "[[round]]\ntext = \"ok\"\n", off).await;
    assert!(!provider.requests()[0].messages[0].content.contains("backoff_delay"));
    assert!(!events.iter().any(|e| e.kind.name().starts_with("context_")));
    assert!(provider.requests()[0].tools.iter().all(|t| t.name != "search_index"));
}

#[tokio::test]
async fn the_model_queries_the_index_with_search_index() {
    let setup = setup().await;
    let scenario = "[[round]]\n[[round.tool_call]]\nname = \"search_index\"\narguments = { query = \"render table rows\" }\n\
                    [[round]]\ntext = \"found\"\n";
    let (provider, events, status) = run(&setup, scenario, Config::default()).await;
    assert_eq!(status, RunStatus::Completed);
    assert!(events.iter().any(|e| matches!(&e.kind, EventKind::ToolCompleted { tool, .. } if tool == "search_index")));
    let result = provider.requests()[1].messages.iter().find(|m| m.tool_call_id.is_some()).unwrap().content.clone();
    assert!(result.starts_with("src/render.rs:1-1"), "{result}");
    assert!(result.contains("render_table"));
}

#[tokio::test]
async fn an_index_that_cannot_be_used_never_fails_the_run() {
    let setup = setup().await;
    // The index folder is a regular file: nothing can be written there.
    std::fs::write(&setup.runtime.index_dir, "").unwrap();
    let (provider, events, status) = run(&setup, "[[round]]\ntext = \"went on\"\n", Config::default()).await;
    assert_eq!(status, RunStatus::Completed);
    let error = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ContextUnavailable { error } => Some(error.clone()),
            _ => None,
        })
        .expect("context_unavailable");
    assert!(error.contains("search index"), "{error}");
    assert!(!provider.requests()[0].messages[0].content.contains("backoff_delay"));
}
