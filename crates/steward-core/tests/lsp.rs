//! The `lsp_*` tools (SPEC T11) against real language servers installed by `.ci/peers.sh`:
//! pyright (`STEWARD_TEST_PYRIGHT`) and typescript-language-server (`STEWARD_TEST_TSLS`, run by
//! `STEWARD_TEST_NODE22`), each on a small project, in the sandbox.

use std::path::Path;
use std::sync::Arc;

use crate::common::{Recorder, Yes};
use serde_json::{Value, json};
use steward_config::{Config, LspServerConfig};
use steward_core::ApprovalKey;
use steward_core::{PlannerChoice, RunRequest, Runtime, run_task};
use steward_peers::required_env;
use steward_policy::{Redactor, Workspace};
use steward_protocol::ToolChoice;
use steward_provider::fake::{FakeProvider, Scenario};
use steward_store::{SqliteStore, Store};
use steward_tools::{ToolContext, ToolError, ToolRegistry};
use tokio_util::sync::CancellationToken;

fn server(name: &str, command: Vec<String>, extensions: &[&str], language_id: &str) -> LspServerConfig {
    LspServerConfig {
        name: name.into(),
        command,
        extensions: extensions.iter().map(|e| e.to_string()).collect(),
        language_id: language_id.into(),
        initialization_options: None,
        settings: None,
        unix_sockets: false,
    }
}

fn pyright() -> LspServerConfig {
    server("pyright", vec![required_env("STEWARD_TEST_PYRIGHT"), "--stdio".into()], &["py", "pyi"], "python")
}

fn write(root: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
}

/// A package with a function and a class, an app using them, an ignored folder and a secret.
fn python_project(root: &Path) {
    write(
        root,
        &[
            ("pkg/__init__.py", ""),
            (
                "pkg/util.py",
                "def helper(count: int) -> int:\n    \"\"\"Doubles the count.\"\"\"\n    return count * 2\n\n\nclass Greeter:\n    def greet(self, name: str) -> str:\n        return \"hello \" + name\n",
            ),
            ("vendored/lib.py", "def hidden_helper() -> int:\n    return 1\n"),
            (".gitignore", "vendored/\n"),
            (".env", "API_TOKEN=not-for-models\n"),
            (
                "app.py",
                "from pkg.util import Greeter, helper\nfrom vendored.lib import hidden_helper\n\n\ndef main() -> int:\n    total = helper(2)\n    Greeter().greet(\"x\")\n    return total + helper(3) + hidden_helper() + len(\"ab\")\n",
            ),
        ],
    );
}

fn context(root: &Path, config: &Config) -> ToolContext {
    ToolContext {
        workspace: Arc::new(Workspace::open(root, &[]).unwrap()),
        cancel: CancellationToken::new(),
        env_allow: Vec::new(),
        timeout_ms: 60_000,
        snapshots: steward_tools::rollback::Snapshots::new(&std::env::temp_dir().join("steward-lsp-tests"), "run_lsp"),
        accept_weaker: Vec::new(),
        credentials: Default::default(),
        sandbox: config.sandbox.settings(),
        elicitor: None,
        egress: None,
    }
}

async fn call(registry: &ToolRegistry, ctx: &ToolContext, tool: &str, args: Value) -> Result<String, ToolError> {
    let tool = registry.get(tool).unwrap_or_else(|| panic!("{tool} is not offered"));
    tool.run(&args, ctx).await.map(|out| out.content)
}

fn setup(root: &Path, servers: Vec<LspServerConfig>) -> (ToolRegistry, ToolContext) {
    let config = Config { lsp: servers, ..Config::default() };
    let ws = Workspace::open(root, &[]).unwrap();
    let registry = ToolRegistry::for_config(&config, &ws).unwrap();
    (registry, context(ws.root(), &config))
}

