//! The JSON API and pages in-process (tower `oneshot`) and the event stream over a real
//! socket: owners and CSRF, approvals decided by the owner only, expiry, cancel, the queue,
//! memory, and escaping.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};
use steward_core::approval::ApprovalKey;
use steward_core::config::Config;
use steward_core::tools::{Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
use steward_core::{PlannerChoice, Runtime};
use steward_mcp::{ElicitationAnswer, ElicitationRequest};
use steward_policy::Redactor;
use steward_protocol::{ToolChoice, ToolSpec};
use steward_provider::fake::{FakeProvider, Scenario};
use steward_server::{AppState, Launcher, Prepared, ProviderStatus, RunOptions, ServerOptions, Sessions};
use steward_store::{SqliteStore, Store};
use tower::ServiceExt;

const EDIT: &str = r#"
[[round]]
text = "Editing the note."
[[round.tool_call]]
name = "edit"
arguments = { path = "note.txt", old = "old", new = "new" }
[[round]]
text = "Finished."
"#;

struct TestLauncher {
    scenario: String,
    approval_timeout_seconds: Option<u64>,
    /// The model provider of the latest run, to read the requests it was sent.
    last: std::sync::Mutex<Option<Arc<FakeProvider>>>,
}

#[async_trait]
impl Launcher for TestLauncher {
    async fn prepare(&self, workspace: &Path, options: &RunOptions) -> Result<Prepared, String> {
        let mut config = Config::default();
        config.policy.approval_timeout_seconds = self.approval_timeout_seconds;
        let planner = if options.planner.planner.as_deref() == Some("classic") {
            PlannerChoice {
                kind: "classic".into(),
                provider: Arc::new(steward_core::planner::classic::ClassicPlanner),
                model: "classic".into(),
                tool_choice: ToolChoice::Auto,
                max_tokens: None,
            }
        } else {
            let provider = Arc::new(FakeProvider::new(Scenario::from_toml(&self.scenario).map_err(|e| e.to_string())?));
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
        Prepared::new(workspace.to_path_buf(), config, tools, planner, roles)
    }
    async fn tools(&self, _workspace: &Path) -> Result<Vec<ToolSpec>, String> {
        Ok(ToolRegistry::builtin().specs())
    }
    async fn providers(&self) -> Vec<ProviderStatus> {
        vec![ProviderStatus { name: "fake".into(), reachable: true, models: vec!["fake".into()], error: String::new() }]
    }
}

fn ask_owner_spec() -> ToolSpec {
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
struct AskOwner(ToolSpec);

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

struct Server {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    state: AppState,
    app: Router,
    login: String,
    launcher: Arc<TestLauncher>,
}

async fn server_with(scenario: &str, approval_timeout_seconds: Option<u64>, max_running: usize) -> Server {
    server_opts(scenario, approval_timeout_seconds, ServerOptions { max_running, ..ServerOptions::default() }).await
}

async fn server_opts(scenario: &str, approval_timeout_seconds: Option<u64>, options: ServerOptions) -> Server {
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

async fn server(scenario: &str) -> Server {
    server_with(scenario, None, 4).await
}

/// A browser: its owner cookie and CSRF token.
struct Client {
    cookie: String,
    csrf: String,
}

async fn body_text(response: axum::response::Response) -> String {
    let bytes = axum::body::to_bytes(response.into_body(), 10 << 20).await.unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}

fn csrf_of(html: &str) -> String {
    let at = html.find("name=\"csrf-token\" content=\"").unwrap() + "name=\"csrf-token\" content=\"".len();
    html[at..at + 64].to_string()
}

fn set_cookie(response: &axum::response::Response) -> Option<String> {
    response.headers().get(header::SET_COOKIE).map(|v| v.to_str().unwrap().split(';').next().unwrap().to_string())
}

impl Server {
    /// A new browser: the first page view gives it an owner.
    async fn browser(&self) -> Client {
        let response = self.app.clone().oneshot(Request::get("/").body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let cookie = set_cookie(&response).expect("a new browser gets an owner cookie");
        let csrf = csrf_of(&body_text(response).await);
        Client { cookie, csrf }
    }

    async fn call(&self, client: &Client, method: &str, path: &str, body: Option<Value>) -> (StatusCode, Value) {
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

    async fn page(&self, client: &Client, path: &str) -> (StatusCode, String) {
        let request = Request::get(path).header(header::COOKIE, &client.cookie).body(Body::empty()).unwrap();
        let response = self.app.clone().oneshot(request).await.unwrap();
        (response.status(), body_text(response).await)
    }

    async fn start(&self, client: &Client, task: &str) -> String {
        let (status, body) = self.call(client, "POST", "/api/runs", Some(json!({ "task": task }))).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["id"].as_str().unwrap().to_string()
    }

    /// Waits until the run has a pending approval and returns its id.
    async fn pending_approval(&self, client: &Client, run: &str) -> String {
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
    async fn pending_elicitation(&self, run: &str) -> String {
        for _ in 0..500 {
            if let Some(pending) = self.state.live.get(run).and_then(|r| r.pending_elicitations().into_iter().next()) {
                return pending.id;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no pending request for input in run {run}");
    }

    /// Posts a form as `client`: the status, the page and where it redirects.
    async fn post_form(&self, client: &Client, path: &str, body: &str) -> (StatusCode, String, Option<String>) {
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

    async fn wait_status(&self, client: &Client, run: &str, want: &str) -> Value {
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

#[tokio::test]
async fn state_changes_need_the_csrf_token_and_same_origin() {
    let s = server(EDIT).await;
    let a = s.browser().await;
    let no_token = Request::post("/api/runs")
        .header(header::COOKIE, &a.cookie)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(json!({"task": "x"}).to_string()))
        .unwrap();
    let response = s.app.clone().oneshot(no_token).await.unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert!(body_text(response).await.contains("\"csrf\""));
    let b = s.browser().await;
    let (status, body) = s
        .call(
            &Client { cookie: a.cookie.clone(), csrf: b.csrf.clone() },
            "POST",
            "/api/runs",
            Some(json!({"task": "x"})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["class"].as_str()),
        (StatusCode::FORBIDDEN, Some("csrf")),
        "another owner's token"
    );
    let cross = Request::post("/api/runs")
        .header(header::COOKIE, &a.cookie)
        .header("x-csrf-token", &a.csrf)
        .header(header::HOST, "127.0.0.1:7878")
        .header(header::ORIGIN, "http://evil.example")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(json!({"task": "x"}).to_string()))
        .unwrap();
    assert_eq!(s.app.clone().oneshot(cross).await.unwrap().status(), StatusCode::FORBIDDEN);
    // A forged cookie is not an owner: the request gets a fresh one.
    let forged = Client { cookie: "steward_owner=local:alice".into(), csrf: a.csrf.clone() };
    let (status, _) = s.call(&forged, "GET", "/api/runs", None).await;
    assert_eq!(status, StatusCode::OK);
    let request = Request::get("/").header(header::COOKIE, "steward_owner=local:alice").body(Body::empty()).unwrap();
    let response = s.app.clone().oneshot(request).await.unwrap();
    assert!(set_cookie(&response).is_some(), "an unsigned cookie is replaced");
    assert!(!body_text(response).await.contains("local:alice"));
}

#[tokio::test]
async fn the_login_link_makes_a_browser_the_local_owner_once() {
    let s = server(EDIT).await;
    let request = Request::get(format!("/login?token={}", s.login)).body(Body::empty()).unwrap();
    let response = s.app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let cookie = response
        .headers()
        .get_all(header::SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .find(|c| c.contains("local%3Aalice") || c.contains("local:alice"))
        .expect("cookie naming the local owner");
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    let owner_cookies = response.headers().get_all(header::SET_COOKIE).iter().count();
    assert_eq!(owner_cookies, 1, "a browser without a cookie is not also given a random owner");
    let client = Client { cookie: cookie.split(';').next().unwrap().to_string(), csrf: String::new() };
    let (_, html) = s.page(&client, "/").await;
    assert!(html.contains("<code id=\"owner\">local:alice</code>"), "{html}");
    let again = Request::get(format!("/login?token={}", s.login)).body(Body::empty()).unwrap();
    assert_eq!(s.app.clone().oneshot(again).await.unwrap().status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn only_the_owner_sees_cancels_and_decides_and_approval_runs_the_call() {
    let s = server(EDIT).await;
    let alice = s.browser().await;
    let mallory = s.browser().await;
    let run = s.start(&alice, "change the note").await;
    let approval = s.pending_approval(&alice, &run).await;

    let (status, body) = s.call(&mallory, "GET", &format!("/api/runs/{run}"), None).await;
    assert_eq!((status, body["error"]["class"].as_str()), (StatusCode::FORBIDDEN, Some("not_owner")));
    let (status, html) = s.page(&mallory, &format!("/runs/{run}")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(html.contains("not_owner"));
    for (method, path, body) in [
        ("POST", format!("/api/approvals/{approval}"), Some(json!({"decision": "approve"}))),
        ("POST", format!("/api/approvals/{approval}"), Some(json!({"decision": "deny"}))),
        ("POST", format!("/api/runs/{run}/cancel"), None),
    ] {
        let (status, body) = s.call(&mallory, method, &path, body).await;
        assert_eq!((status, body["error"]["class"].as_str()), (StatusCode::FORBIDDEN, Some("not_owner")), "{path}");
    }
    let (_, listed) = s.call(&mallory, "GET", "/api/runs", None).await;
    assert_eq!(listed["runs"].as_array().unwrap().len(), 0, "another owner's runs are not listed");

    // The run page shows the full arguments, the diff and a countdown.
    let (status, html) = s.page(&alice, &format!("/runs/{run}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains(&format!("data-approval-id=\"{approval}\"")));
    assert!(html.contains("class=\"countdown\""));
    // The countdown reads as minutes and seconds (`29:59 left`), not a count of seconds.
    let shown = html.split("class=\"countdown\" aria-live=\"off\">").nth(1).unwrap_or_default();
    let time = shown.split('<').next().unwrap_or_default();
    assert!(time.len() == 5 && time.as_bytes()[2] == b':' && shown.contains("</span> left"), "{shown:.80}");
    assert!(!html.contains(" s left"), "{html}");
    assert!(html.contains("-old") && html.contains("+new"), "diff preview shown");

    let (status, body) =
        s.call(&alice, "POST", &format!("/api/approvals/{approval}"), Some(json!({"decision": "approve"}))).await;
    assert_eq!((status, body["status"].as_str()), (StatusCode::OK, Some("approved")), "{body}");
    let done = s.wait_status(&alice, &run, "completed").await;
    assert_eq!(std::fs::read_to_string(s.ws.join("note.txt")).unwrap(), "new\n");
    let names: Vec<&str> = done["events"].as_array().unwrap().iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert!(names.contains(&"tool_approved") && names.contains(&"tool_completed"), "{names:?}");
    // A decided approval shows no countdown any more.
    let (_, html) = s.page(&alice, &format!("/runs/{run}")).await;
    assert!(html.contains(&format!("data-approval-id=\"{approval}\"")), "{html}");
    assert!(!html.contains("class=\"countdown\""), "{html}");
    let (status, body) =
        s.call(&alice, "POST", &format!("/api/approvals/{approval}"), Some(json!({"decision": "approve"}))).await;
    assert_eq!((status, body["error"]["class"].as_str()), (StatusCode::CONFLICT, Some("not_pending")));
    let (status, body) = s.call(&alice, "POST", &format!("/api/runs/{run}/cancel"), None).await;
    assert_eq!((status, body["error"]["class"].as_str()), (StatusCode::CONFLICT, Some("not_pending")));
}

#[tokio::test]
async fn a_denied_call_never_runs_and_the_model_is_told() {
    let s = server(EDIT).await;
    let alice = s.browser().await;
    let run = s.start(&alice, "change the note").await;
    let approval = s.pending_approval(&alice, &run).await;
    let (status, _) = s
        .call(
            &alice,
            "POST",
            &format!("/api/approvals/{approval}"),
            Some(json!({"decision": "deny", "reason": "not now"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let done = s.wait_status(&alice, &run, "completed").await;
    assert_eq!(std::fs::read_to_string(s.ws.join("note.txt")).unwrap(), "old\n");
    assert!(done["events"].as_array().unwrap().iter().any(|e| e["event"] == "tool_rejected"));
    assert_eq!(done["approvals"][0]["status"], "denied");
}

#[tokio::test]
async fn an_expired_approval_cannot_be_approved() {
    let s = server_with(EDIT, Some(1), 4).await;
    let alice = s.browser().await;
    let run = s.start(&alice, "change the note").await;
    let approval = s.pending_approval(&alice, &run).await;
    let done = s.wait_status(&alice, &run, "completed").await;
    assert_eq!(done["approvals"][0]["status"], "expired");
    let (status, body) =
        s.call(&alice, "POST", &format!("/api/approvals/{approval}"), Some(json!({"decision": "approve"}))).await;
    assert_eq!((status, body["error"]["class"].as_str()), (StatusCode::CONFLICT, Some("expired")));
    assert_eq!(std::fs::read_to_string(s.ws.join("note.txt")).unwrap(), "old\n");
}

#[tokio::test]
async fn runs_beyond_the_limit_queue_and_cancel_reaches_queued_and_waiting_runs() {
    let s = server_with(EDIT, None, 1).await;
    let alice = s.browser().await;
    let first = s.start(&alice, "first").await;
    s.pending_approval(&alice, &first).await;
    let (status, body) = s.call(&alice, "POST", "/api/runs", Some(json!({"task": "second"}))).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!((body["status"].as_str(), body["queue_position"].as_u64()), (Some("queued"), Some(1)));
    let second = body["id"].as_str().unwrap().to_string();
    let (_, view) = s.call(&alice, "GET", &format!("/api/runs/{second}"), None).await;
    assert_eq!(view["run"]["status"], "queued");
    assert_eq!(view["run"]["task"], "second", "a queued run shows its task");
    let (_, listed) = s.call(&alice, "GET", "/api/runs", None).await;
    assert_eq!(listed["runs"][0]["id"], second.as_str(), "queued runs are listed first: {listed}");
    assert_eq!(listed["runs"][0]["status"], "queued");

    let (status, _) = s.call(&alice, "POST", &format!("/api/runs/{second}/cancel"), None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    s.wait_status(&alice, &second, "cancelled").await;
    let (status, _) = s.call(&alice, "POST", &format!("/api/runs/{first}/cancel"), None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let done = s.wait_status(&alice, &first, "cancelled").await;
    assert_eq!(done["approvals"][0]["status"], "expired", "cancelling expires the pending approval");
    assert_eq!(std::fs::read_to_string(s.ws.join("note.txt")).unwrap(), "old\n");
}

#[tokio::test]
async fn bad_starts_are_refused_with_reasons() {
    let s = server(EDIT).await;
    let alice = s.browser().await;
    for (body, needle) in [
        (json!({"task": "  "}), "empty"),
        (json!({"task": "x", "mode": "swarm"}), "unknown mode"),
        (json!({"task": "x", "workspace": "/"}), "not one this server serves"),
        (json!({"task": "x", "workspace": "/no/such/dir"}), "/no/such/dir"),
    ] {
        let (status, answer) = s.call(&alice, "POST", "/api/runs", Some(body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(answer["error"]["message"].as_str().unwrap().contains(needle), "{answer}");
    }
    let exact = s.ws.display().to_string();
    let (status, _) = s.call(&alice, "POST", "/api/runs", Some(json!({"task": "x", "workspace": exact}))).await;
    assert_eq!(status, StatusCode::CREATED, "a served workspace by its path");
    // A folder inside a served workspace would escape the rules of the repository it is in.
    for inside in [".git", ".steward", "sub"] {
        std::fs::create_dir_all(s.ws.join(inside)).unwrap();
        let path = s.ws.join(inside).display().to_string();
        let (status, answer) = s.call(&alice, "POST", "/api/runs", Some(json!({"task": "x", "workspace": path}))).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{inside}: {answer}");
    }
    // The same answer whether the path exists or not.
    let (_, missing) =
        s.call(&alice, "POST", "/api/runs", Some(json!({"task": "x", "workspace": "/no/such/dir"}))).await;
    let (_, file) = s.call(&alice, "POST", "/api/runs", Some(json!({"task": "x", "workspace": "/etc/hostname"}))).await;
    assert!(missing["error"]["message"].as_str().unwrap().contains("is not one this server serves"));
    assert!(file["error"]["message"].as_str().unwrap().contains("is not one this server serves"));
}

#[tokio::test]
async fn text_from_runs_is_escaped_in_pages() {
    let s = server("[[round]]\ntext = \"<img src=x onerror=alert(1)>\"\n").await;
    let alice = s.browser().await;
    let run = s.start(&alice, "<script>alert('task')</script>").await;
    s.wait_status(&alice, &run, "completed").await;
    let (_, html) = s.page(&alice, &format!("/runs/{run}")).await;
    assert!(!html.contains("<script>alert") && html.contains("&lt;script&gt;"), "task escaped");
    assert!(!html.contains("<img src=x") && html.contains("&lt;img"), "model text escaped");
    let (_, index) = s.page(&alice, "/").await;
    assert!(!index.contains("<script>alert"));
}

#[tokio::test]
async fn memory_is_per_owner() {
    let s = server(EDIT).await;
    let alice = s.browser().await;
    let bob = s.browser().await;
    let (status, fact) = s.call(&alice, "POST", "/api/memory", Some(json!({"text": "the build uses cargo"}))).await;
    assert_eq!(status, StatusCode::CREATED, "{fact}");
    let id = fact["id"].as_str().unwrap().to_string();
    let (_, listed) = s.call(&bob, "GET", "/api/memory", None).await;
    assert_eq!(listed["facts"].as_array().unwrap().len(), 0);
    let (status, _) = s.call(&bob, "DELETE", &format!("/api/memory/{id}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = s.call(&alice, "POST", "/api/memory", Some(json!({"text": "x".repeat(301)}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _) = s.call(&alice, "DELETE", &format!("/api/memory/{id}"), None).await;
    assert_eq!(status, StatusCode::OK);
    let (_, listed) = s.call(&alice, "GET", "/api/memory", None).await;
    assert_eq!(listed["facts"].as_array().unwrap().len(), 0);
}

/// Reads an SSE body until `until` returns true; returns the `(id, event)` pairs seen.
async fn read_sse(response: reqwest::Response, until: impl Fn(&str) -> bool) -> Vec<(u64, String)> {
    use futures::StreamExt;
    let mut stream = response.bytes_stream();
    let mut buffer = String::new();
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while let Ok(Some(chunk)) = tokio::time::timeout_at(deadline, stream.next()).await {
        buffer.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let id = block.lines().find_map(|l| l.strip_prefix("id:")).map(|v| v.trim().parse().unwrap());
            let name = block.lines().find_map(|l| l.strip_prefix("event:")).map(|v| v.trim().to_string());
            if let (Some(id), Some(name)) = (id, name) {
                let stop = until(&name);
                seen.push((id, name));
                if stop {
                    return seen;
                }
            }
        }
    }
    seen
}

#[tokio::test]
async fn the_event_stream_is_live_and_resumes_after_last_event_id() {
    let s = server(EDIT).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = tokio_util::sync::CancellationToken::new();
    let served = tokio::spawn(steward_server::serve(s.state.clone(), listener, stop.clone()));
    let alice = s.browser().await;
    let run = s.start(&alice, "change the note").await;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let url = format!("http://{addr}/api/runs/{run}/events");
    let response = http.get(&url).header(header::COOKIE, &alice.cookie).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers()[header::CONTENT_TYPE].to_str().unwrap().starts_with("text/event-stream"));
    // Live: the approval request arrives while the run waits on it; approve it meanwhile.
    let approval = s.pending_approval(&alice, &run).await;
    let (status, _) =
        s.call(&alice, "POST", &format!("/api/approvals/{approval}"), Some(json!({"decision": "approve"}))).await;
    assert_eq!(status, StatusCode::OK);
    let all = read_sse(response, |name| name == "run_completed").await;
    let ids: Vec<u64> = all.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>(), "every event once, in order");
    assert!(all.iter().any(|(_, n)| n == "tool_approval_required"));
    assert_eq!(all.last().unwrap().1, "run_completed");

    let resumed =
        http.get(&url).header(header::COOKIE, &alice.cookie).header("Last-Event-ID", "3").send().await.unwrap();
    let rest = read_sse(resumed, |name| name == "run_completed").await;
    assert_eq!(rest.first().map(|(id, _)| *id), Some(4), "resumes after Last-Event-ID");
    assert_eq!(rest.len(), all.len() - 3);

    let mallory = s.browser().await;
    let denied = http.get(&url).header(header::COOKIE, &mallory.cookie).send().await.unwrap();
    assert_eq!(denied.status(), 403);
    stop.cancel();
    served.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_form_post_with_origin_null_still_needs_its_csrf_field() {
    let s = server("[[round]]\ntext = \"done\"\n").await;
    let a = s.browser().await;
    let form = |csrf: &str| {
        Request::post("/runs")
            .header(header::COOKIE, &a.cookie)
            .header(header::ORIGIN, "null")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(format!("csrf={csrf}&task=hello&workspace=&mode=loop")))
            .unwrap()
    };
    let response = s.app.clone().oneshot(form(&a.csrf)).await.unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let response = s.app.clone().oneshot(form("0000")).await.unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let html = body_text(response).await;
    assert!(html.contains("<div id=\"error\" role=\"alert\">csrf:"), "a refused form gets a page: {html}");
    let json = Request::post("/api/runs")
        .header(header::COOKIE, &a.cookie)
        .header("x-csrf-token", &a.csrf)
        .header(header::ORIGIN, "null")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(json!({"task": "x"}).to_string()))
        .unwrap();
    assert_eq!(s.app.clone().oneshot(json).await.unwrap().status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn the_same_task_runs_with_both_planners_side_by_side() {
    let s =
        server("[[round]]\ntext = \"The model's answer.\"\nusage = { input_tokens = 7, output_tokens = 3 }\n").await;
    let a = s.browser().await;
    let request = Request::post("/compare")
        .header(header::COOKIE, &a.cookie)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(format!("csrf={}&task=list+files&workspace=&provider=&model=", a.csrf)))
        .unwrap();
    let response = s.app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let location = response.headers()[header::LOCATION].to_str().unwrap().to_string();
    assert!(location.starts_with("/compare?a=run_") && location.contains("&b=run_"), "{location}");
    let ids: Vec<String> = location.split(['=', '&']).filter(|p| p.starts_with("run_")).map(str::to_string).collect();
    for id in &ids {
        s.wait_status(&a, id, "completed").await;
    }
    let (status, html) = s.page(&a, &location).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("Classic planner") && html.contains("Model planner (fake&#x2f;fake)"), "{html}");
    assert!(html.contains("The model&#x27;s answer.") || html.contains("The model's answer."), "{html}");
    assert!(html.contains("<span class=\"tokens\">10</span>"), "model tokens counted: {html}");
    let mallory = s.browser().await;
    let (status, _) = s.page(&mallory, &location).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "another owner cannot see the comparison");
}

#[tokio::test]
async fn a_run_in_roles_mode_streams_every_role() {
    let s = server("[[round]]\ntext = \"Findings.\"\n").await;
    let a = s.browser().await;
    let (status, body) = s.call(&a, "POST", "/api/runs", Some(json!({"task": "explain", "mode": "roles"}))).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let run = body["id"].as_str().unwrap().to_string();
    let done = s.wait_status(&a, &run, "completed").await;
    let stages: Vec<&str> = done["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "stage_started")
        .map(|e| e["stage"].as_str().unwrap())
        .collect();
    for role in ["planner", "local_drafter", "cloud_drafter", "critic", "reviewer", "synthesizer"] {
        assert!(stages.contains(&role), "{role} in {stages:?}");
    }
    let (status, body) = s.call(&a, "POST", "/api/runs", Some(json!({"task": "x", "mode": "swarm"}))).await;
    assert_eq!((status, body["error"]["class"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid")));
}

#[tokio::test]
async fn a_conversation_gives_each_task_the_earlier_turns_and_runs_one_task_at_a_time() {
    let s = server(EDIT).await;
    let alice = s.browser().await;
    let (status, conversation) = s.call(&alice, "POST", "/api/conversations", Some(json!({}))).await;
    assert_eq!(status, StatusCode::CREATED, "{conversation}");
    let id = conversation["id"].as_str().unwrap().to_string();
    let messages = format!("/api/conversations/{id}/messages");

    let (status, sent) = s.call(&alice, "POST", &messages, Some(json!({"text": "change the note"}))).await;
    assert_eq!(status, StatusCode::CREATED, "{sent}");
    let first = sent["run_id"].as_str().unwrap().to_string();
    let approval = s.pending_approval(&alice, &first).await;
    // One task at a time: refused with a reason, nothing queued.
    let (status, busy) = s.call(&alice, "POST", &messages, Some(json!({"text": "and another thing"}))).await;
    assert_eq!((status, busy["error"]["class"].as_str()), (StatusCode::CONFLICT, Some("busy")), "{busy}");
    let form = Request::post(format!("/conversations/{id}/messages"))
        .header(header::COOKIE, &alice.cookie)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(format!("csrf={}&text=keep+this+text", alice.csrf)))
        .unwrap();
    let response = s.app.clone().oneshot(form).await.unwrap();
    assert_eq!(response.status(), StatusCode::CONFLICT);
    let page = body_text(response).await;
    assert!(page.contains(">keep this text</textarea>") && page.contains("busy:"), "the draft is kept: {page}");

    // An open page hears when the task ends.
    let events = Request::get(format!("/api/conversations/{id}/events"))
        .header(header::COOKIE, &alice.cookie)
        .body(Body::empty())
        .unwrap();
    let mut stream = s.app.clone().oneshot(events).await.unwrap().into_body().into_data_stream();
    s.call(&alice, "POST", &format!("/api/approvals/{approval}"), Some(json!({"decision": "approve"}))).await;
    s.wait_status(&alice, &first, "completed").await;
    let mut seen = String::new();
    let heard = tokio::time::timeout(Duration::from_secs(10), async {
        use futures::StreamExt;
        while let Some(Ok(chunk)) = stream.next().await {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen.contains("\"busy\":false") && seen.contains("\"status\":\"completed\"") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(heard, Ok(true), "the conversation stream reports the finished task: {seen}");
    drop(stream);
    // A memory command is answered without a run.
    let (status, sent) =
        s.call(&alice, "POST", &messages, Some(json!({"text": "remember that the note matters"}))).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!((sent["run_id"].as_str(), sent["reply"].as_str()), (Some(""), Some("Remembered: the note matters")));

    std::fs::write(s.ws.join("note.txt"), "old\n").unwrap();
    let (_, sent) = s.call(&alice, "POST", &messages, Some(json!({"text": "what did you change?"}))).await;
    let second = sent["run_id"].as_str().unwrap().to_string();
    s.pending_approval(&alice, &second).await;
    let requests = s.launcher.last.lock().unwrap().clone().unwrap().requests();
    let system = &requests[0].messages[0].content;
    assert!(system.contains("Earlier in this conversation"), "{system}");
    assert!(system.contains("1. Task: change the note\n   Answer: Finished."), "{system}");
    assert!(system.contains("2. Task: remember that the note matters\n   Answer: Remembered: the note matters"));
    assert!(system.contains("Remembered facts:\n1. the note matters"), "{system}");

    let (_, view) = s.call(&alice, "GET", &format!("/api/conversations/{id}"), None).await;
    assert_eq!(view["turns"].as_array().unwrap().len(), 3);
    assert_eq!(view["busy"], true);
    let mallory = s.browser().await;
    let (status, _) = s.call(&mallory, "POST", &messages, Some(json!({"text": "hi"}))).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = s.call(&alice, "POST", &format!("/api/conversations/{id}/end"), None).await;
    assert_eq!(status, StatusCode::OK);
    s.wait_status(&alice, &second, "cancelled").await;
    let (status, ended) = s.call(&alice, "POST", &messages, Some(json!({"text": "hello?"}))).await;
    assert_eq!((status, ended["error"]["class"].as_str()), (StatusCode::CONFLICT, Some("ended")));
}

#[tokio::test]
async fn a_conversation_without_a_viewer_ends_after_the_idle_time() {
    let idle = Duration::from_millis(300);
    let s = server_opts(EDIT, None, ServerOptions { conversation_idle: idle, ..ServerOptions::default() }).await;
    let alice = s.browser().await;
    let (_, watched) = s.call(&alice, "POST", "/api/conversations", Some(json!({}))).await;
    let (_, unwatched) = s.call(&alice, "POST", "/api/conversations", Some(json!({}))).await;
    let watched = watched["id"].as_str().unwrap().to_string();
    let unwatched = unwatched["id"].as_str().unwrap().to_string();
    let viewer = steward_server::conversations::join(&s.state, &watched);
    tokio::time::sleep(idle * 3).await;
    let (_, view) = s.call(&alice, "GET", &format!("/api/conversations/{unwatched}"), None).await;
    assert_eq!(view["ended"], true, "nobody watched it");
    let (_, view) = s.call(&alice, "GET", &format!("/api/conversations/{watched}"), None).await;
    assert_eq!(view["ended"], false, "a viewer keeps it open");
    drop(viewer);
    tokio::time::sleep(idle * 3).await;
    let (_, view) = s.call(&alice, "GET", &format!("/api/conversations/{watched}"), None).await;
    assert_eq!(view["ended"], true, "it ends once the last viewer has been gone for the idle time");
}

#[tokio::test]
async fn cleanup_deletes_old_and_surplus_finished_runs_only() {
    let s =
        server_opts("[[round]]\ntext = \"done\"\n", None, ServerOptions { keep_runs: 2, ..ServerOptions::default() })
            .await;
    let alice = s.browser().await;
    let mut ids = Vec::new();
    for i in 0..4 {
        let id = s.start(&alice, &format!("task {i}")).await;
        s.wait_status(&alice, &id, "completed").await;
        ids.push(id);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut old = s.state.runtime.store.get_run(&ids[3]).await.unwrap().unwrap();
    old.created_at -= chrono::Duration::days(400);
    s.state.runtime.store.update_run(&old).await.unwrap();
    assert_eq!(steward_server::runs::cleanup(&s.state).await.unwrap(), 2);
    let kept: Vec<String> = s.state.runtime.store.list_runs(10).await.unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(kept.len(), 2);
    assert!(!kept.contains(&ids[3]), "the run older than the limit is gone");
    assert!(!kept.contains(&ids[0]), "the oldest beyond the count is gone");
    assert!(matches!(
        s.state.runtime.store.verify_audit().await.unwrap(),
        steward_store::AuditVerification::Valid { .. }
    ));
}

#[tokio::test]
async fn unknown_paths_are_404_not_a_token_demand() {
    let s = server(EDIT).await;
    let a = s.browser().await;
    for path in ["/favicon.ico", "/nonexistent", "/api/nope", "/static/nope.css", "/mcpx"] {
        let request = Request::get(path).header(header::COOKIE, &a.cookie).body(Body::empty()).unwrap();
        assert_eq!(s.app.clone().oneshot(request).await.unwrap().status(), StatusCode::NOT_FOUND, "{path}");
    }
}

/// A bearer token sent to a route of the browser session is refused, never taken for a new
/// anonymous browser (no owner cookie); with a cookie too, the token is not ignored.
#[tokio::test]
async fn a_bearer_token_outside_mcp_and_the_ledger_is_refused() {
    let s = server(EDIT).await;
    let a = s.browser().await;
    for (path, cookie) in [("/api/runs", None), ("/api/runs", Some(&a.cookie)), ("/", None), ("/api/memory", None)] {
        let mut request = Request::get(path).header(header::AUTHORIZATION, format!("Bearer stw_{}", "0a".repeat(32)));
        if let Some(cookie) = cookie {
            request = request.header(header::COOKIE, cookie);
        }
        let response = s.app.clone().oneshot(request.body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{path}");
        assert!(set_cookie(&response).is_none(), "{path}: no owner is made for a token");
        let body: Value = serde_json::from_str(&body_text(response).await).unwrap();
        assert_eq!(body["error"]["class"], "unauthorized", "{path}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("/mcp") && message.contains("/api/ledger"), "{message}");
    }
    // Another scheme (a proxy's basic auth) is no bearer token: the browser is served.
    let basic = Request::get("/api/runs")
        .header(header::COOKIE, &a.cookie)
        .header(header::AUTHORIZATION, "Basic dXNlcjpwdw==")
        .body(Body::empty())
        .unwrap();
    assert_eq!(s.app.clone().oneshot(basic).await.unwrap().status(), StatusCode::OK);
}

#[tokio::test]
async fn a_rebound_host_name_and_a_form_body_on_the_api_are_refused() {
    let s = server(EDIT).await;
    let a = s.browser().await;
    let rebound = Request::get("/").header(header::HOST, "rebind.attacker.example:7878").body(Body::empty()).unwrap();
    assert_eq!(s.app.clone().oneshot(rebound).await.unwrap().status(), StatusCode::MISDIRECTED_REQUEST);
    let local = Request::get("/").header(header::HOST, "localhost:7878").body(Body::empty()).unwrap();
    assert_eq!(s.app.clone().oneshot(local).await.unwrap().status(), StatusCode::OK);
    let run = s.start(&a, "change the note").await;
    s.pending_approval(&a, &run).await;
    // A form body with `Origin: null` and no token cannot cancel through the JSON API.
    let forged = Request::post(format!("/api/runs/{run}/cancel"))
        .header(header::COOKIE, &a.cookie)
        .header(header::ORIGIN, "null")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::empty())
        .unwrap();
    assert_eq!(s.app.clone().oneshot(forged).await.unwrap().status(), StatusCode::FORBIDDEN);
    let (_, view) = s.call(&a, "GET", &format!("/api/runs/{run}"), None).await;
    assert_eq!(view["run"]["status"], "running");
}

#[tokio::test]
async fn event_streams_are_capped_and_give_their_place_back() {
    use std::sync::atomic::Ordering;
    let s = server("[[round]]\ntext = \"done\"\n").await;
    let a = s.browser().await;
    let run = s.start(&a, "hello").await;
    s.wait_status(&a, &run, "completed").await;
    let open = |path: String| Request::get(path).header(header::COOKIE, &a.cookie).body(Body::empty()).unwrap();
    s.state.open_streams.store(steward_server::sse::MAX_OPEN_STREAMS, Ordering::SeqCst);
    for path in [format!("/api/runs/{run}/events"), "/api/memory/events".to_string()] {
        let response = s.app.clone().oneshot(open(path.clone())).await.unwrap();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS, "{path}");
    }
    assert_eq!(s.state.open_streams.load(Ordering::SeqCst), steward_server::sse::MAX_OPEN_STREAMS);
    s.state.open_streams.store(0, Ordering::SeqCst);
    let response = s.app.clone().oneshot(open(format!("/api/runs/{run}/events"))).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(s.state.open_streams.load(Ordering::SeqCst), 1);
    drop(response);
    assert_eq!(s.state.open_streams.load(Ordering::SeqCst), 0, "a closed stream gives its place back");
}

const ASK: &str = r#"
[[round]]
[[round.tool_call]]
id = "ask1"
name = "ask_owner"
arguments = {}
[[round]]
text = "Finished."
"#;

#[tokio::test]
async fn a_request_for_input_is_a_form_on_the_run_page_that_only_its_owner_answers() {
    let s = server(ASK).await;
    let alice = s.browser().await;
    let mallory = s.browser().await;
    let run = s.start(&alice, "ask me").await;
    let id = s.pending_elicitation(&run).await;

    // The run page shows the server's words as text (escaped, redacted) and the form,
    // pre-filled with the schema's defaults.
    let (status, html) = s.page(&alice, &format!("/runs/{run}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains(&format!("action=\"/elicitations/{id}\"")), "{html}");
    assert!(
        html.contains("Who &lt;b&gt;are&lt;&#x2f;b&gt; you?") || html.contains("Who &lt;b&gt;are&lt;/b&gt; you?"),
        "{html}"
    );
    assert!(!html.contains("<b>are</b>") && !html.contains("abcdefghijklmnopqrstuvwxyz0123456789"), "{html}");
    assert!(html.contains("name=\"value.name\"") && html.contains("value=\"Ada\""), "{html}");
    assert!(html.contains("type=\"email\"") && html.contains("type=\"number\""), "{html}");
    assert!(html.contains("<option value=\"green\" selected>"), "{html}");
    assert!(html.contains("<option value=\"true\" selected>yes</option>"), "{html}");

    let accept = |csrf: &str, email: &str| {
        format!(
            "csrf={csrf}&run={run}&action=accept&value.name=Ada&value.email={email}&value.age=&value.color=red&value.agree=false"
        )
    };
    // Another owner: neither the page nor an answer.
    let (status, _) = s.page(&mallory, &format!("/runs/{run}")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, page, _) =
        s.post_form(&mallory, &format!("/elicitations/{id}"), &accept(&mallory.csrf, "m%40evil.example")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(page.contains("not_owner"), "{page}");
    // The owner needs her CSRF token.
    let (status, page, _) =
        s.post_form(&alice, &format!("/elicitations/{id}"), &accept("0000", "ada%40example.org")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(page.contains("csrf"), "{page}");
    // Values that do not fit are refused with the reason; the form keeps what was typed.
    let (status, page, _) = s.post_form(&alice, &format!("/elicitations/{id}"), &accept(&alice.csrf, "nope")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(page.contains("class=\"elicitation-error\"") && page.contains("`email`"), "{page}");
    assert!(page.contains("value=\"nope\""), "{page}");
    assert_eq!(s.pending_elicitation(&run).await, id, "still waiting");

    let (status, _, location) =
        s.post_form(&alice, &format!("/elicitations/{id}"), &accept(&alice.csrf, "ada%40example.org")).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(location.as_deref(), Some(format!("/runs/{run}").as_str()));
    let done = s.wait_status(&alice, &run, "completed").await;
    let events = done["events"].as_array().unwrap();
    let output = events.iter().find(|e| e["event"] == "tool_completed").unwrap()["output"].as_str().unwrap();
    let sent: Value = serde_json::from_str(output.strip_prefix("accept ").unwrap()).unwrap();
    assert_eq!(sent, json!({"name": "Ada", "email": "ada@example.org", "age": 36, "color": "red", "agree": false}));
    let answered = events.iter().find(|e| e["event"] == "mcp_elicitation_answered").unwrap();
    assert_eq!(answered["action"], "accept");
    assert_eq!(answered["decided_by"], done["run"]["owner_id"], "{done}");
    assert!(answered["decided_by"].as_str().unwrap().starts_with("web:"));
    let (status, page, _) =
        s.post_form(&alice, &format!("/elicitations/{id}"), &accept(&alice.csrf, "a%40b.org")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "answered once: {page}");
    let audit = s.state.runtime.store.audit_records(Some(&run)).await.unwrap();
    let outcomes: Vec<&str> =
        audit.iter().filter(|r| r.entry.action == "mcp_elicitation").map(|r| r.entry.outcome.as_str()).collect();
    assert_eq!(outcomes, ["escalated", "approved"]);
    assert!(!serde_json::to_string(&audit).unwrap().contains("ada@example.org"), "values are not audited");
}

#[tokio::test]
async fn a_request_for_input_declined_or_left_to_expire() {
    let s = server(ASK).await;
    let alice = s.browser().await;
    let run = s.start(&alice, "ask me").await;
    let id = s.pending_elicitation(&run).await;
    let (status, _, _) = s
        .post_form(&alice, &format!("/elicitations/{id}"), &format!("csrf={}&run={run}&action=decline", alice.csrf))
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let done = s.wait_status(&alice, &run, "completed").await;
    let output = done["events"].as_array().unwrap().iter().find(|e| e["event"] == "tool_completed").unwrap();
    assert_eq!(output["output"], "decline");

    let s = server_with(ASK, Some(1), 4).await;
    let alice = s.browser().await;
    let run = s.start(&alice, "ask me").await;
    let id = s.pending_elicitation(&run).await;
    let done = s.wait_status(&alice, &run, "completed").await;
    let events = done["events"].as_array().unwrap();
    assert_eq!(events.iter().find(|e| e["event"] == "tool_completed").unwrap()["output"], "cancel");
    let answered = events.iter().find(|e| e["event"] == "mcp_elicitation_answered").unwrap();
    assert!(answered["reason"].as_str().unwrap().contains("expired"), "{answered}");
    let (status, _, _) = s
        .post_form(&alice, &format!("/elicitations/{id}"), &format!("csrf={}&run={run}&action=accept", alice.csrf))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "too late");
}
