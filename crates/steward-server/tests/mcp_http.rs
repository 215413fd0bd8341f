//! `/mcp` of `steward serve` over a real socket, with rmcp's streamable HTTP client: bearer
//! tokens made on the Tokens page, scopes, ownership of submitted runs and of their approvals
//! (answered in the browser by the token's owner), revocation, `Origin`, and no cookies.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value, json};
use steward_config::Config;
use steward_core::ApprovalKey;
use steward_core::{PlannerChoice, Runtime};
use steward_policy::Redactor;
use steward_protocol::{ToolChoice, ToolSpec};
use steward_provider::fake::{FakeProvider, Scenario};
use steward_server::{
    AppState, Launcher, LauncherError, Prepared, ProviderStatus, RunOptions, ServerOptions, Sessions,
};
use steward_store::{SqliteStore, Store};
use steward_tools::ToolRegistry;
use tokio_util::sync::CancellationToken;

const EDIT: &str = r#"
[[round]]
text = "Editing the note."
[[round.tool_call]]
name = "edit"
arguments = { path = "note.txt", old = "old", new = "new" }
[[round]]
text = "Finished."
"#;

/// Every run uses the scripted provider with [`EDIT`].
struct TestLauncher;

#[async_trait]
impl Launcher for TestLauncher {
    async fn prepare(&self, workspace: &Path, _options: &RunOptions) -> Result<Prepared, LauncherError> {
        let planner = PlannerChoice {
            kind: "model".into(),
            provider: Arc::new(FakeProvider::new(Scenario::from_toml(EDIT).expect("the test scenario parses"))),
            model: "fake".into(),
            tool_choice: ToolChoice::Auto,
            max_tokens: None,
        };
        Ok(Prepared::new(workspace.to_path_buf(), Config::default(), ToolRegistry::builtin(), planner, None)?)
    }
    async fn tools(&self, _workspace: &Path) -> Result<Vec<ToolSpec>, LauncherError> {
        Ok(ToolRegistry::builtin().specs())
    }
    async fn providers(&self) -> Vec<ProviderStatus> {
        vec![ProviderStatus { name: "fake".into(), reachable: true, models: vec!["fake".into()], error: String::new() }]
    }
}

struct Server {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    state: AppState,
    base: String,
    http: reqwest::Client,
    stop: CancellationToken,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
}

/// A browser of the server: its owner, cookie and CSRF token.
struct Browser {
    owner: String,
    cookie: String,
    csrf: String,
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let at = text.find(start).unwrap_or_else(|| panic!("{start:?} not in {text}")) + start.len();
    let len = text[at..].find(end).unwrap();
    &text[at..at + len]
}

async fn server() -> Server {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("note.txt"), "old\n").unwrap();
    let ws = std::fs::canonicalize(&ws).unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let runtime = Runtime::new(dir.path(), store, Redactor::new(Vec::new()), ApprovalKey::generate());
    let sessions = Sessions::new(&[5u8; 64], "local:alice").unwrap();
    let state = steward_server::app_state(
        Arc::new(runtime),
        Arc::new(TestLauncher),
        sessions,
        ServerOptions { workspaces: vec![ws.clone()], max_running: 4, ..ServerOptions::default() },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    let served = tokio::spawn(steward_server::serve(state.clone(), listener, stop.clone()));
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    Server { _dir: dir, ws, state, base, http, stop, served }
}

impl Server {
    /// A new browser: the first page gives it an owner.
    async fn browser(&self) -> Browser {
        let response = self.http.get(format!("{}/", self.base)).send().await.unwrap();
        let cookie = response.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
        let html = response.text().await.unwrap();
        Browser {
            owner: between(&html, "<code id=\"owner\">", "</code>").to_string(),
            csrf: between(&html, "name=\"csrf-token\" content=\"", "\"").to_string(),
            cookie,
        }
    }