#[test]
fn the_tools_are_offered_only_where_a_server_serves_files() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &[("notes.md", "# notes\n")]);
    let servers = vec![server("pyright", vec!["pyright-langserver".into()], &["py"], "python")];
    let (registry, _) = setup(dir.path(), servers.clone());
    assert!(registry.get("lsp_hover").is_none() && registry.lsp().is_none(), "no Python file, no tools");
    write(dir.path(), &[("src/app.py", "x = 1\n")]);
    let (registry, _) = setup(dir.path(), servers);
    for name in ["lsp_definition", "lsp_references", "lsp_hover", "lsp_symbols", "lsp_diagnostics"] {
        let tool = registry.get(name).unwrap_or_else(|| panic!("{name} missing"));
        assert!(!tool.spec().writes && !tool.spec().untrusted_output, "{name} only reads, without taint");
        assert!(tool.spec().description.contains("python files (.py)"), "{}", tool.spec().description);
    }
}

#[tokio::test]
async fn peer_lsp_pyright_finds_definitions_references_hover_and_symbols() {
    let dir = tempfile::tempdir().unwrap();
    python_project(dir.path());
    let (registry, ctx) = setup(dir.path(), vec![pyright()]);

    let out = call(&registry, &ctx, "lsp_definition", json!({"path": "app.py", "symbol": "helper", "line": 6}))
        .await
        .unwrap();
    assert!(out.contains("pkg/util.py:1:5: def helper(count: int) -> int:"), "{out}");
    assert!(out.contains("`helper` at app.py:6:13"), "{out}");

    let out =
        call(&registry, &ctx, "lsp_references", json!({"path": "pkg/util.py", "symbol": "helper"})).await.unwrap();
    assert!(out.starts_with("4 references to `helper` at pkg/util.py:1:5"), "{out}");
    for row in [
        "app.py:1:31: from pkg.util import Greeter, helper",
        "app.py:6:13: total = helper(2)",
        "app.py:8:20: return total + helper(3)",
        "pkg/util.py:1:5: def helper(count: int) -> int:",
    ] {
        assert!(out.contains(row), "{row} missing:\n{out}");
    }

    let out = call(&registry, &ctx, "lsp_hover", json!({"path": "app.py", "line": 6, "column": 14})).await.unwrap();
    assert!(out.contains("def helper(count: int) -> int") && out.contains("Doubles the count"), "{out}");

    let out = call(&registry, &ctx, "lsp_symbols", json!({"path": "pkg/util.py"})).await.unwrap();
    for row in ["function helper", "class Greeter", "  method greet"] {
        assert!(out.contains(row), "{row} missing:\n{out}");
    }
    let out = call(&registry, &ctx, "lsp_symbols", json!({"query": "Greeter"})).await.unwrap();
    assert!(out.contains("class Greeter — pkg/util.py:6:7: class Greeter:"), "{out}");

    // A place in an ignored file is named without its text; one outside by its file name.
    let out = call(&registry, &ctx, "lsp_definition", json!({"path": "app.py", "symbol": "hidden_helper", "line": 8}))
        .await
        .unwrap();
    assert!(out.contains("vendored/lib.py:1 (not shown: ignored_path)"), "{out}");
    assert!(!out.contains("return 1"), "{out}");
    let out =
        call(&registry, &ctx, "lsp_definition", json!({"path": "app.py", "symbol": "len", "line": 8})).await.unwrap();
    assert!(out.contains("outside the workspace: builtins.pyi:"), "{out}");

    // Paths pass `read`'s checks: a secret file is refused before any server sees it.
    let err = call(&registry, &ctx, "lsp_hover", json!({"path": ".env", "line": 1, "column": 1})).await.unwrap_err();
    assert_eq!(err.rule.as_deref(), Some("secret_path"), "{err:?}");
    let err = call(&registry, &ctx, "lsp_hover", json!({"path": "app.py", "symbol": "nowhere"})).await.unwrap_err();
    assert!(err.message.contains("`nowhere` is not in `app.py`"), "{err:?}");

    let manager = registry.lsp().unwrap();
    assert_eq!(manager.running().await, 1);
    manager.shutdown().await;
    assert_eq!(manager.running().await, 0);
}

