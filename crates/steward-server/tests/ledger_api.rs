//! The work ledger's API and page in-process (tower `oneshot`): owner binding, what bearer
//! tokens may do by scope, complete candidate pagination, one-time claims and their denials
//! (revoked, expired, head mismatch), idempotent results, strict bodies, and the page's forms.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};
use steward_core::ApprovalKey;
use steward_core::Runtime;
use steward_mcp::mcp_server::Scope;
use steward_policy::Redactor;
use steward_protocol::ToolSpec;
use steward_server::{
    AppState, Launcher, LauncherError, Prepared, ProviderStatus, RunOptions, ServerOptions, Sessions,
};
use steward_store::{SqliteStore, Store};
use tower::ServiceExt;

const HEAD: &str = "0123456789abcdef0123456789abcdef01234567";

/// Runs are not started by these tests.
struct NoRuns;

#[async_trait]
impl Launcher for NoRuns {
    async fn prepare(&self, _workspace: &Path, _options: &RunOptions) -> Result<Prepared, LauncherError> {
        Err(LauncherError::Withheld("no runs in these tests"))
    }
    async fn tools(&self, _workspace: &Path) -> Result<Vec<ToolSpec>, LauncherError> {
        Ok(Vec::new())
    }
    async fn providers(&self) -> Vec<ProviderStatus> {
        Vec::new()
    }
}

struct Server {
    _dir: tempfile::TempDir,
    state: AppState,
    app: Router,
}

/// A browser (cookie and CSRF token) or a bearer token.
enum Client {
    Browser { cookie: String, csrf: String, owner: String },
    Token(String),
}

async fn body_text(response: axum::response::Response) -> String {
    let bytes = axum::body::to_bytes(response.into_body(), 10 << 20).await.unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}

async fn server() -> Server {
    server_on(Arc::new(SqliteStore::open_in_memory().await.unwrap())).await
}

async fn server_on(store: Arc<dyn Store>) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let runtime = Runtime::new(dir.path(), store, Redactor::new(Vec::new()), ApprovalKey::generate());
    let sessions = Sessions::new(&[5u8; 64], "local:alice").unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    let state = steward_server::app_state(
        Arc::new(runtime),
        Arc::new(NoRuns),
        sessions,
        ServerOptions { workspaces: vec![ws], ..ServerOptions::default() },
    );
    let app = steward_server::router(state.clone());
    Server { _dir: dir, state, app }
}

