//! Toolchains (SPEC T6) and hooks (SPEC T9) in real runs with the scripted fake provider.

use std::sync::Arc;

use crate::common::{Recorder, Yes};
use async_trait::async_trait;
use serde_json::{Value, json};
use steward_config::Config;
use steward_core::ApprovalKey;
use steward_core::ChainConfig;
use steward_core::HookConfig;
use steward_core::{PlannerChoice, RunRequest, Runtime, run_task};
use steward_policy::Redactor;
use steward_protocol::{Event, RiskLevel, ToolChoice, ToolSpec};
use steward_provider::fake::{FakeProvider, Scenario};
use steward_store::{SqliteStore, Store};
use steward_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
use tokio_util::sync::CancellationToken;

/// A tool offered only inside its chain.
struct Stamp(ToolSpec);

#[async_trait]
impl Tool for Stamp {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn run(&self, _args: &Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput { content: "stamped".into(), ..Default::default() })
    }
    fn chain_only(&self) -> bool {
        true
    }
}

fn stamp() -> Arc<dyn Tool> {
    Arc::new(Stamp(ToolSpec {
        name: "stamp".into(),
        description: "Stamps.".into(),
        input_schema: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        risk: RiskLevel::Safe,
        writes: false,
        path_inputs: Vec::new(),
        untrusted_output: false,
    }))
}

async fn run(ws: &std::path::Path, toml: &str, config: Config, tools: ToolRegistry) -> (Arc<FakeProvider>, Vec<Event>) {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let runtime = Runtime::new(dir.path(), store, Redactor::new(Vec::new()), ApprovalKey::generate());
    let provider = Arc::new(FakeProvider::new(Scenario::from_toml(toml).unwrap()));
    let recorder = Arc::new(Recorder::default());
    let request = RunRequest {
        task: "go".into(),
        owner_id: "local:alice".into(),
        workspace: ws.to_path_buf(),
        planner: PlannerChoice {
            kind: "model".into(),
            provider: provider.clone(),
            model: "fake".into(),
            tool_choice: ToolChoice::Auto,
            max_tokens: None,
        },
        config,
        tools,
        approver: Arc::new(Yes),
        observer: recorder.clone(),
        cancel: CancellationToken::new(),
        run_id: None,
        history: Vec::new(),
        attachments: Vec::new(),
        roles: None,
    };
    run_task(&runtime, request).await.unwrap();
    let events = recorder.0.lock().unwrap().clone();
    (provider, events)
}

fn offered(provider: &FakeProvider, request: usize) -> Vec<String> {
    let mut names: Vec<String> = provider.requests()[request].tools.iter().map(|t| t.name.clone()).collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_chain_offers_only_its_next_tool_until_it_ends() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("note.txt"), "hello\n").unwrap();
    let config = Config {
        chains: vec![ChainConfig {
            name: "inspect".into(),
            description: "List, read, stamp.".into(),
            tools: vec!["list".into(), "read".into(), "stamp".into()],
        }],
        ..Config::default()
    };
    let mut tools = ToolRegistry::builtin();
    tools.insert(stamp());
    let scenario = r#"
[[round]]
[[round.tool_call]]
name = "inspect"
arguments = { path = "." }
[[round]]
[[round.tool_call]]
name = "list"
arguments = { path = "." }
[[round]]
[[round.tool_call]]
name = "read"
arguments = { path = "note.txt" }
[[round]]
[[round.tool_call]]
name = "stamp"
arguments = {}
[[round]]
[[round.tool_call]]
name = "stamp"
arguments = {}
[[round]]
text = "done"
"#;
    let (provider, events) = run(ws.path(), scenario, config, tools).await;
    // Outside the chain: the chain is offered, its chain-only tool is not.
    let first = offered(&provider, 0);
    assert!(first.contains(&"inspect".to_string()) && first.contains(&"list".to_string()));
    assert!(!first.contains(&"stamp".to_string()), "{first:?}");
    // Inside: only the next step, forced.
    assert_eq!(offered(&provider, 1), ["read"]);
    assert_eq!(provider.requests()[1].tool_choice, ToolChoice::Named("read".into()));
    assert_eq!(offered(&provider, 2), ["read"], "a refused call does not advance the chain");
    assert_eq!(offered(&provider, 3), ["stamp"]);
    // After the last step the chain is over: `stamp` is chain-only again.
    assert!(!offered(&provider, 4).contains(&"stamp".to_string()));
    let denied: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            steward_protocol::EventKind::ToolDenied { rule, .. } => Some(rule.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(denied, ["chain_mode", "chain_only"]);
    let results: Vec<String> = provider.requests()[4]
        .messages
        .iter()
        .filter(|m| m.tool_call_id.is_some())
        .map(|m| m.content.clone())
        .collect();
    assert!(results[0].contains("next step is `read`"), "{results:?}");
    assert!(results.iter().any(|r| r.contains("hello")), "the read ran: {results:?}");
    assert!(results.iter().any(|r| r.contains("chain `inspect` completed")), "{results:?}");
}