/// A run asks pyright for the diagnostics of `app.py`, edits `pkg/util.py` with the `edit` tool
/// (the orchestrator tells the running server), then asks again: the new error shows.
#[tokio::test]
async fn peer_lsp_pyright_diagnostics_follow_an_edit_made_in_the_run() {
    let dir = tempfile::tempdir().unwrap();
    python_project(dir.path());
    let home = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let runtime = Runtime::new(home.path(), store, Redactor::new(Vec::new()), ApprovalKey::generate());
    let scenario = r#"
[[round]]
[[round.tool_call]]
name = "lsp_diagnostics"
arguments = { path = "app.py" }
[[round]]
[[round.tool_call]]
name = "edit"
arguments = { path = "pkg/util.py", old = "def helper(count: int) -> int:", new = "def helper(count: str) -> str:" }
[[round]]
[[round.tool_call]]
name = "lsp_diagnostics"
arguments = { path = "app.py" }
[[round]]
text = "done"
"#;
    let provider = Arc::new(FakeProvider::new(Scenario::from_toml(scenario).unwrap()));
    let config = Config { lsp: vec![pyright()], ..Config::default() };
    let ws = Workspace::open(dir.path(), &[]).unwrap();
    let tools = ToolRegistry::for_config(&config, &ws).unwrap();
    let manager = tools.lsp().unwrap().clone();
    let request = RunRequest {
        task: "check".into(),
        owner_id: "local:alice".into(),
        workspace: dir.path().to_path_buf(),
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
        observer: Arc::new(Recorder::default()),
        cancel: CancellationToken::new(),
        run_id: None,
        history: Vec::new(),
        attachments: Vec::new(),
        roles: None,
    };
    run_task(&runtime, request).await.unwrap();
    let result = |round: usize| -> String {
        let messages = &provider.requests()[round].messages;
        messages.iter().rev().find(|m| m.tool_call_id.is_some()).map(|m| m.content.clone()).unwrap_or_default()
    };
    assert!(result(1).contains("no problems reported in `app.py` (pyright)"), "{}", result(1));
    let after = result(3);
    assert!(after.contains("problem(s) in `app.py` (pyright)"), "{after}");
    assert!(after.contains("app.py:6:20: error:") && after.contains("\"Literal[2]\""), "{after}");
    assert_eq!(manager.running().await, 0, "the run shut its server down");
}

/// pyright behind a proxy that kills it in the middle of a hover for `boom.py`: the model is
/// told the server stopped and that it is started again; the next call works; after five
/// deaths in a row it is not started again.
#[tokio::test]
async fn peer_lsp_a_server_that_crashes_mid_request_is_restarted_with_backoff() {
    let dir = tempfile::tempdir().unwrap();
    python_project(dir.path());
    write(dir.path(), &[("boom.py", "boom = 1\n")]);
    let proxy = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lsp/crash_on_hover.py");
    let command = vec![
        "python3".to_string(),
        proxy.display().to_string(),
        "boom.py".into(),
        required_env("STEWARD_TEST_PYRIGHT"),
        "--stdio".into(),
    ];
    let (registry, ctx) = setup(dir.path(), vec![server("pyright", command, &["py"], "python")]);
    let boom = json!({"path": "boom.py", "line": 1, "column": 1});

    let err = call(&registry, &ctx, "lsp_hover", boom.clone()).await.unwrap_err();
    assert!(err.message.contains("the language server `pyright` stopped before it answered (exit status 3"), "{err:?}");
    assert!(err.message.contains("crashing on purpose"), "its error output is quoted: {err:?}");
    assert!(err.message.contains("it is started again on the next call (after a pause of 250 ms)"), "{err:?}");

    let started = std::time::Instant::now();
    let out = call(&registry, &ctx, "lsp_hover", json!({"path": "app.py", "line": 6, "column": 14})).await.unwrap();
    assert!(out.contains("Doubles the count"), "restarted: {out}");
    assert!(started.elapsed() >= std::time::Duration::from_millis(250), "after the backoff");

    let mut last = String::new();
    for _ in 0..steward_tools::LSP_MAX_RESTARTS {
        last = call(&registry, &ctx, "lsp_hover", boom.clone()).await.unwrap_err().message;
    }
    assert!(last.contains("not started again in this run"), "{last}");
    let err = call(&registry, &ctx, "lsp_hover", json!({"path": "app.py", "line": 6, "column": 14})).await.unwrap_err();
    assert!(err.message.contains("stopped 5 times in a row and is not started again in this run"), "{err:?}");
}

