//! The server of the API tests, in-process: a fake-provider launcher (with a tool that asks
//! the run's owner for input), an in-memory store, one workspace with `note.txt`, and a
//! browser-like client with its owner cookie and CSRF token.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};
use steward_config::Config;
use steward_core::ApprovalKey;
use steward_core::{PlannerChoice, Runtime};
use steward_mcp::{ElicitationAnswer, ElicitationRequest};
use steward_policy::Redactor;
use steward_protocol::{ToolChoice, ToolSpec};
use steward_provider::fake::{FakeProvider, Scenario};
use steward_server::{
    AppState, Launcher, LauncherError, Prepared, ProviderStatus, RunOptions, ServerOptions, Sessions,
};
use steward_store::{SqliteStore, Store};
use steward_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
use tower::ServiceExt;

pub const EDIT: &str = r#"
[[round]]
text = "Editing the note."
[[round.tool_call]]
name = "edit"
arguments = { path = "note.txt", old = "old", new = "new" }
[[round]]
text = "Finished."
"#;

pub struct TestLauncher {
    pub scenario: String,
    pub approval_timeout_seconds: Option<u64>,
    /// The model provider of the latest run, to read the requests it was sent.
    pub last: std::sync::Mutex<Option<Arc<FakeProvider>>>,
}

#[async_trait]
impl Launcher for TestLauncher {
    async fn prepare(&self, workspace: &Path, options: &RunOptions) -> Result<Prepared, LauncherError> {
        let mut config = Config::default();
        config.policy.approval_timeout_seconds = self.approval_timeout_seconds;
        let planner = if options.planner.planner.as_deref() == Some("classic") {
            PlannerChoice {
                kind: "classic".into(),
                provider: Arc::new(steward_core::ClassicPlanner),
                model: "classic".into(),
                tool_choice: ToolChoice::Auto,
                max_tokens: None,
            }
        } else {
            let provider =
                Arc::new(FakeProvider::new(Scenario::from_toml(&self.scenario).expect("the test scenario parses")));
            *self.last.lock().unwrap() = Some(provider.clone());
            PlannerChoice {
                kind: "model".into(),
                provider,
                model: "fake".into(),
                tool_choice: ToolChoice::Auto,
                max_tokens: None,
            }
        };
        let roles = (options.mode == Some(steward_core::RunMode::Roles)).then(|| {
            let roles = steward_core::RoleName::ALL
                .iter()
                .map(|role| steward_core::RoleAssignment {
                    role: *role,
                    provider: Arc::new(FakeProvider::new(Scenario::from_toml(&self.scenario).unwrap())),
                    provider_name: "fake".into(),
                    model: "fake".into(),
                    locality: steward_core::Locality::Local,
                    max_tokens: None,
                })
                .collect();
            steward_core::RolePlan { planner: planner.clone(), roles }
        });
        let mut tools = ToolRegistry::builtin();
        if self.scenario.contains("ask_owner") {
            tools.insert(Arc::new(AskOwner(ask_owner_spec())));
        }
        Ok(Prepared::new(workspace.to_path_buf(), config, tools, planner, roles)?)
    }
    async fn tools(&self, _workspace: &Path) -> Result<Vec<ToolSpec>, LauncherError> {
        Ok(ToolRegistry::builtin().specs())
    }
    async fn providers(&self) -> Vec<ProviderStatus> {
        vec![ProviderStatus { name: "fake".into(), reachable: true, models: vec!["fake".into()], error: String::new() }]
    }
}

pub fn ask_owner_spec() -> ToolSpec {
    ToolSpec {
        name: "ask_owner".into(),
        description: "Asks the run's owner for input, as an MCP server does".into(),
        input_schema: json!({"type": "object", "properties": {}}),
        risk: steward_protocol::RiskLevel::Low,
        writes: false,
        path_inputs: Vec::new(),
        untrusted_output: false,
    }
}

/// A tool that asks the run's owner for input the way an MCP server does during a call
/// (through the call's elicitor) and answers with what came back.
pub struct AskOwner(ToolSpec);

#[async_trait]
impl Tool for AskOwner {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    async fn run(&self, _args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let elicitor = ctx.elicitor.clone().ok_or_else(|| ToolError::failed("no elicitor"))?;
        let request = ElicitationRequest {
            server: "srv".into(),
            message: "Who <b>are</b> you? (key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789)".into(),
            schema: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "title": "Your name", "default": "Ada"},
                    "email": {"type": "string", "format": "email"},
                    "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 36},
                    "color": {"type": "string", "enum": ["red", "green"], "default": "green"},
                    "agree": {"type": "boolean", "default": true}
                },
                "required": ["name", "email"]
            }),
            order: ["name", "email", "age", "color", "agree"].map(String::from).to_vec(),
        };
        let content = match elicitor.elicit(request).await {
            ElicitationAnswer::Accept(values) => format!("accept {}", Value::Object(values)),
            other => other.action().to_string(),
        };
        Ok(ToolOutput { content, ..Default::default() })
    }
}

pub struct Server {
    pub _dir: tempfile::TempDir,
    pub ws: PathBuf,
    pub state: AppState,
    pub app: Router,
    pub login: String,
    pub launcher: Arc<TestLauncher>,
}