    /// Makes a token on the Tokens page; answers `(id, secret)`.
    async fn token(&self, browser: &Browser, name: &str, scopes: &[&str]) -> (String, String) {
        let mut form = format!("csrf={}&name={name}", browser.csrf);
        for scope in scopes {
            form.push_str(&format!("&scope_{scope}=on"));
        }
        let response = self
            .http
            .post(format!("{}/tokens", self.base))
            .header("cookie", &browser.cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .unwrap();
        // The form post redirects; the page it leads to shows the token once.
        let response = if response.status() == 303 {
            self.http.get(format!("{}/tokens", self.base)).header("cookie", &browser.cookie).send().await.unwrap()
        } else {
            response
        };
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["cache-control"], "no-store");
        let html = response.text().await.unwrap();
        assert!(html.contains("will not be shown again"), "{html}");
        let again = self.page(browser, "/tokens").await;
        assert!(!again.contains("token-secret"), "a reload shows the token no more");
        let secret = between(&html, "<code id=\"token-secret\">", "</code>").to_string();
        let id = between(&html, "<h2>Token <code>", "</code>").to_string();
        assert!(secret.starts_with("stw_") && secret.len() == 68, "{secret}");
        (id, secret)
    }

    async fn page(&self, browser: &Browser, path: &str) -> String {
        let response =
            self.http.get(format!("{}{path}", self.base)).header("cookie", &browser.cookie).send().await.unwrap();
        assert_eq!(response.status(), 200);
        response.text().await.unwrap()
    }

    /// A JSON API call as `browser`.
    async fn api(&self, browser: &Browser, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let url = format!("{}{path}", self.base);
        let mut request = match method {
            "GET" => self.http.get(url),
            _ => self.http.post(url).header("x-csrf-token", &browser.csrf),
        }
        .header("cookie", &browser.cookie);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// One raw JSON-RPC POST to `/mcp`.
    async fn post_mcp(&self, token: Option<&str>, origin: Option<&str>) -> reqwest::Response {
        let mut request = self
            .http
            .post(format!("{}/mcp", self.base))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"}}})
                .to_string(),
            );
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send().await.unwrap()
    }

    /// An MCP client of `/mcp` with `token`.
    async fn client(&self, token: &str) -> RunningService<RoleClient, ClientConfig> {
        let config = StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", self.base)).auth_header(token);
        let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
        let info = ClientConfig::new(ClientCapabilities::default(), Implementation::new("mcp-http-test", "0"));
        rmcp::serve_client(info, transport).await.unwrap()
    }

    async fn stop(self) {
        self.stop.cancel();
        self.served.await.unwrap().unwrap();
    }
}

async fn call(client: &RunningService<RoleClient, ClientConfig>, tool: &str, args: Value) -> CallToolResult {
    let mut params = CallToolRequestParams::new(tool.to_string());
    if let Value::Object(map) = args {
        params = params.with_arguments(map);
    } else {
        params = params.with_arguments(Map::new());
    }
    client.peer().call_tool(params).await.unwrap()
}

fn text_of(result: &CallToolResult) -> String {
    format!("{:?}", result.content)
}