impl Server {
    async fn browser(&self) -> Client {
        let response = self.app.clone().oneshot(Request::get("/ledger").body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let cookie = response.headers()[header::SET_COOKIE].to_str().unwrap().split(';').next().unwrap().to_string();
        let html = body_text(response).await;
        let at = html.find("name=\"csrf-token\" content=\"").unwrap() + "name=\"csrf-token\" content=\"".len();
        let csrf = html[at..at + 64].to_string();
        let at = html.find("<code id=\"owner\">").unwrap() + "<code id=\"owner\">".len();
        let owner = html[at..].split('<').next().unwrap().to_string();
        Client::Browser { cookie, csrf, owner }
    }

    async fn token(&self, owner: &Client, scopes: &[Scope]) -> Client {
        let Client::Browser { owner, .. } = owner else { panic!("tokens belong to a browser's owner") };
        let new = steward_server::tokens::create(
            self.state.runtime.store.as_ref(),
            self.state.runtime.clock.as_ref(),
            owner,
            "t",
            scopes,
        )
        .await
        .unwrap();
        Client::Token(new.secret.expose().to_string())
    }

    async fn raw(&self, client: &Client, method: &str, path: &str, body: Option<String>) -> (StatusCode, Value) {
        let mut request = Request::builder().method(method).uri(path);
        match client {
            Client::Browser { cookie, csrf, .. } => {
                request = request.header(header::COOKIE, cookie);
                if method != "GET" {
                    request = request.header("x-csrf-token", csrf);
                }
            }
            Client::Token(token) => request = request.header(header::AUTHORIZATION, format!("Bearer {token}")),
        }
        let request = match body {
            Some(b) => request.header(header::CONTENT_TYPE, "application/json").body(Body::from(b)),
            None => request.body(Body::empty()),
        }
        .unwrap();
        let response = self.app.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let text = body_text(response).await;
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    async fn call(&self, client: &Client, method: &str, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        self.raw(client, method, path, body.map(|b| b.to_string())).await
    }

    async fn file(&self, client: &Client, pr: u64) -> Value {
        let body = json!({"kind": "pr_summary", "repository": "demo", "pr_number": pr, "text": "please summarise"});
        let (status, request) = self.call(client, "POST", "/api/ledger/requests", Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "{request}");
        request
    }

    async fn approve(&self, client: &Client, id: &str, expires_in_s: u64) -> Value {
        let body = json!({"revision": 1, "head_sha": HEAD, "expires_in_s": expires_in_s});
        let (status, approval) =
            self.call(client, "POST", &format!("/api/ledger/requests/{id}/approve"), Some(body)).await;
        assert_eq!(status, StatusCode::OK, "{approval}");
        approval
    }

    async fn claim(&self, hub: &Client, approval: &Value, attempt: &str) -> Value {
        let body = json!({
            "approval_id": approval["id"], "request_id": approval["request_id"], "revision": approval["revision"],
            "epoch": approval["epoch"], "head_sha": approval["head_sha"], "hub_id": "hub:test", "attempt_id": attempt,
        });
        let (status, answer) = self.call(hub, "POST", "/api/ledger/claims", Some(body)).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        answer
    }
}

fn class(body: &Value) -> &str {
    body["error"]["class"].as_str().unwrap_or("")
}

#[tokio::test]
async fn requests_are_bound_to_their_owner() {
    let s = server().await;
    let alice = s.browser().await;
    let bob = s.browser().await;
    let request = s.file(&alice, 7).await;
    assert_eq!((request["status"].as_str(), request["revision"].as_u64()), (Some("open"), Some(1)));
    let id = request["id"].as_str().unwrap();
    let path = format!("/api/ledger/requests/{id}");
    let (status, body) = s.call(&bob, "GET", &path, None).await;
    assert_eq!((status, class(&body)), (StatusCode::FORBIDDEN, "not_owner"));
    let approve = json!({"revision": 1, "head_sha": HEAD, "expires_in_s": 60});
    let (status, body) = s.call(&bob, "POST", &format!("{path}/approve"), Some(approve)).await;
    assert_eq!((status, class(&body)), (StatusCode::FORBIDDEN, "not_owner"));
    let (status, body) = s.call(&bob, "POST", &format!("{path}/revoke"), None).await;
    assert_eq!((status, class(&body)), (StatusCode::FORBIDDEN, "not_owner"));
    let (_, list) = s.call(&bob, "GET", "/api/ledger/requests", None).await;
    assert_eq!(list["requests"], json!([]));
    let (status, list) = s.call(&alice, "GET", "/api/ledger/requests", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["requests"][0], request);
    let (status, body) = s.call(&alice, "GET", "/api/ledger/requests/wrq_missing", None).await;
    assert_eq!((status, class(&body)), (StatusCode::NOT_FOUND, "not_found"));
    // Bob's hub never sees Alice's approval, and cannot claim it.
    let approval = s.approve(&alice, id, 600).await;
    let bobs_hub = s.token(&bob, &[Scope::Hub]).await;
    let (_, page) = s.call(&bobs_hub, "GET", "/api/ledger/candidates", None).await;
    assert_eq!(page["items"], json!([]));
    let answer = s.claim(&bobs_hub, &approval, "att_0000000000000001").await;
    assert_eq!((answer["outcome"].as_str(), answer["reason"].as_str()), (Some("denied"), Some("unknown_approval")));
}

#[tokio::test]
async fn tokens_act_only_within_their_scopes_and_never_approve() {
    let s = server().await;
    let alice = s.browser().await;
    let reader = s.token(&alice, &[Scope::Read]).await;
    let submitter = s.token(&alice, &[Scope::Submit]).await;
    // A token without `submit` cannot file; with it, the request is its owner's.
    let new = json!({"kind": "pr_summary", "repository": "demo", "pr_number": 1});
    let (status, body) = s.call(&reader, "POST", "/api/ledger/requests", Some(new)).await;
    assert_eq!((status, class(&body)), (StatusCode::FORBIDDEN, "forbidden"));
    let request = s.file(&submitter, 1).await;
    let Client::Browser { owner, .. } = &alice else { unreachable!() };
    assert_eq!(request["requester"].as_str(), Some(owner.as_str()));
    let id = request["id"].as_str().unwrap();
    let (status, _) = s.call(&reader, "GET", &format!("/api/ledger/requests/{id}"), None).await;
    assert_eq!(status, StatusCode::OK);
    // No token approves or revokes, whatever its scopes.
    let all = s.token(&alice, &[Scope::Read, Scope::Submit, Scope::Hub]).await;
    let approve = json!({"revision": 1, "head_sha": HEAD, "expires_in_s": 60});
    let (status, body) = s.call(&all, "POST", &format!("/api/ledger/requests/{id}/approve"), Some(approve)).await;
    assert_eq!((status, class(&body)), (StatusCode::FORBIDDEN, "forbidden"), "{body}");
    let (status, body) = s.call(&all, "POST", &format!("/api/ledger/requests/{id}/revoke"), None).await;
    assert_eq!((status, class(&body)), (StatusCode::FORBIDDEN, "forbidden"));
    // Hub endpoints need a token with `hub`: not `submit`, not the owner's browser.
    let (status, body) = s.call(&submitter, "GET", "/api/ledger/candidates", None).await;
    assert_eq!((status, class(&body)), (StatusCode::FORBIDDEN, "forbidden"));
    for (method, path) in [
        ("GET", "/api/ledger/candidates"),
        ("POST", "/api/ledger/claims"),
        ("POST", "/api/ledger/authorities/ath_x/result"),
    ] {
        let (status, body) = s.call(&alice, method, path, Some(json!({}))).await;
        assert_eq!((status, class(&body)), (StatusCode::UNAUTHORIZED, "unauthorized"), "{path}");
    }
    let claim = json!({"approval_id": "wap_x", "request_id": id, "revision": 1, "epoch": 1, "head_sha": HEAD,
        "hub_id": "hub:x", "attempt_id": "att_x"});
    let (status, body) = s.call(&submitter, "POST", "/api/ledger/claims", Some(claim)).await;
    assert_eq!((status, class(&body)), (StatusCode::FORBIDDEN, "forbidden"));
    // Unknown and revoked tokens are 401.
    let (status, body) = s.call(&Client::Token("stw_nope".into()), "GET", "/api/ledger/candidates", None).await;
    assert_eq!((status, class(&body)), (StatusCode::UNAUTHORIZED, "unauthorized"));
}

#[tokio::test]
async fn candidates_page_completely_and_claims_are_one_time() {
    let s = server().await;
    let alice = s.browser().await;
    let hub = s.token(&alice, &[Scope::Hub]).await;
    let mut approved = Vec::new();
    for pr in 1..=7 {
        let request = s.file(&alice, pr).await;
        approved.push(s.approve(&alice, request["id"].as_str().unwrap(), 600).await["id"].clone());
    }
    s.file(&alice, 99).await; // open: not a candidate
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/ledger/candidates?limit=3&cursor={c}"),
            None => "/api/ledger/candidates?limit=3".into(),
        };
        let (status, page) = s.call(&hub, "GET", &path, None).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        pages += 1;
        seen.extend(page["items"].as_array().unwrap().iter().map(|c| c["approval"]["id"].clone()));
        assert_eq!(page["items"][0]["text"], "please summarise");
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!((seen, pages), (approved.clone(), 3));
    for bad in ["/api/ledger/candidates?limit=0", "/api/ledger/candidates?cursor=zz", "/api/ledger/candidates?x=1"] {
        let (status, body) = s.call(&hub, "GET", bad, None).await;
        assert_eq!((status, class(&body)), (StatusCode::BAD_REQUEST, "invalid"), "{bad}");
    }
    // Two claims of one approval: one issued, one spent (with the first's authority).
    let (_, page) = s.call(&hub, "GET", "/api/ledger/candidates?limit=1", None).await;
    let approval = page["items"][0]["approval"].clone();
    let first = s.claim(&hub, &approval, "att_0000000000000001").await;
    assert_eq!(first["outcome"], "issued");
    assert_eq!(first["attempt_id"], "att_0000000000000001");
    let second = s.claim(&hub, &approval, "att_0000000000000002").await;
    assert_eq!(second["outcome"], "spent");
    assert_eq!(second["authority_id"], first["authority_id"]);
    assert_eq!(second["attempt_id"], "att_0000000000000001");
    let (_, page) = s.call(&hub, "GET", "/api/ledger/candidates", None).await;
    assert_eq!(page["items"].as_array().unwrap().len(), 6);
    let (_, request) = s
        .call(&alice, "GET", &format!("/api/ledger/requests/{}", approval["request_id"].as_str().unwrap()), None)
        .await;
    assert_eq!(request["status"], "claimed");
}

#[tokio::test]
async fn revoked_expired_and_moved_heads_are_denied() {
    let s = server().await;
    let alice = s.browser().await;
    let hub = s.token(&alice, &[Scope::Hub]).await;
    // Revoked: the epoch is bumped and the claim denied.
    let request = s.file(&alice, 1).await;
    let id = request["id"].as_str().unwrap();
    let approval = s.approve(&alice, id, 600).await;
    let (status, revoked) = s.call(&alice, "POST", &format!("/api/ledger/requests/{id}/revoke"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!((revoked["status"].as_str(), revoked["epoch"].as_u64()), (Some("revoked"), Some(2)));
    let answer = s.claim(&hub, &approval, "att_0000000000000001").await;
    assert_eq!((answer["outcome"].as_str(), answer["reason"].as_str()), (Some("denied"), Some("revoked")));
    let (status, body) = s.call(&alice, "POST", &format!("/api/ledger/requests/{id}/revoke"), None).await;
    assert_eq!((status, class(&body)), (StatusCode::CONFLICT, "conflict"));
    // A moved head.
    let request = s.file(&alice, 2).await;
    let approval = s.approve(&alice, request["id"].as_str().unwrap(), 600).await;
    let mut moved = approval.clone();
    moved["head_sha"] = json!("f".repeat(40));
    let answer = s.claim(&hub, &moved, "att_0000000000000002").await;
    assert_eq!((answer["outcome"].as_str(), answer["reason"].as_str()), (Some("denied"), Some("head_mismatch")));
    // Approving again, or at another revision, is a conflict.
    let again = json!({"revision": 1, "head_sha": HEAD, "expires_in_s": 60});
    let path = format!("/api/ledger/requests/{}/approve", request["id"].as_str().unwrap());
    let (status, body) = s.call(&alice, "POST", &path, Some(again)).await;
    assert_eq!((status, class(&body)), (StatusCode::CONFLICT, "conflict"));
    // Expired.
    let request = s.file(&alice, 3).await;
    let approval = s.approve(&alice, request["id"].as_str().unwrap(), 1).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let answer = s.claim(&hub, &approval, "att_0000000000000003").await;
    assert_eq!((answer["outcome"].as_str(), answer["reason"].as_str()), (Some("denied"), Some("expired")));
    let (_, page) = s.call(&hub, "GET", "/api/ledger/candidates", None).await;
    let ids: Vec<&Value> = page["items"].as_array().unwrap().iter().map(|c| &c["approval"]["request_id"]).collect();
    assert_eq!(ids, [&request_id_of(&s, &alice, 2).await]);
}

async fn request_id_of(s: &Server, alice: &Client, pr: u64) -> Value {
    let (_, list) = s.call(alice, "GET", "/api/ledger/requests", None).await;
    list["requests"].as_array().unwrap().iter().find(|r| r["pr_number"] == pr).unwrap()["id"].clone()
}

fn report(attempt: &str, outcome: &str) -> Value {
    json!({"attempt_id": attempt, "outcome": outcome, "evidence": {
        "tested_sha": HEAD, "executor": "hub:test steward 0.1.0", "environment": {"os": "linux"},
        "checks": [{"command": ["git", "rev-parse", "HEAD"], "outcome": "passed", "exit_code": 0, "log_ref": null}],
        "not_checked": ["tests"], "run_id": "run_1", "summary": "It adds a flag."}})
}

#[tokio::test]
async fn results_are_idempotent_per_attempt() {
    let s = server().await;
    let alice = s.browser().await;
    let hub = s.token(&alice, &[Scope::Hub]).await;
    let request = s.file(&alice, 1).await;
    let approval = s.approve(&alice, request["id"].as_str().unwrap(), 600).await;
    let issued = s.claim(&hub, &approval, "att_0000000000000001").await;
    let path = format!("/api/ledger/authorities/{}/result", issued["authority_id"].as_str().unwrap());
    let (status, body) = s.call(&hub, "POST", &path, Some(report("att_0000000000000009", "completed"))).await;
    assert_eq!((status, class(&body)), (StatusCode::CONFLICT, "conflict"));
    let (status, ack) = s.call(&hub, "POST", &path, Some(report("att_0000000000000001", "completed"))).await;
    assert_eq!(status, StatusCode::OK, "{ack}");
    assert_eq!(ack, json!({"attempt_id": "att_0000000000000001", "first": true, "outcome": "completed"}));
    let (status, ack) = s.call(&hub, "POST", &path, Some(report("att_0000000000000001", "failed"))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ack, json!({"attempt_id": "att_0000000000000001", "first": false, "outcome": "completed"}));
    let (_, request) =
        s.call(&alice, "GET", &format!("/api/ledger/requests/{}", request["id"].as_str().unwrap()), None).await;
    assert_eq!(request["status"], "completed");
    // The owner sees the first report's summary and tested commit on the Ledger page.
    let Client::Browser { cookie, .. } = &alice else { unreachable!() };
    let page = Request::get("/ledger").header(header::COOKIE, cookie).body(Body::empty()).unwrap();
    let html = body_text(s.app.clone().oneshot(page).await.unwrap()).await;
    assert!(html.contains("It adds a flag.") && html.contains(HEAD) && html.contains("run_1"), "{html}");
    let (status, body) =
        s.call(&hub, "POST", "/api/ledger/authorities/ath_missing/result", Some(report("att_1", "failed"))).await;
    assert_eq!((status, class(&body)), (StatusCode::NOT_FOUND, "not_found"));
    // The audit chain holds every change of the request.
    let records = s.state.runtime.store.audit_records(Some(request["id"].as_str().unwrap())).await.unwrap();
    let actions: Vec<&str> = records.iter().map(|r| r.entry.action.as_str()).collect();
    assert_eq!(
        actions,
        ["ledger_request", "ledger_approve", "ledger_claim", "ledger_result", "ledger_result", "ledger_result"]
    );
}

#[tokio::test]
async fn an_authority_is_reported_and_revealed_only_to_the_token_that_claimed_it() {
    let s = server().await;
    let alice = s.browser().await;
    let hub = s.token(&alice, &[Scope::Hub]).await;
    let other = s.token(&alice, &[Scope::Hub]).await;
    let request = s.file(&alice, 1).await;
    let approval = s.approve(&alice, request["id"].as_str().unwrap(), 600).await;
    let issued = s.claim(&hub, &approval, "att_0000000000000001").await;
    assert_eq!(issued["outcome"], "issued");
    // Another token of the same owner: spent, without the authority or the attempt.
    let spent = s.claim(&other, &approval, "att_0000000000000002").await;
    assert_eq!(
        spent,
        json!({"outcome": "spent", "authority_id": null, "attempt_id": null, "reason": "already_claimed"})
    );
    // The claiming token replaying its own claim still recognises it.
    let replay = s.claim(&hub, &approval, "att_0000000000000001").await;
    assert_eq!(
        (replay["authority_id"].clone(), replay["attempt_id"].as_str()),
        (issued["authority_id"].clone(), Some("att_0000000000000001"))
    );
    // Another token cannot file the result, even knowing both ids; nothing is recorded.
    let path = format!("/api/ledger/authorities/{}/result", issued["authority_id"].as_str().unwrap());
    let (status, body) = s.call(&other, "POST", &path, Some(report("att_0000000000000001", "failed"))).await;
    assert_eq!((status, class(&body)), (StatusCode::FORBIDDEN, "forbidden"), "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("another bearer token"), "{body}");
    let id = request["id"].as_str().unwrap();
    let (_, current) = s.call(&alice, "GET", &format!("/api/ledger/requests/{id}"), None).await;
    assert_eq!(current["status"], "claimed");
    let (status, ack) = s.call(&hub, "POST", &path, Some(report("att_0000000000000001", "completed"))).await;
    assert_eq!((status, ack["first"].as_bool()), (StatusCode::OK, Some(true)), "{ack}");
    // The audit records name the tokens by id, never by secret.
    let records = s.state.runtime.store.audit_records(Some(id)).await.unwrap();
    let tokens = s
        .state
        .runtime
        .store
        .mcp_tokens(match &alice {
            Client::Browser { owner, .. } => owner,
            Client::Token(_) => unreachable!(),
        })
        .await
        .unwrap();
    let ids: Vec<&str> = tokens.iter().map(|t| t.id.as_str()).collect();
    for r in records.iter().filter(|r| r.entry.action == "ledger_claim" || r.entry.action == "ledger_result") {
        let token_id = r.entry.input["token_id"].as_str().unwrap();
        assert!(ids.contains(&token_id), "{token_id}");
        for secret in [&hub, &other] {
            let Client::Token(secret) = secret else { unreachable!() };
            assert!(!r.entry.input.to_string().contains(secret.as_str()) && !r.entry.detail.contains(secret.as_str()));
        }
    }
}

#[tokio::test]
async fn a_claim_replayed_after_revocation_is_denied() {
    let s = server().await;
    let alice = s.browser().await;
    let hub = s.token(&alice, &[Scope::Hub]).await;
    let request = s.file(&alice, 1).await;
    let id = request["id"].as_str().unwrap();
    let approval = s.approve(&alice, id, 600).await;
    assert_eq!(s.claim(&hub, &approval, "att_0000000000000001").await["outcome"], "issued");
    let (status, _) = s.call(&alice, "POST", &format!("/api/ledger/requests/{id}/revoke"), None).await;
    assert_eq!(status, StatusCode::OK);
    let replay = s.claim(&hub, &approval, "att_0000000000000001").await;
    assert_eq!(replay, json!({"outcome": "denied", "authority_id": null, "attempt_id": null, "reason": "revoked"}));
}

#[tokio::test]
async fn bodies_are_strict_and_bounded() {
    let s = server().await;
    let alice = s.browser().await;
    let hub = s.token(&alice, &[Scope::Hub]).await;
    let extra = r#"{"kind": "pr_summary", "repository": "demo", "pr_number": 1, "approve": true}"#;
    let (status, body) = s.raw(&alice, "POST", "/api/ledger/requests", Some(extra.into())).await;
    assert_eq!((status, class(&body)), (StatusCode::BAD_REQUEST, "invalid"));
    for bad in [
        json!({"kind": "pr_summary", "repository": "../etc", "pr_number": 1}),
        json!({"kind": "pr_summary", "repository": "demo", "pr_number": 0}),
        json!({"kind": "deploy", "repository": "demo", "pr_number": 1}),
        json!({"kind": "pr_summary", "repository": "demo", "pr_number": 1, "text": "x".repeat(4001)}),
    ] {
        let (status, body) = s.call(&alice, "POST", "/api/ledger/requests", Some(bad.clone())).await;
        assert_eq!((status, class(&body)), (StatusCode::BAD_REQUEST, "invalid"), "{bad}");
    }
    let huge = json!({"kind": "pr_summary", "repository": "demo", "pr_number": 1, "text": "x".repeat(20_000)});
    let (status, _) = s.call(&alice, "POST", "/api/ledger/requests", Some(huge)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let request = s.file(&alice, 1).await;
    let path = format!("/api/ledger/requests/{}/approve", request["id"].as_str().unwrap());
    for bad in [
        json!({"revision": 1, "head_sha": "abc", "expires_in_s": 60}),
        json!({"revision": 1, "head_sha": HEAD, "expires_in_s": 86_401}),
        json!({"revision": 1, "head_sha": HEAD, "expires_in_s": 60, "scope": "write"}),
    ] {
        let (status, body) = s.call(&alice, "POST", &path, Some(bad.clone())).await;
        assert_eq!((status, class(&body)), (StatusCode::BAD_REQUEST, "invalid"), "{bad}");
    }
    let mut big = report("att_1", "completed");
    big["evidence"]["summary"] = json!("x".repeat(300_000));
    let (status, _) = s.call(&hub, "POST", "/api/ledger/authorities/ath_x/result", Some(big)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let mut unknown = report("att_1", "completed");
    unknown["evidence"]["secret"] = json!("x");
    let (status, body) = s.call(&hub, "POST", "/api/ledger/authorities/ath_x/result", Some(unknown)).await;
    assert_eq!((status, class(&body)), (StatusCode::BAD_REQUEST, "invalid"));
    // A browser's JSON call without the CSRF header is refused before anything else.
    let Client::Browser { cookie, .. } = &alice else { unreachable!() };
    let request = Request::post("/api/ledger/requests")
        .header(header::COOKIE, cookie)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(r#"{"kind": "pr_summary", "repository": "demo", "pr_number": 1}"#))
        .unwrap();
    let response = s.app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn the_ledger_page_files_approves_and_revokes_without_javascript() {
    let s = server().await;
    let alice = s.browser().await;
    let Client::Browser { cookie, csrf, .. } = &alice else { unreachable!() };
    let form = |path: &str, body: String| {
        Request::post(path)
            .header(header::COOKIE, cookie)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(body))
            .unwrap()
    };
    let text = "<script>alert(1)</script>";
    let filed = s
        .app
        .clone()
        .oneshot(form(
            "/ledger",
            format!("csrf={csrf}&repository=demo&pr_number=12&text=%3Cscript%3Ealert(1)%3C%2Fscript%3E"),
        ))
        .await
        .unwrap();
    assert_eq!(filed.status(), StatusCode::SEE_OTHER);
    let page = |_: ()| Request::get("/ledger").header(header::COOKIE, cookie).body(Body::empty()).unwrap();
    let html = body_text(s.app.clone().oneshot(page(())).await.unwrap()).await;
    assert!(!html.contains(text) && html.contains("&lt;script&gt;"), "the text is escaped");
    assert!(html.contains("Approve revision 1") && html.contains("demo #12"));
    let id = html.split("data-request-id=\"").nth(1).unwrap().split('"').next().unwrap().to_string();
    let bad = s
        .app
        .clone()
        .oneshot(form(
            &format!("/ledger/{id}/approve"),
            format!("csrf=nope&revision=1&head_sha={HEAD}&expires_in_minutes=5"),
        ))
        .await
        .unwrap();
    assert_eq!(bad.status(), StatusCode::FORBIDDEN);
    let approved = s
        .app
        .clone()
        .oneshot(form(
            &format!("/ledger/{id}/approve"),
            format!("csrf={csrf}&revision=1&head_sha={HEAD}&expires_in_minutes=5"),
        ))
        .await
        .unwrap();
    assert_eq!(approved.status(), StatusCode::SEE_OTHER);
    let html = body_text(s.app.clone().oneshot(page(())).await.unwrap()).await;
    assert!(html.contains(HEAD) && html.contains(">approved<"), "{html}");
    let revoked = s.app.clone().oneshot(form(&format!("/ledger/{id}/revoke"), format!("csrf={csrf}"))).await.unwrap();
    assert_eq!(revoked.status(), StatusCode::SEE_OTHER);
    let html = body_text(s.app.clone().oneshot(page(())).await.unwrap()).await;
    assert!(html.contains(">revoked<") && !html.contains("class=\"revoke\""), "{html}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_concurrent_http_claims_of_one_approval_exactly_one_is_issued() {
    concurrent_claims(server().await).await;
}

/// The same through a store in PostgreSQL (a fresh schema of `STEWARD_TEST_DATABASE_URL`, default
/// `postgres://postgres@127.0.0.1:5432/test`, dropped afterwards). Fails when PostgreSQL is
/// unreachable (`STEWARD_TEST_SKIP=postgres` opts out: `steward_peers::needs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_concurrent_http_claims_of_one_approval_exactly_one_is_issued_on_postgres() {
    use sqlx::{ConnectOptions, Connection};
    use std::str::FromStr;
    use steward_peers::{Need, needs};
    needs::require(Need::Postgres);
    let url = steward_peers::test_database_url();
    let connect = steward_store::PgConnectOptions::from_str(&url).unwrap().disable_statement_logging();
    let shown = steward_store::redact_database_url(&url);
    let mut admin = sqlx::postgres::PgConnection::connect_with(&connect)
        .await
        .unwrap_or_else(|e| needs::unavailable(Need::Postgres, format!("PostgreSQL at {shown} ({e})")));
    let schema = steward_store::new_id("t_");
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}"))).execute(&mut admin).await.unwrap();
    let options = connect.clone().options([("search_path", schema.as_str())]);
    let store = steward_store::PgStore::open_with(options, Default::default(), "node-a").await.unwrap();
    let outcome = tokio::spawn(async move { concurrent_claims(server_on(Arc::new(store)).await).await }).await;
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE"))).execute(&mut admin).await.unwrap();
    admin.close().await.unwrap();
    outcome.unwrap();
}

async fn concurrent_claims(s: Server) {
    let s = Arc::new(s);
    let alice = s.browser().await;
    let Client::Token(hub) = s.token(&alice, &[Scope::Hub]).await else { unreachable!() };
    let request = s.file(&alice, 1).await;
    let approval = s.approve(&alice, request["id"].as_str().unwrap(), 600).await;
    let mut tasks = Vec::new();
    for i in 0..16 {
        let (s, hub, approval) = (Arc::clone(&s), hub.clone(), approval.clone());
        tasks
            .push(tokio::spawn(async move { s.claim(&Client::Token(hub), &approval, &format!("att_{i:016x}")).await }));
    }
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    let issued: Vec<&Value> = outcomes.iter().filter(|o| o["outcome"] == "issued").collect();
    assert_eq!(issued.len(), 1, "{outcomes:?}");
    assert!(outcomes.iter().all(|o| o["authority_id"] == issued[0]["authority_id"]), "{outcomes:?}");
    assert_eq!(outcomes.iter().filter(|o| o["outcome"] == "spent").count(), 15);
    // The owner's page names the hub and the attempt the authority went to.
    let Client::Browser { cookie, .. } = &alice else { unreachable!() };
    let page = Request::get("/ledger").header(header::COOKIE, cookie).body(Body::empty()).unwrap();
    let html = body_text(s.app.clone().oneshot(page).await.unwrap()).await;
    assert!(html.contains(issued[0]["attempt_id"].as_str().unwrap()) && html.contains("hub:test"), "{html}");
}

/// A validator for component `name` of the served OpenAPI document, and its property names.
fn schema_of(name: &str) -> (jsonschema::Validator, Vec<String>) {
    let doc = serde_json::to_value(steward_server::openapi::document()).unwrap();
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": format!("#/components/schemas/{name}"),
        "components": doc["components"],
    });
    let mut properties: Vec<String> =
        doc["components"]["schemas"][name]["properties"].as_object().unwrap().keys().cloned().collect();
    properties.sort();
    (jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("schema {name}: {e}")), properties)
}

/// The document's schemas describe the wire shapes exactly: every real answer validates, with
/// the same field names.
fn assert_described(name: &str, value: &Value) {
    let (validator, properties) = schema_of(name);
    let errors: Vec<String> = validator.iter_errors(value).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{name}: {errors:?} in {value}");
    let mut fields: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
    fields.sort();
    assert_eq!(fields, properties, "{name}");
}

#[tokio::test]
async fn the_documented_schemas_are_the_wire_shapes() {
    let s = server().await;
    let alice = s.browser().await;
    let hub = s.token(&alice, &[Scope::Hub]).await;
    let request = s.file(&alice, 1).await;
    assert_described("WorkRequest", &request);
    let approval = s.approve(&alice, request["id"].as_str().unwrap(), 600).await;
    assert_described("WorkApproval", &approval);
    let (_, page) = s.call(&hub, "GET", "/api/ledger/candidates?limit=1", None).await;
    assert_described("CandidatePage", &page);
    assert_described("Candidate", &page["items"][0]);
    let issued = s.claim(&hub, &approval, "att_0000000000000001").await;
    assert_described("ClaimResponse", &issued);
    assert_described("ClaimResponse", &s.claim(&hub, &approval, "att_0000000000000002").await);
    let path = format!("/api/ledger/authorities/{}/result", issued["authority_id"].as_str().unwrap());
    let body = report("att_0000000000000001", "completed");
    assert_described("ResultReport", &body);
    assert_described("Evidence", &body["evidence"]);
    assert_described("Check", &body["evidence"]["checks"][0]);
    let (_, ack) = s.call(&hub, "POST", &path, Some(body)).await;
    assert_described("ResultAck", &ack);
    let (_, list) = s.call(&alice, "GET", "/api/ledger/requests", None).await;
    assert_described("WorkRequestList", &list);
    assert_described(
        "NewWorkRequest",
        &json!({"kind": "pr_summary", "repository": "demo", "pr_number": 1, "text": ""}),
    );
    assert_described("ApproveWorkRequest", &json!({"revision": 1, "head_sha": HEAD, "expires_in_s": 60}));
}