pub async fn server_with(scenario: &str, approval_timeout_seconds: Option<u64>, max_running: usize) -> Server {
    server_opts(scenario, approval_timeout_seconds, ServerOptions { max_running, ..ServerOptions::default() }).await
}

pub async fn server_opts(scenario: &str, approval_timeout_seconds: Option<u64>, options: ServerOptions) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("note.txt"), "old\n").unwrap();
    let ws = std::fs::canonicalize(&ws).unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let runtime = Runtime::new(dir.path(), store, Redactor::new(Vec::new()), ApprovalKey::generate());
    let sessions = Sessions::new(&[9u8; 64], "local:alice").unwrap();
    let login = sessions.issue_login_token();
    let launcher = Arc::new(TestLauncher {
        scenario: scenario.to_string(),
        approval_timeout_seconds,
        last: std::sync::Mutex::new(None),
    });
    let state = steward_server::app_state(
        Arc::new(runtime),
        launcher.clone(),
        sessions,
        ServerOptions { workspaces: vec![ws.clone()], ..options },
    );
    let app = steward_server::router(state.clone());
    Server { _dir: dir, ws, state, app, login, launcher }
}

pub async fn server(scenario: &str) -> Server {
    server_with(scenario, None, 4).await
}

/// A browser: its owner cookie and CSRF token.
pub struct Client {
    pub cookie: String,
    pub csrf: String,
}

pub async fn body_text(response: axum::response::Response) -> String {
    let bytes = axum::body::to_bytes(response.into_body(), 10 << 20).await.unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}

pub fn csrf_of(html: &str) -> String {
    let at = html.find("name=\"csrf-token\" content=\"").unwrap() + "name=\"csrf-token\" content=\"".len();
    html[at..at + 64].to_string()
}

pub fn set_cookie(response: &axum::response::Response) -> Option<String> {
    response.headers().get(header::SET_COOKIE).map(|v| v.to_str().unwrap().split(';').next().unwrap().to_string())
}

impl Server {
    /// A new browser: the first page view gives it an owner.
    pub async fn browser(&self) -> Client {
        let response = self.app.clone().oneshot(Request::get("/").body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let cookie = set_cookie(&response).expect("a new browser gets an owner cookie");
        let csrf = csrf_of(&body_text(response).await);
        Client { cookie, csrf }
    }

    pub async fn call(&self, client: &Client, method: &str, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let mut request = Request::builder().method(method).uri(path).header(header::COOKIE, &client.cookie);
        if method != "GET" {
            request = request.header("x-csrf-token", &client.csrf);
        }
        let request = match body {
            Some(b) => request.header(header::CONTENT_TYPE, "application/json").body(Body::from(b.to_string())),
            None => request.body(Body::empty()),
        }
        .unwrap();
        let response = self.app.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let text = body_text(response).await;
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    pub async fn page(&self, client: &Client, path: &str) -> (StatusCode, String) {
        let request = Request::get(path).header(header::COOKIE, &client.cookie).body(Body::empty()).unwrap();
        let response = self.app.clone().oneshot(request).await.unwrap();
        (response.status(), body_text(response).await)
    }

    pub async fn start(&self, client: &Client, task: &str) -> String {
        let (status, body) = self.call(client, "POST", "/api/runs", Some(json!({ "task": task }))).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["id"].as_str().unwrap().to_string()
    }

    /// Waits until the run has a pending approval and returns its id.
    pub async fn pending_approval(&self, client: &Client, run: &str) -> String {
        for _ in 0..500 {
            let (_, body) = self.call(client, "GET", &format!("/api/runs/{run}"), None).await;
            if let Some(a) = body["approvals"].as_array().and_then(|a| a.iter().find(|a| a["status"] == "pending"))
                && self.state.live.approval_owner(a["id"].as_str().unwrap()).is_some()
            {
                return a["id"].as_str().unwrap().to_string();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no pending approval in run {run}");
    }

    /// Waits until the run has a pending request for input and returns its id.
    pub async fn pending_elicitation(&self, run: &str) -> String {
        for _ in 0..500 {
            if let Some(pending) = self.state.live.get(run).and_then(|r| r.pending_elicitations().into_iter().next()) {
                return pending.id;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no pending request for input in run {run}");
    }

    /// Posts a form as `client`: the status, the page and where it redirects.
    pub async fn post_form(&self, client: &Client, path: &str, body: &str) -> (StatusCode, String, Option<String>) {
        let request = Request::post(path)
            .header(header::COOKIE, &client.cookie)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(body.to_string()))
            .unwrap();
        let response = self.app.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let location = response.headers().get(header::LOCATION).map(|v| v.to_str().unwrap().to_string());
        (status, body_text(response).await, location)
    }

    pub async fn wait_status(&self, client: &Client, run: &str, want: &str) -> Value {
        for _ in 0..1000 {
            let (_, body) = self.call(client, "GET", &format!("/api/runs/{run}"), None).await;
            if body["run"]["status"] == want {
                return body;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("run {run} never became {want}");
    }
}