#[tokio::test]
async fn missing_unknown_and_revoked_tokens_and_cross_site_origins_are_refused_without_cookies() {
    let s = server().await;
    let alice = s.browser().await;
    let (id, token) = s.token(&alice, "laptop", &["read"]).await;

    let response = s.post_mcp(None, None).await;
    assert_eq!(response.status(), 401);
    let challenge = response.headers()["www-authenticate"].to_str().unwrap();
    assert!(challenge.starts_with("Bearer"), "{challenge}");
    assert!(response.headers().get("set-cookie").is_none(), "no cookie on /mcp");

    let unknown = format!("stw_{}", "0".repeat(64));
    for bad in [unknown.as_str(), "nonsense", ""] {
        let response = s.post_mcp(Some(bad), None).await;
        assert_eq!(response.status(), 401, "{bad}");
        assert!(response.headers()["www-authenticate"].to_str().unwrap().starts_with("Bearer"));
    }

    let response = s.post_mcp(Some(&token), Some("http://evil.example")).await;
    assert_eq!(response.status(), 403, "a cross-site Origin is refused");
    let same_site = s.base.clone();
    let response = s.post_mcp(Some(&token), Some(&same_site)).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers().get("set-cookie").is_none(), "no cookie on /mcp");
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["result"]["serverInfo"]["name"], "steward", "{answer}");

    // The token is listed on the Tokens page (never its secret), with its last use.
    let html = s.page(&alice, "/tokens").await;
    assert!(html.contains(&format!("data-token-id=\"{id}\"")) && !html.contains(&token), "{html}");
    let unescaped = html.replace("&#x2f;", "/");
    assert!(unescaped.contains(&format!("<code id=\"mcp-url\">{}/mcp</code>", s.base)), "the endpoint: {html}");
    let forged = s
        .http
        .post(format!("{}/tokens", s.base))
        .header("cookie", &alice.cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("csrf=0000&name=x&scope_read=on")
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403, "a token needs the session's CSRF token");
    let none = s
        .http
        .post(format!("{}/tokens", s.base))
        .header("cookie", &alice.cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("csrf={}&name=x", alice.csrf))
        .send()
        .await
        .unwrap();
    assert_eq!(none.status(), 400, "at least one scope");
    let stored = s.state.runtime.store.mcp_tokens(&alice.owner).await.unwrap();
    assert!(stored[0].last_used_at.is_some());
    // Another browser cannot revoke it.
    let mallory = s.browser().await;
    let response = s
        .http
        .post(format!("{}/tokens/{id}/revoke", s.base))
        .header("cookie", &mallory.cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("csrf={}", mallory.csrf))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    assert_eq!(s.post_mcp(Some(&token), None).await.status(), 200);
    // Its owner can.
    let response = s
        .http
        .post(format!("{}/tokens/{id}/revoke", s.base))
        .header("cookie", &alice.cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("csrf={}", alice.csrf))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    let response = s.post_mcp(Some(&token), None).await;
    assert_eq!(response.status(), 401);
    assert!(response.headers()["www-authenticate"].to_str().unwrap().contains("invalid_token"));
    assert!(response.text().await.unwrap().contains("revoked"));
    let html = s.page(&alice, "/tokens").await;
    assert!(html.contains("<td>revoked</td>"), "{html}");
    // Made and revoked on the Tokens page: two audit records by its owner, without the secret.
    let audit = s.state.runtime.store.audit_records(None).await.unwrap();
    let records: Vec<_> = audit.iter().filter(|r| r.entry.action.starts_with("mcp_token_")).collect();
    let actions: Vec<&str> = records.iter().map(|r| r.entry.action.as_str()).collect();
    assert_eq!(actions, ["mcp_token_create", "mcp_token_revoke"]);
    for record in records {
        assert_eq!(record.entry.agent, alice.owner);
        assert_eq!(record.entry.input, json!({"token_id": id, "scopes": ["read"]}));
    }
    let all = serde_json::to_string(&audit).unwrap();
    assert!(!all.contains(&token) && !all.contains(&steward_server::tokens::hash_token(&token)), "{all}");
    s.stop().await;
}

#[tokio::test]
async fn a_read_token_lists_its_owners_runs_but_cannot_submit() {
    let s = server().await;
    let alice = s.browser().await;
    let bob = s.browser().await;
    let (_, token) = s.token(&alice, "reader", &["read"]).await;
    // One run of each owner, started in the browser.
    let (status, body) = s.api(&alice, "POST", "/api/runs", Some(json!({"task": "alice's task"}))).await;
    assert_eq!(status, 201, "{body}");
    let alices = body["id"].as_str().unwrap().to_string();
    let (status, body) = s.api(&bob, "POST", "/api/runs", Some(json!({"task": "bob's task"}))).await;
    assert_eq!(status, 201, "{body}");
    let bobs = body["id"].as_str().unwrap().to_string();

    let client = s.client(&token).await;
    let names: Vec<String> =
        client.peer().list_all_tools().await.unwrap().into_iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, ["list_runs", "get_run", "list_pending_approvals"], "tools/list shows only allowed tools");
    let refused = call(&client, "submit_task", json!({"workspace": s.ws.display().to_string(), "task": "x"})).await;
    assert_eq!(refused.is_error, Some(true));
    assert!(text_of(&refused).contains("needs the `submit` scope"), "{}", text_of(&refused));

    let listed = call(&client, "list_runs", json!({})).await;
    assert_eq!(listed.is_error, Some(false), "{}", text_of(&listed));
    let runs = listed.structured_content.unwrap();
    let ids: Vec<&str> = runs["runs"].as_array().unwrap().iter().map(|r| r["run_id"].as_str().unwrap()).collect();
    assert_eq!(ids, [alices.as_str()], "only the owner's runs");
    let got = call(&client, "get_run", json!({"run_id": alices})).await;
    assert_eq!(got.is_error, Some(false), "{}", text_of(&got));
    assert_eq!(got.structured_content.unwrap()["task"], "alice's task");
    let hidden = call(&client, "get_run", json!({"run_id": bobs})).await;
    assert_eq!(hidden.is_error, Some(true));
    assert!(text_of(&hidden).contains(&format!("no run `{bobs}`")), "another owner's run is absent");
    let hidden = call(&client, "list_pending_approvals", json!({"run_id": bobs})).await;
    assert_eq!(hidden.is_error, Some(true));
    client.cancel().await.unwrap();
    s.stop().await;
}