fn tsls() -> LspServerConfig {
    let mut config = server(
        "typescript",
        vec![required_env("STEWARD_TEST_NODE22"), required_env("STEWARD_TEST_TSLS"), "--stdio".into()],
        &["ts", "tsx"],
        "typescript",
    );
    // Without the syntax-only server, which answers while the project loads and knows only
    // the open files.
    config.initialization_options =
        Some(json!({"disableAutomaticTypingAcquisition": true, "tsserver": {"useSyntaxServer": "never"}}));
    config
}

#[tokio::test]
async fn peer_lsp_typescript_language_server_across_files_and_after_an_edit() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            (
                "tsconfig.json",
                r#"{"compilerOptions": {"strict": true, "target": "es2022", "module": "esnext", "moduleResolution": "bundler"}, "include": ["src"]}"#,
            ),
            (
                "src/util.ts",
                "/** Doubles the count. */\nexport function helper(count: number): number {\n  return count * 2;\n}\n",
            ),
            (
                "src/app.ts",
                "import { helper } from \"./util\";\n\nexport const total: number = helper(2) + helper(3);\n",
            ),
        ],
    );
    let (registry, ctx) = setup(dir.path(), vec![tsls()]);

    let out = call(&registry, &ctx, "lsp_definition", json!({"path": "src/app.ts", "symbol": "helper", "line": 3}))
        .await
        .unwrap();
    assert!(out.contains("src/util.ts:2:17: export function helper(count: number): number {"), "{out}");

    let out =
        call(&registry, &ctx, "lsp_references", json!({"path": "src/util.ts", "symbol": "helper"})).await.unwrap();
    for row in ["src/app.ts:1:10:", "src/app.ts:3:30:", "src/app.ts:3:42:", "src/util.ts:2:17:"] {
        assert!(out.contains(row), "{row} missing:\n{out}");
    }

    let out = call(&registry, &ctx, "lsp_hover", json!({"path": "src/app.ts", "line": 3, "column": 31})).await.unwrap();
    assert!(out.contains("helper(count: number): number") && out.contains("Doubles the count"), "{out}");

    let out = call(&registry, &ctx, "lsp_diagnostics", json!({"path": "src/app.ts"})).await.unwrap();
    assert!(out.contains("no problems reported in `src/app.ts` (typescript)"), "{out}");
    let edit = json!({"path": "src/app.ts", "old": "helper(3)", "new": "helper(\"3\")"});
    let changed = registry.get("edit").unwrap().run(&edit, &ctx).await.unwrap();
    let paths: Vec<String> = changed.changes.iter().map(|(path, _)| path.clone()).collect();
    registry.lsp().unwrap().files_changed(&paths, &ctx).await;
    let out = call(&registry, &ctx, "lsp_diagnostics", json!({"path": "src/app.ts"})).await.unwrap();
    assert!(out.contains("src/app.ts:3:49: error:") && out.contains("string"), "{out}");
    registry.lsp().unwrap().shutdown().await;
}