#[tokio::test]
async fn a_failing_step_ends_the_chain_and_says_so() {
    let ws = tempfile::tempdir().unwrap();
    let config = Config {
        chains: vec![ChainConfig {
            name: "two".into(),
            description: "Read then list.".into(),
            tools: vec!["read".into(), "list".into()],
        }],
        ..Config::default()
    };
    let scenario = r#"
[[round]]
[[round.tool_call]]
name = "two"
arguments = { path = "missing.txt" }
[[round]]
text = "ok"
"#;
    let (provider, _) = run(ws.path(), scenario, config, ToolRegistry::builtin()).await;
    let result = provider.requests()[1].messages.iter().find(|m| m.tool_call_id.is_some()).unwrap().clone();
    assert!(
        result.is_error && result.content.contains("chain `two` ended: step 1 (`read`) failed"),
        "{}",
        result.content
    );
    assert!(offered(&provider, 1).len() > 1, "normal tools are offered again");
}

#[tokio::test]
async fn hooks_run_after_matching_changes_and_their_output_reaches_the_model() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("note.txt"), "old\n").unwrap();
    std::fs::write(ws.path().join("other.md"), "old\n").unwrap();
    std::fs::create_dir(ws.path().join("out")).unwrap();
    let config = Config {
        hooks: vec![
            HookConfig {
                name: "shout".into(),
                events: vec!["edit".into()],
                path_pattern: "**/*.txt".into(),
                commands: vec![vec![
                    "sh".into(),
                    "-c".into(),
                    "tr a-z A-Z < {path} > out/shouted.txt && echo formatted {path} && (touch .git_escape 2>/dev/null || echo root-is-read-only)".into(),
                ]],
                timeout_ms: None,
                writes: vec!["out".into()],
            },
            HookConfig {
                name: "broken".into(),
                events: vec!["edit".into()],
                path_pattern: "**".into(),
                commands: vec![vec!["sh".into(), "-c".into(), "echo nope >&2; exit 3".into()]],
                timeout_ms: None,
            writes: Vec::new(),
            },
        ],
        ..Config::default()
    };
    let scenario = r#"
[[round]]
[[round.tool_call]]
name = "edit"
arguments = { path = "note.txt", old = "old", new = "new" }
[[round.tool_call]]
name = "edit"
arguments = { path = "other.md", old = "old", new = "new" }
[[round.tool_call]]
name = "read"
arguments = { path = "note.txt" }
[[round]]
text = "done"
"#;
    let (provider, _) = run(ws.path(), scenario, config, ToolRegistry::builtin()).await;
    let first = provider.requests()[1].messages.iter().find(|m| m.tool_call_id.is_some()).map(|m| m.content.clone());
    assert_eq!(std::fs::read_to_string(ws.path().join("out/shouted.txt")).ok().as_deref(), Some("NEW\n"), "{first:?}");
    assert!(!ws.path().join(".git_escape").exists(), "a hook wrote outside its writable paths");
    assert!(first.as_deref().is_some_and(|r| r.contains("root-is-read-only")), "{first:?}");
    let results: Vec<String> = provider.requests()[1]
        .messages
        .iter()
        .filter(|m| m.tool_call_id.is_some())
        .map(|m| m.content.clone())
        .collect();
    assert!(
        results[0].contains("[hook `shout` passed after edit of `note.txt`]")
            && results[0].contains("formatted note.txt"),
        "{}",
        results[0]
    );
    assert!(results[0].contains("[hook `broken` FAILED"), "a failing hook is reported: {}", results[0]);
    assert!(!results[1].contains("shout"), "the pattern limits the hook: {}", results[1]);
    assert!(!results[2].contains("hook"), "read fires no hooks: {}", results[2]);
}

#[tokio::test]
async fn a_real_formatter_hook_rewrites_the_edited_file_and_reports_back() {
    if std::process::Command::new("rustfmt").arg("--version").output().is_err() {
        panic!("rustfmt is not installed; it comes with the Rust toolchain this project builds with");
    }
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("src")).unwrap();
    std::fs::write(ws.path().join("src/lib.rs"), "pub fn answer() -> u32 { 41 }\n").unwrap();
    let config = Config {
        hooks: vec![HookConfig {
            name: "rustfmt".into(),
            events: vec!["edit".into()],
            path_pattern: "**/*.rs".into(),
            commands: vec![vec!["rustfmt".into(), "--edition".into(), "2024".into(), "{path}".into()]],
            timeout_ms: Some(60_000),
            writes: Vec::new(),
        }],
        ..Config::default()
    };
    let scenario = r#"
[[round]]
[[round.tool_call]]
name = "edit"
arguments = { path = "src/lib.rs", old = "41 }", new = "42 }" }
[[round]]
text = "done"
"#;
    let (provider, _) = run(ws.path(), scenario, config, ToolRegistry::builtin()).await;
    assert_eq!(std::fs::read_to_string(ws.path().join("src/lib.rs")).unwrap(), "pub fn answer() -> u32 {\n    42\n}\n");
    let result = provider.requests()[1].messages.iter().find(|m| m.tool_call_id.is_some()).unwrap().content.clone();
    assert!(result.contains("[hook `rustfmt` passed after edit of `src/lib.rs`]"), "{result}");
}