#[tokio::test]
async fn a_submitted_run_is_the_tokens_owners_and_only_that_owner_approves_it_in_the_browser() {
    let s = server().await;
    let alice = s.browser().await;
    let mallory = s.browser().await;
    let (_, token) = s.token(&alice, "assistant", &["read", "submit"]).await;
    let client = s.client(&token).await;
    assert_eq!(client.peer().list_all_tools().await.unwrap().len(), 5);
    // A work request filed over MCP is the token owner's and waits, open, for that owner.
    let filed = call(&client, "submit_work_request", json!({"repository": "demo", "pr_number": 3})).await;
    assert_eq!(filed.is_error, Some(false), "{}", text_of(&filed));
    let filed = filed.structured_content.unwrap();
    assert_eq!(filed["status"], "open");
    assert!(filed["owner_id"].as_str().unwrap().starts_with("web:"), "{filed}");

    let outside = call(&client, "submit_task", json!({"workspace": "/", "task": "change the note"})).await;
    assert_eq!(outside.is_error, Some(true));
    assert!(text_of(&outside).contains("not one this server serves"), "{}", text_of(&outside));

    let submitted =
        call(&client, "submit_task", json!({"workspace": s.ws.display().to_string(), "task": "change the note"})).await;
    assert_eq!(submitted.is_error, Some(false), "{}", text_of(&submitted));
    let submitted = submitted.structured_content.unwrap();
    assert_eq!(submitted["owner_id"], alice.owner.as_str());
    let run = submitted["run_id"].as_str().unwrap().to_string();

    // The approval waits in this server for alice.
    let mut approval = None;
    for _ in 0..500 {
        let pending = call(&client, "list_pending_approvals", json!({})).await.structured_content.unwrap();
        if let Some(a) = pending["approvals"].as_array().and_then(|a| a.first()) {
            let id = a["approval_id"].as_str().unwrap().to_string();
            if s.state.live.approval_owner(&id).is_some() {
                assert_eq!(a["run_id"], run.as_str());
                assert_eq!(a["tool"], "edit");
                approval = Some(id);
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let approval = approval.expect("a pending approval of the submitted run");
    assert_eq!(s.state.live.approval_owner(&approval).as_deref(), Some(alice.owner.as_str()));
    let view = call(&client, "get_run", json!({"run_id": run})).await.structured_content.unwrap();
    assert_eq!((view["status"].as_str(), view["pending_approvals"].as_u64()), (Some("running"), Some(1)), "{view}");

    // Alice's browser sees the run; another owner can neither see nor approve it.
    let (status, listed) = s.api(&alice, "GET", "/api/runs", None).await;
    assert_eq!(status, 200);
    assert_eq!(listed["runs"][0]["id"], run.as_str());
    let (status, body) =
        s.api(&mallory, "POST", &format!("/api/approvals/{approval}"), Some(json!({"decision": "approve"}))).await;
    assert_eq!((status, body["error"]["class"].as_str()), (403, Some("not_owner")), "{body}");
    let (_, mine) = s.api(&mallory, "GET", "/api/runs", None).await;
    assert_eq!(mine["runs"].as_array().unwrap().len(), 0);
    // Mallory's own token does not reach alice's run either.
    let (_, mallorys) = s.token(&mallory, "m", &["read", "submit"]).await;
    let other = s.client(&mallorys).await;
    let hidden = call(&other, "get_run", json!({"run_id": run})).await;
    assert_eq!(hidden.is_error, Some(true));
    let pending = call(&other, "list_pending_approvals", json!({})).await.structured_content.unwrap();
    assert_eq!(pending["approvals"].as_array().unwrap().len(), 0);
    other.cancel().await.unwrap();

    let (status, body) =
        s.api(&alice, "POST", &format!("/api/approvals/{approval}"), Some(json!({"decision": "approve"}))).await;
    assert_eq!(status, 200, "{body}");
    let mut done = Value::Null;
    for _ in 0..1000 {
        done = call(&client, "get_run", json!({"run_id": run})).await.structured_content.unwrap();
        if done["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["final"], "Finished.");
    let outcomes: Vec<&str> =
        done["calls"].as_array().unwrap().iter().map(|c| c["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["completed"]);
    assert_eq!(std::fs::read_to_string(s.ws.join("note.txt")).unwrap(), "new\n");
    client.cancel().await.unwrap();
    s.stop().await;
}
